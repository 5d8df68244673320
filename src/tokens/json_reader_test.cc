// The strict JSON reader: what RFC 8259 allows is read (escapes decoded), everything else refused.
#include "tokens/json_reader.h"

#include <gtest/gtest.h>

namespace govern::tokens::internal {
namespace {

bool Accepts(std::string_view text) {
  JsonReader r(text);
  return r.Skip().ok() && r.End().ok();
}

TEST(JsonReader, AcceptsValidJson) {
  for (std::string_view ok : {R"({})", R"([])", R"({"a":[1,-2,3.5e10,0,-0.0,1E+2,true,false,null,"x",{}]})",
                              " \t\r\n{ \"a\" : \"b\" } \n", R"("\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t")",
                              "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"", R"(123456789012345678901234567890)"}) {
    EXPECT_TRUE(Accepts(ok)) << ok;
  }
}

TEST(JsonReader, RefusesEverythingElse) {
  for (std::string_view bad : {"",
                               "{",
                               "}",
                               R"({"a":1,})",
                               R"([1,])",
                               R"({"a" 1})",
                               R"({a:1})",
                               "{'a':1}",
                               R"({"a":01})",
                               R"({"a":1.})",
                               R"({"a":.5})",
                               R"({"a":1e})",
                               R"({"a":+1})",
                               R"({"a":NaN})",
                               R"({"a":tru})",
                               R"({"a":nul})",
                               R"({} {})",
                               R"({"a":"\x"})",
                               R"({"a":"\u12"})",
                               R"({"a":"\ud83d"})",
                               R"({"a":"\ude00"})",
                               "{\"a\":\"\x01\"}",
                               "{\"a\":\"\xc3\"}",
                               "{\"a\":\"\xc0\xaf\"}",
                               "{\"a\":\"\xed\xa0\x80\"}",
                               "{\"a\":\"\xf5\x80\x80\x80\"}",
                               R"({"a":1,"a":2})",
                               R"([{"b":1,"b":1}])",
                               R"(/*c*/{})",
                               R"({"a":"unterminated)",
                               "1e400",
                               "-1e400"}) {
    EXPECT_FALSE(Accepts(bad)) << bad;
  }
  std::string deep(40, '[');
  deep += std::string(40, ']');
  EXPECT_FALSE(Accepts(deep));
  std::string ok_depth(20, '[');
  ok_depth += std::string(20, ']');
  EXPECT_TRUE(Accepts(ok_depth));
}

TEST(JsonReader, DecodesStringsAndNumbers) {
  JsonReader r(R"({"s":"a\u00e9\ud83d\ude00\n","n":1700000000,"f":1.5})");
  ASSERT_TRUE(r.BeginObject().ok());
  std::string key, value;
  ASSERT_TRUE(*r.NextMember(&key));
  EXPECT_EQ(key, "s");
  ASSERT_TRUE(r.ReadString(&value).ok());
  EXPECT_EQ(value, "a\xc3\xa9\xf0\x9f\x98\x80\n");
  ASSERT_TRUE(*r.NextMember(&key));
  double d;
  bool integral;
  int64_t i;
  ASSERT_TRUE(r.ReadNumber(&d, &integral, &i).ok());
  EXPECT_TRUE(integral);
  EXPECT_EQ(i, 1700000000);
  ASSERT_TRUE(*r.NextMember(&key));
  ASSERT_TRUE(r.ReadNumber(&d, &integral, &i).ok());
  EXPECT_FALSE(integral);
  EXPECT_EQ(d, 1.5);
  EXPECT_FALSE(*r.NextMember(&key));
  EXPECT_TRUE(r.End().ok());
}

}  // namespace
}  // namespace govern::tokens::internal
