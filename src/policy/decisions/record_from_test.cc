// RecordFrom: the record the C ABI and the sidecar both log for a decision.
#include "policy/decisions/record_from.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace govern::policy {
namespace {

const std::vector<std::string> kNames = {"read-docs", "no-prod", "broken"};

DecisionParts Parts() {
  DecisionParts p;
  p.organisation = "acme";
  p.principal_type = "Agent";
  p.principal_id = "a1";
  p.action_type = "Action";
  p.action_id = "call_tool";
  p.resource_type = "Tool";
  p.resource_id = "docs";
  p.names = kNames;
  p.bundle_version = 7;
  return p;
}

TEST(RecordFromTest, FillsEveryFieldFromTheParts) {
  std::vector<uint32_t> reason = {0};
  std::vector<std::pair<uint32_t, std::string>> errors = {{2, "type error"}};
  DecisionParts p = Parts();
  p.decision = RecordedDecision::kAllow;
  p.reason = reason;
  p.errors = errors;
  p.context_json = R"({"q":"x"})";
  DecisionRecord r;
  r.time_ns = 5;  // cleared: the log stamps it
  RecordFrom(p, &r);
  EXPECT_TRUE(r.id.empty());
  EXPECT_EQ(r.time_ns, 0);
  EXPECT_EQ(r.organisation, "acme");
  EXPECT_EQ(r.principal, "Agent::\"a1\"");
  EXPECT_EQ(r.action, "Action::\"call_tool\"");
  EXPECT_EQ(r.resource, "Tool::\"docs\"");
  EXPECT_EQ(r.decision, RecordedDecision::kAllow);
  EXPECT_EQ(r.determining_policies, std::vector<std::string>{"read-docs"});
  EXPECT_EQ(r.erroring_policies, std::vector<std::string>{"broken"});
  EXPECT_EQ(r.bundle_version, 7u);
  EXPECT_EQ(r.context_kind, ContextKind::kFull);
  EXPECT_EQ(r.context, R"({"q":"x"})");
}

TEST(RecordFromTest, ALimitThatDeniedIsTheOnlyReasonAndItsFailureAnError) {
  std::vector<uint32_t> reason = {0, 1};
  DecisionParts p = Parts();
  p.reason = reason;  // the permits that allowed before the limit denied: not recorded
  p.limit_id = "docs-rate";
  DecisionRecord r;
  RecordFrom(p, &r);
  EXPECT_EQ(r.determining_policies, std::vector<std::string>{"limit:docs-rate"});
  EXPECT_TRUE(r.erroring_policies.empty());
  EXPECT_EQ(r.context, "{}");  // no context given

  p.limit_error = "the budget's amount is missing";
  RecordFrom(p, &r);
  EXPECT_EQ(r.erroring_policies, std::vector<std::string>{"limit:docs-rate"});
  EXPECT_EQ(LimitPolicyName("docs-rate"), "limit:docs-rate");
}

TEST(RecordFromTest, ReusedRecordKeepsNothingOfThePreviousDecision) {
  std::vector<uint32_t> two = {0, 1};
  std::vector<std::pair<uint32_t, std::string>> errors = {{2, "e"}};
  DecisionParts p = Parts();
  p.reason = two;
  p.errors = errors;
  DecisionRecord r;
  RecordFrom(p, &r);
  ASSERT_EQ(r.determining_policies.size(), 2u);
  DecisionParts q = Parts();
  std::vector<uint32_t> one = {1};
  q.reason = one;
  q.organisation = "globex";
  RecordFrom(q, &r);
  EXPECT_EQ(r.determining_policies, std::vector<std::string>{"no-prod"});
  EXPECT_TRUE(r.erroring_policies.empty());
  EXPECT_EQ(r.organisation, "globex");
}

TEST(RecordFromTest, UidsAreCedarStringLiterals) {
  std::string out;
  AppendCedarUid("Agent", std::string("a\"b\\c\nd\re\tf\0g", 13), &out);
  EXPECT_EQ(out, "Agent::\"a\\\"b\\\\c\\nd\\re\\tf\\0g\"");
  out.clear();
  AppendCedarUid("NS::Tool", "caf\xc3\xa9", &out);  // UTF-8 kept as is
  EXPECT_EQ(out, "NS::Tool::\"caf\xc3\xa9\"");
}

}  // namespace
}  // namespace govern::policy
