// The C++ side of the telemetry archive e2e tests (needs the ctest `pg` fixture's PostgreSQL).
//
//   archive_e2e_tool write DIR   inserts realistic and awkward events into telemetry_events, runs the
//                                real compactor into a LocalStore at DIR/archive and writes
//                                DIR/expected.json: for every file the compactor wrote, its path and
//                                the rows that went in (in file order, every column as text), for
//                                DuckDB to compare against (duckdb.mjs).
//   archive_e2e_tool [gtest args] compaction to an S3-compatible server named by GOVERN_S3_ENDPOINT,
//                                GOVERN_S3_BUCKET, GOVERN_S3_REGION, GOVERN_S3_ACCESS_KEY_ID and
//                                GOVERN_S3_SECRET_ACCESS_KEY (server.mjs starts s3rver and sets them).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"
#include "services/telemetry/archive.h"
#include "services/telemetry/archive_testing.h"
#include "services/telemetry/compactor.h"
#include "storage/objstore/local_store.h"
#include "storage/objstore/s3_store.h"

namespace govern::telemetry {
namespace {

using testing::kDay0;
using testing::MakeEvent;

struct Env {
  std::optional<db::testing::TestDatabase> db;
  std::unique_ptr<db::Pool> pool;
};

Result<Env> OpenDatabase() {
  Env env;
  GOVERN_ASSIGN_OR_RETURN(auto tdb, db::testing::TestDatabase::Create());
  env.db.emplace(std::move(tdb));
  db::PoolOptions o;
  o.conninfo = env.db->conninfo();
  o.max_size = 4;
  GOVERN_ASSIGN_OR_RETURN(env.pool, db::Pool::Create(o));
  GOVERN_RETURN_IF_ERROR(db::Migrator("telemetry", Migrations()).Apply(*env.pool).status());
  return env;
}

// Events over three hours of two organisations, plus awkward values: unicode, quotes, newlines, empty
// strings, nested JSON, big numbers, extreme integers, several events in one nanosecond.
std::vector<StoredEvent> Events() {
  std::vector<StoredEvent> out;
  for (const char* org : {"acme", "globex/eu"}) {
    for (int i = 0; i < 3000; ++i) {
      out.push_back(MakeEvent(org, kDay0 + (i % 3) * kNanosPerHour + (i / 3) * 1'000'003, out.size()));
    }
  }
  StoredEvent odd = MakeEvent("acme", kDay0 + 5, 424242);
  odd.event.body = "ünïcødé 😀 \"quoted\"\n\ttabbed\\slash";
  odd.event.body_kind = BodyKind::kJson;
  odd.event.attributes = {{"e", "\"\""},
                          {"n", "-0.5"},
                          {"big", "123456789012345678901234567890"},
                          {"obj", "{\"a\":[1,{\"b\":null}],\"c\":\"d\\\"e\"}"},
                          {"ключ", "\"значение\""}};
  testing::SortLikeJsonb(odd.event.attributes);
  odd.event.severity_text = "";
  odd.event.trace_id_hex = "";
  odd.event.flags = 0xffffffffu;
  odd.event.dropped_attributes_count = 0xffffffffu;
  odd.received_ns = INT64_MAX;
  odd.event.observed_unix_nanos = INT64_MIN;
  out.push_back(odd);
  for (int i = 0; i < 4; ++i) {
    StoredEvent same = MakeEvent("acme", kDay0 + kNanosPerHour + 77, 900000 + i);  // one nanosecond
    out.push_back(same);
  }
  return out;
}

nlohmann::json RowJson(const StoredEvent& s) {
  const Event& e = s.event;
  auto str = [](int64_t v) { return std::to_string(v); };
  return nlohmann::json{
      {"org", e.org},
      {"time_ns", str(e.time_unix_nanos)},
      {"id", e.id},
      {"observed_ns", str(e.observed_unix_nanos)},
      {"received_ns", str(s.received_ns)},
      {"type", e.type},
      {"severity_text", e.severity_text},
      {"severity_number", str(e.severity_number)},
      {"body_kind", str(static_cast<int>(e.body_kind))},
      {"body", e.body},
      {"attributes", AttributesToJson(e.attributes)},
      {"resource_attributes", AttributesToJson(e.resource_attributes)},
      {"service_name", e.service_name},
      {"scope_name", e.scope_name},
      {"scope_version", e.scope_version},
      {"trace_id", e.trace_id_hex},
      {"span_id", e.span_id_hex},
      {"flags", str(e.flags)},
      {"dropped_attributes", str(e.dropped_attributes_count)},
  };
}

int Write(const std::string& dir) {
  auto env = OpenDatabase();
  if (!env.ok()) {
    std::fprintf(stderr, "database: %s\n", env.status().ToString().c_str());
    return 1;
  }
  auto events = Events();
  {
    auto lease = env->pool->Checkout();
    Status st = testing::InsertEvents(**lease, events);
    if (!st.ok()) {
      std::fprintf(stderr, "insert: %s\n", st.ToString().c_str());
      return 1;
    }
  }
  auto store = objstore::LocalStore::Open(dir + "/archive");
  if (!store.ok()) return 1;
  testing::SettableClock clock(kDay0 + 5 * kNanosPerHour);
  CompactionOptions o;
  o.row_group_rows = 700;  // several row groups per file
  o.temp_dir = dir;
  Compactor compactor(env->pool.get(), store->get(), &clock, o);
  auto stats = compactor.RunOnce();
  if (!stats.ok()) {
    std::fprintf(stderr, "compaction: %s\n", stats.status().ToString().c_str());
    return 1;
  }
  auto lease = env->pool->Checkout();
  auto files =
      (*lease)->Exec("SELECT org, hour_ns, object_key FROM telemetry_archive_files ORDER BY object_key");
  if (!files.ok()) return 1;
  nlohmann::json out = {{"files", nlohmann::json::array()}, {"rows", stats->rows}};
  size_t listed = 0;
  for (int f = 0; f < files->size(); ++f) {
    std::string org(files->Text(f, 0));
    int64_t hour = *files->Int64(f, 1);
    std::vector<StoredEvent> in_file;
    for (const auto& e : events) {
      if (e.event.org == org && HourOf(e.event.time_unix_nanos) == hour) in_file.push_back(e);
    }
    std::sort(in_file.begin(), in_file.end(),
              [](const StoredEvent& a, const StoredEvent& b) { return a.key() < b.key(); });
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& e : in_file) rows.push_back(RowJson(e));
    listed += in_file.size();
    out["files"].push_back(
        {{"path", (*store)->root() + "/" + std::string(files->Text(f, 2))}, {"rows", rows}});
  }
  if (listed != events.size() || stats->rows != static_cast<int64_t>(events.size())) {
    std::fprintf(stderr, "compacted %lld rows, listed %zu, inserted %zu\n",
                 static_cast<long long>(stats->rows), listed, events.size());
    return 1;
  }
  std::ofstream(dir + "/expected.json") << out.dump();
  std::printf("wrote %zu files with %zu rows\n", out["files"].size(), listed);
  return 0;
}

const char* EnvOr(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

class S3CompactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!*EnvOr("GOVERN_S3_ENDPOINT")) GTEST_SKIP() << "run through server.mjs";
    auto env = OpenDatabase();
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    env_.emplace(std::move(*env));
    events_ = Events();
    auto lease = env_->pool->Checkout();
    ASSERT_TRUE(testing::InsertEvents(**lease, events_).ok());
  }
  std::unique_ptr<objstore::S3Store> Store(const std::string& secret) {
    objstore::S3Config c;
    c.endpoint = EnvOr("GOVERN_S3_ENDPOINT");
    c.bucket = EnvOr("GOVERN_S3_BUCKET");
    c.region = EnvOr("GOVERN_S3_REGION");
    c.credentials.access_key_id = EnvOr("GOVERN_S3_ACCESS_KEY_ID");
    c.credentials.secret_access_key = secret;
    c.max_attempts = 2;
    c.sleep = [](std::chrono::milliseconds) {};
    auto s = objstore::S3Store::Create(c);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  int64_t PgCount() {
    auto lease = env_->pool->Checkout();
    auto r = (*lease)->Exec("SELECT count(*) FROM telemetry_events");
    return r.ok() ? *r->Int64(0, 0) : -1;
  }
  int64_t ManifestCount() {
    auto lease = env_->pool->Checkout();
    auto r = (*lease)->Exec("SELECT count(*) FROM telemetry_archive_files");
    return r.ok() ? *r->Int64(0, 0) : -1;
  }
  std::optional<Env> env_;
  std::vector<StoredEvent> events_;
};

TEST_F(S3CompactionTest, WrongKeysFailClearlyAndLeaveRowsInPostgres) {
  auto store = Store("not-the-secret");
  ASSERT_TRUE(store);
  testing::SettableClock clock(kDay0 + 5 * kNanosPerHour);
  Compactor compactor(env_->pool.get(), store.get(), &clock);
  auto stats = compactor.RunOnce();
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), Code::kUnauthenticated) << stats.status().ToString();
  EXPECT_NE(stats.status().message().find("SignatureDoesNotMatch"), std::string::npos)
      << stats.status().ToString();
  EXPECT_EQ(PgCount(), static_cast<int64_t>(events_.size()));
  EXPECT_EQ(ManifestCount(), 0);
}

TEST_F(S3CompactionTest, CompactsToS3AndQueriesReadItBack) {
  auto store = Store(EnvOr("GOVERN_S3_SECRET_ACCESS_KEY"));
  ASSERT_TRUE(store);
  testing::SettableClock clock(kDay0 + 5 * kNanosPerHour);
  CompactionOptions o;
  o.row_group_rows = 500;
  Compactor compactor(env_->pool.get(), store.get(), &clock, o);
  auto stats = compactor.RunOnce();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->rows, static_cast<int64_t>(events_.size()));
  EXPECT_EQ(PgCount(), 0);
  EXPECT_EQ(ManifestCount(), 6);
  auto listed = store->List("events/org=globex%2Feu/");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->size(), 3u);

  Archive archive(env_->pool.get(), store.get());
  for (const std::string org : {"acme", "globex/eu"}) {
    std::vector<StoredEvent> want;
    for (const auto& e : events_) {
      if (e.event.org == org) want.push_back(e);
    }
    std::sort(want.begin(), want.end(),
              [](const StoredEvent& a, const StoredEvent& b) { return b.key() < a.key(); });
    EventQuery q;
    q.org = org;
    q.limit = 1000;
    std::vector<StoredEvent> got;
    while (true) {
      auto page = archive.Scan(q);
      ASSERT_TRUE(page.ok()) << page.status().ToString();
      got.insert(got.end(), page->begin(), page->end());
      if (page->size() < q.limit) break;
      q.after = page->back().key();
    }
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << org << " " << i;
  }
}

}  // namespace
}  // namespace govern::telemetry

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "write") return govern::telemetry::Write(argv[2]);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
