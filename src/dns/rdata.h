// RDATA codecs: presentation text (master-file form) to wire and back, for A, AAAA, NS, CNAME, PTR, MX,
// TXT, SOA, SRV, CAA, SVCB/HTTPS, DS, DNSKEY, RRSIG, NSEC, HINFO and any other type in the RFC 3597
// generic form ("\# 4 c0000201"), plus type mnemonics ("TYPE65534" for unknown numbers).
// Names inside RDATA are stored uncompressed with their case as written. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::dns {

// One whitespace-separated field of a record as the zone-file lexer read it: text with escapes still
// in place (names and character strings undo them), and whether it was in double quotes.
struct Token {
  std::string text;
  bool quoted = false;
};

Result<uint16_t> TypeFromText(std::string_view text);  // "A", "aaaa", "TYPE257"
std::string TypeToText(uint16_t type);

// The RDATA fields of one record (after owner, TTL, class and type) to wire form. `origin` (wire)
// completes relative names.
Result<std::string> RdataFromText(uint16_t type, std::span<const Token> fields, std::string_view origin);
// Wire RDATA to presentation text; malformed or unknown RDATA comes out in the RFC 3597 form.
std::string RdataToText(uint16_t type, std::string_view rdata);
// Checks that wire RDATA of `type` is well formed (lengths, embedded names).
bool RdataValid(uint16_t type, std::string_view rdata);

// RFC 4034 section 6.2: RDATA with the names of NS, CNAME, PTR, MX, SOA, SRV, DNAME lower-cased.
std::string CanonicalRdata(uint16_t type, std::string_view rdata);
// The NSEC type bit map for the given sorted, distinct types.
std::string TypeBitmap(std::span<const uint16_t> types);
void AppendTypeBitmap(std::span<const uint16_t> types, std::string* out);

}  // namespace govern::dns
