#include "base/time_format.h"

namespace govern {

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

bool IsLeapYear(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

namespace {

bool Digits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

void Put(std::string& out, int64_t v, int width) {
  const size_t at = out.size();
  out.resize(at + static_cast<size_t>(width));
  for (int i = width - 1; i >= 0; --i) {
    out[at + static_cast<size_t>(i)] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
}

}  // namespace

Result<Rfc3339Time> ParseRfc3339(std::string_view s) {
  Rfc3339Time t;
  if (!Digits(s, 0, 4, t.year) || s.size() < 19 || s[4] != '-' || !Digits(s, 5, 2, t.month) || s[7] != '-' ||
      !Digits(s, 8, 2, t.day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !Digits(s, 11, 2, t.hour) ||
      s[13] != ':' || !Digits(s, 14, 2, t.minute) || s[16] != ':' || !Digits(s, 17, 2, t.second)) {
    return InvalidArgument("expected YYYY-MM-DDTHH:MM:SS");
  }
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (t.month < 1 || t.month > 12) return InvalidArgument("month out of range");
  if (t.day < 1 || t.day > kDays[t.month - 1] + (t.month == 2 && IsLeapYear(t.year) ? 1 : 0))
    return InvalidArgument("day out of range");
  if (t.hour > 23 || t.minute > 59 || t.second > 60) return InvalidArgument("time of day out of range");
  size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    const size_t start = pos;
    int64_t scale = 100000000;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      t.nanos += (s[pos] - '0') * scale;  // digits past nanoseconds add 0 (scale reaches 0)
      scale /= 10;
      ++pos;
    }
    if (pos == start) return InvalidArgument("empty fraction");
  }
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!Digits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' || !Digits(s, pos + 4, 2, om) ||
        oh > 23 || om > 59) {
      return InvalidArgument("bad offset, expected Z or +HH:MM");
    }
    t.offset_seconds = (oh * 3600 + om * 60) * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return InvalidArgument("missing time zone, expected Z or +HH:MM");
  }
  if (pos != s.size()) return InvalidArgument("trailing characters");
  t.unix_seconds = DaysFromCivil(t.year, static_cast<unsigned>(t.month), static_cast<unsigned>(t.day)) * 86400 +
                   t.hour * 3600 + t.minute * 60 + t.second - t.offset_seconds;
  return t;
}

std::string FormatRfc3339(int64_t unix_seconds, int64_t nanos, int fraction_digits) {
  constexpr int64_t kMin = -62167219200;  // 0000-01-01T00:00:00Z
  constexpr int64_t kMax = 253402300799;  // 9999-12-31T23:59:59Z
  if (unix_seconds < kMin) unix_seconds = kMin, nanos = 0;
  if (unix_seconds > kMax) unix_seconds = kMax, nanos = 999999999;
  int64_t days = unix_seconds / 86400, sod = unix_seconds % 86400;
  if (sod < 0) {
    sod += 86400;
    --days;
  }
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, y, m, d);
  std::string out;
  out.reserve(32);
  Put(out, y, 4);
  out += '-';
  Put(out, m, 2);
  out += '-';
  Put(out, d, 2);
  out += 'T';
  Put(out, sod / 3600, 2);
  out += ':';
  Put(out, sod / 60 % 60, 2);
  out += ':';
  Put(out, sod % 60, 2);
  if (fraction_digits > 0) {
    if (fraction_digits > 9) fraction_digits = 9;
    if (nanos < 0 || nanos > 999999999) nanos = 0;
    int64_t v = nanos;
    for (int i = fraction_digits; i < 9; ++i) v /= 10;
    out += '.';
    Put(out, v, fraction_digits);
  }
  out += 'Z';
  return out;
}

}  // namespace govern
