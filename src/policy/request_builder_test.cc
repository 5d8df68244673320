// RequestBuilder tests: typed setters and the context JSON reader give exactly the values and
// errors of Request::Make; storage reused across requests leaves nothing behind; misuse is an error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "policy/cedar.h"
#include "policy/entity_store.h"

namespace govern::policy {
namespace {

Request MakeOrDie(const std::string& context) {
  auto r = Request::Make({"Agent", "a1"}, {"Action", "call_tool"}, {"Tool", "search"}, context);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return *r;
}

RequestBuilder& Uids(RequestBuilder& b) {
  return b.Principal("Agent", "a1").Action("Action", "call_tool").Resource("Tool", "search");
}

TEST(RequestBuilderTest, TypedSettersEqualTheJsonContext) {
  RequestBuilder b;
  Uids(b.Reset())
      .Long("cost_cents", 12)
      .Bool("dry_run", false)
      .Entity("owner", "User", "alice")
      .BeginRecord("args")
      .String("url", "https://example.com")
      .Long("max_results", -5)
      .BeginSet("langs")
      .String("", "en")
      .String("", "fr")
      .String("", "en")
      .End()
      .End()
      .BeginSet("nested")
      .BeginRecord("")
      .Long("a", 1)
      .End()
      .BeginRecord("")
      .Long("a", 1)
      .End()
      .BeginRecord("")
      .End()
      .End();
  ASSERT_TRUE(b.status().ok()) << b.status().message();
  Request want = MakeOrDie(
      R"({"cost_cents": 12, "dry_run": false, "owner": {"__entity": {"type": "User", "id": "alice"}},
    "args": {"max_results": -5, "url": "https://example.com", "langs": ["en", "fr"]}, "nested": [{"a": 1}, {}]})");
  EXPECT_TRUE(ValueEquals(b.data().context, want.data().context))
      << ValueToString(b.data().context) << " vs " << ValueToString(want.data().context);
  EXPECT_EQ(ValueToString(b.data().context), ValueToString(want.data().context));
  EXPECT_EQ(b.data().principal->ToString(), "Agent::\"a1\"");

  auto copy = b.Build();
  ASSERT_TRUE(copy.ok());
  b.Reset().Long("other", 1);  // the copy does not change with the builder
  EXPECT_TRUE(ValueEquals(copy->data().context, want.data().context));
}

TEST(RequestBuilderTest, ContextJsonAgreesWithRequestMake) {
  const std::vector<std::string> inputs = {
      "",
      "{}",
      " { \"a\" : 1 , \"b\" : [ true , false , \"x\" ] } ",
      R"({"args": {"max_results": 5, "url": "https://example.com"}, "cost_cents": 1})",
      R"({"s": "tab\tquote\"slash\/back\\nl\n", "k\"ey": 1, "e\\": 2})",
      "{\"u\": \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}",
      R"({"u": "\u00e9\ud83d\ude00"})",                         // \u escapes: the general path
      R"({"who": {"__entity": {"type": "User", "id": "a"}}})",  // escape objects: the general path
      R"({"ip": {"__extn": {"fn": "ip", "arg": "10.0.0.1"}}})",
      R"({"__entity": 1, "x": 2})",
      R"({"n": -9223372036854775808, "m": 9223372036854775807, "z": 0, "neg": -0})",
      R"({"f": 5.0})",
      R"({"d": 1, "d": 2})",  // duplicate keys: the last one, as nlohmann reads it
      R"({"set": [1, 1, [2], [2], {"a": 1}, {"a": 1}, {}, []]})",
      R"({"big": [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,
                  34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,0]})",
      // Errors: each must fail in both.
      "{",
      "[]",
      "1",
      "{\"a\": 1,}",
      "{\"a\": 01}",
      "{\"a\": 9223372036854775808}",
      "{\"a\": -9223372036854775809}",
      "{\"a\": 1.5}",
      "{\"a\": null}",
      "{\"a\": nul}",
      "{\"a\": \"\x01\"}",
      "{\"a\": \"\xc3\"}",
      "{\"a\": \"\xed\xa0\x80\"}",
      "{\"a\": \"\\x\"}",
      "{\"a\": 1} x",
      "{\"a\": tru}",
      R"({"__expr": "1"})",
  };
  RequestBuilder b;
  Uids(b);
  for (const std::string& in : inputs) {
    SCOPED_TRACE(in);
    Status fast = b.ContextJson(in);
    auto general = Request::Make({"Agent", "a1"}, {"Action", "call_tool"}, {"Tool", "search"}, in);
    ASSERT_EQ(fast.ok(), general.ok())
        << fast.message() << " / " << (general.ok() ? "" : general.status().message());
    if (!fast.ok()) {
      EXPECT_EQ(fast.message(), general.status().message());
      EXPECT_FALSE(b.status().ok());
      continue;
    }
    EXPECT_TRUE(ValueEquals(b.data().context, general->data().context))
        << ValueToString(b.data().context) << " vs " << ValueToString(general->data().context);
    EXPECT_EQ(ValueToString(b.data().context), ValueToString(general->data().context));
  }
}

// Mutated contexts (a fixed seed, so a failure reproduces): the reader and the general path agree on
// every one, accepted or refused.
TEST(RequestBuilderTest, MutatedContextsAgreeWithRequestMake) {
  const std::vector<std::string> seeds = {
      R"({"args": {"max_results": 5, "url": "https://example.com"}, "cost_cents": 1, "tags": ["a", "b"]})",
      R"({"a": [1, [2, 3], {"b": true, "c": "x\ty"}], "d": -12, "e": {}})",
      "{\"s\": \"caf\xc3\xa9\", \"t\": [false, false, \"\"]}",
  };
  const std::vector<std::string> tokens = {
      "{",       "}",   "[",   "]",    ",",     ":",    "\"", "\\",    "0",    "-",    "1",
      "9",       ".",   "e",   "true", "false", "null", " ",  "\"k\"", "\xc3", "\xa9", "\"__entity\"",
      "\\u0041", "\\n", "\x01"};
  uint64_t x = 0x2545F4914F6CDD1DULL;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  RequestBuilder b;
  Uids(b);
  int accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string in = seeds[next() % seeds.size()];
    int edits = 1 + static_cast<int>(next() % 3);
    for (int e = 0; e < edits && !in.empty(); ++e) {
      size_t pos = next() % (in.size() + 1);
      switch (next() % 3) {
        case 0:
          in.insert(pos, tokens[next() % tokens.size()]);
          break;
        case 1:
          in.erase(std::min(pos, in.size() - 1), 1 + next() % 3);
          break;
        default:
          if (pos < in.size()) in[pos] = tokens[next() % tokens.size()][0];
      }
    }
    Status fast = b.ContextJson(in);
    auto general = Request::Make({"Agent", "a1"}, {"Action", "call_tool"}, {"Tool", "search"}, in);
    ASSERT_EQ(fast.ok(), general.ok()) << in;
    if (!fast.ok()) {
      ASSERT_EQ(fast.message(), general.status().message()) << in;
      continue;
    }
    ++accepted;
    ASSERT_TRUE(ValueEquals(b.data().context, general->data().context)) << in;
  }
  EXPECT_GT(accepted, 1000);  // the mutations leave many valid contexts, not only errors
}

TEST(RequestBuilderTest, ReuseLeavesNothingBehind) {
  auto set = PolicySet::Parse(R"(
    permit(principal, action, resource) when { context.n < 10 };
    forbid(principal, action, resource) when { context has extra };)");
  ASSERT_TRUE(set.ok());
  Entities ents;
  RequestBuilder b;
  Outcome out;
  Uids(b.Reset()).Long("n", 5).Bool("extra", true);
  Authorize(*set, ents, b, &out);
  EXPECT_EQ(out.decision, Decision::kDeny);
  EXPECT_EQ(out.reason, std::vector<uint32_t>{1});
  b.Reset().Long("n", 5);  // uids kept, context emptied
  Authorize(*set, ents, b, &out);
  EXPECT_EQ(out.decision, Decision::kAllow);
  ASSERT_TRUE(b.ContextJson(R"({"n": 50})").ok());
  Authorize(*set, ents, b, &out);
  EXPECT_EQ(out.decision, Decision::kDeny);
  EXPECT_TRUE(out.reason.empty());
  ASSERT_TRUE(b.ContextJson(R"({"n": {"__extn": {"fn": "decimal", "arg": "1.0"}}})").ok());  // general path
  Authorize(*set, ents, b, &out);
  EXPECT_EQ(out.errors.size(), 1u);  // decimal < long is a type error
  b.Reset().Long("n", 1);            // back to the builder's own storage after the general path
  Authorize(*set, ents, b, &out);
  EXPECT_EQ(out.decision, Decision::kAllow);
  EXPECT_TRUE(out.errors.empty());
}

TEST(RequestBuilderTest, MisuseIsAnErrorAndDenies) {
  auto set = PolicySet::Parse("permit(principal, action, resource);");
  ASSERT_TRUE(set.ok());
  Entities ents;
  Outcome out;

  RequestBuilder unset;
  unset.Principal("Agent", "a1");
  EXPECT_EQ(unset.status().message(), "request action: not set");
  Authorize(*set, ents, unset, &out);
  EXPECT_EQ(out.decision, Decision::kDeny);
  EXPECT_FALSE(unset.Build().ok());

  RequestBuilder b;
  Uids(b).Long("a", 1).Long("a", 2);
  EXPECT_EQ(b.status().message(), "context: duplicate key `a`");
  Authorize(*set, ents, b, &out);
  EXPECT_EQ(out.decision, Decision::kDeny);

  Uids(b.Reset()).BeginRecord("r").Long("x", 1);
  EXPECT_EQ(b.status().message(), "context: a record or set is still open");
  b.End();
  EXPECT_TRUE(b.status().ok());
  b.End();
  EXPECT_EQ(b.status().message(), "context: End() without an open record or set");

  b.Reset().Principal("not a type", "x");
  EXPECT_EQ(b.status().message(), "request principal: `not a type` is not a valid entity type name");
  b.Reset().Principal("Agent", "a1").Entity("e", "1bad", "x");
  EXPECT_FALSE(b.status().ok());
  b.Reset();
  EXPECT_TRUE(b.status().ok());
  Authorize(*set, ents, b, &out);
  EXPECT_EQ(out.decision, Decision::kAllow);
}

TEST(RequestBuilderTest, DecidesLikeRequestOnTheCorpusShapes) {
  auto set = PolicySet::Parse(R"(
    permit(principal in Team::"t", action == Action::"call_tool", resource)
      when { context.args.max_results <= 10 && context.tags.contains("ok") && context.owner == principal };)");
  ASSERT_TRUE(set.ok());
  auto ents = Entities::FromJson(
      R"([{"uid": {"type": "Agent", "id": "a1"}, "attrs": {}, "parents": [{"type": "Team", "id": "t"}]}])");
  ASSERT_TRUE(ents.ok());
  RequestBuilder b;
  Outcome fast, slow;
  for (int n : {5, 10, 11}) {
    std::string ctx = R"({"args": {"max_results": )" + std::to_string(n) +
                      R"(}, "tags": ["ok"], "owner": {"__entity": {"type": "Agent", "id": "a1"}}})";
    Uids(b.Reset()).BeginRecord("args").Long("max_results", n).End().BeginSet("tags").String("", "ok").End();
    b.Entity("owner", "Agent", "a1");
    Authorize(*set, *ents, b, &fast);
    Authorize(*set, *ents, MakeOrDie(ctx), &slow);
    EXPECT_EQ(fast.decision, slow.decision) << n;
    EXPECT_EQ(fast.decision, n <= 10 ? Decision::kAllow : Decision::kDeny);
    EXPECT_EQ(fast.reason, slow.reason);
  }
}

// Extension values set without JSON decide as the same values written as __extn escapes.
TEST(RequestBuilderTest, ExtensionValuesWithoutJson) {
  auto set = PolicySet::Parse(R"(
    permit(principal, action, resource) when {
      context.src.isInRange(ip("10.0.0.0/8")) && context.price.lessThan(decimal("20.0")) &&
      context.now < datetime("2025-01-01") && context.wait <= duration("2h") &&
      context.net == ip("192.168.0.0/16") && context.exact == decimal("12.5") &&
      context.at == datetime("2024-06-01T12:00:00Z") && context.d == duration("90m") };)");
  ASSERT_TRUE(set.ok()) << set.status().message();
  Entities ents;
  RequestBuilder b;
  Outcome fast, slow;
  for (const char* src : {"10.1.2.3", "11.0.0.1"}) {
    Uids(b.Reset()).Ip("src", src).Decimal("price", "12.50").Datetime("now", "2024-10-15T11:38:02Z");
    b.Duration("wait", "1h30m").Ip("net", "192.168.0.0/16");
    b.DecimalScaled("exact", 125000).DatetimeMillis("at", 1717243200000).DurationMillis("d", 90 * 60 * 1000);
    ASSERT_TRUE(b.status().ok()) << b.status().message();
    std::string ctx = std::string(R"({"src": {"__extn": {"fn": "ip", "arg": ")") + src + R"("}},
      "price": {"__extn": {"fn": "decimal", "arg": "12.50"}},
      "now": {"__extn": {"fn": "datetime", "arg": "2024-10-15T11:38:02Z"}},
      "wait": {"__extn": {"fn": "duration", "arg": "1h30m"}},
      "net": {"__extn": {"fn": "ip", "arg": "192.168.0.0/16"}},
      "exact": {"__extn": {"fn": "decimal", "arg": "12.5"}},
      "at": {"__extn": {"fn": "datetime", "arg": "2024-06-01T12:00:00Z"}},
      "d": {"__extn": {"fn": "duration", "arg": "90m"}}})";
    Authorize(*set, ents, b, &fast);
    Authorize(*set, ents, MakeOrDie(ctx), &slow);
    EXPECT_EQ(fast.decision, slow.decision) << src;
    EXPECT_EQ(fast.decision, std::string(src) == "10.1.2.3" ? Decision::kAllow : Decision::kDeny) << src;
    EXPECT_TRUE(fast.errors.empty());
    auto built = b.Build();
    ASSERT_TRUE(built.ok());
    Authorize(*set, ents, *built, &slow);
    EXPECT_EQ(fast.decision, slow.decision);
  }
}

TEST(RequestBuilderTest, BadExtensionStringsSetTheStatus) {
  RequestBuilder b;
  struct Case {
    void (*set)(RequestBuilder&);
    const char* want;
  } cases[] = {
      {[](RequestBuilder& x) { x.Ip("a", "10.0.0.256"); }, "`a`: ip(\"10.0.0.256\")"},
      {[](RequestBuilder& x) { x.Decimal("b", "1.00001"); }, "`b`: decimal("},
      {[](RequestBuilder& x) { x.Datetime("c", "2023-02-29"); }, "`c`: datetime("},
      {[](RequestBuilder& x) { x.Duration("d", "1h1d"); }, "`d`: duration("},
      {[](RequestBuilder& x) { x.Ip("e", "::1").Ip("e", "::2"); }, "duplicate key `e`"},
  };
  for (const Case& c : cases) {
    Uids(b.Reset());
    c.set(b);
    ASSERT_FALSE(b.status().ok()) << c.want;
    EXPECT_NE(b.status().message().find(c.want), std::string::npos) << b.status().message();
  }
  Uids(b.Reset()).Ip("ok", "::1");
  EXPECT_TRUE(b.status().ok());  // Reset clears the status
}

}  // namespace
}  // namespace govern::policy
