// The third outcome: permits annotated @require_approval. The precedence table (forbid > approval >
// allow > default deny), the determining policies of each row, errors, and Cedar's semantics intact
// when no policy carries the annotation.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "policy/cedar.h"
#include "policy/limits.h"

namespace govern::policy {
namespace {

Response Decide(const std::string& policies, const std::string& context = "{}") {
  auto set = PolicySet::Parse(policies);
  EXPECT_TRUE(set.ok()) << set.status().message();
  auto ents = Entities::FromJson(
      R"([{"uid": {"type": "Agent", "id": "a1"}, "attrs": {}, "parents": [{"type": "Team", "id": "t"}]}])");
  EXPECT_TRUE(ents.ok());
  auto req = Request::Make({"Agent", "a1"}, {"Action", "spend"}, {"Account", "ops"}, context);
  EXPECT_TRUE(req.ok());
  // Reasons by their @id annotation (Cedar's ids are policy0, policy1, ...), for readable rows.
  Response r = Authorize(*set, *ents, *req);
  for (auto* ids : {&r.reason}) {
    for (std::string& id : *ids) {
      for (size_t k = 0; k < set->size(); ++k) {
        if (set->id(k) != id) continue;
        for (const auto& [key, value] : set->annotations(k)) {
          if (key == "id") id = value;
        }
        break;
      }
    }
  }
  for (PolicyError& e : r.errors) {
    for (size_t k = 0; k < set->size(); ++k) {
      if (set->id(k) != e.policy_id) continue;
      for (const auto& [key, value] : set->annotations(k)) {
        if (key == "id") e.policy_id = value;
      }
    }
  }
  std::sort(r.reason.begin(), r.reason.end());
  return r;
}

constexpr const char* kPermit = R"(@id("broad") permit(principal in Team::"t", action, resource);)";
constexpr const char* kApproval =
    R"(@id("big-spend") @require_approval("finance") permit(principal, action == Action::"spend", resource) when { context.amount > 100 };)";
constexpr const char* kForbid =
    R"(@id("frozen") forbid(principal, action, resource) when { context.frozen };)";

struct Row {
  const char* name;
  std::vector<const char*> policies;
  const char* context;
  Decision decision;
  std::vector<std::string> reason;
};

TEST(ApprovalTest, PrecedenceTable) {
  const std::vector<Row> rows = {
      {"nothing satisfied: default deny",
       {kApproval},
       R"({"amount": 5, "frozen": false})",
       Decision::kDeny,
       {}},
      {"only an approval permit",
       {kApproval},
       R"({"amount": 500, "frozen": false})",
       Decision::kApprovalRequired,
       {"big-spend"}},
      {"approval beats a broad permit",
       {kPermit, kApproval},
       R"({"amount": 500, "frozen": false})",
       Decision::kApprovalRequired,
       {"big-spend"}},
      {"approval not satisfied: the broad permit allows",
       {kPermit, kApproval},
       R"({"amount": 5, "frozen": false})",
       Decision::kAllow,
       {"broad"}},
      {"forbid beats approval",
       {kPermit, kApproval, kForbid},
       R"({"amount": 500, "frozen": true})",
       Decision::kDeny,
       {"frozen"}},
      {"forbid beats allow",
       {kPermit, kForbid},
       R"({"amount": 5, "frozen": true})",
       Decision::kDeny,
       {"frozen"}},
      {"plain Cedar", {kPermit}, R"({"amount": 500, "frozen": false})", Decision::kAllow, {"broad"}},
  };
  for (const Row& row : rows) {
    std::string text;
    for (const char* p : row.policies) text += std::string(p) + "\n";
    Response r = Decide(text, row.context);
    EXPECT_EQ(DecisionName(r.decision), std::string(DecisionName(row.decision))) << row.name;
    EXPECT_EQ(r.reason, row.reason) << row.name;
    EXPECT_TRUE(r.errors.empty()) << row.name;
  }
}

TEST(ApprovalTest, SeveralApprovalPermitsAreAllTheReason) {
  Response r = Decide(
      std::string(kPermit) + kApproval +
          R"(@id("any-spend") @require_approval permit(principal, action == Action::"spend", resource);)",
      R"({"amount": 500})");
  EXPECT_EQ(r.decision, Decision::kApprovalRequired);
  EXPECT_EQ(r.reason, (std::vector<std::string>{"any-spend", "big-spend"}));
}

TEST(ApprovalTest, AnErroringApprovalPermitIsSkippedLikeAnyPolicy) {
  // context.amount is missing: the approval permit errs and is skipped; the broad permit allows.
  Response r = Decide(std::string(kPermit) + kApproval, "{}");
  EXPECT_EQ(r.decision, Decision::kAllow);
  EXPECT_EQ(r.reason, std::vector<std::string>{"broad"});
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].policy_id, "big-spend");
}

TEST(ApprovalTest, AnnotationOnAForbidChangesNothingAndTheBundleRefusesIt) {
  std::string text =
      std::string(kPermit) + R"(@id("f") @require_approval forbid(principal, action, resource);)";
  Response r = Decide(text);
  EXPECT_EQ(r.decision, Decision::kDeny);  // Cedar: the forbid wins
  EXPECT_EQ(r.reason, std::vector<std::string>{"f"});
  auto set = PolicySet::Parse(text);
  ASSERT_TRUE(set.ok());
  EXPECT_FALSE(set->requires_approval(1));
  auto d = Decider::FromFiles({{"policies.cedar", text}});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("1:"), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find("@require_approval applies to permit policies only"),
            std::string::npos);
}

TEST(ApprovalTest, OtherAnnotationsAreNotApproval) {
  Response r =
      Decide(R"(@approval("yes") @require("approval") @advice("x") permit(principal, action, resource);)");
  EXPECT_EQ(r.decision, Decision::kAllow);
}

TEST(ApprovalTest, NamesAndAccessors) {
  EXPECT_STREQ(DecisionName(Decision::kApprovalRequired), "approval_required");
  EXPECT_STREQ(DecisionName(Decision::kAllow), "allow");
  EXPECT_STREQ(DecisionName(Decision::kDeny), "deny");
  auto set = PolicySet::Parse(std::string(kPermit) + kApproval);
  ASSERT_TRUE(set.ok());
  EXPECT_FALSE(set->requires_approval(0));
  EXPECT_TRUE(set->requires_approval(1));
}

}  // namespace
}  // namespace govern::policy
