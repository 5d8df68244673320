// Per-organisation DLP policies in PostgreSQL: storing, reading back, and the rule-set cache.
#include "services/telemetry/dlp_policies.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "db/testing.h"
#include "services/telemetry/query_test_util.h"

namespace govern::telemetry {
namespace {

class DlpPoliciesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_.emplace(std::move(db).value());
    auto c = db::Connection::Connect(db_->conninfo());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    conn_ = std::move(c).value();
    ASSERT_TRUE(testing::ApplySchema(*conn_).ok());
  }
  void TearDown() override { conn_.reset(); }

  // What `rules` does to a text.
  static std::string Redacted(const dlp::RuleSet& rules, std::string_view text) {
    std::string out;
    dlp::Outcome o = rules.Redact(text, &out);
    if (o.dropped) return "<dropped>";
    return o.changed ? out : std::string(text);
  }

  std::optional<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Connection> conn_;
};

TEST_F(DlpPoliciesTest, StoresReadsAndDeletesWithoutShowingTheHashKey) {
  Result<std::optional<std::string>> none = GetDlpPolicy(*conn_, "acme");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(*none);

  Result<std::string> stored =
      SetDlpPolicy(*conn_, "acme", R"({"actions":{"email":"hash"},"hash_key":"s3cret"})");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->find("s3cret"), std::string::npos);
  nlohmann::json shown = nlohmann::json::parse(*stored);
  EXPECT_EQ(shown["actions"]["email"], "hash");
  EXPECT_EQ(shown["hash_key_set"], true);
  EXPECT_TRUE(shown["updated_at"].is_string());

  Result<std::optional<std::string>> got = GetDlpPolicy(*conn_, "acme");
  ASSERT_TRUE(got.ok() && *got);
  EXPECT_EQ(**got, *stored);
  EXPECT_FALSE(*GetDlpPolicy(*conn_, "other"));  // per organisation

  // Writing back what GET showed (no hash_key) keeps the stored key: the policy still compiles.
  nlohmann::json edited = nlohmann::json::parse(**got);
  edited["actions"]["phone"] = "hash";
  Result<std::string> again = SetDlpPolicy(*conn_, "acme", edited.dump());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  Result<db::Rows> raw = conn_->Exec("SELECT policy->>'hash_key' FROM telemetry_dlp_policies WHERE org = $1",
                                     db::Params("acme"));
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->Text(0, 0), "s3cret");
  EXPECT_GT(nlohmann::json::parse(*again)["updated_at"].get<std::string>(),
            shown["updated_at"].get<std::string>());

  Result<bool> deleted = DeleteDlpPolicy(*conn_, "acme");
  ASSERT_TRUE(deleted.ok());
  EXPECT_TRUE(*deleted);
  EXPECT_FALSE(*DeleteDlpPolicy(*conn_, "acme"));
  EXPECT_FALSE(*GetDlpPolicy(*conn_, "acme"));
}

TEST_F(DlpPoliciesTest, RefusesInvalidPoliciesAndKeepsTheOldOne) {
  ASSERT_TRUE(SetDlpPolicy(*conn_, "acme", R"({"default_action":"partial"})").ok());
  Result<std::string> bad = SetDlpPolicy(*conn_, "acme", R"({"custom_rules":[{"id":"x","pattern":"(a"}]})");
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("custom rule 0 (\"x\")"), std::string::npos)
      << bad.status().message();
  // Hash without any key, stored or given.
  Result<std::string> nokey = SetDlpPolicy(*conn_, "acme", R"({"actions":{"email":"hash"}})");
  EXPECT_EQ(nokey.status().code(), Code::kInvalidArgument);
  auto kept = GetDlpPolicy(*conn_, "acme");
  ASSERT_TRUE(kept.ok() && *kept);
  EXPECT_EQ(nlohmann::json::parse(**kept)["default_action"], "partial");
}

TEST_F(DlpPoliciesTest, CacheRereadsAfterTheIntervalAndRecompilesOnlyOnChange) {
  ManualClock clock;
  DlpPolicyCache cache(&clock, std::chrono::seconds(2));
  const std::string text = "badge EMP-123456 of alice@example.com";

  auto r1 = cache.Get(*conn_, "acme");
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_EQ(Redacted(**r1, text), "badge EMP-123456 of [REDACTED:email]");  // built-in, mask

  ASSERT_TRUE(SetDlpPolicy(*conn_, "acme",
                           R"({"custom_rules":[{"id":"badge","pattern":"EMP-[0-9]{6}"}],
                               "actions":{"email":"drop"}})")
                  .ok());
  // Within the interval the cached rules stand (no database read).
  auto r2 = cache.Get(*conn_, "acme");
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->get(), r1->get());

  clock.Advance(std::chrono::seconds(3));
  auto r3 = cache.Get(*conn_, "acme");
  ASSERT_TRUE(r3.ok()) << r3.status().ToString();
  EXPECT_NE(r3->get(), r1->get());
  EXPECT_EQ(Redacted(**r3, "badge EMP-123456"), "badge [REDACTED:badge]");
  EXPECT_EQ(Redacted(**r3, text), "<dropped>");

  // Re-checked but unchanged: the same compiled rules, not a recompile.
  clock.Advance(std::chrono::seconds(3));
  auto r4 = cache.Get(*conn_, "acme");
  ASSERT_TRUE(r4.ok());
  EXPECT_EQ(r4->get(), r3->get());

  // Another organisation is unaffected.
  auto other = cache.Get(*conn_, "other");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(Redacted(**other, "badge EMP-123456"), "badge EMP-123456");

  // Deleted: back to the built-in default after the interval; Invalidate skips the wait.
  ASSERT_TRUE(DeleteDlpPolicy(*conn_, "acme").ok());
  cache.Invalidate("acme");
  auto r5 = cache.Get(*conn_, "acme");
  ASSERT_TRUE(r5.ok());
  EXPECT_EQ(Redacted(**r5, text), "badge EMP-123456 of [REDACTED:email]");
}

TEST_F(DlpPoliciesTest, AStoredPolicyThatNoLongerCompilesFailsClosed) {
  ManualClock clock;
  DlpPolicyCache cache(&clock, std::chrono::seconds(1));
  // Written behind the API's back (an older binary, a manual edit): an unknown detector name.
  ASSERT_TRUE(conn_
                  ->Exec("INSERT INTO telemetry_dlp_policies (org, policy) VALUES ($1, $2::jsonb)",
                         db::Params("acme", R"({"disabled":["no_such_detector"]})"))
                  .ok());
  auto r = cache.Get(*conn_, "acme");
  EXPECT_EQ(r.status().code(), Code::kInternal);
  EXPECT_EQ(GetDlpPolicy(*conn_, "acme").status().code(), Code::kOk);  // still readable, to be fixed
  ASSERT_TRUE(SetDlpPolicy(*conn_, "acme", "{}").ok());
  clock.Advance(std::chrono::seconds(2));
  EXPECT_TRUE(cache.Get(*conn_, "acme").ok());
}

}  // namespace
}  // namespace govern::telemetry
