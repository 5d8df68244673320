// Filter parser structure (precedence, normal form) and limits; the matching itself is covered by the
// data-driven suite (conformance_test.cc, testdata/).
#include "scim/filter.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace govern::scim {
namespace {

std::string Normal(std::string_view text) {
  std::unique_ptr<Filter> f;
  Error e = ParseFilter(UserResourceType(), text, &f);
  if (!e.ok()) return "error " + e.scim_type + ": " + e.detail;
  return f->ToString();
}

TEST(ScimFilter, PrecedenceNotAndOr) {
  EXPECT_EQ(Normal(R"(userName eq "a" or title pr and active eq true)"),
            R"((userName eq "a" or (title pr and active eq true)))");
  EXPECT_EQ(Normal(R"((userName eq "a" or title pr) and active eq true)"),
            R"(((userName eq "a" or title pr) and active eq true))");
  EXPECT_EQ(Normal(R"(not (userName eq "a") and title pr)"), R"((not (userName eq "a") and title pr))");
  EXPECT_EQ(Normal(R"(a eq "1" or b eq "2")").substr(0, 14), "error invalidF");
}

TEST(ScimFilter, NamesAreCaseInsensitiveAndCanonicalised) {
  EXPECT_EQ(Normal(R"(USERNAME Eq "X")"), R"(userName eq "X")");
  EXPECT_EQ(Normal(R"(Name.GivenName SW "b")"), R"(name.givenName sw "b")");
  EXPECT_EQ(Normal(R"(urn:ietf:params:scim:schemas:core:2.0:User:userName eq "x")"), R"(userName eq "x")");
  EXPECT_EQ(Normal(R"(URN:IETF:PARAMS:SCIM:SCHEMAS:EXTENSION:ENTERPRISE:2.0:USER:manager.value eq "x")"),
            R"(urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager.value eq "x")");
  // A complex multi-valued attribute without a sub-attribute compares its "value".
  EXPECT_EQ(Normal(R"(emails co "@x")"), R"(emails.value co "@x")");
}

TEST(ScimFilter, ValueFilterWithTrailingSubAttribute) {
  EXPECT_EQ(Normal(R"(emails[type eq "work"].value eq "a@b")"),
            R"(emails[(type eq "work" and value eq "a@b")])");
  EXPECT_EQ(Normal(R"(emails[type eq "work" and not (primary eq false)])"),
            R"(emails[(type eq "work" and not (primary eq false))])");
}

TEST(ScimFilter, StringEscapes) { EXPECT_EQ(Normal(R"(userName eq "a\"b\\c")"), R"(userName eq "a\"b\\c")"); }

TEST(ScimFilter, DepthAndLengthAreBounded) {
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "(";
  deep += R"(userName eq "a")";
  for (int i = 0; i < 200; ++i) deep += ")";
  std::unique_ptr<Filter> f;
  Error e = ParseFilter(UserResourceType(), deep, &f);
  EXPECT_EQ(e.scim_type, "invalidFilter");
  std::string nots;
  for (int i = 0; i < 200; ++i) nots += "not (";
  e = ParseFilter(UserResourceType(), nots, &f);
  EXPECT_EQ(e.scim_type, "invalidFilter");
  std::string long_filter(kMaxFilterLength + 1, 'a');
  EXPECT_EQ(ParseFilter(UserResourceType(), long_filter, &f).scim_type, "invalidFilter");
}

TEST(ScimFilter, ErrorJsonHasStatusAsString) {
  nlohmann::json j = InvalidFilter("bad").ToJson();
  EXPECT_EQ(j["status"], "400");
  EXPECT_EQ(j["scimType"], "invalidFilter");
  EXPECT_EQ(j["schemas"][0], kErrorSchema);
}

}  // namespace
}  // namespace govern::scim
