// The Cedar extension types: decimal, ipaddr, datetime and duration. Parsing follows the reference
// (cedar-policy 4.x, as @cedar-policy/cedar-wasm 4.13 runs it) so that the same strings are accepted
// and rejected. Internal to src/policy; pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "policy/value.h"

namespace govern::policy {

// decimal("-12.3456"): an optional '-', at least one digit, '.', 1 to 4 digits; scaled by 10^4.
bool ParseDecimal(std::string_view s, int64_t* out, std::string* error);
// ip("10.0.0.1"), ip("10.0.0.0/8"), ip("::1"), ip("ff00::/8"); IPv4 embedded in IPv6 is refused.
bool ParseIp(std::string_view s, IpAddr* out, std::string* error);
// datetime("2024-10-15"), "...T11:38:02Z", "...T11:38:02.101Z", "...T11:38:02+0130"; ms since epoch.
bool ParseDatetime(std::string_view s, int64_t* out, std::string* error);
// duration("1d2h3m4s5ms"), optional leading '-'; milliseconds.
bool ParseDuration(std::string_view s, int64_t* out, std::string* error);

bool IpIsLoopback(const IpAddr& a);
bool IpIsMulticast(const IpAddr& a);
bool IpIsInRange(const IpAddr& a, const IpAddr& range);

std::string DecimalToString(int64_t v);
std::string IpToString(const IpAddr& a);

}  // namespace govern::policy
