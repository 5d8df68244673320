// Form parsing: RFC 6749 section 3.1 rules, escapes, limits.
#include "services/auth/form.h"

#include <gtest/gtest.h>

namespace govern::auth_service {
namespace {

TEST(Form, ReadsPairsWithEscapesAndPlus) {
  auto f = Form::Parse(
      "grant_type=authorization_code&redirect_uri=https%3A%2F%2Fa.example%2Fcb&scope=openid+email");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->GetOr("grant_type"), "authorization_code");
  EXPECT_EQ(f->GetOr("redirect_uri"), "https://a.example/cb");
  EXPECT_EQ(f->GetOr("scope"), "openid email");
}

TEST(Form, EmptyValueIsAbsent) {
  auto f = Form::Parse("a=&b&c=1");
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->Get("a"));
  EXPECT_FALSE(f->Get("b"));
  EXPECT_EQ(f->GetOr("c"), "1");
  EXPECT_EQ(f->GetOr("a", "x"), "x");
}

TEST(Form, RefusesRepeatedParameter) {
  auto f = Form::Parse("code=1&code=2");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("code is repeated"), std::string::npos);
}

TEST(Form, RefusesBadEscapes) {
  EXPECT_FALSE(Form::Parse("a=%4").ok());
  EXPECT_FALSE(Form::Parse("a=%zz").ok());
  EXPECT_FALSE(Form::Parse("a=%").ok());
  EXPECT_FALSE(Form::Parse("=1").ok());
  EXPECT_FALSE(Form::Parse("a=%0a").ok());            // control character
  EXPECT_TRUE(Form::Parse("password=%0a%09x").ok());  // a password may hold them
  EXPECT_FALSE(Form::Parse("password=%00").ok());
}

TEST(Form, LimitsParameterCount) {
  std::string body;
  for (int i = 0; i < 65; ++i) body += "p" + std::to_string(i) + "=1&";
  EXPECT_FALSE(Form::Parse(body).ok());
  EXPECT_TRUE(Form::Parse(body, 100).ok());
}

TEST(Form, EncodeRoundTrips) {
  std::string s = "a b&c=d/é~";
  auto f = Form::Parse("x=" + FormEncode(s));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->GetOr("x"), s);
}

}  // namespace
}  // namespace govern::auth_service
