// Evaluator tests: each operator and extension function, including overflow and error cases. An
// expression is evaluated as the condition of `permit(principal, action, resource) when { ... };`:
// "true" (allowed), "false" (denied, no error) or "error: <message>" (the policy errored).
#include <gtest/gtest.h>

#include <string>

#include "policy/cedar.h"

namespace govern::policy {
namespace {

std::string Eval(const std::string& expr, const std::string& context = "{}",
                 const std::string& entities = "[]") {
  auto set = PolicySet::Parse("permit(principal, action, resource) when { " + expr + " };");
  if (!set.ok()) return "parse: " + set.status().message();
  auto ents = Entities::FromJson(entities);
  if (!ents.ok()) return "entities: " + ents.status().message();
  auto req = Request::Make({"User", "alice"}, {"Action", "view"}, {"Doc", "d1"}, context);
  if (!req.ok()) return "request: " + req.status().message();
  Response r = Authorize(*set, *ents, *req);
  if (!r.errors.empty()) return "error: " + r.errors[0].message;
  return r.decision == Decision::kAllow ? "true" : "false";
}

bool IsError(const std::string& s, const std::string& fragment = "") {
  return s.rfind("error: ", 0) == 0 && s.find(fragment) != std::string::npos;
}

TEST(EvaluatorTest, Literals) {
  EXPECT_EQ(Eval("true"), "true");
  EXPECT_EQ(Eval("false"), "false");
  EXPECT_EQ(Eval("\"a\\n\\u{e9}\" == \"a\n\xc3\xa9\""), "true");
  EXPECT_EQ(Eval("-9223372036854775808 < 9223372036854775807"), "true");
  EXPECT_EQ(Eval("A::B::\"x\" == A::B::\"x\" && A::B::\"x\" != A::\"x\""), "true");
  EXPECT_TRUE(IsError(Eval("1"), "expected bool, got long"));
}

TEST(EvaluatorTest, BooleanOperatorsShortCircuit) {
  EXPECT_EQ(Eval("false && 1"), "false");
  EXPECT_EQ(Eval("true || 1"), "true");
  EXPECT_TRUE(IsError(Eval("true && 1"), "expected bool"));
  EXPECT_TRUE(IsError(Eval("false || 1"), "expected bool"));
  EXPECT_TRUE(IsError(Eval("1 && false"), "expected bool"));
  EXPECT_EQ(Eval("!false && !!true"), "true");
  EXPECT_TRUE(IsError(Eval("!1"), "expected bool"));
  EXPECT_EQ(Eval("if true then true else 1"), "true");
  EXPECT_EQ(Eval("if false then 1 else false"), "false");
  EXPECT_TRUE(IsError(Eval("if 1 then true else false"), "expected bool"));
  EXPECT_EQ(Eval("false && context.missing"), "false");
  EXPECT_TRUE(IsError(Eval("true && context.missing"), "does not have the attribute"));
}

TEST(EvaluatorTest, ArithmeticOverflowIsAnError) {
  EXPECT_EQ(Eval("1 + 2 * 3 - 4 == 3"), "true");
  EXPECT_EQ(Eval("-(-5) == 5 && --5 == 5"), "true");
  EXPECT_TRUE(IsError(Eval("9223372036854775807 + 1 == 0"), "integer overflow while attempting to add"));
  EXPECT_TRUE(IsError(Eval("-9223372036854775808 - 1 == 0"), "subtract"));
  EXPECT_TRUE(IsError(Eval("4611686018427387904 * 2 == 0"), "multiply"));
  EXPECT_TRUE(IsError(Eval("-(-9223372036854775807 - 1) == 0"), "negate"));
  EXPECT_TRUE(IsError(Eval("\"a\" + 1 == 1"), "expected long, got string"));
}

TEST(EvaluatorTest, ComparisonAndEquality) {
  EXPECT_EQ(Eval("1 < 2 && 2 <= 2 && 3 > 2 && 3 >= 3"), "true");
  EXPECT_TRUE(IsError(Eval("\"a\" < \"b\""), "expected one of [long, datetime, duration]"));
  EXPECT_TRUE(IsError(Eval("decimal(\"1.0\") < decimal(\"2.0\")"), "got decimal"));
  EXPECT_TRUE(IsError(Eval("1 < \"a\""), "expected long, got string"));
  EXPECT_EQ(Eval("1 == \"1\""), "false");
  EXPECT_EQ(Eval("1 != \"1\""), "true");
  EXPECT_EQ(Eval("[1, 2, 2] == [2, 1]"), "true");
  EXPECT_EQ(Eval("{a: 1, b: [true]} == {b: [true], a: 1}"), "true");
  EXPECT_EQ(Eval("{a: 1} == {a: 1, b: 2}"), "false");
  EXPECT_EQ(Eval("[context.a, 1] == [1]", R"({"a": 1})"), "true");
  EXPECT_EQ(Eval("{x: context.a}[\"x\"] == 1", R"({"a": 1})"), "true");
}

TEST(EvaluatorTest, InHasAndAttributes) {
  const std::string entities = R"([
    {"uid": {"type": "User", "id": "alice"}, "attrs": {"age": 30, "team": {"__entity": {"type": "Team", "id": "t"}}},
     "parents": [{"type": "Team", "id": "t"}], "tags": {"k": "v"}},
    {"uid": {"type": "Team", "id": "t"}, "attrs": {}, "parents": [{"type": "Org", "id": "o"}]}])";
  EXPECT_EQ(
      Eval("principal in Org::\"o\" && principal in Team::\"t\" && principal in principal", "{}", entities),
      "true");
  EXPECT_EQ(Eval("principal in [Org::\"x\", Org::\"o\"]", "{}", entities), "true");
  EXPECT_EQ(Eval("principal in Org::\"x\"", "{}", entities), "false");
  EXPECT_EQ(Eval("principal in []", "{}", entities), "false");
  EXPECT_TRUE(IsError(Eval("principal in [Org::\"o\", 1]", "{}", entities), "expected entity"));
  EXPECT_TRUE(IsError(Eval("1 in Org::\"o\"", "{}", entities), "expected entity"));
  EXPECT_TRUE(IsError(Eval("principal in 1", "{}", entities)));
  EXPECT_EQ(Eval("principal.team in Org::\"o\" && principal.age == 30", "{}", entities), "true");
  EXPECT_EQ(Eval("principal has age && !(principal has name)", "{}", entities), "true");
  EXPECT_TRUE(IsError(Eval("principal.name == 1", "{}", entities), "does not have the attribute `name`"));
  EXPECT_EQ(Eval("User::\"bob\" has age"), "false");
  EXPECT_TRUE(IsError(Eval("User::\"bob\".age == 1"), "does not exist"));
  EXPECT_EQ(Eval("context has a.b && context.a.b == 1 && context[\"a\"][\"b\"] == 1", R"({"a": {"b": 1}})"),
            "true");
  EXPECT_TRUE(IsError(Eval("context has a.b.c", R"({"a": {"b": 1}})"), "expected one of [record, entity]"));
  EXPECT_TRUE(IsError(Eval("1 has a")));
  EXPECT_EQ(
      Eval("principal is User && !(principal is Team) && principal is User in Org::\"o\"", "{}", entities),
      "true");
  EXPECT_EQ(Eval("principal is Team in 1"), "false");  // `is` fails first: the `in` is never evaluated
  EXPECT_TRUE(IsError(Eval("principal is User in 1"), "set, entity"));
  EXPECT_TRUE(IsError(Eval("1 is User"), "expected entity"));
}

TEST(EvaluatorTest, SetsAndTags) {
  EXPECT_EQ(Eval("[1, \"x\"].contains(\"x\") && [[2, 3]].contains([3, 2])"), "true");
  EXPECT_EQ(Eval("[1, 2].containsAll([1]) && [1].containsAll([]) && [1, 2].containsAny([3, 2]) && "
                 "![1].containsAny([])"),
            "true");
  EXPECT_EQ(Eval("[].isEmpty() && ![1].isEmpty()"), "true");
  EXPECT_TRUE(IsError(Eval("[1].containsAll(1)"), "expected set, got long"));
  EXPECT_TRUE(IsError(Eval("1.contains(1)")));
  const std::string entities =
      R"([{"uid": {"type": "User", "id": "alice"}, "attrs": {}, "parents": [], "tags": {"k": "v"}}])";
  EXPECT_EQ(Eval("principal.hasTag(\"k\") && !principal.hasTag(\"z\") && principal.getTag(\"k\") == \"v\"",
                 "{}", entities),
            "true");
  EXPECT_TRUE(IsError(Eval("principal.getTag(\"z\") == 1", "{}", entities), "does not have the tag"));
  EXPECT_EQ(Eval("principal.hasTag(\"k\")"), "false");
  EXPECT_TRUE(IsError(Eval("principal.getTag(\"k\") == 1"), "does not exist"));
  EXPECT_TRUE(IsError(Eval("principal.hasTag(1)", "{}", entities), "expected string"));
}

TEST(EvaluatorTest, LargeSetsDedupeAndCompareAsSets) {
  std::string up, down, dup;
  for (int k = 0; k < 40; ++k) {
    up += (k ? ", " : "") + std::to_string(k);
    down += (k ? ", " : "") + std::to_string(39 - k);
    dup += (k ? ", " : "") + std::to_string(k % 20);
  }
  EXPECT_EQ(Eval("[" + up + "] == [" + down + "]"), "true");
  EXPECT_EQ(Eval("[" + up + "] == [" + down + ", 40]"), "false");
  EXPECT_EQ(Eval("[" + up + "].containsAll([" + dup + "]) && [" + dup + "] != [" + up + "]"), "true");
  EXPECT_EQ(Eval("[" + dup + ", context.a] == [" + up + "]", R"({"a": 5})"), "false");
  std::string twenty;
  for (int k = 0; k < 20; ++k) twenty += (k ? ", " : "") + std::to_string(k);
  EXPECT_EQ(Eval("[" + dup + ", context.a] == [" + twenty + "]", R"({"a": 5})"), "true");
}

TEST(EvaluatorTest, Like) {
  EXPECT_EQ(Eval("\"abc\" like \"a*c\" && \"abc\" like \"*\" && \"\" like \"*\" && \"abc\" like \"abc\""),
            "true");
  EXPECT_EQ(Eval("\"a*c\" like \"a\\*c\" && !(\"abc\" like \"a\\*c\")"), "true");
  EXPECT_EQ(Eval("\"aaa\" like \"a*a*a\" && !(\"aa\" like \"a*a*a\") && \"abcab\" like \"a*b*b\""), "true");
  EXPECT_EQ(Eval("\"ab\" like \"\""), "false");
  EXPECT_TRUE(IsError(Eval("1 like \"*\""), "expected string"));
}

TEST(EvaluatorTest, IpAddresses) {
  EXPECT_EQ(Eval("ip(\"10.1.2.3\").isInRange(ip(\"10.0.0.0/8\")) && "
                 "!ip(\"10.0.0.0/8\").isInRange(ip(\"10.0.0.0/16\"))"),
            "true");
  EXPECT_EQ(
      Eval("ip(\"127.0.0.1\").isLoopback() && ip(\"::1\").isLoopback() && !ip(\"127.0.0.1/4\").isLoopback()"),
      "true");
  EXPECT_EQ(Eval("ip(\"224.1.1.1\").isMulticast() && ip(\"ff02::1/16\").isMulticast() && "
                 "!ip(\"224.0.0.0/3\").isMulticast()"),
            "true");
  EXPECT_EQ(Eval("ip(\"1:2:3:4:5:6:7:8\").isIpv6() && ip(\"::\").isIpv6() && ip(\"1.2.3.4\").isIpv4()"),
            "true");
  EXPECT_EQ(Eval("ip(\"10.0.0.1/24\") != ip(\"10.0.0.0/24\") && !ip(\"::1\").isInRange(ip(\"1.2.3.4\"))"),
            "true");
  EXPECT_EQ(Eval("context.ip.isInRange(ip(\"192.168.0.0/16\"))",
                 R"({"ip": {"__extn": {"fn": "ip", "arg": "192.168.1.7"}}})"),
            "true");
  EXPECT_TRUE(IsError(Eval("ip(\"01.2.3.4\").isIpv4()"), "invalid IP address"));
  EXPECT_TRUE(IsError(Eval("ip(\"::ffff:1.2.3.4\").isIpv6()"), "IPv4 embedded in IPv6"));
  EXPECT_TRUE(IsError(Eval("ip(\"1.2.3.4/08\").isIpv4()"), "leading zero"));
  EXPECT_TRUE(IsError(Eval("ip(\"1.2.3.4/33\").isIpv4()"), "larger than the limit 32"));
  EXPECT_TRUE(IsError(Eval("ip(\"1::2::3\").isIpv6()")));
  EXPECT_TRUE(IsError(Eval("ip(context.x).isIpv4()", R"({"x": 1})"), "expected string"));
  EXPECT_TRUE(IsError(Eval("ip(\"1.2.3.4\", \"x\").isIpv4()"), "wrong number of arguments"));
  EXPECT_TRUE(IsError(Eval("\"1.2.3.4\".isIpv4()"), "expected ipaddr, got string"));
}

TEST(EvaluatorTest, Decimals) {
  EXPECT_EQ(Eval("decimal(\"1.0\") == decimal(\"1.00\") && decimal(\"-0.0001\").lessThan(decimal(\"0.0\"))"),
            "true");
  EXPECT_EQ(Eval("decimal(\"1.5\").lessThanOrEqual(decimal(\"1.5\")) && "
                 "decimal(\"2.0\").greaterThan(decimal(\"1.9999\")) "
                 "&& decimal(\"2.0\").greaterThanOrEqual(decimal(\"2.0\"))"),
            "true");
  EXPECT_EQ(Eval("decimal(\"-922337203685477.5808\").lessThan(decimal(\"922337203685477.5807\"))"), "true");
  EXPECT_TRUE(IsError(Eval("decimal(\"922337203685477.5808\") == decimal(\"1.0\")"), "overflow"));
  EXPECT_TRUE(IsError(Eval("decimal(\"1.23456\") == decimal(\"1.0\")"), "too many digits"));
  EXPECT_TRUE(IsError(Eval("decimal(\"1\") == decimal(\"1.0\")"), "not a well-formed decimal"));
  EXPECT_TRUE(IsError(Eval("decimal(\".5\") == decimal(\"1.0\")"), "not a well-formed decimal"));
  EXPECT_TRUE(IsError(Eval("decimal(\"1.5\").lessThan(1)"), "expected decimal, got long"));
}

TEST(EvaluatorTest, DatetimesAndDurations) {
  EXPECT_EQ(Eval("datetime(\"2024-01-01\") < datetime(\"2024-01-02\") && datetime(\"2024-01-01\") == "
                 "datetime(\"2024-01-01T00:00:00Z\")"),
            "true");
  EXPECT_EQ(Eval("datetime(\"2024-01-01T10:00:00-0130\") == datetime(\"2024-01-01T11:30:00Z\")"), "true");
  EXPECT_EQ(Eval("datetime(\"2024-01-01T10:00:00.123Z\").toTime() == duration(\"10h123ms\")"), "true");
  EXPECT_EQ(Eval("datetime(\"1969-12-31T23:00:00Z\").toDate() == datetime(\"1969-12-31\") && "
                 "datetime(\"1969-12-31T23:00:00Z\").toTime() == duration(\"23h\")"),
            "true");
  EXPECT_EQ(Eval("datetime(\"2024-01-02\").durationSince(datetime(\"2024-01-01\")) == duration(\"24h\")"),
            "true");
  EXPECT_EQ(Eval("datetime(\"2024-01-01\").offset(duration(\"-1d\")) == datetime(\"2023-12-31\")"), "true");
  EXPECT_EQ(Eval("duration(\"-1d1h\").toHours() == -25 && duration(\"90s\").toMinutes() == 1 && "
                 "duration(\"1d\").toDays() == 1 && duration(\"1s\").toMilliseconds() == 1000 && "
                 "duration(\"1500ms\").toSeconds() == 1"),
            "true");
  EXPECT_EQ(Eval("duration(\"1h\") > duration(\"59m\")"), "true");
  EXPECT_TRUE(
      IsError(Eval("datetime(\"2024-01-01\") < duration(\"1d\")"), "expected datetime, got duration"));
  EXPECT_TRUE(IsError(Eval("datetime(\"2023-02-29\") == datetime(\"2023-03-01\")"), "invalid date"));
  EXPECT_TRUE(
      IsError(Eval("datetime(\"2024-01-01T24:00:00Z\") == datetime(\"2024-01-01\")"), "hour/minute/second"));
  EXPECT_TRUE(
      IsError(Eval("datetime(\"2024-01-01T10:00:00\") == datetime(\"2024-01-01\")"), "offset pattern"));
  EXPECT_TRUE(
      IsError(Eval("datetime(\"2024-01-01T10:00:00+2400\") == datetime(\"2024-01-01\")"), "offset range"));
  EXPECT_TRUE(IsError(Eval("duration(\"1d1d\") == duration(\"2d\")"), "invalid duration pattern"));
  EXPECT_TRUE(IsError(Eval("duration(\"\") == duration(\"2d\")"), "invalid duration pattern"));
  EXPECT_TRUE(IsError(Eval("duration(\"106751991168d\") == duration(\"1d\")"), "overflows"));
  EXPECT_EQ(Eval("duration(\"-9223372036854775808ms\") < duration(\"0ms\")"), "true");
  EXPECT_TRUE(IsError(Eval("datetime(\"0000-01-01\").offset(duration(\"-9223372036854775807ms\")) < "
                           "datetime(\"1970-01-01\")"),
                      "overflow"));
}

}  // namespace
}  // namespace govern::policy
