// Walking whole DNS messages: every section, names with compression pointers, for the slow paths that
// ParseQuery (wire.h) refuses on purpose: zone transfer requests (IXFR carries an SOA in authority),
// TSIG-signed messages, NOTIFY answers. Allocates; never used on the answer fast path. Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace govern::dns {

struct MessageRecord {
  std::string owner;  // lower-case, uncompressed wire
  uint16_t type = 0;
  uint16_t klass = 0;
  uint32_t ttl = 0;
  size_t start = 0;        // offset of the record's first octet
  size_t rdata_start = 0;  // offset of the RDATA
  uint16_t rdlength = 0;
  size_t end = 0;  // one past the record
};

struct Message {
  uint16_t id = 0;
  uint16_t flags = 0;
  uint8_t opcode = 0;
  uint8_t rcode = 0;
  bool has_question = false;
  std::string qname;      // lower-case wire
  std::string qname_raw;  // as sent (case kept), uncompressed
  uint16_t qtype = 0;
  uint16_t qclass = 0;
  size_t question_end = 0;
  std::vector<MessageRecord> answer, authority, additional;
};

// Reads the name at `pos` (following compression pointers backwards only, at most 128 jumps) into
// `out` as lower-case wire (or as sent when `lower` is false); returns the offset after the name as
// written at `pos`.
Result<size_t> ReadName(std::span<const uint8_t> msg, size_t pos, std::string* out, bool lower = true);
// The whole message: at most one question, every record's bounds. Trailing bytes are an error.
Result<Message> ParseMessage(std::span<const uint8_t> msg);

}  // namespace govern::dns
