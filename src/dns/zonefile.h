// Master files (RFC 1035 section 5): parsing into records and printing records back.
//
// Understands $ORIGIN, $TTL, $INCLUDE is refused (zones come from one text), relative names, '@',
// parentheses across lines, quoted strings, \X and \DDD escapes, comments, and omitted owner (the
// previous one), TTL ($TTL, else the previous record's) and class (IN; other classes are refused).
// Errors name the line: "line 12: bad IPv4 address '1.2.3'". Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::dns {

struct Record {
  std::string owner;  // wire form, case as written
  uint16_t type = 0;
  uint32_t ttl = 0;
  std::string rdata;  // wire form, names uncompressed
};

// `origin` is the zone's name in text ("example.com."); the file's $ORIGIN lines may change it.
Result<std::vector<Record>> ParseZoneFile(std::string_view text, std::string_view origin);
// One line per record: "owner TTL IN TYPE rdata", absolute names.
std::string PrintRecord(const Record& r);
std::string PrintZoneFile(const std::vector<Record>& records);

}  // namespace govern::dns
