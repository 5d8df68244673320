// HexDigitValue and TrimAscii: digits, both ends, the default and given character sets.
#include "base/ascii.h"

#include <gtest/gtest.h>

namespace govern {
namespace {

TEST(AsciiTest, HexDigitValue) {
  EXPECT_EQ(HexDigitValue('0'), 0);
  EXPECT_EQ(HexDigitValue('9'), 9);
  EXPECT_EQ(HexDigitValue('a'), 10);
  EXPECT_EQ(HexDigitValue('F'), 15);
  EXPECT_EQ(HexDigitValue('g'), -1);
  EXPECT_EQ(HexDigitValue(' '), -1);
}

TEST(AsciiTest, TrimAsciiTakesOptionalWhitespaceFromBothEnds) {
  EXPECT_EQ(TrimAscii(" \t application/json \t"), "application/json");
  EXPECT_EQ(TrimAscii("a b"), "a b");  // inner whitespace stays
  EXPECT_EQ(TrimAscii(""), "");
  EXPECT_EQ(TrimAscii(" \t \t"), "");
  EXPECT_EQ(TrimAscii("x"), "x");
  EXPECT_EQ(TrimAscii("value\r"), "value\r");  // CR is not optional whitespace
}

TEST(AsciiTest, TrimAsciiTakesTheGivenSet) {
  EXPECT_EQ(TrimAscii("key = value \r", " \t\r"), "key = value");
  EXPECT_EQ(TrimAscii("\r\n token \r\n", " \t\r\n"), "token");
  EXPECT_EQ(TrimAscii("xxabcxx", "x"), "abc");
  static_assert(TrimAscii("  ab ") == "ab");
}

}  // namespace
}  // namespace govern
