// Tests of the shared service key library against a real PostgreSQL: a new table made by TableSql and
// a table with telemetry's existing shape (so telemetry and policy can move onto it unchanged).
#include "services/keys/keys.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "db/connection.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"

namespace govern::service_keys {
namespace {

KeyTable AuditTable() { return {.table = "test_audit_keys", .prefix = "gva", .scopes = {"append", "read"}}; }

class KeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_ = std::make_unique<db::testing::TestDatabase>(std::move(*db));
    auto pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = 4});
    ASSERT_TRUE(pool.ok()) << pool.status().message();
    pool_ = std::move(*pool);
    ASSERT_TRUE(Conn().ExecScript(TableSql(AuditTable())).ok());
  }
  db::Connection& Conn() {
    if (!lease_) lease_.emplace(std::move(*pool_->Checkout()));
    return **lease_;
  }
  void TearDown() override { lease_.reset(); }

  std::unique_ptr<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Pool> pool_;
  std::optional<db::Pool::Lease> lease_;
};

TEST(KeyTableTest, ValidatesItsDescription) {
  EXPECT_TRUE(AuditTable().Validate().ok());
  EXPECT_FALSE((KeyTable{.table = "x; DROP", .prefix = "gva", .scopes = {"a"}}).Validate().ok());
  EXPECT_FALSE((KeyTable{.table = "keys", .prefix = "GVA", .scopes = {"a"}}).Validate().ok());
  EXPECT_FALSE((KeyTable{.table = "keys", .prefix = "gva", .scopes = {}}).Validate().ok());
  EXPECT_FALSE((KeyTable{.table = "keys", .prefix = "gva", .scopes = {"a'b"}}).Validate().ok());
  EXPECT_TRUE(AuditTable().CheckScope("read").ok());
  Status bad = AuditTable().CheckScope("admin");
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  EXPECT_NE(bad.message().find("'append', 'read'"), std::string::npos) << bad.message();
}

TEST(KeyTableTest, OrgNames) {
  EXPECT_TRUE(ValidateOrg("acme").ok());
  EXPECT_TRUE(ValidateOrg("a").ok());
  EXPECT_TRUE(ValidateOrg("0rg_with-dash").ok());
  EXPECT_TRUE(ValidateOrg(std::string(63, 'a')).ok());
  EXPECT_FALSE(ValidateOrg("").ok());
  EXPECT_FALSE(ValidateOrg(std::string(64, 'a')).ok());
  EXPECT_FALSE(ValidateOrg("Acme").ok());
  EXPECT_FALSE(ValidateOrg("-acme").ok());
  EXPECT_FALSE(ValidateOrg("_acme").ok());
  EXPECT_FALSE(ValidateOrg("ac me").ok());
  EXPECT_FALSE(ValidateOrg("acme/x").ok());
  EXPECT_NE(ValidateOrg("ac.me").message().find("position 3"), std::string::npos);
}

TEST(KeyTableTest, ParseRefusesEverythingButTheShape) {
  KeyTable t = AuditTable();
  std::string good = "gva_abcdefgh2345_" + std::string(64, 'a');
  auto p = ParseKey(t, good);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->key_id, "abcdefgh2345");
  for (std::string bad :
       {std::string(), std::string("gva_"), good.substr(1), good + "a", "gvk" + good.substr(3),
        "gva_abcdefgh2341_" + std::string(64, 'a'), "gva_abcdefgh2345-" + std::string(64, 'a'),
        "gva_abcdefgh2345_" + std::string(63, 'a') + "G"}) {
    EXPECT_EQ(ParseKey(t, bad).status().code(), Code::kUnauthenticated) << bad;
  }
  KeyTable longer{.table = "k", .prefix = "abcdef", .scopes = {"x"}};
  EXPECT_TRUE(ParseKey(longer, "abcdef_abcdefgh2345_" + std::string(64, '0')).ok());
}

TEST_F(KeysTest, CreateListRevokeCheck) {
  KeyTable t = AuditTable();
  auto k1 = CreateKey(Conn(), t, "acme", "append", "writers");
  ASSERT_TRUE(k1.ok()) << k1.status().message();
  auto k2 = CreateKey(Conn(), t, "globex", "read", "");
  ASSERT_TRUE(k2.ok());
  EXPECT_EQ(k1->substr(0, 4), "gva_");
  EXPECT_EQ(CreateKey(Conn(), t, "acme", "admin", "").status().code(), Code::kInvalidArgument);
  EXPECT_FALSE(CreateKey(Conn(), t, "Bad Org", "read", "").ok());

  auto all = ListKeys(Conn(), t);
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all->size(), 2u);
  auto acme = ListKeys(Conn(), t, "acme");
  ASSERT_TRUE(acme.ok());
  ASSERT_EQ(acme->size(), 1u);
  EXPECT_EQ((*acme)[0].scope, "append");
  EXPECT_EQ((*acme)[0].name, "writers");
  EXPECT_EQ((*acme)[0].created_at.size(), 20u);

  auto who = CheckKey(Conn(), t, *k1);
  ASSERT_TRUE(who.ok()) << who.status().message();
  EXPECT_EQ(who->org, "acme");
  EXPECT_EQ(who->scope, "append");
  EXPECT_EQ(who->key_id, (*acme)[0].key_id);

  std::string wrong = *k1;
  wrong.back() = wrong.back() == 'a' ? 'b' : 'a';
  EXPECT_EQ(CheckKey(Conn(), t, wrong).status().code(), Code::kUnauthenticated);

  ASSERT_TRUE(RevokeKey(Conn(), t, who->key_id).ok());
  EXPECT_TRUE(RevokeKey(Conn(), t, who->key_id).ok());
  EXPECT_EQ(RevokeKey(Conn(), t, "nosuchkey234").code(), Code::kNotFound);
  EXPECT_EQ(CheckKey(Conn(), t, *k1).status().code(), Code::kUnauthenticated);
  EXPECT_TRUE((*ListKeys(Conn(), t, "acme"))[0].revoked_at.has_value());
}

// The table telemetry made in its first migration, unchanged: the library reads and writes it.
TEST_F(KeysTest, WorksOnTelemetrysExistingTable) {
  ASSERT_TRUE(Conn()
                  .ExecScript(R"sql(
CREATE TABLE telemetry_ingest_keys (
  key_id      text PRIMARY KEY,
  org         text NOT NULL,
  secret_hash bytea NOT NULL,
  scope       text NOT NULL CHECK (scope IN ('ingest', 'query')),
  name        text NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);)sql")
                  .ok());
  KeyTable t{.table = "telemetry_ingest_keys", .prefix = "gvk", .scopes = {"ingest", "query"}};
  auto k = CreateKey(Conn(), t, "acme", "ingest", "");
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(k->substr(0, 4), "gvk_");
  EXPECT_EQ(k->size(), 4u + 12 + 1 + 64);
  KeyCache cache(pool_.get(), t);
  auto who = cache.VerifyBlocking(*k);
  ASSERT_TRUE(who.ok()) << who.status().message();
  EXPECT_EQ(who->scope, "ingest");
  // A key of another service's prefix is not a key here.
  auto audit = CreateKey(Conn(), AuditTable(), "acme", "append", "");
  ASSERT_TRUE(audit.ok());
  EXPECT_EQ(cache.VerifyBlocking(*audit).status().code(), Code::kUnauthenticated);
}

TEST_F(KeysTest, CacheAnswersFromMemoryAndRevocationWaitsForTheTtl) {
  KeyTable t = AuditTable();
  auto key = CreateKey(Conn(), t, "acme", "read", "");
  ASSERT_TRUE(key.ok());
  ManualClock clock;
  KeyCache cache(pool_.get(), t, {.ttl = std::chrono::seconds(10), .clock = &clock});
  ASSERT_TRUE(cache.VerifyBlocking(*key).ok());
  std::string unknown = "gva_zzzzzzzzzzzz_" + std::string(64, '0');
  EXPECT_EQ(cache.VerifyBlocking(unknown).status().code(), Code::kUnauthenticated);
  EXPECT_EQ(cache.GetStats().misses, 2u);
  for (const std::string& k : {*key, unknown}) {
    bool answered = false;
    cache.Verify(k, [&](Result<KeyIdentity>) { answered = true; });
    EXPECT_TRUE(answered) << "a cached answer runs on the calling thread";
  }
  EXPECT_EQ(cache.GetStats().hits, 2u);
  ASSERT_TRUE(RevokeKey(Conn(), t, ParseKey(t, *key)->key_id).ok());
  EXPECT_TRUE(cache.VerifyBlocking(*key).ok()) << "within the TTL the cached answer stands";
  clock.Advance(std::chrono::seconds(11));
  EXPECT_EQ(cache.VerifyBlocking(*key).status().code(), Code::kUnauthenticated);
}

TEST_F(KeysTest, ManyThreadsShareOneLookup) {
  KeyTable t = AuditTable();
  auto key = CreateKey(Conn(), t, "acme", "append", "");
  ASSERT_TRUE(key.ok());
  KeyCache cache(pool_.get(), t, {.ttl = std::chrono::minutes(1)});
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 50; ++j) ok += cache.VerifyBlocking(*key).ok() ? 1 : 0;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 400);
  EXPECT_EQ(cache.GetStats().misses, 1u);
}

TEST_F(KeysTest, DatabaseTroubleIsUnavailableAndNotCached) {
  KeyTable t = AuditTable();
  auto key = CreateKey(Conn(), t, "acme", "append", "");
  ASSERT_TRUE(key.ok());
  KeyCache cache(pool_.get(), t, {.ttl = std::chrono::minutes(1)});
  ASSERT_TRUE(Conn().Exec("ALTER TABLE test_audit_keys RENAME TO moved_away").ok());
  EXPECT_EQ(cache.VerifyBlocking(*key).status().code(), Code::kUnavailable);
  ASSERT_TRUE(Conn().Exec("ALTER TABLE moved_away RENAME TO test_audit_keys").ok());
  EXPECT_TRUE(cache.VerifyBlocking(*key).ok());
}

TEST_F(KeysTest, ShutdownAnswersLaterCalls) {
  KeyCache cache(pool_.get(), AuditTable(), {});
  cache.Shutdown();
  auto r = cache.VerifyBlocking("gva_zzzzzzzzzzzz_" + std::string(64, '0'));
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  cache.Shutdown();  // idempotent
}

}  // namespace
}  // namespace govern::service_keys
