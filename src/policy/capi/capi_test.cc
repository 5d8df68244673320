// Tests of the C ABI through the shared library itself (libgovern_policy.so): decisions, errors and
// misuse at the boundary, signed bundles and hot swap, and the decision log read back from disk.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bundle/bundle.h"
#include "bundle/keys.h"
#include "govern_policy.h"
#include "policy/decisions/decision_record.h"
#include "storage/wal.h"

namespace {

namespace fs = std::filesystem;

constexpr const char* kPolicies = R"(@id("no-internal")
forbid (principal, action, resource) when { context has url && context.url like "*internal*" };

@id("research-web")
permit (principal in Team::"research", action == Action::"call_tool", resource == Tool::"web_search");

@id("needs-limit")
permit (principal, action == Action::"spend", resource) when { context.amount < principal.limit };
)";

constexpr const char* kEntities = R"([
 {"uid": {"type": "Team", "id": "research"}, "attrs": {}, "parents": []},
 {"uid": {"type": "Agent", "id": "ada"}, "attrs": {"limit": 100}, "parents": [{"type": "Team", "id": "research"}]},
 {"uid": {"type": "Agent", "id": "bob"}, "attrs": {}, "parents": []}
])";

// A scratch directory removed at the end of the test.
struct TempDir {
  TempDir() {
    std::string t = (fs::temp_directory_path() / "govern_capi_XXXXXX").string();
    path = mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

std::string Take(char* s) {
  std::string out = s ? s : "";
  govern_policy_string_free(s);
  return out;
}

govern_policy_engine* TextEngine() {
  govern_policy_engine* e = nullptr;
  char* err = nullptr;
  EXPECT_EQ(govern_policy_engine_from_text(kPolicies, kEntities, &e, &err), GOVERN_POLICY_OK) << Take(err);
  return e;
}

TEST(PolicyCapi, AbiVersionAndNames) {
  EXPECT_EQ(govern_policy_abi_version(), uint32_t{GOVERN_POLICY_ABI_VERSION});
  EXPECT_STREQ(govern_policy_decision_name(GOVERN_POLICY_ALLOW), "allow");
  EXPECT_STREQ(govern_policy_decision_name(GOVERN_POLICY_DENY), "deny");
  EXPECT_STREQ(govern_policy_decision_name(GOVERN_POLICY_APPROVAL_REQUIRED), "approval_required");
  EXPECT_STREQ(govern_policy_decision_name(99), "unknown");
  EXPECT_STREQ(govern_policy_error_name(GOVERN_POLICY_ERR_BUNDLE_REFUSED), "bundle_refused");
  EXPECT_STREQ(govern_policy_error_name(-5), "unknown");
  govern_policy_string_free(nullptr);
}

TEST(PolicyCapi, DecidesAllowDenyWithReasonsAndErrors) {
  govern_policy_engine* e = TextEngine();
  ASSERT_NE(e, nullptr);
  govern_policy_result* r = govern_policy_result_new();
  ASSERT_NE(r, nullptr);

  ASSERT_EQ(govern_policy_decide(e, r, "Agent", "ada", "Action", "call_tool", "Tool", "web_search",
                                 R"({"url": "https://example.com"})"),
            GOVERN_POLICY_OK);
  EXPECT_EQ(govern_policy_result_decision(r), GOVERN_POLICY_ALLOW);
  ASSERT_EQ(govern_policy_result_reason_count(r), 1u);
  EXPECT_STREQ(govern_policy_result_reason(r, 0), "policy1");
  EXPECT_STREQ(govern_policy_result_reason_annotation(r, 0, "id"), "research-web");
  EXPECT_EQ(govern_policy_result_reason_annotation(r, 0, "nope"), nullptr);
  EXPECT_EQ(govern_policy_result_reason(r, 1), nullptr);
  EXPECT_EQ(govern_policy_result_error_count(r), 0u);
  EXPECT_STREQ(govern_policy_result_message(r), "");
  EXPECT_STREQ(govern_policy_result_decision_id(r), "");
  EXPECT_EQ(govern_policy_result_bundle_version(r), 0u);

  // The guardrail forbids: deny, determined by policy0.
  ASSERT_EQ(govern_policy_decide(e, r, "Agent", "ada", "Action", "call_tool", "Tool", "web_search",
                                 R"({"url": "https://internal.corp"})"),
            GOVERN_POLICY_OK);
  EXPECT_EQ(govern_policy_result_decision(r), GOVERN_POLICY_DENY);
  ASSERT_EQ(govern_policy_result_reason_count(r), 1u);
  EXPECT_STREQ(govern_policy_result_reason(r, 0), "policy0");

  // Default deny; policy2 errs for bob (no limit attribute) and is reported, not fatal.
  ASSERT_EQ(govern_policy_decide(e, r, "Agent", "bob", "Action", "spend", "Tool", "card", R"({"amount": 5})"),
            GOVERN_POLICY_OK);
  EXPECT_EQ(govern_policy_result_decision(r), GOVERN_POLICY_DENY);
  EXPECT_EQ(govern_policy_result_reason_count(r), 0u);
  ASSERT_EQ(govern_policy_result_error_count(r), 1u);
  EXPECT_STREQ(govern_policy_result_error_policy(r, 0), "policy2");
  EXPECT_NE(std::string(govern_policy_result_error_message(r, 0)), "");
  EXPECT_EQ(govern_policy_result_error_policy(r, 1), nullptr);
  EXPECT_EQ(govern_policy_result_error_message(r, 1), nullptr);

  // NULL and "" contexts mean {}.
  ASSERT_EQ(govern_policy_decide(e, r, "Agent", "ada", "Action", "call_tool", "Tool", "web_search", nullptr),
            GOVERN_POLICY_OK);
  EXPECT_EQ(govern_policy_result_decision(r), GOVERN_POLICY_ALLOW);
  ASSERT_EQ(govern_policy_decide(e, r, "Agent", "ada", "Action", "call_tool", "Tool", "web_search", ""),
            GOVERN_POLICY_OK);
  EXPECT_EQ(govern_policy_result_decision(r), GOVERN_POLICY_ALLOW);

  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_DECISIONS), 5u);
  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_ALLOWED), 3u);
  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_POLICIES), 3u);
  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_ENTITIES), 3u);
  EXPECT_EQ(govern_policy_engine_stat(e, 12345), 0u);
  EXPECT_EQ(govern_policy_engine_last_refusal(e), nullptr);

  // The result outlives the engine and keeps what it borrowed.
  ASSERT_EQ(govern_policy_decide(e, r, "Agent", "ada", "Action", "call_tool", "Tool", "web_search", nullptr),
            GOVERN_POLICY_OK);
  govern_policy_engine_free(e);
  EXPECT_STREQ(govern_policy_result_reason(r, 0), "policy1");
  EXPECT_STREQ(govern_policy_result_reason_annotation(r, 0, "id"), "research-web");
  govern_policy_result_free(r);
}

TEST(PolicyCapi, BadInputIsAnErrorWithAMessage) {
  govern_policy_engine* e = nullptr;
  char* err = nullptr;
  EXPECT_EQ(govern_policy_engine_from_text("permit (principal, action, resource) when {", nullptr, &e, &err),
            GOVERN_POLICY_ERR_POLICY);
  EXPECT_EQ(e, nullptr);
  EXPECT_NE(Take(err).find(':'), std::string::npos);

  EXPECT_EQ(govern_policy_engine_from_text(kPolicies, "[{\"uid\": ", &e, &err), GOVERN_POLICY_ERR_ENTITIES);
  EXPECT_NE(Take(err), "");
  EXPECT_EQ(govern_policy_engine_from_text(kPolicies, "{}", &e, &err), GOVERN_POLICY_ERR_ENTITIES);
  EXPECT_NE(Take(err), "");
  // A NULL error out-parameter is fine.
  EXPECT_EQ(govern_policy_engine_from_text("forbid", nullptr, &e, nullptr), GOVERN_POLICY_ERR_POLICY);
  // Empty text is an empty policy set: everything is denied.
  ASSERT_EQ(govern_policy_engine_from_text("", "", &e, &err), GOVERN_POLICY_OK) << Take(err);
  EXPECT_EQ(err, nullptr);

  govern_policy_result* r = govern_policy_result_new();
  ASSERT_EQ(govern_policy_decide(e, r, "A", "a", "Action", "x", "R", "r", nullptr), GOVERN_POLICY_OK);
  EXPECT_EQ(govern_policy_result_decision(r), GOVERN_POLICY_DENY);
  govern_policy_engine_free(e);

  e = TextEngine();
  // A first decision that allows, so that the failed ones below are seen to reset the result.
  ASSERT_EQ(govern_policy_decide(e, r, "Agent", "ada", "Action", "call_tool", "Tool", "web_search", nullptr),
            GOVERN_POLICY_OK);
  for (const char* bad : {"[1]", "{\"a\": ", "not json", "{\"a\": 1} x", "\"s\"", "{\"f\": 1.5}"}) {
    EXPECT_EQ(govern_policy_decide(e, r, "Agent", "ada", "Action", "call_tool", "Tool", "web_search", bad),
              GOVERN_POLICY_ERR_REQUEST)
        << bad;
    EXPECT_EQ(govern_policy_result_decision(r), GOVERN_POLICY_DENY);
    EXPECT_EQ(govern_policy_result_reason_count(r), 0u);
    EXPECT_NE(std::string(govern_policy_result_message(r)), "") << bad;
  }
  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_DECIDE_ERRORS), 6u);
  // Odd but valid uids: quotes, backslashes, empty ids.
  EXPECT_EQ(govern_policy_decide(e, r, "Agent", "a\"b\\c", "Action", "", "Tool", "\n", "{}"),
            GOVERN_POLICY_OK);
  govern_policy_engine_free(e);
  govern_policy_result_free(r);
}

TEST(PolicyCapi, NullPointersAreRefused) {
  char* err = nullptr;
  govern_policy_engine* e = nullptr;
  EXPECT_EQ(govern_policy_engine_from_text(nullptr, nullptr, &e, &err), GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Take(err), "");
  EXPECT_EQ(govern_policy_engine_from_text(kPolicies, kEntities, nullptr, &err),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  Take(err);
  EXPECT_EQ(govern_policy_engine_from_bundle_file(nullptr, 0, nullptr, "x", &e, &err),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  Take(err);
  const char* keys[] = {nullptr};
  EXPECT_EQ(govern_policy_engine_from_bundle_bytes(keys, 1, nullptr, "x", 1, &e, &err),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  Take(err);
  EXPECT_EQ(govern_policy_engine_from_bundle_bytes(keys, 1, nullptr, nullptr, 1, &e, &err),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  Take(err);
  EXPECT_EQ(govern_policy_engine_swap_bundle_bytes(nullptr, "x", 1, &err),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  Take(err);
  EXPECT_EQ(govern_policy_engine_swap_bundle_file(nullptr, "x", &err), GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  Take(err);
  EXPECT_EQ(govern_policy_engine_open_log(nullptr, "/tmp", 0, 0, nullptr, &err),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  Take(err);
  EXPECT_EQ(govern_policy_engine_flush_log(nullptr, &err), GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  Take(err);

  e = TextEngine();
  govern_policy_result* r = govern_policy_result_new();
  EXPECT_EQ(govern_policy_decide(e, nullptr, "A", "a", "B", "b", "C", "c", nullptr),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(govern_policy_decide(nullptr, r, "A", "a", "B", "b", "C", "c", nullptr),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(govern_policy_decide(e, r, nullptr, "a", "B", "b", "C", "c", nullptr),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(govern_policy_decide(e, r, "A", "a", "B", "b", "C", nullptr, nullptr),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(govern_policy_result_decision(r), GOVERN_POLICY_DENY);
  EXPECT_NE(std::string(govern_policy_result_message(r)), "");
  EXPECT_EQ(govern_policy_engine_open_log(e, nullptr, 0, 0, nullptr, &err),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  Take(err);
  EXPECT_EQ(govern_policy_engine_open_log(e, "/tmp/x", 7, 0, nullptr, &err),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  Take(err);
  EXPECT_EQ(govern_policy_engine_open_log(e, "/tmp/x", 0, 7, nullptr, &err),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  Take(err);
  // The text engine has no trust store.
  EXPECT_EQ(govern_policy_engine_swap_bundle_bytes(e, "x", 1, &err), GOVERN_POLICY_ERR_NOT_SUPPORTED);
  EXPECT_NE(Take(err), "");

  // Accessors and frees take NULL.
  EXPECT_EQ(govern_policy_result_decision(nullptr), GOVERN_POLICY_DENY);
  EXPECT_EQ(govern_policy_result_reason_count(nullptr), 0u);
  EXPECT_EQ(govern_policy_result_reason(nullptr, 0), nullptr);
  EXPECT_EQ(govern_policy_result_reason_annotation(r, 0, nullptr), nullptr);
  EXPECT_EQ(govern_policy_result_error_count(nullptr), 0u);
  EXPECT_STREQ(govern_policy_result_message(nullptr), "");
  EXPECT_STREQ(govern_policy_result_decision_id(nullptr), "");
  EXPECT_EQ(govern_policy_engine_stat(nullptr, GOVERN_POLICY_STAT_DECISIONS), 0u);
  EXPECT_EQ(govern_policy_engine_last_refusal(nullptr), nullptr);
  govern_policy_engine_free(nullptr);
  govern_policy_result_free(nullptr);
  govern_policy_engine_free(e);
  govern_policy_result_free(r);
}

// Bundles made with bundle::Build, as `govern policy sign --dir` makes them.
struct Bundles {
  Bundles() : dir() {
    key_path = dir.path + "/trusted.pub";
    std::ofstream(key_path) << trusted.Public()->Text();
    other_path = dir.path + "/other.pub";
    std::ofstream(other_path) << other.Public()->Text();
  }
  static govern::bundle::SigningKey Key(uint8_t n) {
    std::vector<uint8_t> seed(32, n);
    return std::move(*govern::bundle::SigningKey::FromSeed(seed));
  }
  std::string Make(uint64_t version, const std::string& policies,
                   const govern::bundle::SigningKey* key = nullptr, const std::string& org = "acme",
                   const std::string& limits = "", const std::string& links = "") {
    govern::bundle::BuildInput in;
    in.kind = "policy";
    in.org = org;
    in.version = version;
    in.created = 1795833000;
    in.files["policies.cedar"] = policies;
    in.files["entities.json"] = kEntities;
    if (!limits.empty()) in.files["limits.json"] = limits;
    if (!links.empty()) in.files["links.json"] = links;
    auto r = govern::bundle::Build(in, {key ? key : &trusted});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : "";
  }
  TempDir dir;
  govern::bundle::SigningKey trusted = Key(1), other = Key(2);
  std::string key_path, other_path;
};

// v1 allows ada's web search; v2 denies it (for the swap tests, the decision tells the versions apart).
const std::string kV1 = "permit (principal in Team::\"research\", action, resource == Tool::\"web_search\");";
const std::string kV2 = "forbid (principal, action, resource == Tool::\"web_search\");";

int Decide(govern_policy_engine* e, govern_policy_result* r) {
  int rc = govern_policy_decide(e, r, "Agent", "ada", "Action", "call_tool", "Tool", "web_search", "{}");
  EXPECT_EQ(rc, GOVERN_POLICY_OK) << govern_policy_result_message(r);
  return govern_policy_result_decision(r);
}

// A bundle's links.json links the templates of its policies.cedar; the reason names the link.
TEST(PolicyCapi, BundleTemplateLinks) {
  Bundles b;
  std::string v1 = b.Make(1, "permit (principal in ?principal, action, resource == Tool::\"web_search\");",
                          nullptr, "acme", "",
                          R"([{"templateId": "policy0", "newId": "research-search",
                               "values": {"?principal": {"type": "Team", "id": "research"}}}])");
  const char* keys[] = {b.key_path.c_str()};
  govern_policy_engine* e = nullptr;
  char* err = nullptr;
  ASSERT_EQ(govern_policy_engine_from_bundle_bytes(keys, 1, "acme", v1.data(), v1.size(), &e, &err),
            GOVERN_POLICY_OK)
      << Take(err);
  govern_policy_result* r = govern_policy_result_new();
  EXPECT_EQ(Decide(e, r), GOVERN_POLICY_ALLOW);
  ASSERT_EQ(govern_policy_result_reason_count(r), 1u);
  EXPECT_STREQ(govern_policy_result_reason(r, 0), "research-search");
  // A link to a template that is not there: refused, the old bundle keeps serving.
  std::string v2 = b.Make(2, "permit (principal in ?principal, action, resource);", nullptr, "acme", "",
                          R"([{"templateId": "policy7", "newId": "x", "values": {}}])");
  EXPECT_NE(govern_policy_engine_swap_bundle_bytes(e, v2.data(), v2.size(), &err), GOVERN_POLICY_OK);
  EXPECT_NE(std::string(Take(err)).find("links.json"), std::string::npos);
  EXPECT_EQ(Decide(e, r), GOVERN_POLICY_ALLOW);
  govern_policy_engine_free(e);
  govern_policy_result_free(r);
}

TEST(PolicyCapi, BundleEngineSwapsAndRefuses) {
  Bundles b;
  std::string v1 = b.Make(1, kV1), v2 = b.Make(2, kV2);
  std::string v1_path = b.dir.path + "/v1.tar.gz";
  std::ofstream(v1_path, std::ios::binary) << v1;
  const char* keys[] = {b.key_path.c_str()};

  govern_policy_engine* e = nullptr;
  char* err = nullptr;
  ASSERT_EQ(govern_policy_engine_from_bundle_file(keys, 1, "acme", v1_path.c_str(), &e, &err),
            GOVERN_POLICY_OK)
      << Take(err);
  govern_policy_result* r = govern_policy_result_new();
  EXPECT_EQ(Decide(e, r), GOVERN_POLICY_ALLOW);
  EXPECT_EQ(govern_policy_result_bundle_version(r), 1u);
  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_BUNDLE_VERSION), 1u);

  // The same bundle again: unchanged.
  EXPECT_EQ(govern_policy_engine_swap_bundle_bytes(e, v1.data(), v1.size(), &err), GOVERN_POLICY_OK)
      << Take(err);
  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_BUNDLES_UNCHANGED), 1u);

  // Refusals, each leaving v1 serving with the reason given back.
  struct Case {
    std::string archive, reason;
  };
  std::string tampered = v2;
  tampered[tampered.size() / 2] ^= 0x20;
  std::vector<Case> refused = {
      {b.Make(2, kV2, &b.other), "untrusted_key"},
      {b.Make(2, "permit (principal, action, resource) when {"), "rejected"},
      {b.Make(2, kV2, nullptr, "other-org"), "wrong_bundle"},
      {tampered, ""},  // gzip or tar damage, or a hash mismatch, depending on the byte hit
      {v2.substr(0, v2.size() / 2), "malformed_archive"},
      {"", "malformed_archive"},
  };
  for (const Case& c : refused) {
    EXPECT_EQ(govern_policy_engine_swap_bundle_bytes(e, c.archive.data(), c.archive.size(), &err),
              GOVERN_POLICY_ERR_BUNDLE_REFUSED);
    std::string msg = Take(err);
    EXPECT_EQ(msg.rfind(c.reason, 0), 0u) << msg;
    EXPECT_EQ(Take(govern_policy_engine_last_refusal(e)), msg);
    EXPECT_EQ(Decide(e, r), GOVERN_POLICY_ALLOW) << "v1 keeps serving after " << msg;
    EXPECT_EQ(govern_policy_result_bundle_version(r), 1u);
  }
  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_BUNDLES_REFUSED), refused.size());

  // v2 swaps in; v1 is then too old.
  EXPECT_EQ(govern_policy_engine_swap_bundle_bytes(e, v2.data(), v2.size(), &err), GOVERN_POLICY_OK)
      << Take(err);
  EXPECT_EQ(Decide(e, r), GOVERN_POLICY_DENY);
  EXPECT_EQ(govern_policy_result_bundle_version(r), 2u);
  EXPECT_EQ(govern_policy_engine_swap_bundle_file(e, v1_path.c_str(), &err),
            GOVERN_POLICY_ERR_BUNDLE_REFUSED);
  EXPECT_EQ(Take(err).rfind("version_too_old", 0), 0u);
  EXPECT_EQ(govern_policy_engine_swap_bundle_file(e, (b.dir.path + "/missing").c_str(), &err),
            GOVERN_POLICY_ERR_IO);
  EXPECT_NE(Take(err), "");
  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_BUNDLES_ACCEPTED), 2u);
  govern_policy_engine_free(e);

  // Creation refusals.
  EXPECT_EQ(govern_policy_engine_from_bundle_bytes(keys, 1, "globex", v1.data(), v1.size(), &e, &err),
            GOVERN_POLICY_ERR_BUNDLE_REFUSED);
  EXPECT_EQ(Take(err).rfind("wrong_bundle", 0), 0u);
  const char* other[] = {b.other_path.c_str()};
  EXPECT_EQ(govern_policy_engine_from_bundle_bytes(other, 1, nullptr, v1.data(), v1.size(), &e, &err),
            GOVERN_POLICY_ERR_BUNDLE_REFUSED);
  EXPECT_EQ(Take(err).rfind("untrusted_key", 0), 0u);
  const char* missing[] = {"/nonexistent/key.pub"};
  EXPECT_EQ(govern_policy_engine_from_bundle_bytes(missing, 1, nullptr, v1.data(), v1.size(), &e, &err),
            GOVERN_POLICY_ERR_IO);
  Take(err);
  const char* not_a_key[] = {v1_path.c_str()};
  EXPECT_EQ(govern_policy_engine_from_bundle_bytes(not_a_key, 1, nullptr, v1.data(), v1.size(), &e, &err),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  Take(err);
  EXPECT_EQ(e, nullptr);
  govern_policy_result_free(r);
}

// Decisions continue on several threads while bundles swap: every decision is one whole bundle's
// (its decision matches its version), and none is lost.
TEST(PolicyCapi, HotSwapUnderConcurrentDecisionsMixesNone) {
  Bundles b;
  std::vector<std::string> versions;
  for (uint64_t v = 1; v <= 40; ++v) versions.push_back(b.Make(v, v % 2 ? kV1 : kV2));
  const char* keys[] = {b.key_path.c_str()};
  govern_policy_engine* e = nullptr;
  char* err = nullptr;
  ASSERT_EQ(govern_policy_engine_from_bundle_bytes(keys, 1, nullptr, versions[0].data(), versions[0].size(),
                                                   &e, &err),
            GOVERN_POLICY_OK)
      << Take(err);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> mixed{0}, decided{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      govern_policy_result* r = govern_policy_result_new();
      uint64_t last_version = 0;
      while (!stop.load()) {
        int d = govern_policy_decide(e, r, "Agent", "ada", "Action", "call_tool", "Tool", "web_search", "{}");
        uint64_t v = govern_policy_result_bundle_version(r);
        int expect = v % 2 ? GOVERN_POLICY_ALLOW : GOVERN_POLICY_DENY;
        if (d != GOVERN_POLICY_OK || govern_policy_result_decision(r) != expect || v < last_version) ++mixed;
        last_version = v;
        ++decided;
      }
      govern_policy_result_free(r);
    });
  }
  for (size_t i = 1; i < versions.size(); ++i) {
    ASSERT_EQ(govern_policy_engine_swap_bundle_bytes(e, versions[i].data(), versions[i].size(), &err),
              GOVERN_POLICY_OK)
        << Take(err);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(mixed.load(), 0u);
  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_DECISIONS), decided.load());
  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_BUNDLE_VERSION), 40u);
  govern_policy_engine_free(e);
}

// Every decision is in the log, as the engine made it, with the bundle version; read back from disk.
TEST(PolicyCapi, DecisionLogRecordsEveryDecision) {
  for (int mode : {GOVERN_POLICY_LOG_BUFFERED, GOVERN_POLICY_LOG_DURABLE}) {
    Bundles b;
    std::string v1 = b.Make(7, std::string(kPolicies));
    const char* keys[] = {b.key_path.c_str()};
    govern_policy_engine* e = nullptr;
    char* err = nullptr;
    ASSERT_EQ(govern_policy_engine_from_bundle_bytes(keys, 1, nullptr, v1.data(), v1.size(), &e, &err),
              GOVERN_POLICY_OK)
        << Take(err);
    std::string log_dir = b.dir.path + "/decisions";
    ASSERT_EQ(
        govern_policy_engine_open_log(e, log_dir.c_str(), mode, GOVERN_POLICY_CONTEXT_FULL, nullptr, &err),
        GOVERN_POLICY_OK)
        << Take(err);
    EXPECT_EQ(
        govern_policy_engine_open_log(e, log_dir.c_str(), mode, GOVERN_POLICY_CONTEXT_FULL, nullptr, &err),
        GOVERN_POLICY_ERR_STATE);
    Take(err);
    govern_policy_result* r = govern_policy_result_new();
    ASSERT_EQ(govern_policy_decide(e, r, "Agent", "ada", "Action", "call_tool", "Tool", "web_search",
                                   R"({"url":"https://example.com"})"),
              GOVERN_POLICY_OK);
    std::string id1 = govern_policy_result_decision_id(r);
    EXPECT_EQ(id1.size(), 36u);
    ASSERT_EQ(govern_policy_decide(e, r, "Agent", "bob \"the\" agent", "Action", "spend", "Tool", "card",
                                   R"({"amount":5})"),
              GOVERN_POLICY_OK);
    std::string id2 = govern_policy_result_decision_id(r);
    EXPECT_NE(id1, id2);
    ASSERT_EQ(govern_policy_engine_flush_log(e, &err), GOVERN_POLICY_OK) << Take(err);
    EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_LOG_RECORDED), 2u);
    govern_policy_engine_free(e);  // closes the log

    auto wal = govern::wal::Log::Open(log_dir);
    ASSERT_TRUE(wal.ok()) << wal.status().ToString();
    auto reader = (*wal)->NewReader((*wal)->FirstSequence());
    ASSERT_TRUE(reader.ok());
    std::vector<govern::policy::DecisionRecord> got;
    while (true) {
      auto rec = (*reader)->Next();
      ASSERT_TRUE(rec.ok()) << rec.status().ToString();
      if (!rec->has_value()) break;
      auto d = govern::policy::DecodeDecision((*rec)->data);
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      got.push_back(*d);
    }
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].id.ToString(), id1);
    EXPECT_EQ(got[0].organisation, "acme");
    EXPECT_EQ(got[0].principal, "Agent::\"ada\"");
    EXPECT_EQ(got[0].action, "Action::\"call_tool\"");
    EXPECT_EQ(got[0].resource, "Tool::\"web_search\"");
    EXPECT_EQ(got[0].decision, govern::policy::RecordedDecision::kAllow);
    EXPECT_EQ(got[0].determining_policies, std::vector<std::string>{"policy1"});
    EXPECT_EQ(got[0].bundle_version, 7u);
    EXPECT_EQ(got[0].context_kind, govern::policy::ContextKind::kFull);
    EXPECT_EQ(got[0].context, R"({"url":"https://example.com"})");
    EXPECT_EQ(got[1].id.ToString(), id2);
    EXPECT_EQ(got[1].principal, "Agent::\"bob \\\"the\\\" agent\"");
    EXPECT_EQ(got[1].decision, govern::policy::RecordedDecision::kDeny);
    EXPECT_EQ(got[1].erroring_policies, std::vector<std::string>{"policy2"});
    govern_policy_result_free(r);
  }
}

TEST(PolicyCapi, DecisionLogInAnUnusableDirectoryIsAnError) {
  TempDir dir;
  std::string file = dir.path + "/file";
  std::ofstream(file) << "x";
  govern_policy_engine* e = TextEngine();
  char* err = nullptr;
  EXPECT_EQ(govern_policy_engine_open_log(e, (file + "/log").c_str(), GOVERN_POLICY_LOG_BUFFERED,
                                          GOVERN_POLICY_CONTEXT_HASH, "acme", &err),
            GOVERN_POLICY_ERR_IO);
  EXPECT_NE(Take(err), "");
  // Still usable, and unrecorded.
  govern_policy_result* r = govern_policy_result_new();
  EXPECT_EQ(Decide(e, r), GOVERN_POLICY_ALLOW);
  EXPECT_STREQ(govern_policy_result_decision_id(r), "");
  EXPECT_EQ(govern_policy_engine_flush_log(e, &err), GOVERN_POLICY_OK);
  govern_policy_result_free(r);
  govern_policy_engine_free(e);
}

// Extensions (docs/policy-extensions.md): a @require_approval permit, a rate limit and a budget.
constexpr const char* kExtPolicies = R"(@id("no-internal")
forbid (principal, action, resource) when { context has url && context.url like "*internal*" };

@id("research-web")
permit (principal in Team::"research", action == Action::"call_tool", resource == Tool::"web_search");

@id("big-spend") @require_approval("finance-oncall")
permit (principal in Team::"research", action == Action::"spend", resource) when { context.amount >= 100 };

@id("small-spend")
permit (principal in Team::"research", action == Action::"spend", resource);
)";

// Two searches an hour per agent (no refill within a test), 150 spent a day per agent.
constexpr const char* kLimits = R"([
 {"id": "search-rate", "action": "Action::\"call_tool\"", "resource": "Tool::\"web_search\"",
  "rate": {"requests": 2, "per": "1h"}},
 {"id": "daily-spend", "action": "Action::\"spend\"",
  "budget": {"amount_from": "context.amount", "limit": 150, "per": "24h"}}
])";

int DecideSearch(govern_policy_engine* e, govern_policy_result* r, const char* agent = "ada") {
  int rc = govern_policy_decide(e, r, "Agent", agent, "Action", "call_tool", "Tool", "web_search", "{}");
  EXPECT_EQ(rc, GOVERN_POLICY_OK) << govern_policy_result_message(r);
  return govern_policy_result_decision(r);
}

int DecideSpend(govern_policy_engine* e, govern_policy_result* r, const char* context) {
  int rc = govern_policy_decide(e, r, "Agent", "ada", "Action", "spend", "Tool", "card", context);
  EXPECT_EQ(rc, GOVERN_POLICY_OK) << govern_policy_result_message(r);
  return govern_policy_result_decision(r);
}

TEST(PolicyCapi, ApprovalRequiredComesThroughTheAbi) {
  govern_policy_engine* e = nullptr;
  char* err = nullptr;
  ASSERT_EQ(govern_policy_engine_from_text(kExtPolicies, kEntities, &e, &err), GOVERN_POLICY_OK) << Take(err);
  govern_policy_result* r = govern_policy_result_new();
  // 50: only the plain permit is satisfied: allow.
  EXPECT_EQ(DecideSpend(e, r, R"({"amount": 50})"), GOVERN_POLICY_ALLOW);
  ASSERT_EQ(govern_policy_result_reason_count(r), 1u);
  EXPECT_STREQ(govern_policy_result_reason_annotation(r, 0, "id"), "small-spend");
  // 500: the marked permit is satisfied too: approval, determined by the marked permit alone.
  EXPECT_EQ(DecideSpend(e, r, R"({"amount": 500})"), GOVERN_POLICY_APPROVAL_REQUIRED);
  ASSERT_EQ(govern_policy_result_reason_count(r), 1u);
  EXPECT_STREQ(govern_policy_result_reason(r, 0), "policy2");
  EXPECT_STREQ(govern_policy_result_reason_annotation(r, 0, "require_approval"), "finance-oncall");
  EXPECT_EQ(govern_policy_result_limit(r), nullptr);
  // A forbid still wins over an approval.
  EXPECT_EQ(DecideSpend(e, r, R"({"amount": 500, "url": "http://internal"})"), GOVERN_POLICY_DENY);
  EXPECT_STREQ(govern_policy_result_reason(r, 0), "policy0");
  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_APPROVAL_REQUIRED), 1u);
  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_ALLOWED), 1u);
  govern_policy_engine_free(e);

  // @require_approval on a forbid is refused when loaded.
  EXPECT_EQ(govern_policy_engine_from_text("@require_approval forbid (principal, action, resource);", nullptr,
                                           &e, &err),
            GOVERN_POLICY_ERR_POLICY);
  EXPECT_NE(Take(err).find("@require_approval"), std::string::npos);
  govern_policy_result_free(r);
}

TEST(PolicyCapi, LimitsDenyThroughTheAbi) {
  govern_policy_engine* e = nullptr;
  char* err = nullptr;
  ASSERT_EQ(govern_policy_engine_from_text_with_limits(kExtPolicies, kEntities, kLimits, &e, &err),
            GOVERN_POLICY_OK)
      << Take(err);
  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_LIMITS), 2u);
  govern_policy_result* r = govern_policy_result_new();
  // The rate: two searches, then denied by the limit (no policy is the reason).
  EXPECT_EQ(DecideSearch(e, r), GOVERN_POLICY_ALLOW);
  EXPECT_EQ(govern_policy_result_limit(r), nullptr);
  EXPECT_EQ(DecideSearch(e, r), GOVERN_POLICY_ALLOW);
  EXPECT_EQ(DecideSearch(e, r), GOVERN_POLICY_DENY);
  EXPECT_STREQ(govern_policy_result_limit(r), "search-rate");
  EXPECT_EQ(govern_policy_result_limit_error(r), nullptr);
  EXPECT_EQ(govern_policy_result_reason_count(r), 0u);
  // Each principal has its own counter; a denied decision takes nothing (bob is not in research).
  EXPECT_EQ(DecideSearch(e, r, "bob"), GOVERN_POLICY_DENY);
  EXPECT_EQ(govern_policy_result_limit(r), nullptr);

  // The budget: 100 + 50 fit in 150, then even 1 does not; an approval takes its share as well.
  EXPECT_EQ(DecideSpend(e, r, R"({"amount": 100})"), GOVERN_POLICY_APPROVAL_REQUIRED);
  EXPECT_EQ(DecideSpend(e, r, R"({"amount": 50})"), GOVERN_POLICY_ALLOW);
  EXPECT_EQ(DecideSpend(e, r, R"({"amount": 1})"), GOVERN_POLICY_DENY);
  EXPECT_STREQ(govern_policy_result_limit(r), "daily-spend");
  // Without its amount a budget cannot be applied: deny, with the reason why.
  EXPECT_EQ(DecideSpend(e, r, "{}"), GOVERN_POLICY_DENY);
  EXPECT_STREQ(govern_policy_result_limit(r), "daily-spend");
  ASSERT_NE(govern_policy_result_limit_error(r), nullptr);
  EXPECT_NE(std::string(govern_policy_result_limit_error(r)).find("amount"), std::string::npos);
  EXPECT_EQ(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_LIMITED), 3u);
  EXPECT_GE(govern_policy_engine_stat(e, GOVERN_POLICY_STAT_LIMIT_COUNTERS), 2u);
  govern_policy_engine_free(e);

  // Bad limits are refused with the file and the limit named.
  EXPECT_EQ(govern_policy_engine_from_text_with_limits(
                kExtPolicies, kEntities, R"([{"id": "x", "rate": {"requests": 1, "per": "1y"}}])", &e, &err),
            GOVERN_POLICY_ERR_LIMITS);
  EXPECT_EQ(e, nullptr);
  EXPECT_EQ(Take(err).rfind("limits.json", 0), 0u);
  EXPECT_STREQ(govern_policy_error_name(GOVERN_POLICY_ERR_LIMITS), "limits");
  // NULL and "" mean no limits.
  ASSERT_EQ(govern_policy_engine_from_text_with_limits(kExtPolicies, kEntities, "", &e, &err),
            GOVERN_POLICY_OK);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(DecideSearch(e, r), GOVERN_POLICY_ALLOW);
  govern_policy_engine_free(e);
  govern_policy_result_free(r);
}

// A bundle swap keeps the counters of the limits the new bundle keeps: it refills no budget.
TEST(PolicyCapi, BundleSwapKeepsLimitCounters) {
  Bundles b;
  std::string v1 = b.Make(1, kExtPolicies, nullptr, "acme", kLimits);
  // v2: other policy text (a new version), the same limits.
  std::string v2 = b.Make(2, std::string(kExtPolicies) + "\n// v2\n", nullptr, "acme", kLimits);
  // v3: the rate limit renamed: a new limit, with fresh counters.
  std::string renamed = kLimits;
  renamed.replace(renamed.find("search-rate"), 11, "search-rate2");
  std::string v3 = b.Make(3, kExtPolicies, nullptr, "acme", renamed);
  const char* keys[] = {b.key_path.c_str()};
  govern_policy_engine* e = nullptr;
  char* err = nullptr;
  ASSERT_EQ(govern_policy_engine_from_bundle_bytes(keys, 1, "acme", v1.data(), v1.size(), &e, &err),
            GOVERN_POLICY_OK)
      << Take(err);
  govern_policy_result* r = govern_policy_result_new();
  EXPECT_EQ(DecideSearch(e, r), GOVERN_POLICY_ALLOW);
  EXPECT_EQ(DecideSearch(e, r), GOVERN_POLICY_ALLOW);
  ASSERT_EQ(govern_policy_engine_swap_bundle_bytes(e, v2.data(), v2.size(), &err), GOVERN_POLICY_OK)
      << Take(err);
  EXPECT_EQ(DecideSearch(e, r), GOVERN_POLICY_DENY);
  EXPECT_EQ(govern_policy_result_bundle_version(r), 2u);
  EXPECT_STREQ(govern_policy_result_limit(r), "search-rate");
  ASSERT_EQ(govern_policy_engine_swap_bundle_bytes(e, v3.data(), v3.size(), &err), GOVERN_POLICY_OK)
      << Take(err);
  EXPECT_EQ(DecideSearch(e, r), GOVERN_POLICY_ALLOW);
  EXPECT_EQ(govern_policy_result_bundle_version(r), 3u);
  // A bundle with a bad limits.json is refused ("rejected"), and v3 keeps serving.
  std::string bad = b.Make(4, kExtPolicies, nullptr, "acme", "[{\"id\": \"x\"}]");
  EXPECT_EQ(govern_policy_engine_swap_bundle_bytes(e, bad.data(), bad.size(), &err),
            GOVERN_POLICY_ERR_BUNDLE_REFUSED);
  EXPECT_NE(Take(err).find("limits.json"), std::string::npos);
  EXPECT_EQ(DecideSearch(e, r), GOVERN_POLICY_ALLOW);
  EXPECT_EQ(DecideSearch(e, r), GOVERN_POLICY_DENY);
  EXPECT_EQ(govern_policy_result_bundle_version(r), 3u);
  govern_policy_result_free(r);
  govern_policy_engine_free(e);
}

// Each outcome is recorded as RecordedDecision, limit denials with "limit:<id>" as their reason.
TEST(PolicyCapi, DecisionLogRecordsApprovalAndLimitOutcomes) {
  Bundles b;
  std::string v1 = b.Make(5, kExtPolicies, nullptr, "acme", kLimits);
  const char* keys[] = {b.key_path.c_str()};
  govern_policy_engine* e = nullptr;
  char* err = nullptr;
  ASSERT_EQ(govern_policy_engine_from_bundle_bytes(keys, 1, nullptr, v1.data(), v1.size(), &e, &err),
            GOVERN_POLICY_OK)
      << Take(err);
  std::string log_dir = b.dir.path + "/decisions";
  ASSERT_EQ(govern_policy_engine_open_log(e, log_dir.c_str(), GOVERN_POLICY_LOG_BUFFERED,
                                          GOVERN_POLICY_CONTEXT_FULL, nullptr, &err),
            GOVERN_POLICY_OK)
      << Take(err);
  govern_policy_result* r = govern_policy_result_new();
  EXPECT_EQ(DecideSpend(e, r, R"({"amount": 50})"), GOVERN_POLICY_ALLOW);
  EXPECT_EQ(DecideSpend(e, r, R"({"amount": 100})"), GOVERN_POLICY_APPROVAL_REQUIRED);
  EXPECT_EQ(DecideSpend(e, r, R"({"amount": 10})"), GOVERN_POLICY_DENY);                    // over the budget
  EXPECT_EQ(DecideSpend(e, r, "{}"), GOVERN_POLICY_DENY);                                   // no amount
  EXPECT_EQ(DecideSpend(e, r, R"({"amount": 1, "url": "internal"})"), GOVERN_POLICY_DENY);  // forbid
  ASSERT_EQ(govern_policy_engine_flush_log(e, &err), GOVERN_POLICY_OK) << Take(err);
  govern_policy_result_free(r);
  govern_policy_engine_free(e);

  auto wal = govern::wal::Log::Open(log_dir);
  ASSERT_TRUE(wal.ok()) << wal.status().ToString();
  auto reader = (*wal)->NewReader((*wal)->FirstSequence());
  ASSERT_TRUE(reader.ok());
  std::vector<govern::policy::DecisionRecord> got;
  while (true) {
    auto rec = (*reader)->Next();
    ASSERT_TRUE(rec.ok()) << rec.status().ToString();
    if (!rec->has_value()) break;
    auto d = govern::policy::DecodeDecision((*rec)->data);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    got.push_back(*d);
  }
  using govern::policy::RecordedDecision;
  using V = std::vector<std::string>;
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0].decision, RecordedDecision::kAllow);
  EXPECT_EQ(got[0].determining_policies, V{"policy3"});
  EXPECT_EQ(got[1].decision, RecordedDecision::kApprovalRequired);
  EXPECT_EQ(got[1].determining_policies, V{"policy2"});
  EXPECT_EQ(got[2].decision, RecordedDecision::kDeny);
  EXPECT_EQ(got[2].determining_policies, V{"limit:daily-spend"});
  EXPECT_EQ(got[2].erroring_policies, V{});
  EXPECT_EQ(got[3].decision, RecordedDecision::kDeny);
  EXPECT_EQ(got[3].determining_policies, V{"limit:daily-spend"});
  // big-spend's condition errs without an amount (skipped, as Cedar does), then the limit cannot apply.
  EXPECT_EQ(got[3].erroring_policies, (V{"policy2", "limit:daily-spend"}));
  EXPECT_EQ(got[4].decision, RecordedDecision::kDeny);
  EXPECT_EQ(got[4].determining_policies, V{"policy0"});
  for (const auto& d : got) EXPECT_EQ(d.bundle_version, 5u);
}

// Extension values set without JSON decide as their __extn JSON does; bad text is a REQUEST error.
TEST(PolicyCapi, TypedExtensionValues) {
  constexpr const char* kPolicy = R"(permit (principal, action, resource) when {
  context.src.isInRange(ip("10.0.0.0/8")) && context.price.lessThan(decimal("20.0")) &&
  context.now < datetime("2025-01-01") && context.wait <= duration("2h") &&
  context.exact == decimal("12.5") && context.at == datetime("2024-06-01T12:00:00.250Z") &&
  context.d == duration("-90m") };)";
  govern_policy_engine* e = nullptr;
  char* err = nullptr;
  ASSERT_EQ(govern_policy_engine_from_text(kPolicy, "[]", &e, &err), GOVERN_POLICY_OK) << Take(err);
  govern_policy_result* r = govern_policy_result_new();
  for (const char* src : {"10.1.2.3", "11.0.0.1"}) {
    ASSERT_EQ(govern_policy_request_begin(r, "Agent", "a", "Action", "x", "Tool", "t"), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_ip(r, "src", src), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_decimal(r, "price", "12.50"), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_datetime(r, "now", "2024-10-15T11:38:02Z"), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_duration(r, "wait", "1h30m"), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_decimal_scaled(r, "exact", 125000), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_datetime_millis(r, "at", 1717243200250), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_duration_millis(r, "d", -90 * 60 * 1000), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_decide_request(e, r), GOVERN_POLICY_OK) << govern_policy_result_message(r);
    int want = std::string(src) == "10.1.2.3" ? GOVERN_POLICY_ALLOW : GOVERN_POLICY_DENY;
    EXPECT_EQ(govern_policy_result_decision(r), want) << src;
    EXPECT_EQ(govern_policy_result_error_count(r), 0u);
  }
  ASSERT_EQ(govern_policy_request_begin(r, "Agent", "a", "Action", "x", "Tool", "t"), GOVERN_POLICY_OK);
  ASSERT_EQ(govern_policy_request_ip(r, "src", "10.0.0.256"), GOVERN_POLICY_OK);
  EXPECT_EQ(govern_policy_decide_request(e, r), GOVERN_POLICY_ERR_REQUEST);
  EXPECT_NE(std::string(govern_policy_result_message(r)).find("`src`"), std::string::npos)
      << govern_policy_result_message(r);
  ASSERT_EQ(govern_policy_request_begin(r, "Agent", "a", "Action", "x", "Tool", "t"), GOVERN_POLICY_OK);
  EXPECT_EQ(govern_policy_request_datetime(r, "now", nullptr), GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(govern_policy_request_duration_millis(nullptr, "d", 1), GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  govern_policy_engine_free(e);
  govern_policy_result_free(r);
}

// Typed requests decide as the same context in JSON does, and are recorded as that JSON text.
TEST(PolicyCapi, TypedRequestsDecideWithoutJson) {
  constexpr const char* kTyped = R"(@id("typed")
permit (principal, action == Action::"typed", resource) when {
  context.args.n == 5 && context.tags.contains("a") && context.who == Agent::"ada" && context.ok &&
  context.s == "q\"x\n" };
)";
  TempDir dir;
  govern_policy_engine* e = nullptr;
  char* err = nullptr;
  ASSERT_EQ(govern_policy_engine_from_text(kTyped, kEntities, &e, &err), GOVERN_POLICY_OK) << Take(err);
  ASSERT_EQ(govern_policy_engine_open_log(e, (dir.path + "/log").c_str(), GOVERN_POLICY_LOG_BUFFERED,
                                          GOVERN_POLICY_CONTEXT_FULL, "acme", &err),
            GOVERN_POLICY_OK)
      << Take(err);
  govern_policy_result* r = govern_policy_result_new();
  auto begin = [&] {
    ASSERT_EQ(govern_policy_request_begin(r, "Agent", "ada", "Action", "typed", "Tool", "t"),
              GOVERN_POLICY_OK);
  };
  auto full = [&](int64_t n) {
    begin();
    ASSERT_EQ(govern_policy_request_begin_record(r, "args"), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_long(r, "n", n), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_end(r), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_begin_set(r, "tags"), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_string(r, nullptr, "a"), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_string(r, "", "b"), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_end(r), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_entity(r, "who", "Agent", "ada"), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_bool(r, "ok", 1), GOVERN_POLICY_OK);
    ASSERT_EQ(govern_policy_request_string(r, "s", "q\"x\n"), GOVERN_POLICY_OK);
  };
  const std::string json5 =
      R"({"args":{"n":5},"tags":["a","b"],"who":{"__entity":{"type":"Agent","id":"ada"}},"ok":true,"s":"q\"x\u000a"})";
  full(5);
  ASSERT_EQ(govern_policy_decide_request(e, r), GOVERN_POLICY_OK) << govern_policy_result_message(r);
  EXPECT_EQ(govern_policy_result_decision(r), GOVERN_POLICY_ALLOW);
  EXPECT_STREQ(govern_policy_result_reason_annotation(r, 0, "id"), "typed");
  // The same context as JSON decides alike.
  ASSERT_EQ(govern_policy_decide(e, r, "Agent", "ada", "Action", "typed", "Tool", "t", json5.c_str()),
            GOVERN_POLICY_OK)
      << govern_policy_result_message(r);
  EXPECT_EQ(govern_policy_result_decision(r), GOVERN_POLICY_ALLOW);
  full(6);
  ASSERT_EQ(govern_policy_decide_request(e, r), GOVERN_POLICY_OK);
  EXPECT_EQ(govern_policy_result_decision(r), GOVERN_POLICY_DENY);
  // Decided once per begin.
  EXPECT_EQ(govern_policy_decide_request(e, r), GOVERN_POLICY_ERR_STATE);
  EXPECT_EQ(govern_policy_result_decision(r), GOVERN_POLICY_DENY);
  EXPECT_EQ(govern_policy_request_long(r, "n", 1), GOVERN_POLICY_ERR_STATE);
  EXPECT_EQ(govern_policy_request_end(r), GOVERN_POLICY_ERR_STATE);

  // Mistakes: a duplicate key, a record left open, a NULL value, a bad type name.
  begin();
  govern_policy_request_long(r, "n", 1);
  govern_policy_request_long(r, "n", 2);
  EXPECT_EQ(govern_policy_decide_request(e, r), GOVERN_POLICY_ERR_REQUEST);
  EXPECT_NE(std::string(govern_policy_result_message(r)), "");
  begin();
  govern_policy_request_begin_record(r, "args");
  EXPECT_EQ(govern_policy_decide_request(e, r), GOVERN_POLICY_ERR_REQUEST);
  begin();
  EXPECT_EQ(govern_policy_request_string(r, "s", nullptr), GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(govern_policy_request_long(r, nullptr, 1), GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(govern_policy_decide_request(e, r), GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(govern_policy_request_begin(r, "Agent", nullptr, "Action", "typed", "Tool", "t"),
            GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(govern_policy_decide_request(e, r), GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(govern_policy_request_begin(r, "Not a type", "x", "Action", "typed", "Tool", "t"),
            GOVERN_POLICY_OK);
  EXPECT_EQ(govern_policy_decide_request(e, r), GOVERN_POLICY_ERR_REQUEST);
  EXPECT_EQ(govern_policy_decide_request(nullptr, r), GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(govern_policy_decide_request(e, nullptr), GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(govern_policy_request_end(nullptr), GOVERN_POLICY_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(govern_policy_engine_flush_log(e, &err), GOVERN_POLICY_OK) << Take(err);
  govern_policy_engine_free(e);
  govern_policy_result_free(r);

  // Recorded: the typed decisions' context is the JSON text above; three decisions were made.
  auto wal = govern::wal::Log::Open(dir.path + "/log");
  ASSERT_TRUE(wal.ok()) << wal.status().ToString();
  auto reader = (*wal)->NewReader((*wal)->FirstSequence());
  ASSERT_TRUE(reader.ok());
  std::vector<govern::policy::DecisionRecord> got;
  while (true) {
    auto rec = (*reader)->Next();
    ASSERT_TRUE(rec.ok());
    if (!rec->has_value()) break;
    auto d = govern::policy::DecodeDecision((*rec)->data);
    ASSERT_TRUE(d.ok());
    got.push_back(*d);
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].context, json5);
  EXPECT_EQ(got[0].principal, "Agent::\"ada\"");
  EXPECT_EQ(got[0].action, "Action::\"typed\"");
  EXPECT_EQ(got[2].decision, govern::policy::RecordedDecision::kDeny);
  EXPECT_NE(got[2].context.find("\"n\":6"), std::string::npos);
}

}  // namespace
