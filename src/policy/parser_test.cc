// Parser tests: every construct parses, and every error names its line and column.
#include <gtest/gtest.h>

#include <string>

#include "policy/ast.h"
#include "policy/cedar.h"

namespace govern::policy {
namespace {

TEST(ParserTest, EveryConstructParses) {
  const char* kPolicies[] = {
      "permit(principal, action, resource);",
      "forbid(principal == User::\"a\", action == Action::\"view\", resource == Doc::\"d\");",
      "permit(principal in Team::\"t\", action in [Action::\"a\", NS::Action::\"b\"], resource in "
      "Folder::\"f\");",
      "permit(principal is User, action in Action::\"all\", resource is NS::Doc in Folder::\"f\");",
      "permit(principal, action, resource,);",
      "@id(\"x\") @advice(\"a \\\"quoted\\\" note\") @bare permit(principal, action, resource);",
      "permit(principal, action, resource) when { true } unless { false } when { 1 == 1 };",
      "permit(principal, action, resource) when { if context.a then 1 < 2 else !(3 >= 4) };",
      "permit(principal, action, resource) when { 1 + 2 - 3 * -4 == --5 && -9223372036854775808 < 0 };",
      "permit(principal, action, resource) when { principal in Group::\"g\" || principal in [A::\"x\", "
      "B::\"y\"] };",
      "permit(principal, action, resource) when { context has a && context has \"b c\" && context has a.b.c "
      "};",
      "permit(principal, action, resource) when { \"abc\" like \"a*\\*c\" && principal is User in "
      "Team::\"t\" };",
      "permit(principal, action, resource) when { context.a.b[\"c d\"] == [1, \"x\", {k: true, \"l m\": [] "
      "}] };",
      "permit(principal, action, resource) when { [1].contains(1) && [1].containsAll([]) && "
      "[1].containsAny([1]) "
      "&& ![].isEmpty() == false };",
      "permit(principal, action, resource) when { principal.hasTag(\"k\") && principal.getTag(\"k\") == 1 };",
      "permit(principal, action, resource) when { ip(\"10.0.0.1\").isInRange(ip(\"10.0.0.0/8\")) && "
      "ip(\"::1\").isLoopback() && !ip(\"1.2.3.4\").isMulticast() && ip(\"1.2.3.4\").isIpv4() && "
      "!ip(\"1.2.3.4\").isIpv6() };",
      "permit(principal, action, resource) when { decimal(\"1.5\").lessThan(decimal(\"2.0\")) && "
      "decimal(\"1.5\").lessThanOrEqual(decimal(\"1.5\")) && decimal(\"2.0\").greaterThan(decimal(\"1.0\")) "
      "&& "
      "decimal(\"2.0\").greaterThanOrEqual(decimal(\"2.0\")) };",
      "permit(principal, action, resource) when { datetime(\"2024-01-01\").offset(duration(\"1d\")) > "
      "datetime(\"2024-01-01T00:00:00Z\") && "
      "datetime(\"2024-01-02\").durationSince(datetime(\"2024-01-01\")).toDays() "
      "== 1 && datetime(\"2024-01-01T10:00:00.5+0100\").toDate() <= datetime(\"2024-01-01\") && "
      "datetime(\"2024-01-01\").toTime().toMilliseconds() == 0 && duration(\"1h\").toHours() + "
      "duration(\"1m\").toMinutes() + duration(\"1s\").toSeconds() == 3 };",
      "// a comment\npermit(principal, action, resource) // trailing\n when { "
      "\"\\u{1F600}\\n\\t\\r\\0\\\\\\'\" != \"\" };",
  };
  for (const char* text : kPolicies) {
    auto set = PolicySet::Parse(text);
    EXPECT_TRUE(set.ok()) << text << "\n" << set.status().message();
  }
}

TEST(ParserTest, IdsAreInTextOrderAndAnnotationsKept) {
  auto set = PolicySet::Parse(
      "@id(\"first\") permit(principal, action, resource);\n"
      "forbid(principal, action, resource);\n"
      "@bare permit(principal, action, resource);");
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_EQ(set->size(), 3u);
  EXPECT_EQ(set->id(0), "policy0");
  EXPECT_EQ(set->id(2), "policy2");
  EXPECT_FALSE(set->is_forbid(0));
  EXPECT_TRUE(set->is_forbid(1));
  ASSERT_EQ(set->annotations(0).size(), 1u);
  EXPECT_EQ(set->annotations(0)[0].first, "id");
  EXPECT_EQ(set->annotations(0)[0].second, "first");
  ASSERT_EQ(set->annotations(2).size(), 1u);
  EXPECT_EQ(set->annotations(2)[0].second, "");
}

TEST(ParserTest, EmptyTextIsAnEmptySet) {
  auto set = PolicySet::Parse("  // only a comment\n");
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->size(), 0u);
}

TEST(ParserTest, ErrorsNameLineAndColumn) {
  struct Case {
    const char* text;
    const char* error;  // expected prefix "line:col: " and a fragment of the message
  };
  const Case kCases[] = {
      {"permit(principal, action, resource)", "1:36: unexpected end of input"},
      {"permit(principal, action, resource) when { 1 == 1 }", "1:52: unexpected end of input"},
      {"allow(principal, action, resource);", "1:1: expected `permit` or `forbid`"},
      {"permit(action, principal, resource);", "1:8: found the variable `action`"},
      {"permit(principal, action, resource) when { foo };", "1:44: invalid variable: foo"},
      {"permit(principal, action, resource) when { foo(1) };", "1:44: `foo` is not a valid function"},
      {"permit(principal, action, resource) when { [1].foo() };", "1:48: `foo` is not a valid method"},
      {"permit(principal, action, resource) when { [1].contains(1, 2) };",
       "1:48: call to `contains` requires"},
      {"permit(principal, action, resource) when { 1 < 2 < 3 };", "1:50: multiple relational operators"},
      {"permit(principal, action, resource) when { 9223372036854775808 == 1 };", "1:44: integer literal"},
      {"permit(principal, action, resource) when { !!!!!true };", "1:44: too many occurrences of `!`"},
      {"permit(principal, action, resource) when { context.if };", "1:52: this identifier is reserved"},
      {"permit(principal, action, resource) when { {a: 1, a: 2} == {} };", "1:51: duplicate key `a`"},
      {"permit(principal, action, resource) when { \"\\q\" == \"\" };",
       "1:44: the input `\\q` is not a valid escape"},
      {"permit(principal, action == Foo::\"x\", resource);",
       "1:29: expected an entity uid with type `Action`"},
      {"permit(principal, action is Action, resource);", "1:26: `is` cannot appear in the action scope"},
      {"permit(principal in [User::\"a\"], action, resource);", "1:21: expected single entity uid"},
      {"permit(principal == ?principal, action, resource);", "1:21: static policy set includes a template"},
      {"@a(\"x\") @a(\"y\") permit(principal, action, resource);", "1:9: duplicate annotation: @a"},
      {"permit(principal, action, resource) when { \"abc };", "1:44: unterminated string literal"},
      {"permit(principal, action, resource) when { # };", "1:44: unexpected character `#`"},
      {"permit(principal, action, resource);\n\n  forbid(principal, action, resource) when { 1 + };",
       "3:50: unexpected token `}`"},
      {"permit(principal, action, resource) when { };", "1:44: a condition needs an expression"},
      {"permit(principal, action, resource) when { context.__cedar };", "1:52: The name `__cedar`"},
  };
  for (const Case& c : kCases) {
    auto set = PolicySet::Parse(c.text);
    ASSERT_FALSE(set.ok()) << c.text;
    EXPECT_EQ(set.status().code(), Code::kInvalidArgument);
    EXPECT_NE(set.status().message().find(c.error), std::string::npos)
        << c.text << "\n got: " << set.status().message() << "\n want: " << c.error;
  }
}

TEST(ParserTest, ColumnsCountCharactersNotBytes) {
  auto set = PolicySet::Parse("permit(principal, action, resource) when { \"é\" == foo };");
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("1:51:"), std::string::npos) << set.status().message();
}

TEST(ParserTest, HugePoliciesAreRefusedNotOverflowed) {
  std::string text = "permit(principal, action, resource) when { 1";
  for (int k = 0; k < 20000; ++k) text += " + 1";
  text += " == 0 };";
  auto set = PolicySet::Parse(text);
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("nested too deeply"), std::string::npos) << set.status().message();
  std::string wide = "permit(principal, action, resource) when { [1";
  for (int k = 0; k < 20000; ++k) wide += ", 1";
  wide += "].contains(1) };";
  EXPECT_TRUE(PolicySet::Parse(wide).ok());
  std::string nested = "permit(principal, action, resource) when { " + std::string(1000, '(') + "true" +
                       std::string(1000, ')') + " };";
  EXPECT_FALSE(PolicySet::Parse(nested).ok());
}

TEST(ParserTest, ActionEqualityPoliciesAreIndexed) {
  auto set = PolicySet::Parse(
      "permit(principal, action == Action::\"a\", resource);\n"
      "permit(principal, action in [Action::\"a\"], resource);\n"
      "permit(principal, action, resource);");
  ASSERT_TRUE(set.ok());
  const CompiledPolicySet& c = set->compiled();
  EXPECT_EQ(c.by_action.size(), 1u);
  EXPECT_EQ(c.any_action.size(), 2u);
}

}  // namespace
}  // namespace govern::policy
