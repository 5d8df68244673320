// RFC 3339 parsing and formatting (time_format.h).
#include "base/time_format.h"

#include <gtest/gtest.h>

namespace govern {
namespace {

TEST(TimeFormatTest, ParsesFieldsOffsetsAndFractions) {
  auto t = ParseRfc3339("2016-02-25T07:03:31.123456789123+01:00");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->year, 2016);
  EXPECT_EQ(t->month, 2);
  EXPECT_EQ(t->second, 31);
  EXPECT_EQ(t->nanos, 123456789);
  EXPECT_EQ(t->offset_seconds, 3600);
  EXPECT_EQ(t->unix_seconds, 1456380211);
  EXPECT_EQ(ParseRfc3339("1970-01-01t00:00:00z")->unix_seconds, 0);
  EXPECT_EQ(ParseRfc3339("1969-12-31 23:59:59Z")->unix_seconds, -1);
  EXPECT_EQ(ParseRfc3339("2024-02-29T23:59:59Z")->unix_seconds, 1709251199);
  EXPECT_EQ(ParseRfc3339("2016-12-31T23:59:60Z")->second, 60);
  EXPECT_EQ(ParseRfc3339("2016-02-25T06:03:31.25-00:30")->nanos, 250000000);
  EXPECT_EQ(ParseRfc3339("9999-12-31T23:59:59Z")->unix_seconds, 253402300799);
}

TEST(TimeFormatTest, Rejects) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "expected YYYY-MM-DDTHH:MM:SS"},
      {"2016-02-25", "expected YYYY-MM-DDTHH:MM:SS"},
      {"2016-02-25X06:03:31Z", "expected YYYY-MM-DDTHH:MM:SS"},
      {"2016-13-25T06:03:31Z", "month out of range"},
      {"2023-02-29T06:03:31Z", "day out of range"},
      {"2016-04-31T06:03:31Z", "day out of range"},
      {"2016-02-25T24:03:31Z", "time of day out of range"},
      {"2016-02-25T06:03:61Z", "time of day out of range"},
      {"2016-02-25T06:03:31.Z", "empty fraction"},
      {"2016-02-25T06:03:31+0100", "bad offset, expected Z or +HH:MM"},
      {"2016-02-25T06:03:31", "missing time zone, expected Z or +HH:MM"},
      {"2016-02-25T06:03:31Zx", "trailing characters"},
  };
  for (const auto& [text, why] : cases) {
    auto r = ParseRfc3339(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(r.status().message(), why) << text;
  }
}

TEST(TimeFormatTest, FormatsAndRoundTrips) {
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(1456380211), "2016-02-25T06:03:31Z");
  EXPECT_EQ(FormatRfc3339(-1), "1969-12-31T23:59:59Z");
  EXPECT_EQ(FormatRfc3339(1456380211, 123456789, 6), "2016-02-25T06:03:31.123456Z");
  EXPECT_EQ(FormatRfc3339(1456380211, 5, 9), "2016-02-25T06:03:31.000000005Z");
  EXPECT_EQ(FormatRfc3339(int64_t{1} << 62), "9999-12-31T23:59:59Z");  // clamped
  EXPECT_EQ(FormatRfc3339(-(int64_t{1} << 62)), "0000-01-01T00:00:00Z");
  for (int64_t s : {int64_t{0}, int64_t{951782400}, int64_t{1709251199}, int64_t{-86401}, int64_t{4102444800}}) {
    EXPECT_EQ(ParseRfc3339(FormatRfc3339(s))->unix_seconds, s) << s;
  }
}

}  // namespace
}  // namespace govern
