// Authorizer tests: Cedar's combination rules and diagnostics, the action index, and many threads
// deciding against one shared PolicySet and Entities.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "policy/cases.h"
#include "policy/cedar.h"

namespace govern::policy {
namespace {

Response Decide(const std::string& policies, const std::string& context = "{}",
                const EntityRef& action = {"Action", "call_tool"}) {
  auto set = PolicySet::Parse(policies);
  EXPECT_TRUE(set.ok()) << set.status().message();
  auto ents = Entities::FromJson(R"([
    {"uid": {"type": "Agent", "id": "a1"}, "attrs": {}, "parents": [{"type": "Team", "id": "t"}]},
    {"uid": {"type": "Action", "id": "call_tool"}, "attrs": {}, "parents": [{"type": "Action", "id": "any"}]}])");
  EXPECT_TRUE(ents.ok());
  auto req = Request::Make({"Agent", "a1"}, action, {"Tool", "search"}, context);
  EXPECT_TRUE(req.ok());
  return Authorize(*set, *ents, *req);
}

TEST(AuthorizerTest, DefaultDeny) {
  Response r = Decide("");
  EXPECT_EQ(r.decision, Decision::kDeny);
  EXPECT_TRUE(r.reason.empty());
  EXPECT_TRUE(r.errors.empty());
}

TEST(AuthorizerTest, PermitsAreTheReasonOfAnAllow) {
  Response r = Decide(
      "permit(principal in Team::\"t\", action in Action::\"any\", resource);\n"
      "permit(principal == Agent::\"a2\", action, resource);\n"
      "permit(principal, action == Action::\"call_tool\", resource is Tool);");
  EXPECT_EQ(r.decision, Decision::kAllow);
  EXPECT_EQ(r.reason, (std::vector<std::string>{"policy0", "policy2"}));
}

TEST(AuthorizerTest, ForbidOverridesAndIsTheReason) {
  Response r = Decide(
      "permit(principal, action, resource);\n"
      "forbid(principal, action, resource) when { context.cost > 500 };\n"
      "forbid(principal, action, resource) when { context.cost > 100 };",
      R"({"cost": 1000})");
  EXPECT_EQ(r.decision, Decision::kDeny);
  EXPECT_EQ(r.reason, (std::vector<std::string>{"policy1", "policy2"}));
}

TEST(AuthorizerTest, ErroringPoliciesAreSkippedAndReported) {
  Response r = Decide(
      "forbid(principal, action, resource) when { context.missing };\n"
      "permit(principal, action, resource) when { 1 + \"x\" == 2 };\n"
      "permit(principal, action, resource) unless { context.flag };",
      R"({"flag": false})");
  EXPECT_EQ(r.decision, Decision::kAllow);  // the erroring forbid does not apply
  EXPECT_EQ(r.reason, (std::vector<std::string>{"policy2"}));
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].policy_id, "policy0");
  EXPECT_NE(r.errors[0].message.find("missing"), std::string::npos);
  EXPECT_EQ(r.errors[1].policy_id, "policy1");
}

TEST(AuthorizerTest, IdsSortAsStrings) {
  std::string text;
  for (int k = 0; k < 12; ++k) text += "permit(principal, action, resource);\n";
  Response r = Decide(text);
  ASSERT_EQ(r.reason.size(), 12u);
  EXPECT_EQ(r.reason[0], "policy0");
  EXPECT_EQ(r.reason[1], "policy1");
  EXPECT_EQ(r.reason[2], "policy10");
}

TEST(AuthorizerTest, ActionIndexSkipsOtherActionsOnly) {
  const std::string text =
      "permit(principal, action == Action::\"call_tool\", resource);\n"
      "permit(principal, action == Action::\"read\", resource);\n"
      "permit(principal, action in [Action::\"read\", Action::\"any\"], resource);";
  Response r = Decide(text);
  EXPECT_EQ(r.reason, (std::vector<std::string>{"policy0", "policy2"}));
  Response r2 = Decide(text, "{}", {"Action", "read"});
  EXPECT_EQ(r2.reason, (std::vector<std::string>{"policy1", "policy2"}));
  Response r3 = Decide(text, "{}", {"Action", "other"});
  EXPECT_EQ(r3.decision, Decision::kDeny);
}

TEST(AuthorizerTest, OutcomeReusedAcrossCalls) {
  auto set = PolicySet::Parse(
      "forbid(principal, action, resource) when { context.n > 10 };\n"
      "permit(principal, action, resource) when { context.n > 1 };");
  ASSERT_TRUE(set.ok());
  Entities ents;
  auto low = Request::Make({"A", "1"}, {"Action", "x"}, {"R", "r"}, R"({"n": 5})");
  auto high = Request::Make({"A", "1"}, {"Action", "x"}, {"R", "r"}, R"({"n": 50})");
  auto bad = Request::Make({"A", "1"}, {"Action", "x"}, {"R", "r"}, R"({"n": "x"})");
  Outcome o;
  Authorize(*set, ents, *high, &o);
  EXPECT_EQ(o.decision, Decision::kDeny);
  EXPECT_EQ(o.reason, (std::vector<uint32_t>{0}));
  Authorize(*set, ents, *low, &o);
  EXPECT_EQ(o.decision, Decision::kAllow);
  EXPECT_EQ(o.reason, (std::vector<uint32_t>{1}));
  EXPECT_TRUE(o.errors.empty());
  Authorize(*set, ents, *bad, &o);
  EXPECT_EQ(o.decision, Decision::kDeny);
  EXPECT_TRUE(o.reason.empty());
  EXPECT_EQ(o.errors.size(), 2u);
}

TEST(AuthorizerTest, ManyThreadsShareOnePolicySet) {
  auto set = PolicySet::Parse(
      "forbid(principal, action, resource) when { context.n % 2 == 1 };\n"  // parse error guard below
  );
  ASSERT_FALSE(set.ok());  // `%` is not Cedar
  set = PolicySet::Parse(
      "forbid(principal, action, resource) when { context.n > 1000 };\n"
      "permit(principal in Team::\"t\", action, resource) when { [context.n, 1].contains(context.n) };");
  ASSERT_TRUE(set.ok());
  auto ents = Entities::FromJson(
      R"([{"uid": {"type": "Agent", "id": "a"}, "attrs": {}, "parents": [{"type": "Team", "id": "t"}]}])");
  ASSERT_TRUE(ents.ok());
  std::vector<Request> requests;
  for (int n = 0; n < 2000; n += 100) {
    requests.push_back(
        *Request::Make({"Agent", "a"}, {"Action", "x"}, {"Tool", "t"}, "{\"n\": " + std::to_string(n) + "}"));
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      Outcome o;
      for (int round = 0; round < 200; ++round) {
        for (size_t k = 0; k < requests.size(); ++k) {
          Authorize(*set, *ents, requests[k], &o);
          Decision want = k * 100 > 1000 ? Decision::kDeny : Decision::kAllow;
          if (o.decision != want) wrong++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(CasesTest, FailureAndResultLines) {
  EXPECT_EQ(EvalCaseLine(R"({"id": "x", "policies": "permit(principal, action, resource);", "entities": [],
      "request": {"principal": {"type": "A", "id": "1"}, "action": {"type": "Action", "id": "a"},
                  "resource": {"type": "R", "id": "r"}, "context": {}}})"),
            R"({"decision":"allow","errors":[],"id":"x","reason":["policy0"]})");
  std::string failure = EvalCaseLine(R"({"id": "y", "policies": "permit(", "entities": [], "request": {}})");
  EXPECT_NE(failure.find("\"failure\""), std::string::npos);
  EXPECT_NE(failure.find("\"id\":\"y\""), std::string::npos);
  EXPECT_NE(EvalCaseLine("not json").find("\"failure\""), std::string::npos);
}

}  // namespace
}  // namespace govern::policy
