// API keys against the shared test PostgreSQL: creation, listing, revocation and the verifying cache.
#include "services/telemetry/api_keys.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "db/connection.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"
#include "services/telemetry/schema.h"

namespace govern::telemetry {
namespace {

class ApiKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_ = std::make_unique<db::testing::TestDatabase>(std::move(*db));
    auto pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = 4});
    ASSERT_TRUE(pool.ok()) << pool.status().message();
    pool_ = std::move(*pool);
    auto applied = db::Migrator("telemetry", Migrations()).Apply(*pool_);
    ASSERT_TRUE(applied.ok()) << applied.status().message();
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

TEST(ApiKeyFormat, OrgNames) {
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

TEST(ApiKeyFormat, ParseRefusesEverythingButTheShape) {
  std::string good = "gvk_abcdefgh2345_" + std::string(64, 'a');
  auto p = ParseKey(good);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->key_id, "abcdefgh2345");
  EXPECT_EQ(p->secret, std::string(64, 'a'));
  for (std::string bad :
       {std::string(), std::string("gvk_"), good.substr(1), good + "a", "gvx" + good.substr(3),
        "gvk_abcdefgh2341_" + std::string(64, 'a'),  // '1' is not base32
        "gvk_ABCDEFGH2345_" + std::string(64, 'a'),  // upper case
        "gvk_abcdefgh2345-" + std::string(64, 'a'),  // separator
        "gvk_abcdefgh2345_" + std::string(63, 'a') + "g"}) {
    auto r = ParseKey(bad);
    EXPECT_EQ(r.status().code(), Code::kUnauthenticated) << bad;
  }
  EXPECT_TRUE(ParseScope("ingest").ok());
  EXPECT_TRUE(ParseScope("query").ok());
  EXPECT_FALSE(ParseScope("admin").ok());
}

TEST_F(ApiKeysTest, CreateListRevoke) {
  auto k1 = CreateKey(Conn(), "acme", KeyScope::kIngest, "agents");
  ASSERT_TRUE(k1.ok()) << k1.status().message();
  auto k2 = CreateKey(Conn(), "globex", KeyScope::kQuery, "");
  ASSERT_TRUE(k2.ok()) << k2.status().message();
  EXPECT_NE(*k1, *k2);
  auto p1 = ParseKey(*k1);
  ASSERT_TRUE(p1.ok()) << *k1;
  EXPECT_FALSE(CreateKey(Conn(), "Bad Org", KeyScope::kIngest, "").ok());

  // The table holds the hash, never the key or its secret.
  auto rows = Conn().Exec("SELECT secret_hash::text, key_id FROM telemetry_ingest_keys");
  ASSERT_TRUE(rows.ok());
  for (int r = 0; r < rows->size(); ++r) {
    EXPECT_EQ(std::string(rows->Text(r, 0)).find(std::string(p1->secret)), std::string::npos);
  }

  auto all = ListKeys(Conn());
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all->size(), 2u);
  auto acme = ListKeys(Conn(), "acme");
  ASSERT_TRUE(acme.ok());
  ASSERT_EQ(acme->size(), 1u);
  EXPECT_EQ((*acme)[0].key_id, p1->key_id);
  EXPECT_EQ((*acme)[0].org, "acme");
  EXPECT_EQ((*acme)[0].scope, KeyScope::kIngest);
  EXPECT_EQ((*acme)[0].name, "agents");
  EXPECT_EQ((*acme)[0].created_at.size(), 20u) << (*acme)[0].created_at;  // 2026-11-30T01:02:03Z
  EXPECT_FALSE((*acme)[0].revoked_at.has_value());

  ASSERT_TRUE(RevokeKey(Conn(), p1->key_id).ok());
  acme = ListKeys(Conn(), "acme");
  ASSERT_TRUE(acme.ok());
  ASSERT_TRUE((*acme)[0].revoked_at.has_value());
  std::string first = *(*acme)[0].revoked_at;
  EXPECT_TRUE(RevokeKey(Conn(), p1->key_id).ok());  // again: ok, first time kept
  EXPECT_EQ(*(*ListKeys(Conn(), "acme"))[0].revoked_at, first);
  EXPECT_EQ(RevokeKey(Conn(), "nosuchkey234").code(), Code::kNotFound);
}

TEST_F(ApiKeysTest, CacheVerifiesAndRefusesWithOneMessage) {
  auto ingest = CreateKey(Conn(), "acme", KeyScope::kIngest, "");
  auto query = CreateKey(Conn(), "acme", KeyScope::kQuery, "");
  ASSERT_TRUE(ingest.ok() && query.ok());
  KeyCache cache(pool_.get(), {.ttl = std::chrono::minutes(1)});

  auto ok = cache.VerifyBlocking(*ingest, KeyScope::kIngest);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok, "acme");
  EXPECT_TRUE(cache.VerifyBlocking(*query, KeyScope::kQuery).ok());

  std::string wrong_secret = *ingest;
  wrong_secret.back() = wrong_secret.back() == 'a' ? 'b' : 'a';
  std::string unknown = "gvk_zzzzzzzzzzzz_" + std::string(64, '0');
  std::vector<std::pair<std::string, KeyScope>> bad = {{wrong_secret, KeyScope::kIngest},
                                                       {unknown, KeyScope::kIngest},
                                                       {*query, KeyScope::kIngest},  // wrong scope
                                                       {*ingest, KeyScope::kQuery},
                                                       {"not a key", KeyScope::kIngest}};
  std::string message;
  for (auto& [key, scope] : bad) {
    auto r = cache.VerifyBlocking(key, scope);
    ASSERT_EQ(r.status().code(), Code::kUnauthenticated) << key;
    if (message.empty()) message = r.status().message();
    EXPECT_EQ(r.status().message(), message) << "the refusal must not say why";
  }
}

TEST_F(ApiKeysTest, CachedAnswersNeedNoDatabaseAndRevocationWaitsForTheTtl) {
  auto key = CreateKey(Conn(), "acme", KeyScope::kIngest, "");
  ASSERT_TRUE(key.ok());
  ManualClock clock;
  KeyCache cache(pool_.get(), {.ttl = std::chrono::seconds(10), .clock = &clock});
  ASSERT_TRUE(cache.VerifyBlocking(*key, KeyScope::kIngest).ok());
  std::string unknown = "gvk_zzzzzzzzzzzz_" + std::string(64, '0');
  EXPECT_FALSE(cache.VerifyBlocking(unknown, KeyScope::kIngest).ok());
  auto before = cache.GetStats();
  EXPECT_EQ(before.misses, 2u);

  // Cached: answered on the calling thread, positive and negative alike.
  for (const std::string& k : {*key, unknown}) {
    bool answered = false;
    cache.Verify(k, KeyScope::kIngest, [&](Result<std::string>) { answered = true; });
    EXPECT_TRUE(answered);
  }
  EXPECT_EQ(cache.GetStats().misses, 2u);
  EXPECT_EQ(cache.GetStats().hits, 2u);

  ASSERT_TRUE(RevokeKey(Conn(), ParseKey(*key)->key_id).ok());
  EXPECT_TRUE(cache.VerifyBlocking(*key, KeyScope::kIngest).ok())
      << "within the TTL the cached answer stands";
  clock.Advance(std::chrono::seconds(11));
  EXPECT_EQ(cache.VerifyBlocking(*key, KeyScope::kIngest).status().code(), Code::kUnauthenticated);
}

TEST_F(ApiKeysTest, ManyThreadsShareOneLookup) {
  auto key = CreateKey(Conn(), "acme", KeyScope::kIngest, "");
  ASSERT_TRUE(key.ok());
  KeyCache cache(pool_.get(), {.ttl = std::chrono::minutes(1)});
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) ok += cache.VerifyBlocking(*key, KeyScope::kIngest).ok() ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 400);
  EXPECT_EQ(cache.GetStats().misses, 1u);
}

TEST_F(ApiKeysTest, DatabaseDownIsUnavailableNotUnauthenticated) {
  auto key = CreateKey(Conn(), "acme", KeyScope::kIngest, "");
  ASSERT_TRUE(key.ok());
  lease_.reset();
  auto good_pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = 1});
  ASSERT_TRUE(good_pool.ok());
  KeyCache cache(good_pool->get(), {.ttl = std::chrono::minutes(1)});
  // Drop the keys table under the cache: the lookup errors out.
  ASSERT_TRUE(Conn().Exec("ALTER TABLE telemetry_ingest_keys RENAME TO moved_away").ok());
  auto r = cache.VerifyBlocking(*key, KeyScope::kIngest);
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status().message();
  ASSERT_TRUE(Conn().Exec("ALTER TABLE moved_away RENAME TO telemetry_ingest_keys").ok());
  // Failures are not cached: the next request asks again and succeeds.
  EXPECT_TRUE(cache.VerifyBlocking(*key, KeyScope::kIngest).ok());
  EXPECT_EQ(cache.GetStats().lookups_failed, 1u);
}

TEST_F(ApiKeysTest, ShutdownAnswersWaitersAndLaterCalls) {
  KeyCache cache(pool_.get(), {});
  cache.Shutdown();
  auto r = cache.VerifyBlocking("gvk_zzzzzzzzzzzz_" + std::string(64, '0'), KeyScope::kIngest);
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  cache.Shutdown();  // idempotent
}

}  // namespace
}  // namespace govern::telemetry
