#include "services/http_config.h"

#include <gtest/gtest.h>

namespace govern::services {
namespace {

TEST(ParseListenTest, Forms) {
  auto a = ParseListen("127.0.0.1:7700");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7700);
  a = ParseListen("[::1]:0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 0);
  a = ParseListen(":80");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "0.0.0.0");
  EXPECT_EQ(ParseListen("localhost:1")->host, "127.0.0.1");
}

TEST(ParseListenTest, Errors) {
  for (const char* bad : {"", "7700", "host:", "host:70000", "::1:80", "[::1]80", "h:8o"}) {
    EXPECT_EQ(ParseListen(bad).status().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(ParseListenTest, Format) {
  EXPECT_EQ(FormatListen("::1", 80), "[::1]:80");
  EXPECT_EQ(FormatListen("127.0.0.1", 80), "127.0.0.1:80");
}

}  // namespace
}  // namespace govern::services
