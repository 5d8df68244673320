// RFC 3339 date-times (UTC calendar arithmetic without locale or time zone): the one parser and
// formatter that the audit log, telemetry intake and the gateway's AWS credentials share.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace govern {

// Days since 1970-01-01 of a proleptic Gregorian date, and back (H. Hinnant's algorithms).
int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day);
void CivilFromDays(int64_t days, int64_t& year, unsigned& month, unsigned& day);
bool IsLeapYear(int64_t year);

// A parsed `YYYY-MM-DD(T|t| )HH:MM:SS[.f+](Z|z|±HH:MM)`: the fields as written and the instant.
struct Rfc3339Time {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;  // second may be 60
  int64_t nanos = 0;           // the fraction, truncated to nanoseconds (digits past the 9th ignored)
  int64_t offset_seconds = 0;  // +01:00 is 3600
  int64_t unix_seconds = 0;    // the instant, seconds since 1970 (negative before)
};

// Errors are InvalidArgument with a short reason only ("expected YYYY-MM-DDTHH:MM:SS", "month out of
// range", "day out of range", "time of day out of range", "empty fraction", "bad offset, expected Z or
// +HH:MM", "missing time zone, expected Z or +HH:MM", "trailing characters"); callers add the text and
// their own range checks. Days are checked against the month (leap years included).
Result<Rfc3339Time> ParseRfc3339(std::string_view text);

// "YYYY-MM-DDTHH:MM:SSZ", or with `fraction_digits` (1..9) digits of `nanos` before the Z. Years
// outside 0000..9999 are clamped to them.
std::string FormatRfc3339(int64_t unix_seconds, int64_t nanos = 0, int fraction_digits = 0);

}  // namespace govern
