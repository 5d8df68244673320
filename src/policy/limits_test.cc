// Limits: rates over (fake) time, budget sums in calendar windows, per-principal isolation, groups
// through `in`, nothing consumed by a denied decision, limits.json errors, counters shared by many
// threads and across a bundle swap, and the bound on tracked principals.
#include "policy/limits.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace govern::policy {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

constexpr const char* kPolicies = R"(
  @id("tools") permit(principal, action == Action::"call_tool", resource);
  @id("spend") @require_approval permit(principal, action == Action::"spend", resource) when { context.cost_cents > 1000 };
  @id("small-spend") permit(principal, action == Action::"spend", resource);
  @id("no-shell") forbid(principal, action, resource == Tool::"shell");)";

constexpr const char* kEntities = R"([
  {"uid": {"type": "Agent", "id": "a1"}, "attrs": {}, "parents": [{"type": "Team", "id": "research"}]},
  {"uid": {"type": "Agent", "id": "a2"}, "attrs": {}, "parents": [{"type": "Team", "id": "research"}]},
  {"uid": {"type": "Agent", "id": "a3"}, "attrs": {}, "parents": [{"type": "Team", "id": "ops"}]}])";

struct Fixture {
  ManualClock clock;
  Decider decider;

  explicit Fixture(const std::string& limits, size_t max_counters = 65536,
                   std::shared_ptr<LimitCounters> counters = nullptr) {
    LimitOptions options;
    options.clock = &clock;
    options.max_counters = max_counters;
    options.counters = std::move(counters);
    auto d = Decider::FromFiles(
        {{"policies.cedar", kPolicies}, {"entities.json", kEntities}, {"limits.json", limits}}, options);
    EXPECT_TRUE(d.ok()) << d.status().message();
    if (d.ok()) decider = std::move(*d);
  }

  Response Call(const std::string& agent, const std::string& action = "call_tool",
                const std::string& context = "{}", const std::string& tool = "search") {
    auto req = Request::Make({"Agent", agent}, {"Action", action}, {"Tool", tool}, context);
    EXPECT_TRUE(req.ok());
    Response r = decider.Decide(*req);
    for (std::string& id : r.reason) id = Name(id);
    for (PolicyError& e : r.errors) e.policy_id = Name(e.policy_id);
    return r;
  }
  // A policy's @id annotation in place of Cedar's id (policy0, ...).
  std::string Name(const std::string& id) const {
    const PolicySet& set = decider.policies();
    for (size_t k = 0; k < set.size(); ++k) {
      if (set.id(k) != id) continue;
      for (const auto& [key, value] : set.annotations(k)) {
        if (key == "id") return value;
      }
    }
    return id;
  }
  std::string Spend(const std::string& agent, int cents) {
    Response r = Call(agent, "spend", "{\"cost_cents\": " + std::to_string(cents) + "}");
    std::string s = DecisionName(r.decision);
    for (const auto& x : r.reason) s += " " + x;
    return s;
  }
};

constexpr const char* kRate =
    R"([{"id": "search-rate", "principal": "Agent::\"a1\"", "action": "Action::\"call_tool\"",
         "rate": {"requests": 3, "per": "1m"}}])";

TEST(LimitsTest, RateOverTime) {
  Fixture f(kRate);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(f.Call("a1").decision, Decision::kAllow) << k;
  Response r = f.Call("a1");
  EXPECT_EQ(r.decision, Decision::kDeny);
  EXPECT_EQ(r.reason, std::vector<std::string>{"limit:search-rate"});
  EXPECT_TRUE(r.errors.empty());
  f.clock.Advance(seconds(19));  // 19 s refill 0.95 of a request
  EXPECT_EQ(f.Call("a1").decision, Decision::kDeny);
  f.clock.Advance(seconds(1));  // 20 s: one request
  EXPECT_EQ(f.Call("a1").decision, Decision::kAllow);
  EXPECT_EQ(f.Call("a1").decision, Decision::kDeny);
  f.clock.Advance(hours(1));  // the bucket holds at most 3
  for (int k = 0; k < 3; ++k) EXPECT_EQ(f.Call("a1").decision, Decision::kAllow) << k;
  EXPECT_EQ(f.Call("a1").decision, Decision::kDeny);
  // Other actions and other agents are outside this limit.
  EXPECT_EQ(f.Spend("a1", 5), "allow small-spend");
  EXPECT_EQ(f.Call("a2").decision, Decision::kAllow);
}

constexpr const char* kBudget =
    R"([{"id": "daily-spend", "principal_in": "Team::\"research\"", "action": "Action::\"spend\"",
         "budget": {"amount_from": "context.cost_cents", "limit": 100, "per": "24h"}}])";

TEST(LimitsTest, BudgetSumsPerPrincipalInTheGroupAndResetsWithTheWindow) {
  Fixture f(kBudget);
  EXPECT_EQ(f.Spend("a1", 40), "allow small-spend");
  EXPECT_EQ(f.Spend("a1", 40), "allow small-spend");
  EXPECT_EQ(f.Spend("a1", 30), "deny limit:daily-spend");  // 110 > 100, and consumes nothing
  EXPECT_EQ(f.Spend("a1", 20), "allow small-spend");       // exactly 100
  EXPECT_EQ(f.Spend("a1", 1), "deny limit:daily-spend");
  EXPECT_EQ(f.Spend("a1", 0), "allow small-spend");
  EXPECT_EQ(f.Spend("a2", 100), "allow small-spend");         // its own counter
  EXPECT_EQ(f.Spend("a3", 5000), "approval_required spend");  // not in research: no budget
  f.clock.Advance(hours(24));
  EXPECT_EQ(f.Spend("a1", 100), "allow small-spend");
  EXPECT_EQ(f.Spend("a1", 101), "deny limit:daily-spend");
}

TEST(LimitsTest, ApprovalConsumesAndALimitTurnsApprovalIntoDeny) {
  Fixture f(R"([{"id": "b", "budget": {"amount_from": "context.cost_cents", "limit": 3000, "per": "1h"}}])");
  EXPECT_EQ(f.Spend("a3", 2000), "approval_required spend");
  EXPECT_EQ(f.Spend("a3", 2000), "deny limit:b");
  EXPECT_EQ(f.Spend("a3", 1000), "allow small-spend");
}

TEST(LimitsTest, DeniedAndErroredDecisionsConsumeNothing) {
  Fixture f(R"([{"id": "r", "principal": "Agent::\"a1\"", "rate": {"requests": 2, "per": "1h"}},
                {"id": "b", "principal": "Agent::\"a1\"", "action": "Action::\"spend\"",
                 "budget": {"amount_from": "context.cost_cents", "limit": 10, "per": "24h"}}])");
  // Cedar denies (the forbid): no limit is consulted.
  for (int k = 0; k < 5; ++k)
    EXPECT_EQ(f.Call("a1", "call_tool", "{}", "shell").reason, std::vector<std::string>{"no-shell"});
  // The budget refuses after the rate took its share: the rate's share is given back.
  EXPECT_EQ(f.Spend("a1", 50), "deny limit:b");
  EXPECT_EQ(f.Spend("a1", 50), "deny limit:b");
  // A budget without its amount: denied with the reason and an error, nothing taken.
  Response r = f.Call("a1", "spend", R"({"cost": 1})");
  EXPECT_EQ(r.decision, Decision::kDeny);
  EXPECT_EQ(r.reason, std::vector<std::string>{"limit:b"});
  ASSERT_EQ(r.errors.size(), 2u);  // the approval permit errs too (context.cost_cents > 1000)
  EXPECT_EQ(r.errors[0].policy_id, "limit:b");
  EXPECT_EQ(r.errors[0].message, "limit b: context.cost_cents is missing");
  EXPECT_EQ(r.errors[1].policy_id, "spend");
  r = f.Call("a1", "spend", R"({"cost_cents": -5})");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].message, "limit b: context.cost_cents is not a non-negative integer");
  // The rate's two requests are all still there.
  EXPECT_EQ(f.Spend("a1", 5), "allow small-spend");
  EXPECT_EQ(f.Spend("a1", 5), "allow small-spend");
  EXPECT_EQ(f.Spend("a1", 0), "deny limit:r");
}

TEST(LimitsTest, NestedAmountsAndResourceScopes) {
  Fixture f(R"([{"id": "rows", "resource_in": "ToolSet::\"db\"", "principal": "Agent::\"a1\"",
                 "budget": {"amount_from": "context.args.rows", "limit": 10, "per": "1m"}}])");
  auto call = [&](const std::string& tool, int rows) {
    return f.Call("a1", "call_tool", R"({"args": {"rows": )" + std::to_string(rows) + "}}", tool).decision;
  };
  EXPECT_EQ(call("search", 100), Decision::kAllow);  // not in ToolSet::"db" (no such parent)
  Fixture g(
      R"([{"id": "rows", "resource": "Tool::\"sql\"", "budget": {"amount_from": "context.args.rows", "limit": 10, "per": "1m"}}])");
  auto gcall = [&](int rows) {
    return g.Call("a1", "call_tool", R"({"args": {"rows": )" + std::to_string(rows) + "}}", "sql").decision;
  };
  EXPECT_EQ(gcall(6), Decision::kAllow);
  EXPECT_EQ(gcall(6), Decision::kDeny);
  EXPECT_EQ(gcall(4), Decision::kAllow);
}

TEST(LimitsTest, ErrorsNameTheLimit) {
  struct Case {
    const char* json;
    const char* error;
  } cases[] = {
      {"{", "limits.json: invalid JSON at byte 2"},
      {"{}", "limits.json: expected a JSON array of limits"},
      {R"([{"rate": {"requests": 1, "per": "1s"}}])", "limits.json: limit #1: needs \"id\""},
      {R"([{"id": "a b", "rate": {"requests": 1, "per": "1s"}}])",
       "limits.json: limit #1 (\"a b\"): needs \"id\""},
      {R"([{"id": "a", "rate": {"requests": 1, "per": "1s"}}, {"id": "a", "rate": {"requests": 1, "per": "1s"}}])",
       "limits.json: limit #2 (\"a\"): the id is used by an earlier limit"},
      {R"([{"id": "a", "rate": {"requests": 0, "per": "1s"}}])",
       "limits.json: limit #1 (\"a\"): \"requests\" must be a positive integer"},
      {R"([{"id": "a", "rate": {"requests": 5, "per": "1y"}}])",
       "limits.json: limit #1 (\"a\"): \"per\": `1y` is not a duration"},
      {R"([{"id": "a", "rate": {"requests": 5, "per": "400d"}}])", "is longer than 366 days"},
      {R"([{"id": "a", "rate": {"requests": 5}}])", "\"rate\" needs \"per\""},
      {R"([{"id": "a"}])", "needs exactly one of \"rate\" and \"budget\""},
      {R"([{"id": "a", "rate": {"requests": 5, "per": "1s"}, "budget": {}}])", "needs exactly one of"},
      {R"([{"id": "a", "rate": {"requests": 5, "per": "1s", "burst": 2}}])",
       "unknown field \"burst\" in \"rate\""},
      {R"([{"id": "a", "principle": "Agent::\"x\"", "rate": {"requests": 5, "per": "1s"}}])",
       "unknown field \"principle\""},
      {R"([{"id": "a", "principal": "Agent::x", "rate": {"requests": 5, "per": "1s"}}])",
       "\"principal\": expected an entity uid written Type::\"id\""},
      {R"([{"id": "a", "principal_in": "9x::\"t\"", "rate": {"requests": 5, "per": "1s"}}])",
       "\"principal_in\": `9x` is not a valid entity type name"},
      {R"([{"id": "a", "principal": "A::\"x\"", "principal_in": "T::\"t\"", "rate": {"requests": 5, "per": "1s"}}])",
       "give \"principal\" or \"principal_in\", not both"},
      {R"([{"id": "a", "budget": {"limit": 5, "per": "1s", "amount_from": "cost"}}])",
       "must be a path into the context"},
      {R"([{"id": "a", "budget": {"limit": 5, "per": "1s", "amount_from": "context..x"}}])",
       "empty attribute name"},
      {R"([{"id": "a", "budget": {"limit": 5, "per": "1s"}}])",
       "\"budget\" needs \"limit\" and \"amount_from\""},
      {R"([1])", "limits.json: limit #1: needs \"id\""},
  };
  for (const Case& c : cases) {
    auto l = Limits::Parse(c.json);
    ASSERT_FALSE(l.ok()) << c.json;
    EXPECT_NE(l.status().message().find(c.error), std::string::npos)
        << c.json << " -> " << l.status().message();
  }
  auto ok = Limits::Parse(R"([{"id": "x.y-1_z", "description": "d", "principal": "A::B::\"q\\\"uote\"",
                              "rate": {"requests": 1, "per": "250ms"}}])");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->size(), 1u);
  EXPECT_EQ(ok->id(0), "x.y-1_z");
  EXPECT_TRUE(Limits::Parse("").ok());
  EXPECT_TRUE(Limits::Parse(" \n").ok());
}

TEST(LimitsTest, EightThreadsNeverExceedTheLimit) {
  Fixture f(R"([{"id": "r", "principal": "Agent::\"a1\"", "rate": {"requests": 500, "per": "1h"}},
                {"id": "b", "principal": "Agent::\"a1\"", "action": "Action::\"spend\"",
                 "budget": {"amount_from": "context.cost_cents", "limit": 700, "per": "24h"}}])");
  std::atomic<int> allowed{0};
  std::atomic<int64_t> spent{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      RequestBuilder b;
      Outcome out;
      for (int k = 0; k < 400; ++k) {
        int cost = 1 + (k + t) % 3;
        b.Reset()
            .Principal("Agent", "a1")
            .Action("Action", "spend")
            .Resource("Account", "x")
            .Long("cost_cents", cost);
        f.decider.Decide(b, &out);
        if (out.decision == Decision::kAllow) {
          allowed.fetch_add(1);
          spent.fetch_add(cost);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(allowed.load(), 500);
  EXPECT_LE(spent.load(), 700);
  // 3200 attempts of 1-3 cents: one of the two limits is exhausted exactly (the clock stands still).
  EXPECT_TRUE(allowed.load() == 500 || spent.load() > 697) << allowed.load() << " " << spent.load();
}

TEST(LimitsTest, TrackedPrincipalsAreBounded) {
  Fixture f(kRate + std::string(), 32);
  Fixture g(R"([{"id": "r", "rate": {"requests": 2, "per": "1h"}}])", 32);
  for (int k = 0; k < 1000; ++k) {
    EXPECT_EQ(g.Call("p" + std::to_string(k)).decision, Decision::kAllow);
  }
  EXPECT_LE(g.decider.limits().counters()->size(), g.decider.limits().counters()->capacity());
  EXPECT_EQ(g.decider.limits().counters()->capacity(), 32u);
  // A counter that has refilled is dropped first, and dropping it loses nothing.
  g.clock.Advance(hours(1));
  for (int k = 0; k < 1000; ++k) EXPECT_EQ(g.Call("q" + std::to_string(k)).decision, Decision::kAllow);
  EXPECT_LE(g.decider.limits().counters()->size(), 32u);
}

TEST(LimitsTest, CountersSurviveABundleSwapWhenShared) {
  Fixture f(kRate);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(f.Call("a1").decision, Decision::kAllow);
  LimitOptions options;
  options.clock = &f.clock;
  options.counters = f.decider.limits().counters();
  auto next = Decider::FromFiles(
      {{"policies.cedar", kPolicies}, {"entities.json", kEntities}, {"limits.json", kRate}}, options);
  ASSERT_TRUE(next.ok());
  auto req = Request::Make({"Agent", "a1"}, {"Action", "call_tool"}, {"Tool", "search"}, "{}");
  EXPECT_EQ(next->Decide(*req).decision, Decision::kDeny);  // still exhausted
  // Unshared counters start fresh.
  Fixture fresh(kRate);
  EXPECT_EQ(fresh.Call("a1").decision, Decision::kAllow);
}

TEST(LimitsTest, DeciderFromFilesErrorsNameTheFile) {
  EXPECT_EQ(Decider::FromFiles({}).status().message(), "the bundle has no policies.cedar");
  auto bad = Decider::FromFiles({{"policies.cedar", "permit("}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("policies.cedar", 0), 0u) << bad.status().message();
  auto ents = Decider::FromFiles({{"policies.cedar", ""}, {"entities.json", "{"}});
  ASSERT_FALSE(ents.ok());
  EXPECT_EQ(ents.status().message().rfind("entities.json", 0), 0u) << ents.status().message();
  auto lim = Decider::FromFiles({{"policies.cedar", ""}, {"limits.json", "[{}]"}});
  ASSERT_FALSE(lim.ok());
  EXPECT_EQ(lim.status().message().rfind("limits.json", 0), 0u) << lim.status().message();
  auto okd = Decider::FromFiles({{"policies.cedar", kPolicies}, {"schema.cedarschema", "anything"}});
  ASSERT_TRUE(okd.ok());
  Decider none;
  auto req = Request::Make({"Agent", "a1"}, {"Action", "call_tool"}, {"Tool", "search"}, "{}");
  EXPECT_EQ(none.Decide(*req).decision, Decision::kDeny);
}

}  // namespace
}  // namespace govern::policy
