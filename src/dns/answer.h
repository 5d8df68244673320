// The answer engine: one query packet in, one response packet out, from a ZoneSet (RFC 1034 section
// 4.3.2, RFC 2181, 2308, 4592, 6672-less, 8482; DNSSEC per RFC 4035 with, per zone, NSEC3 denial from
// the zone's chain (RFC 5155 section 7.2) or compact denial (RFC 9824)).
//
// Answers for names that exist are rendered once per (qname, qtype, DO) and kept in the Zone; a hit is
// a hash lookup and a copy with the query's id, RD/CD flags and qname case patched in, and allocates
// nothing. Names that do not exist are answered fresh every time (unsigned: no allocation; signed with
// compact denial: one ECDSA/Ed25519 signature over the NSEC; with NSEC3 denial: the name's hashes, binary
// searches of the chain and its cached signatures). Safe to call from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "dns/zone.h"

namespace govern::dns {

struct AnswerOptions {
  bool tcp = false;  // no UDP size limit (responses up to 65535 octets)
  uint32_t now = 0;  // seconds since the epoch, for signature validity and cache refresh
};

// Writes the response to `packet` into out[0, out_size) (out_size should be 65535 for TCP and at
// least kDefaultUdpPayload for UDP) and returns its length; 0 means send nothing (the packet was not a
// query: too short for a header, or a response).
size_t Answer(const ZoneSet& zones, std::span<const uint8_t> packet, const AnswerOptions& options,
              uint8_t* out, size_t out_size);

}  // namespace govern::dns
