// Parsing and operations of the Cedar extension types (see extensions.h).
#include "policy/extensions.h"

#include <cstdio>
#include <vector>

namespace govern::policy {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Rust's Ipv4Addr::from_str: four decimal octets, no leading zeros, each <= 255.
bool ParseIpv4(std::string_view s, uint32_t* out) {
  uint32_t v = 0;
  size_t i = 0;
  for (int octet = 0; octet < 4; ++octet) {
    if (octet > 0) {
      if (i >= s.size() || s[i] != '.') return false;
      ++i;
    }
    size_t start = i;
    uint32_t n = 0;
    while (i < s.size() && IsDigit(s[i]) && i - start < 4) n = n * 10 + static_cast<uint32_t>(s[i++] - '0');
    size_t len = i - start;
    if (len == 0 || len > 3 || n > 255 || (len > 1 && s[start] == '0')) return false;
    v = (v << 8) | n;
  }
  if (i != s.size()) return false;
  *out = v;
  return true;
}

int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Rust's Ipv6Addr::from_str (without the embedded-IPv4 tail, which Cedar refuses anyway when it
// has two dots; a single trailing dotted group is still parsed as Rust does).
bool ParseIpv6(std::string_view s, uint64_t* hi, uint64_t* lo) {
  uint16_t groups[8] = {};
  int head[8];
  int nhead = 0;
  int tail[8];
  int ntail = 0;
  bool dbl = false;
  size_t i = 0;
  auto parse_groups = [&](int* arr, int* n, int limit) -> bool {
    // Reads groups separated by ':' until the end or a "::".
    while (i < s.size() && *n < limit) {
      // Embedded IPv4 at the end.
      size_t j = i;
      int hex = 0;
      uint32_t g = 0;
      while (j < s.size() && HexVal(s[j]) >= 0 && hex < 5)
        g = g * 16 + static_cast<uint32_t>(HexVal(s[j++])), ++hex;
      if (j < s.size() && s[j] == '.') {
        if (*n + 2 > limit) return false;
        uint32_t v4 = 0;
        if (!ParseIpv4(s.substr(i), &v4)) return false;
        arr[(*n)++] = static_cast<int>(v4 >> 16);
        arr[(*n)++] = static_cast<int>(v4 & 0xffff);
        i = s.size();
        return true;
      }
      if (hex == 0 || hex > 4) return false;
      arr[(*n)++] = static_cast<int>(g);
      i = j;
      if (i == s.size()) return true;
      if (s[i] != ':') return false;
      if (i + 1 < s.size() && s[i + 1] == ':') return true;  // "::" follows
      ++i;
      if (i == s.size()) return false;  // trailing single ':'
    }
    return i == s.size() || (i + 1 < s.size() && s[i] == ':' && s[i + 1] == ':');
  };
  if (s.size() >= 2 && s[0] == ':' && s[1] == ':') {
    dbl = true;
    i = 2;
  } else {
    if (!parse_groups(head, &nhead, 8)) return false;
    if (i < s.size()) {  // at "::"
      if (!(s[i] == ':' && i + 1 < s.size() && s[i + 1] == ':')) return false;
      dbl = true;
      i += 2;
    }
  }
  if (dbl) {
    if (nhead > 7) return false;
    if (i < s.size()) {
      if (!parse_groups(tail, &ntail, 7 - nhead)) return false;
      if (i != s.size()) return false;
    }
    for (int k = 0; k < nhead; ++k) groups[k] = static_cast<uint16_t>(head[k]);
    for (int k = 0; k < ntail; ++k) groups[8 - ntail + k] = static_cast<uint16_t>(tail[k]);
  } else {
    if (nhead != 8 || i != s.size()) return false;
    for (int k = 0; k < 8; ++k) groups[k] = static_cast<uint16_t>(head[k]);
  }
  *hi = 0;
  *lo = 0;
  for (int k = 0; k < 4; ++k) *hi = (*hi << 16) | groups[k];
  for (int k = 4; k < 8; ++k) *lo = (*lo << 16) | groups[k];
  return true;
}

bool ParseAddr(std::string_view s, IpAddr* out) {
  uint32_t v4 = 0;
  if (ParseIpv4(s, &v4)) {
    out->v6 = false;
    out->hi = 0;
    out->lo = v4;
    out->prefix = 32;
    return true;
  }
  if (ParseIpv6(s, &out->hi, &out->lo)) {
    out->v6 = true;
    out->prefix = 128;
    return true;
  }
  return false;
}

bool AtLeastTwo(std::string_view s, char c) {
  size_t p = s.find(c);
  return p != std::string_view::npos && s.find(c, p + 1) != std::string_view::npos;
}

// Days from 1970-01-01 to y-m-d (proleptic Gregorian), Howard Hinnant's algorithm.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool LeapYear(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int Num(std::string_view s, size_t pos, size_t len) {
  int v = 0;
  for (size_t k = 0; k < len; ++k) v = v * 10 + (s[pos + k] - '0');
  return v;
}

bool AllDigits(std::string_view s, size_t pos, size_t len) {
  if (pos + len > s.size()) return false;
  for (size_t k = 0; k < len; ++k) {
    if (!IsDigit(s[pos + k])) return false;
  }
  return true;
}

}  // namespace

bool ParseDecimal(std::string_view s, int64_t* out, std::string* error) {
  std::string str(s);
  auto bad = [&] {
    *error = "`" + str + "` is not a well-formed decimal value";
    return false;
  };
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && s[i] == '-') neg = true, ++i;
  size_t int_start = i;
  while (i < s.size() && IsDigit(s[i])) ++i;
  size_t int_len = i - int_start;
  if (int_len == 0 || i >= s.size() || s[i] != '.') return bad();
  ++i;
  size_t frac_start = i;
  while (i < s.size() && IsDigit(s[i])) ++i;
  size_t frac_len = i - frac_start;
  if (frac_len == 0 || i != s.size()) return bad();
  if (frac_len > 4) {
    *error = "too many digits after the decimal in `" + str + "`";
    return false;
  }
  // Accumulate as a negative number so that the minimum value is representable.
  int64_t acc = 0;
  auto overflow = [&] {
    *error = "overflow when converting to decimal";
    return false;
  };
  for (size_t k = int_start; k < int_start + int_len; ++k) {
    if (__builtin_mul_overflow(acc, 10, &acc) || __builtin_sub_overflow(acc, s[k] - '0', &acc))
      return overflow();
  }
  for (size_t k = 0; k < 4; ++k) {
    int digit = k < frac_len ? s[frac_start + k] - '0' : 0;
    if (__builtin_mul_overflow(acc, 10, &acc) || __builtin_sub_overflow(acc, digit, &acc)) return overflow();
  }
  if (!neg) {
    if (acc == INT64_MIN) return overflow();
    acc = -acc;
  }
  *out = acc;
  return true;
}

bool ParseIp(std::string_view s, IpAddr* out, std::string* error) {
  std::string str(s);
  if (AtLeastTwo(s, ':') && AtLeastTwo(s, '.')) {
    *error =
        "error parsing IP address from string: We do not accept IPv4 embedded in IPv6 (e.g., "
        "::ffff:127.0.0.1). Found: `" +
        str + "`";
    return false;
  }
  size_t slash = s.find('/');
  std::string_view addr = s.substr(0, slash);
  if (!ParseAddr(addr, out)) {
    *error = "invalid IP address: " + std::string(addr);
    return false;
  }
  if (slash != std::string_view::npos) {
    std::string_view p = s.substr(slash + 1);
    if (p.empty() || p.size() > 3 || !AllDigits(p, 0, p.size())) {
      *error = "error parsing prefix `" + std::string(p) + "`";
      return false;
    }
    if (p.size() > 1 && p[0] == '0') {
      *error = "error parsing prefix `" + std::string(p) + "`: leading zero(s)";
      return false;
    }
    int n = Num(p, 0, p.size());
    int limit = out->v6 ? 128 : 32;
    if (n > limit) {
      *error =
          "error parsing prefix: " + std::to_string(n) + " is larger than the limit " + std::to_string(limit);
      return false;
    }
    out->prefix = static_cast<uint8_t>(n);
  }
  return true;
}

bool ParseDatetime(std::string_view s, int64_t* out, std::string* error) {
  if (s.size() < 10 || !AllDigits(s, 0, 4) || s[4] != '-' || !AllDigits(s, 5, 2) || s[7] != '-' ||
      !AllDigits(s, 8, 2)) {
    *error = "invalid date pattern";
    return false;
  }
  int y = Num(s, 0, 4), mo = Num(s, 5, 2), d = Num(s, 8, 2);
  static const int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool date_ok = mo >= 1 && mo <= 12 && d >= 1 && d <= kDays[mo - 1] + ((mo == 2 && LeapYear(y)) ? 1 : 0);
  auto bad_date = [&] {
    *error = "invalid date: " + std::string(s.substr(0, 10));
    return false;
  };
  int64_t days = date_ok ? DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) : 0;
  if (s.size() == 10) {
    if (!date_ok) return bad_date();
    *out = days * 86400000;
    return true;
  }
  if (s.size() < 19 || s[10] != 'T' || !AllDigits(s, 11, 2) || s[13] != ':' || !AllDigits(s, 14, 2) ||
      s[16] != ':' || !AllDigits(s, 17, 2)) {
    *error = "invalid hour/minute/second pattern";
    return false;
  }
  int h = Num(s, 11, 2), mi = Num(s, 14, 2), sec = Num(s, 17, 2);
  std::string_view rest = s.substr(19);
  int ms = 0;
  if (!rest.empty() && rest[0] == '.') {
    if (!AllDigits(rest, 1, 3)) {
      *error = "invalid millisecond and/or offset pattern";
      return false;
    }
    ms = Num(rest, 1, 3);
    rest = rest.substr(4);
  }
  int64_t offset_s = 0;
  bool offset_bad = false;
  int oh = 0, om = 0;
  if (rest == "Z") {
  } else if (rest.size() == 5 && (rest[0] == '+' || rest[0] == '-') && AllDigits(rest, 1, 4)) {
    oh = Num(rest, 1, 2);
    om = Num(rest, 3, 2);
    offset_bad = oh >= 24 || om >= 60;
    offset_s = (oh * 3600 + om * 60) * (rest[0] == '+' ? 1 : -1);
  } else {
    *error = "invalid millisecond and/or offset pattern";
    return false;
  }
  if (!date_ok) return bad_date();
  if (h > 23 || mi > 59 || sec > 59) {
    *error = "invalid hour/minute/second: " + std::string(s.substr(11, 8));
    return false;
  }
  if (offset_bad) {
    *error = "invalid offset range: " + std::to_string(oh) + std::to_string(om);
    return false;
  }
  *out = ((days * 86400 + h * 3600 + mi * 60 + sec) - offset_s) * 1000 + ms;
  return true;
}

bool ParseDuration(std::string_view s, int64_t* out, std::string* error) {
  auto bad = [&] {
    *error = "invalid duration pattern";
    return false;
  };
  if (s.empty() || s == "-") return bad();
  bool neg = s[0] == '-';
  size_t i = neg ? 1 : 0;
  // Units in order: d h m s ms, each at most once.
  static const char* kUnits[5] = {"d", "h", "m", "s", "ms"};
  static const int64_t kMul[5] = {86400000, 3600000, 60000, 1000, 1};
  std::string_view nums[5];
  bool have[5] = {};
  int next = 0;
  while (i < s.size()) {
    size_t start = i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    if (i == start) return bad();
    std::string_view num = s.substr(start, i - start);
    size_t ustart = i;
    while (i < s.size() && !IsDigit(s[i])) ++i;
    std::string_view unit = s.substr(ustart, i - ustart);
    int u = -1;
    for (int k = next; k < 5; ++k) {
      if (unit == kUnits[k]) {
        u = k;
        break;
      }
    }
    if (u < 0) return bad();
    nums[u] = num;
    have[u] = true;
    next = u + 1;
  }
  auto overflow = [&] {
    *error = "Duration overflows internal representation";
    return false;
  };
  int64_t vals[5] = {};
  for (int k = 0; k < 5; ++k) {
    if (!have[k]) continue;
    uint64_t v = 0;
    for (char c : nums[k]) {
      if (__builtin_mul_overflow(v, 10, &v) ||
          __builtin_add_overflow(v, static_cast<uint64_t>(c - '0'), &v)) {
        return overflow();
      }
    }
    if (v > static_cast<uint64_t>(INT64_MAX)) {
      // Only the ms component of a negative duration may reach 2^63.
      if (!(k == 4 && neg && v == static_cast<uint64_t>(INT64_MAX) + 1)) return overflow();
      vals[k] = INT64_MIN;
      continue;
    }
    vals[k] = static_cast<int64_t>(v);
  }
  int64_t ms = neg ? (vals[4] == INT64_MIN ? INT64_MIN : -vals[4]) : vals[4];
  for (int k = 3; k >= 0; --k) {
    int64_t part = 0;
    if (__builtin_mul_overflow(vals[k], kMul[k], &part)) return overflow();
    if (neg ? __builtin_sub_overflow(ms, part, &ms) : __builtin_add_overflow(ms, part, &ms))
      return overflow();
  }
  *out = ms;
  return true;
}

bool IpIsLoopback(const IpAddr& a) {
  // A range is loopback when all of it is: 127.0.0.0/8 and ::1.
  if (!a.v6) return (a.lo >> 24) == 127 && a.prefix >= 8;
  return a.hi == 0 && a.lo == 1 && a.prefix == 128;
}

bool IpIsMulticast(const IpAddr& a) {
  if (!a.v6) return (a.lo >> 28) == 0xE && a.prefix >= 4;
  return (a.hi >> 56) == 0xFF && a.prefix >= 8;
}

bool IpIsInRange(const IpAddr& a, const IpAddr& r) {
  if (a.v6 != r.v6) return false;
  if (!a.v6) {
    auto net = [](uint32_t x, int p) { return p == 0 ? 0u : x & (0xFFFFFFFFu << (32 - p)); };
    auto bcast = [](uint32_t x, int p) { return p == 32 ? x : x | (0xFFFFFFFFu >> p); };
    uint32_t av = static_cast<uint32_t>(a.lo), rv = static_cast<uint32_t>(r.lo);
    return net(rv, r.prefix) <= net(av, a.prefix) && bcast(av, a.prefix) <= bcast(rv, r.prefix);
  }
  // 128-bit arithmetic with two halves.
  struct U {
    uint64_t hi, lo;
  };
  auto mask = [](int p) -> U {  // network mask of p bits
    U m{0, 0};
    if (p >= 64) {
      m.hi = ~0ULL;
      m.lo = p == 64 ? 0 : (~0ULL << (128 - p));
    } else if (p > 0) {
      m.hi = ~0ULL << (64 - p);
    }
    return m;
  };
  auto less_eq = [](U x, U y) { return x.hi < y.hi || (x.hi == y.hi && x.lo <= y.lo); };
  U am = mask(a.prefix), rm = mask(r.prefix);
  U anet{a.hi & am.hi, a.lo & am.lo}, rnet{r.hi & rm.hi, r.lo & rm.lo};
  U ab{a.hi | ~am.hi, a.lo | ~am.lo}, rb{r.hi | ~rm.hi, r.lo | ~rm.lo};
  return less_eq(rnet, anet) && less_eq(ab, rb);
}

std::string DecimalToString(int64_t v) {
  bool neg = v < 0;
  uint64_t u = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%llu.%04llu", neg ? "-" : "", static_cast<unsigned long long>(u / 10000),
                static_cast<unsigned long long>(u % 10000));
  return buf;
}

std::string IpToString(const IpAddr& a) {
  char buf[64];
  if (!a.v6) {
    uint32_t v = static_cast<uint32_t>(a.lo);
    std::snprintf(buf, sizeof buf, "%u.%u.%u.%u/%u", v >> 24, (v >> 16) & 255, (v >> 8) & 255, v & 255,
                  a.prefix);
    return buf;
  }
  std::string out;
  for (int k = 0; k < 8; ++k) {
    uint64_t half = k < 4 ? a.hi : a.lo;
    unsigned g = static_cast<unsigned>((half >> (16 * (3 - (k % 4)))) & 0xFFFF);
    std::snprintf(buf, sizeof buf, "%s%x", k ? ":" : "", g);
    out += buf;
  }
  return out + "/" + std::to_string(a.prefix);
}

}  // namespace govern::policy
