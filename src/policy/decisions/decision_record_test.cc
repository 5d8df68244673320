// Decision record encoding, decision ids, and the telemetry event line a record becomes.
#include "policy/decisions/decision_record.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "crypto/sha256.h"
#include "policy/decisions/shipper.h"

namespace govern::policy {
namespace {

DecisionRecord Sample() {
  DecisionRecord r;
  r.id = DecisionIdGenerator(0x123456789ab).Next(1'795'986'592'185'000'000);
  r.time_ns = 1'795'986'592'185'000'123;
  r.organisation = "acme";
  r.principal = R"(Agent::"a1")";
  r.action = R"(Action::"call_tool")";
  r.resource = R"(Tool::"web_search")";
  r.decision = RecordedDecision::kAllow;
  r.determining_policies = {"policy4", "guardrail-1"};
  r.erroring_policies = {"policy9"};
  r.bundle_version = 42;
  r.context_kind = ContextKind::kFull;
  r.context = R"({"args":{"max_results":5,"url":"https://example.com"},"cost_cents":1})";
  return r;
}

TEST(DecisionRecordTest, RoundTripsEveryField) {
  for (RecordedDecision d : {RecordedDecision::kAllow, RecordedDecision::kDeny, RecordedDecision::kApprovalRequired}) {
    DecisionRecord r = Sample();
    r.decision = d;
    std::string bytes;
    EncodeDecision(r, &bytes);
    auto back = DecodeDecision(bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, r);
  }
  DecisionRecord empty;  // every string and list empty, no context
  empty.decision = RecordedDecision::kDeny;
  std::string bytes;
  EncodeDecision(empty, &bytes);
  EXPECT_EQ(bytes.size(), 4u + 16 + 8 + 8 + 4 + 2 + 1);
  auto back = DecodeDecision(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, empty);
}

TEST(DecisionRecordTest, KnownBytes) {
  // Pins the version-1 layout: a change here breaks every decision log already on disk.
  DecisionRecord r;
  r.id.bytes[15] = 0x01;
  r.time_ns = 0x0102030405060708;
  r.bundle_version = 7;
  r.organisation = "o";
  r.principal = "p";
  r.action = "a";
  r.resource = "r";
  r.decision = RecordedDecision::kAllow;
  r.determining_policies = {"x"};
  std::string bytes;
  EncodeDecision(r, &bytes);
  const std::string want = std::string("\x01\x01\x00\x00", 4) + std::string(15, '\0') + "\x01" +
                           "\x08\x07\x06\x05\x04\x03\x02\x01" + std::string("\x07\0\0\0\0\0\0\0", 8) +
                           "\x01o\x01p\x01"
                           "a\x01r" +
                           "\x01\x01x" + std::string("\x00\x00", 2);
  EXPECT_EQ(bytes, want);
}

TEST(DecisionRecordTest, EveryTruncationIsRefused) {
  std::string bytes;
  EncodeDecision(Sample(), &bytes);
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = DecodeDecision(std::string_view(bytes).substr(0, n));
    EXPECT_FALSE(r.ok()) << "accepted a record cut at " << n;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  }
  EXPECT_FALSE(DecodeDecision(bytes + "x").ok()) << "trailing bytes";
}

TEST(DecisionRecordTest, BrokenFieldsAreRefusedWithAReason) {
  std::string good;
  EncodeDecision(Sample(), &good);
  auto refused = [](std::string bytes, std::string_view why) {
    auto r = DecodeDecision(bytes);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  };
  std::string b = good;
  b[0] = 2;
  refused(b, "unknown version 2");
  b = good;
  b[1] = 0;
  refused(b, "unknown decision 0");
  b = good;
  b[1] = 4;
  refused(b, "unknown decision 4");
  b = good;
  b[2] = 3;
  refused(b, "unknown context kind");
  b = good;
  b[3] = 1;
  refused(b, "unknown flags");
  // A hashed context that is not 32 bytes.
  DecisionRecord h = Sample();
  h.context_kind = ContextKind::kHash;
  h.context = "short";
  b.clear();
  EncodeDecision(h, &b);
  refused(b, "32 bytes");
  // A list count far beyond the bytes left is refused before anything is reserved for it.
  DecisionRecord e;
  b.clear();
  EncodeDecision(e, &b);
  std::string huge = b.substr(0, 36 + 4);          // header, id, time, version, four empty strings
  huge += "\xff\xff\xff\xff\xff\xff\xff\xff\x7f";  // determining policies: ~2^63 of them
  refused(huge, "determining policies: truncated");
  // An 11-byte varint.
  std::string overlong = b.substr(0, 36) + std::string(10, '\xff') + "\x01";
  refused(overlong, "varint too long");
  // Zero written in two bytes (found by the fuzzer: it decoded, and encoded back differently).
  std::string padded = b.substr(0, 36) + std::string("\x80\x00", 2) + b.substr(37);
  refused(padded, "shortest form");
}

TEST(DecisionIdTest, TextRoundTripAndLayout) {
  DecisionIdGenerator gen(0x3ffffffffff);
  const int64_t t = 1'795'986'592'185'000'000;
  DecisionId a = gen.Next(t);
  DecisionId b = gen.Next(t);
  EXPECT_NE(a, b);
  const std::string s = a.ToString();
  ASSERT_EQ(s.size(), 36u);
  EXPECT_EQ(s[14], '7') << "UUID version 7: " << s;
  EXPECT_TRUE(s[19] == '8' || s[19] == '9' || s[19] == 'a' || s[19] == 'b') << "variant 10: " << s;
  // The first 48 bits are the unix milliseconds.
  uint64_t ms = 0;
  for (int i = 0; i < 6; ++i) ms = ms << 8 | a.bytes[i];
  EXPECT_EQ(ms, static_cast<uint64_t>(t / 1'000'000));
  auto parsed = DecisionId::Parse(s);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, a);
  EXPECT_FALSE(DecisionId::Parse("not-an-id").ok());
  EXPECT_FALSE(DecisionId::Parse("0190b6e2-8d4c-7a1f-9e3b-5c2d0000000g").ok());
  EXPECT_TRUE(DecisionId().empty());
  EXPECT_FALSE(a.empty());
}

TEST(DecisionIdTest, UniqueWithinAProcessAndAcrossGenerators) {
  auto g1 = DecisionIdGenerator::Create();
  auto g2 = DecisionIdGenerator::Create();
  ASSERT_TRUE(g1.ok() && g2.ok());
  std::set<std::string> seen;
  for (int i = 0; i < 20000; ++i) {
    ASSERT_TRUE(seen.insert(g1->Next(1'000'000'000).ToString()).second);
    ASSERT_TRUE(seen.insert(g2->Next(1'000'000'000).ToString()).second);
  }
}

nlohmann::json ParseLine(const std::string& line) {
  EXPECT_EQ(line.find('\n'), std::string::npos);
  return nlohmann::json::parse(line);
}

TEST(DecisionEventTest, CarriesEveryFieldAsTelemetryExpects) {
  DecisionRecord r = Sample();
  std::string line;
  AppendDecisionEvent(r, "policy.decision", 1 << 20, &line);
  auto j = ParseLine(line);
  EXPECT_EQ(j["id"], r.id.ToString());
  EXPECT_EQ(j["time"].get<int64_t>(), r.time_ns);
  EXPECT_EQ(j["type"], "policy.decision");
  const auto& a = j["attributes"];
  EXPECT_EQ(a["organisation"], "acme");
  EXPECT_EQ(a["principal"], R"(Agent::"a1")");
  EXPECT_EQ(a["action"], R"(Action::"call_tool")");
  EXPECT_EQ(a["resource"], R"(Tool::"web_search")");
  EXPECT_EQ(a["decision"], "allow");
  EXPECT_EQ(a["determining_policies"], nlohmann::json({"policy4", "guardrail-1"}));
  EXPECT_EQ(a["erroring_policies"], nlohmann::json({"policy9"}));
  EXPECT_EQ(a["bundle_version"], 42);
  EXPECT_EQ(a["context"], nlohmann::json::parse(r.context));
  EXPECT_FALSE(a.contains("context_sha256"));
  // Only the fields intake's NDJSON decoder knows.
  for (auto& [k, v] : j.items())
    EXPECT_TRUE(k == "id" || k == "time" || k == "type" || k == "attributes") << k;

  r.decision = RecordedDecision::kApprovalRequired;
  r.context_kind = ContextKind::kHash;
  auto d = crypto::Sha256(std::string_view("{}"));
  ASSERT_TRUE(d.ok());
  r.context.assign(reinterpret_cast<const char*>(d->data()), d->size());
  line.clear();
  AppendDecisionEvent(r, "policy.decision", 1 << 20, &line);
  j = ParseLine(line);
  EXPECT_EQ(j["attributes"]["decision"], "approval_required");
  EXPECT_EQ(j["attributes"]["context_sha256"],
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
  EXPECT_FALSE(j["attributes"].contains("context"));

  r.context_kind = ContextKind::kNone;
  r.context.clear();
  line.clear();
  AppendDecisionEvent(r, "policy.decision", 1 << 20, &line);
  j = ParseLine(line);
  EXPECT_FALSE(j["attributes"].contains("context"));
  EXPECT_FALSE(j["attributes"].contains("context_sha256"));
}

TEST(DecisionEventTest, EscapesAndRepairsStrings) {
  DecisionRecord r = Sample();
  r.principal = std::string("Agent::\"a\\b\"\n\t\x01 caf\xc3\xa9 \xff end", 27);
  r.resource = "\xe2\x82";  // a truncated 3-byte sequence
  std::string line;
  AppendDecisionEvent(r, "policy.decision", 1 << 20, &line);
  auto j = ParseLine(line);  // nlohmann refuses invalid UTF-8, so this also proves the repair
  EXPECT_EQ(j["attributes"]["principal"], "Agent::\"a\\b\"\n\t\x01 caf\xc3\xa9 \xef\xbf\xbd end");
  EXPECT_EQ(j["attributes"]["resource"], "\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(DecisionEventTest, AContextTelemetryWouldRefuseIsSentAsItsHash) {
  DecisionRecord r = Sample();
  for (const auto& [context, why] : std::vector<std::pair<std::string, std::string>>{
           {"{not json", "not a JSON value"},
           {std::string(40, '[') + std::string(40, ']'), "nested deeper"},
           {"{\"big\":\"" + std::string(5000, 'x') + "\"}", "too large"}}) {
    r.context = context;
    std::string line;
    AppendDecisionEvent(r, "policy.decision", 4096, &line);
    auto j = ParseLine(line);
    EXPECT_FALSE(j["attributes"].contains("context")) << why;
    EXPECT_EQ(j["attributes"]["context_sha256"].get<std::string>().size(), 64u);
    EXPECT_NE(j["attributes"]["context_omitted"].get<std::string>().find(why), std::string::npos);
    EXPECT_LE(line.size(), 4096u);
  }
}

}  // namespace
}  // namespace govern::policy
