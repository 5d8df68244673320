#include "base/log.h"

#include <gtest/gtest.h>

namespace govern::log {
namespace {

TEST(LogTest, TextLineIsLogfmt) {
  std::string line = FormatLine(Format::kText, 1'700'000'000'123'456, Level::kWarn, "wal", "disk \"full\"",
                                {{"segment", 3}, {"path", "/var/wal 1"}, {"ok", false}});
  EXPECT_EQ(line,
            "ts=2023-11-14T22:13:20.123456Z level=warn component=wal msg=\"disk \\\"full\\\"\" segment=3 "
            "path=\"/var/wal 1\" ok=false\n");
}

TEST(LogTest, JsonLineEscapes) {
  std::string line = FormatLine(Format::kJson, 0, Level::kError, "http", "bad\nline", {{"k", "a\"b\x01"}});
  EXPECT_EQ(line,
            "{\"ts\":\"1970-01-01T00:00:00.000000Z\",\"level\":\"error\",\"component\":\"http\","
            "\"msg\":\"bad\\nline\",\"k\":\"a\\\"b\\u0001\"}\n");
}

TEST(LogTest, ParseLevel) {
  Level l;
  EXPECT_TRUE(ParseLevel("debug", &l));
  EXPECT_EQ(l, Level::kDebug);
  EXPECT_FALSE(ParseLevel("loud", &l));
}

}  // namespace
}  // namespace govern::log
