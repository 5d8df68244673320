// The event lines the shipper sends, fed to telemetry's own NDJSON decoder (the one intake runs): every
// line a decision can become must be accepted, with the decision's id, time and type intact, including
// the edge cases (invalid UTF-8 repaired, the deepest context kept, deeper ones sent as a hash). The
// library itself does not depend on telemetry; only this test does.
#include <gtest/gtest.h>

#include "policy/decisions/decision_record.h"
#include "policy/decisions/shipper.h"
#include "services/telemetry/ndjson.h"

namespace govern::policy {
namespace {

DecisionRecord Sample() {
  DecisionRecord r;
  r.id = DecisionIdGenerator(77).Next(1'795'986'592'185'000'000);
  r.time_ns = 1'795'986'592'185'000'123;
  r.organisation = "acme";
  r.principal = R"(Agent::"a1")";
  r.action = R"(Action::"call_tool")";
  r.resource = R"(Tool::"web_search")";
  r.decision = RecordedDecision::kDeny;
  r.determining_policies = {"guardrail-1"};
  r.bundle_version = 42;
  r.context_kind = ContextKind::kFull;
  r.context = R"({"args":{"max_results":5}})";
  return r;
}

std::string Nest(int depth) { return std::string(depth, '[') + "1" + std::string(depth, ']'); }

TEST(EventInteropTest, TelemetryDecodesEveryLineTheShipperSends) {
  std::vector<DecisionRecord> records;
  records.push_back(Sample());
  DecisionRecord r = Sample();
  r.principal = std::string("Agent::\"\xff\xfe\"\n\x01", 13);  // invalid UTF-8 and control bytes
  r.decision = RecordedDecision::kApprovalRequired;
  records.push_back(r);
  r = Sample();
  r.context = Nest(28);  // the deepest context sent as it is
  records.push_back(r);
  r = Sample();
  r.context = Nest(29);  // one deeper: sent as its hash
  records.push_back(r);
  r = Sample();
  r.context = "{\"big\":" + std::string(30, '9') + "}";  // an integer past 64 bits
  records.push_back(r);
  r = Sample();
  r.context = "{\"s\":\"" + std::string((1 << 20) + 10, 'x') + "\"}";  // past the line limit: hashed
  records.push_back(r);
  r = Sample();
  r.context_kind = ContextKind::kNone;
  r.context.clear();
  r.determining_policies.clear();
  records.push_back(r);

  std::string body;
  for (const auto& rec : records) {
    AppendDecisionEvent(rec, "policy.decision", 1u << 20, &body);
    body.push_back('\n');
  }
  auto batch = telemetry::DecodeNdjson(body, "acme");
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->events.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& e = batch->events[i];
    EXPECT_EQ(e.id, records[i].id.ToString());
    EXPECT_EQ(e.time_unix_nanos, records[i].time_ns);
    EXPECT_EQ(e.type, "policy.decision");
    EXPECT_EQ(e.org, "acme");
    bool has_context = false;
    for (const auto& a : e.attributes) has_context |= a.key == "context";
    EXPECT_EQ(has_context, i == 0 || i == 1 || i == 2 || i == 4) << i;
  }
}

}  // namespace
}  // namespace govern::policy
