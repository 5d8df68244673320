// Telemetry API keys (services/keys on telemetry_ingest_keys) against a real PostgreSQL: the table
// telemetry's migrations make, gvk_ keys, and VerifyKey's scope check and single refusal message.
#include "services/telemetry/api_keys.h"

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <utility>
#include <vector>

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

TEST(ApiKeyFormat, GvkKeysOnly) {
  std::string good = "gvk_abcdefgh2345_" + std::string(64, 'a');
  auto p = service_keys::ParseKey(IngestKeys(), good);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->key_id, "abcdefgh2345");
  for (std::string bad :
       {"gvp" + good.substr(3), "gva" + good.substr(3), good.substr(1), std::string("gvk_")}) {
    EXPECT_EQ(service_keys::ParseKey(IngestKeys(), bad).status().code(), Code::kUnauthenticated) << bad;
  }
  EXPECT_TRUE(IngestKeys().Validate().ok());
  EXPECT_TRUE(IngestKeys().CheckScope("ingest").ok());
  EXPECT_TRUE(IngestKeys().CheckScope("query").ok());
  EXPECT_FALSE(IngestKeys().CheckScope("admin").ok());
}

// On the table telemetry's migrations make (keys created before the move keep working: same table,
// same format, same hash).
TEST_F(ApiKeysTest, CreateListRevoke) {
  auto k1 = service_keys::CreateKey(Conn(), IngestKeys(), "acme", kIngestScope, "agents");
  ASSERT_TRUE(k1.ok()) << k1.status().message();
  auto k2 = service_keys::CreateKey(Conn(), IngestKeys(), "globex", kQueryScope, "");
  ASSERT_TRUE(k2.ok()) << k2.status().message();
  EXPECT_EQ(k1->substr(0, 4), "gvk_");
  EXPECT_NE(*k1, *k2);
  auto p1 = service_keys::ParseKey(IngestKeys(), *k1);
  ASSERT_TRUE(p1.ok()) << *k1;
  EXPECT_FALSE(service_keys::CreateKey(Conn(), IngestKeys(), "Bad Org", kIngestScope, "").ok());
  EXPECT_FALSE(service_keys::CreateKey(Conn(), IngestKeys(), "acme", "admin", "").ok());

  // The table holds the hash, never the key or its secret.
  auto rows = Conn().Exec("SELECT secret_hash::text, key_id FROM telemetry_ingest_keys");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2);
  for (int r = 0; r < rows->size(); ++r) {
    EXPECT_EQ(std::string(rows->Text(r, 0)).find(std::string(p1->secret)), std::string::npos);
  }

  auto all = service_keys::ListKeys(Conn(), IngestKeys());
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all->size(), 2u);
  auto acme = service_keys::ListKeys(Conn(), IngestKeys(), "acme");
  ASSERT_TRUE(acme.ok());
  ASSERT_EQ(acme->size(), 1u);
  EXPECT_EQ((*acme)[0].key_id, p1->key_id);
  EXPECT_EQ((*acme)[0].scope, "ingest");
  EXPECT_EQ((*acme)[0].name, "agents");
  EXPECT_FALSE((*acme)[0].revoked_at.has_value());

  ASSERT_TRUE(service_keys::RevokeKey(Conn(), IngestKeys(), p1->key_id).ok());
  acme = service_keys::ListKeys(Conn(), IngestKeys(), "acme");
  ASSERT_TRUE(acme.ok());
  EXPECT_TRUE((*acme)[0].revoked_at.has_value());
  EXPECT_EQ(service_keys::RevokeKey(Conn(), IngestKeys(), "nosuchkey234").code(), Code::kNotFound);
}

Result<std::string> VerifyBlocking(service_keys::KeyCache& cache, std::string_view key,
                                   std::string_view scope) {
  std::promise<Result<std::string>> p;
  auto f = p.get_future();
  VerifyKey(cache, key, scope, [&p](Result<std::string> r) { p.set_value(std::move(r)); });
  return f.get();
}

TEST_F(ApiKeysTest, VerifyKeyChecksTheScopeAndRefusesWithOneMessage) {
  auto ingest = service_keys::CreateKey(Conn(), IngestKeys(), "acme", kIngestScope, "");
  auto query = service_keys::CreateKey(Conn(), IngestKeys(), "acme", kQueryScope, "");
  ASSERT_TRUE(ingest.ok() && query.ok());
  service_keys::KeyCache cache(pool_.get(), IngestKeys(), {.ttl = std::chrono::minutes(1)});

  auto ok = VerifyBlocking(cache, *ingest, kIngestScope);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok, "acme");
  EXPECT_TRUE(VerifyBlocking(cache, *query, kQueryScope).ok());

  std::string wrong_secret = *ingest;
  wrong_secret.back() = wrong_secret.back() == 'a' ? 'b' : 'a';
  std::string unknown = "gvk_zzzzzzzzzzzz_" + std::string(64, '0');
  std::vector<std::pair<std::string, std::string_view>> bad = {{wrong_secret, kIngestScope},
                                                               {unknown, kIngestScope},
                                                               {*query, kIngestScope},  // wrong scope
                                                               {*ingest, kQueryScope},
                                                               {"not a key", kIngestScope}};
  for (auto& [key, scope] : bad) {
    auto r = VerifyBlocking(cache, key, scope);
    ASSERT_EQ(r.status().code(), Code::kUnauthenticated) << key;
    EXPECT_EQ(r.status().message(), "invalid, revoked or wrong-scope API key")
        << "the refusal must not say why";
  }

  // The database cannot answer: Unavailable (503), not a refusal.
  ASSERT_TRUE(Conn().Exec("ALTER TABLE telemetry_ingest_keys RENAME TO moved_away").ok());
  std::string other = "gvk_yyyyyyyyyyyy_" + std::string(64, '0');
  EXPECT_EQ(VerifyBlocking(cache, other, kIngestScope).status().code(), Code::kUnavailable);
}

}  // namespace
}  // namespace govern::telemetry
