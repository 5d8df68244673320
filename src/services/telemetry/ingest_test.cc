// Ingester against a real WAL in a temporary directory and the shared test PostgreSQL: fields intact,
// exactly once across restarts, crashes (a forked child _exits mid-batch), retried batches and
// terminated connections; partitions over the whole int64 range; poison records; lag reporting.
#include "services/telemetry/ingest.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "db/local_cluster.h"
#include "db/migrator.h"
#include "db/testing.h"
#include "services/telemetry/schema.h"

namespace govern::telemetry {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int64_t kDay = kNanosPerDay;
constexpr int64_t kNow = 1'764'460'800'000'000'000;  // 2025-11-30T00:00:00Z

Event MakeEvent(int i, int64_t time_ns, const std::string& org = "org-a") {
  Event e;
  e.id = "ev-" + std::to_string(i) + "-" + std::to_string(time_ns);
  e.org = org;
  e.time_unix_nanos = time_ns;
  e.observed_unix_nanos = time_ns > INT64_MAX - 17 ? time_ns : time_ns + 17;
  e.type = i % 2 ? "agent.action" : "log";
  e.severity_text = "WARN";
  e.severity_number = 13;
  e.body_kind = static_cast<BodyKind>(i % 3);
  if (e.body_kind == BodyKind::kString)
    e.body = "ünïcødé body ✓ with \"quotes\", \\ and\nnewline " + std::to_string(i);
  if (e.body_kind == BodyKind::kJson) e.body = R"({"a":[1,2,{"b":null}],"s":"x"})";
  e.attributes = {{"http.method", R"("GET")"},
                  {"status", "200"},
                  {"ok", "true"},
                  {"ratio", "0.5"},
                  {"big", "9007199254740993"},
                  {"nested", R"({"k":[1,"x",false]})"},
                  {"nil", "null"},
                  {"ключ \"q\"", R"("ü → ✓ \"q\" \\ \n")"},
                  {"n", std::to_string(i)}};
  e.resource_attributes = {{"service.name", R"("checkout")"}, {"host.name", R"("h-1")"}};
  e.service_name = "checkout";
  e.scope_name = "govern.test";
  e.scope_version = "1.2.3";
  e.trace_id_hex = "0123456789abcdef0123456789abcdef";
  e.span_id_hex = "0123456789abcdef";
  e.flags = 0xffffffffu;
  e.dropped_attributes_count = 3;
  return e;
}

class IngestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_.emplace(std::move(db).value());
    pool_ = MakePool();
    ASSERT_TRUE(pool_);
    auto applied = db::Migrator("telemetry", Migrations()).Apply(*pool_);
    ASSERT_TRUE(applied.ok()) << applied.status().ToString();
    char tmpl[] = "/tmp/govern_ingest_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    OpenWal();
  }
  void TearDown() override {
    log_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::unique_ptr<db::Pool> MakePool() {
    db::PoolOptions o;
    o.conninfo = db_->conninfo();
    o.max_size = 4;
    auto p = db::Pool::Create(o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? std::move(p).value() : nullptr;
  }
  void OpenWal(uint64_t segment_size = 1 << 20) {
    log_.reset();
    wal::Options o;
    o.segment_size = segment_size;
    o.preallocate = false;
    auto l = wal::Log::Open(dir_, o);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    log_ = std::move(l).value();
  }
  uint64_t Append(const std::vector<Event>& events, int64_t received_ns = kNow + 5) {
    std::string rec;
    EncodeRecord(events, received_ns, &rec);
    auto seq = log_->Append(rec);
    EXPECT_TRUE(seq.ok()) << seq.status().ToString();
    return seq.ok() ? *seq : 0;
  }
  // Appends `records` records of `per` fresh events each; returns them all.
  std::vector<Event> AppendMany(int records, int per, int first_id = 0) {
    std::vector<Event> all;
    for (int r = 0; r < records; ++r) {
      std::vector<Event> evs;
      for (int j = 0; j < per; ++j)
        evs.push_back(MakeEvent(first_id + r * per + j, kNow + (r * per + j) * 1000));
      Append(evs);
      all.insert(all.end(), evs.begin(), evs.end());
    }
    return all;
  }
  std::unique_ptr<Ingester> MakeIngester(IngestOptions o = {}) {
    o.max_wait = milliseconds(1);
    o.retry_initial = milliseconds(5);
    o.retry_max = milliseconds(200);
    return std::make_unique<Ingester>(log_.get(), pool_.get(), o, &Clock::Real());
  }
  // RunOnce until everything durable is stored.
  void Drain(Ingester& ing) {
    for (int i = 0; i < 10000 && ing.NextSequence() <= log_->DurableSequence(); ++i) {
      auto r = ing.RunOnce();
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
    ASSERT_EQ(ing.NextSequence(), log_->DurableSequence() + 1);
  }
  int64_t Scalar(const std::string& sql) {
    auto lease = pool_->Checkout();
    EXPECT_TRUE(lease.ok());
    if (!lease.ok()) return -1;
    auto r = (*lease)->Exec(sql);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    if (!r.ok() || r->empty()) return -1;
    return *r->Int64(0, 0);
  }
  // Every event stored exactly once: as many rows as distinct ids as expected events, each id present.
  void ExpectExactlyOnce(const std::vector<Event>& events) {
    std::set<std::string> ids;
    for (const Event& e : events) ids.insert(e.id);
    EXPECT_EQ(Scalar("SELECT count(*) FROM telemetry_events"), static_cast<int64_t>(ids.size()));
    EXPECT_EQ(Scalar("SELECT count(DISTINCT id) FROM telemetry_events"), static_cast<int64_t>(ids.size()));
  }

  std::optional<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Pool> pool_;
  std::string dir_;
  std::unique_ptr<wal::Log> log_;
};

nlohmann::json AttributesAsJson(const std::vector<Attribute>& attrs) {
  nlohmann::json j = nlohmann::json::object();
  for (const Attribute& a : attrs) j[a.key] = nlohmann::json::parse(a.value_json);
  return j;
}

TEST_F(IngestTest, StoresEveryFieldIntact) {
  std::vector<Event> events;
  for (int i = 0; i < 30; ++i) events.push_back(MakeEvent(i, kNow + i * 7919));
  events[4].attributes.clear();
  events[5].resource_attributes.clear();
  events[6].trace_id_hex.clear();
  events[6].span_id_hex.clear();
  events[7].time_unix_nanos = -5;  // before 1970
  events[8].severity_number = -2;
  Append({events.begin(), events.begin() + 10}, 111);
  Append({events.begin() + 10, events.end()}, 222);
  auto ing = MakeIngester();
  Drain(*ing);
  EXPECT_EQ(ing->GetStats().events_stored, 30u);
  EXPECT_EQ(ing->GetStats().duplicates_skipped, 0u);
  EXPECT_EQ(ing->OldestUnstoredReceivedNs(), 0);

  auto lease = pool_->Checkout();
  ASSERT_TRUE(lease.ok());
  auto rows = (*lease)->Exec(std::string("SELECT ") + kEventColumns +
                             ", attributes::text, resource_attributes::text " + "FROM telemetry_events");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 30);
  std::map<std::string, const Event*> by_id;
  for (const Event& e : events) by_id[e.id] = &e;
  for (int r = 0; r < rows->size(); ++r) {
    std::string id(rows->Text(r, 2));
    ASSERT_TRUE(by_id.count(id)) << id;
    const Event& e = *by_id[id];
    size_t index = static_cast<size_t>(&e - events.data());
    EXPECT_EQ(rows->Text(r, 0), e.org);
    EXPECT_EQ(*rows->Int64(r, 1), e.time_unix_nanos);
    EXPECT_EQ(*rows->Int64(r, 3), e.observed_unix_nanos);
    EXPECT_EQ(*rows->Int64(r, 4), index < 10 ? 111 : 222);
    EXPECT_EQ(rows->Text(r, 5), e.type);
    EXPECT_EQ(rows->Text(r, 6), e.severity_text);
    EXPECT_EQ(*rows->Int64(r, 7), e.severity_number);
    EXPECT_EQ(*rows->Int64(r, 8), static_cast<int>(e.body_kind));
    EXPECT_EQ(rows->Text(r, 9), e.body);
    EXPECT_EQ(nlohmann::json::parse(rows->Text(r, 19)), AttributesAsJson(e.attributes)) << id;
    EXPECT_EQ(nlohmann::json::parse(rows->Text(r, 20)), AttributesAsJson(e.resource_attributes)) << id;
    EXPECT_EQ(rows->Text(r, 12), e.service_name);
    EXPECT_EQ(rows->Text(r, 13), e.scope_name);
    EXPECT_EQ(rows->Text(r, 14), e.scope_version);
    EXPECT_EQ(rows->Text(r, 15), e.trace_id_hex);
    EXPECT_EQ(rows->Text(r, 16), e.span_id_hex);
    EXPECT_EQ(*rows->Int64(r, 17), static_cast<int64_t>(e.flags));
    EXPECT_EQ(*rows->Int64(r, 18), static_cast<int64_t>(e.dropped_attributes_count));
  }
  // The big integer keeps every digit (jsonb numbers are numeric, not double).
  EXPECT_EQ(Scalar("SELECT count(*) FROM telemetry_events WHERE attributes->>'big' = '9007199254740993'"),
            29);
  // The cursor moved with the rows, and the WAL's copy of it followed.
  EXPECT_EQ(Scalar("SELECT next_seq FROM telemetry_ingest_cursor WHERE name = 'ingest'"), 3);
  ing.reset();
  EXPECT_EQ(*log_->CursorPosition("ingest"), 3u);
}

TEST_F(IngestTest, ExactlyOnceAcrossRestarts) {
  auto all = AppendMany(20, 5);
  IngestOptions o;
  o.max_batch_events = 7;  // whole records: one record per batch here (5 + 5 > 7)
  {
    auto a = MakeIngester(o);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(a->RunOnce().ok());
    EXPECT_EQ(a->NextSequence(), 4u);
    EXPECT_EQ(a->GetStats().batches, 3u);
  }
  EXPECT_EQ(Scalar("SELECT count(*) FROM telemetry_events"), 15);
  auto more = AppendMany(5, 5, 1000);
  all.insert(all.end(), more.begin(), more.end());
  {
    auto b = MakeIngester();
    Drain(*b);
    EXPECT_EQ(b->GetStats().duplicates_skipped, 0u);
  }
  ExpectExactlyOnce(all);
  // A third start finds nothing to do.
  auto c = MakeIngester();
  auto r = c->RunOnce();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 0u);
  EXPECT_EQ(c->NextSequence(), 26u);
  ExpectExactlyOnce(all);
}

TEST_F(IngestTest, ResentBatchIsStoredOnce) {
  std::vector<Event> first, second, third;
  for (int i = 0; i < 10; ++i) first.push_back(MakeEvent(i, kNow + i));
  for (int i = 10; i < 20; ++i) second.push_back(MakeEvent(i, kNow + i));
  for (int i = 20; i < 25; ++i) third.push_back(MakeEvent(i, kNow + i));
  Append(first);
  Append(second);
  auto ing = MakeIngester();
  Drain(*ing);
  EXPECT_EQ(ing->GetStats().slow_batches, 0u);
  // The client retries `first` after a lost reply; intake gives the same ids, in a new WAL record.
  Append(first);
  Append(third);
  // And a record repeated back to back lands twice in the same batch.
  std::vector<Event> fourth{MakeEvent(30, kNow + 30), MakeEvent(31, kNow + 31)};
  Append(fourth);
  Append(fourth);
  Drain(*ing);
  auto st = ing->GetStats();
  EXPECT_EQ(st.events_stored, 27u);
  EXPECT_EQ(st.duplicates_skipped, 12u);
  EXPECT_GE(st.slow_batches, 1u);
  std::vector<Event> all = first;
  for (const auto* v : {&second, &third, &fourth}) all.insert(all.end(), v->begin(), v->end());
  ExpectExactlyOnce(all);
}

TEST_F(IngestTest, PartitionsAcrossTheWholeRange) {
  const std::vector<int64_t> times = {INT64_MIN,          INT64_MIN + 1,
                                      -106751 * kDay - 1,  // last instant of the partial first day
                                      -106751 * kDay,     -30 * 365 * kDay, -1, 0, kNow, kNow + 3 * kDay,
                                      84'000 * kDay,  // 2199
                                      INT64_MAX - 1,      INT64_MAX};
  std::vector<Event> events;
  for (size_t i = 0; i < times.size(); ++i) events.push_back(MakeEvent(static_cast<int>(i), times[i]));
  Append(events);
  auto ing = MakeIngester();
  Drain(*ing);
  ExpectExactlyOnce(events);
  const std::map<std::string, int64_t> expected = {{"telemetry_events_p16770921", 3},
                                                   {"telemetry_events_p16770922", 1},
                                                   {"telemetry_events_p19691231", 1},
                                                   {"telemetry_events_p19700101", 1},
                                                   {"telemetry_events_p22620411", 2}};
  for (const auto& [name, n] : expected) EXPECT_EQ(Scalar("SELECT count(*) FROM " + name), n) << name;
  EXPECT_EQ(Scalar("SELECT count(*) FROM pg_inherits WHERE inhparent = 'telemetry_events'::regclass"), 9);

  // Two ingests with their own cursors over the same WAL, at once: partition creation races between
  // them must not fail a batch, and the second finds every row there already.
  std::vector<Event> later;
  for (int i = 0; i < 40; ++i) later.push_back(MakeEvent(100 + i, kNow + (10 + i) * kDay));
  Append(later);
  IngestOptions o2;
  o2.cursor_name = "second";
  auto first = MakeIngester();
  auto second = MakeIngester(o2);
  std::thread t([&] { Drain(*second); });
  Drain(*first);
  t.join();
  auto a = first->GetStats(), b = second->GetStats();
  EXPECT_EQ(a.retries + b.retries, 0u) << a.last_error << " / " << b.last_error;
  EXPECT_EQ(a.events_stored + b.events_stored, 40u);  // only `later` is new
  EXPECT_EQ(a.duplicates_skipped + b.duplicates_skipped, 52u);
  events.insert(events.end(), later.begin(), later.end());
  ExpectExactlyOnce(events);
}

// A child process runs the Ingester and _exits at the named point; the parent restarts it.
void CrashChild(const std::string& conninfo, const std::string& dir, const char* point, size_t workers = 1) {
  setenv("GOVERN_TELEMETRY_CRASH_AT", point, 1);
  db::PoolOptions po;
  po.conninfo = conninfo;
  auto pool = db::Pool::Create(po);
  if (!pool.ok()) _exit(2);
  auto log = wal::Log::Open(dir);
  if (!log.ok()) _exit(3);
  IngestOptions o;
  o.max_batch_events = 50;
  o.workers = workers;
  Ingester ing(log->get(), pool->get(), o, &Clock::Real());
  for (int i = 0; i < 100; ++i) {
    auto r = ing.RunOnce();
    if (!r.ok()) _exit(4);
  }
  _exit(5);  // never crashed
}

TEST_F(IngestTest, KilledMidBatchLosesAndDuplicatesNothing) {
  auto all = AppendMany(10, 20);  // 200 events; batches of 50 (two and a half records: two records)
  for (const char* point : {"ingest.after_copy", "ingest.after_commit"}) {
    SCOPED_TRACE(point);
    int64_t before = Scalar("SELECT count(*) FROM telemetry_events");
    log_.reset();  // one Log per directory: the child opens it
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) CrashChild(db_->conninfo(), dir_, point);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 137);
    int64_t after = Scalar("SELECT count(*) FROM telemetry_events");
    if (std::string(point) == "ingest.after_copy") {
      EXPECT_EQ(after, before);  // the COPY never committed
    } else {
      EXPECT_EQ(after, before + 40);  // one batch committed, then the process died
    }
    OpenWal();
  }
  auto more = AppendMany(3, 20, 5000);
  all.insert(all.end(), more.begin(), more.end());
  auto ing = MakeIngester();
  Drain(*ing);
  EXPECT_EQ(ing->GetStats().duplicates_skipped, 0u);
  ExpectExactlyOnce(all);
}

TEST_F(IngestTest, TerminatedConnectionsLoseAndDuplicateNothing) {
  IngestOptions o;
  o.max_batch_events = 300;
  auto ing = MakeIngester(o);
  ASSERT_TRUE(ing->Start().ok());
  std::atomic<bool> done{false};
  std::atomic<int> terminated{0};
  std::thread killer([&] {
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> pause(0, 60);
    auto conn = db::Connection::Connect(db_->conninfo());
    if (!conn.ok()) return;
    while (!done) {
      auto r = (*conn)->Exec(
          "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
          "WHERE datname = current_database() AND pid <> pg_backend_pid()");
      if (r.ok()) terminated += static_cast<int>(*r->Int64(0, 0));
      std::this_thread::sleep_for(milliseconds(5 + pause(rng)));  // lands at every step of a batch
    }
  });
  std::vector<Event> all;
  for (int round = 0; round < 60; ++round) {
    auto part = AppendMany(4, 25, round * 100);
    all.insert(all.end(), part.begin(), part.end());
    std::this_thread::sleep_for(milliseconds(10));
  }
  done = true;
  killer.join();
  for (int i = 0; i < 1200 && ing->NextSequence() != log_->DurableSequence() + 1; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  ing->Stop();
  EXPECT_EQ(ing->NextSequence(), log_->DurableSequence() + 1) << ing->GetStats().last_error;
  EXPECT_GT(terminated.load(), 0);
  auto st = ing->GetStats();
  std::printf("terminated %d backends; ingest retries %llu, batches %llu, last error: %s\n",
              terminated.load(), static_cast<unsigned long long>(st.retries),
              static_cast<unsigned long long>(st.batches), st.last_error.c_str());
  ExpectExactlyOnce(all);
  EXPECT_EQ(st.duplicates_skipped, 0u);
}

TEST_F(IngestTest, OldestUnstoredStaysWhileBlocked) {
  auto ing = MakeIngester();
  Append({MakeEvent(0, kNow)}, 100);
  Drain(*ing);
  EXPECT_EQ(ing->OldestUnstoredReceivedNs(), 0);
  // Another session holds the cursor table: every ingest transaction waits on it.
  auto blocker = db::Connection::Connect(db_->conninfo());
  ASSERT_TRUE(blocker.ok());
  ASSERT_TRUE((*blocker)->Exec("BEGIN").ok());
  ASSERT_TRUE((*blocker)->Exec("LOCK TABLE telemetry_ingest_cursor IN ACCESS EXCLUSIVE MODE").ok());
  ASSERT_TRUE(ing->Start().ok());
  Append({MakeEvent(1, kNow + 1)}, 1000);
  Append({MakeEvent(2, kNow + 2)}, 2000);
  for (int i = 0; i < 600 && ing->OldestUnstoredReceivedNs() != 1000; ++i)
    std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(ing->OldestUnstoredReceivedNs(), 1000);
  Append({MakeEvent(3, kNow + 3)}, 3000);
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(ing->OldestUnstoredReceivedNs(), 1000);  // still the oldest: the lag keeps growing
  EXPECT_EQ(ing->NextSequence(), 2u);
  ASSERT_TRUE((*blocker)->Exec("COMMIT").ok());
  for (int i = 0; i < 600 && ing->NextSequence() != 5; ++i) std::this_thread::sleep_for(milliseconds(10));
  ing->Stop();
  EXPECT_EQ(ing->NextSequence(), 5u);
  EXPECT_EQ(ing->OldestUnstoredReceivedNs(), 0);
  EXPECT_EQ(Scalar("SELECT count(*) FROM telemetry_events"), 4);
}

TEST_F(IngestTest, OldestUnstoredKnownBeforePostgresAnswers) {
  // Before the cursor is ever read (PostgreSQL unreachable at start), the WAL is read ahead so the lag
  // is known: a pool whose only connection is held elsewhere stands in for a database that is down.
  Append({MakeEvent(0, kNow)}, 777);
  db::PoolOptions po;
  po.conninfo = db_->conninfo();
  po.max_size = 1;
  po.checkout_timeout = milliseconds(50);
  auto pool = db::Pool::Create(po);
  ASSERT_TRUE(pool.ok());
  auto held = (*pool)->Checkout();
  ASSERT_TRUE(held.ok());
  IngestOptions o;
  o.max_wait = milliseconds(1);
  Ingester ing(log_.get(), pool->get(), o, &Clock::Real());
  auto r = ing.RunOnce();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(ing.OldestUnstoredReceivedNs(), 777);
  EXPECT_EQ(ing.NextSequence(), 0u);
  EXPECT_EQ(ing.GetStats().retries, 1u);
}

// PostgreSQL itself goes away (a private cluster, stopped and started again) while ingest runs and
// intake keeps appending: the lag grows while it is down, Stop() returns while it is down, and after
// the restart every event is stored exactly once.
TEST(IngestRestartTest, PostgresDownAndRestartedLosesAndDuplicatesNothing) {
  char tmpl[] = "/tmp/govern_ingest_restart_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string root = tmpl;
  ::chmod(root.c_str(), 0755);  // PostgreSQL's own user must enter it
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{root};
  db::LocalClusterOptions co;
  co.data_dir = root + "/pg";
  co.fsync = false;
  co.shared_buffers = "16MB";
  co.max_connections = 20;
  db::LocalCluster cluster(co);
  ASSERT_TRUE(cluster.Start().ok());
  struct StopAtEnd {
    db::LocalCluster& c;
    ~StopAtEnd() { (void)c.Stop(); }
  } stop{cluster};
  db::PoolOptions po;
  po.conninfo = cluster.ConnInfo();
  po.max_size = 2;
  po.checkout_timeout = milliseconds(500);
  po.connect.connect_timeout = milliseconds(500);
  po.connect.reconnect_budget = milliseconds(300);
  auto pool = db::Pool::Create(po);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  ASSERT_TRUE(db::Migrator("telemetry", Migrations()).Apply(**pool).ok());
  auto log = wal::Log::Open(root + "/wal");
  ASSERT_TRUE(log.ok());
  auto append = [&](int first, int64_t received) {
    std::vector<Event> evs;
    for (int i = first; i < first + 50; ++i) evs.push_back(MakeEvent(i, kNow + i));
    std::string rec;
    EncodeRecord(evs, received, &rec);
    EXPECT_TRUE((*log)->Append(rec).ok());
  };
  IngestOptions o;
  o.max_wait = milliseconds(1);
  o.retry_initial = milliseconds(10);
  o.retry_max = milliseconds(200);
  auto ing = std::make_unique<Ingester>(log->get(), pool->get(), o, &Clock::Real());
  ASSERT_TRUE(ing->Start().ok());
  append(0, 100);
  for (int i = 0; i < 500 && ing->NextSequence() != 2; ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(ing->NextSequence(), 2u);

  ASSERT_TRUE(cluster.Stop().ok());
  append(100, 200);
  append(200, 300);
  for (int i = 0; i < 500 && ing->OldestUnstoredReceivedNs() != 200; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(ing->OldestUnstoredReceivedNs(), 200);  // PostgreSQL down: the oldest stays, the lag grows
  ing->Stop();                                      // returns although the database is unreachable
  EXPECT_EQ(ing->NextSequence(), 2u);
  EXPECT_GT(ing->GetStats().retries, 0u);
  ASSERT_TRUE(ing->Start().ok());
  append(300, 400);
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(ing->OldestUnstoredReceivedNs(), 200);

  ASSERT_TRUE(cluster.Start().ok());
  for (int i = 0; i < 3000 && ing->NextSequence() != 5; ++i) std::this_thread::sleep_for(milliseconds(10));
  ing->Stop();
  EXPECT_EQ(ing->NextSequence(), 5u) << ing->GetStats().last_error;
  EXPECT_EQ(ing->OldestUnstoredReceivedNs(), 0);
  auto lease = (*pool)->Checkout();
  ASSERT_TRUE(lease.ok());
  auto n = (*lease)->Exec("SELECT count(*), count(DISTINCT id) FROM telemetry_events");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n->Int64(0, 0), 200);
  EXPECT_EQ(*n->Int64(0, 1), 200);
}

TEST_F(IngestTest, PoisonRecordStopsIngestUntilAnOperatorMovesTheCursor) {
  Append({MakeEvent(0, kNow)});
  ASSERT_TRUE(log_->Append(std::string("\x01\x05garbage")).ok());  // seq 2: does not decode
  Append({MakeEvent(2, kNow + 2)});
  auto ing = MakeIngester();
  auto r = ing->RunOnce();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, 1u);
  for (int i = 0; i < 3; ++i) {
    r = ing->RunOnce();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kDataLoss);
    EXPECT_NE(r.status().message().find("WAL record 2"), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(ing->NextSequence(), 2u);
  EXPECT_TRUE(ing->GetStats().stopped_on_poison);
  EXPECT_NE(ing->OldestUnstoredReceivedNs(), 0);
  EXPECT_EQ(Scalar("SELECT count(*) FROM telemetry_events"), 1);
  ing.reset();
  // The operator looked at record 2 and decided to move past it.
  EXPECT_FALSE(MoveIngestCursor(*pool_, "ingest", 1, 3).ok());  // stale: the cursor is at 2
  ASSERT_TRUE(MoveIngestCursor(*pool_, "ingest", 2, 3).ok());
  ing = MakeIngester();
  Drain(*ing);
  EXPECT_EQ(Scalar("SELECT count(*) FROM telemetry_events"), 2);
}

TEST_F(IngestTest, DataPostgresRefusesIsNarrowedToItsRecord) {
  Append({MakeEvent(0, kNow)});
  Append({MakeEvent(1, kNow + 1)});
  Event bad = MakeEvent(2, kNow + 2);
  bad.attributes.push_back({"broken", "{not json"});  // jsonb refuses it: only PostgreSQL can tell
  Append({bad});
  Append({MakeEvent(3, kNow + 3)});
  Event nul = MakeEvent(4, kNow + 4);
  nul.body = std::string("a\0b", 3);
  auto ing = MakeIngester();
  // The batch of four fails, then records go one per transaction until the bad one is pinned.
  Result<size_t> r = size_t{0};
  for (int i = 0; i < 10 && (r.ok() || r.status().code() != Code::kDataLoss); ++i) r = ing->RunOnce();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("WAL record 3"), std::string::npos) << r.status().message();
  EXPECT_EQ(ing->NextSequence(), 3u);
  EXPECT_EQ(Scalar("SELECT count(*) FROM telemetry_events"), 2);

  // A NUL byte is caught before PostgreSQL sees it.
  ing.reset();
  ASSERT_TRUE(MoveIngestCursor(*pool_, "ingest", 3, 4).ok());
  Append({nul});
  ing = MakeIngester();
  r = ing->RunOnce();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  r = ing->RunOnce();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("WAL record 5"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("NUL"), std::string::npos) << r.status().message();
  EXPECT_EQ(Scalar("SELECT count(*) FROM telemetry_events"), 3);
}

TEST_F(IngestTest, CursorAheadOfTheWalIsRefused) {
  AppendMany(3, 2);
  ASSERT_TRUE(pool_
                  ->Transact([](db::Connection& c) {
                    return c.Exec("INSERT INTO telemetry_ingest_cursor VALUES ('ingest', 100)").status();
                  })
                  .ok());
  auto ing = MakeIngester();
  auto r = ing->RunOnce();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("not the one"), std::string::npos) << r.status().message();
  EXPECT_EQ(ing->NextSequence(), 0u);
  EXPECT_EQ(Scalar("SELECT count(*) FROM telemetry_events"), 0);
  EXPECT_NE(ing->GetStats().last_error.find("not the one"), std::string::npos);
}

TEST_F(IngestTest, CursorBehindTheWalIsRefused) {
  OpenWal(/*segment_size=*/8192);
  AppendMany(40, 3);  // several segments
  ASSERT_TRUE(log_->RegisterCursor("other", 1).ok());
  ASSERT_TRUE(log_->CommitCursor("other", log_->DurableSequence() + 1).ok());
  ASSERT_GT(log_->FirstSequence(), 1u);  // retention deleted the first segments
  ASSERT_TRUE(pool_
                  ->Transact([](db::Connection& c) {
                    return c.Exec("INSERT INTO telemetry_ingest_cursor VALUES ('ingest', 1)").status();
                  })
                  .ok());
  auto ing = MakeIngester();
  auto r = ing->RunOnce();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("deleted"), std::string::npos) << r.status().message();
  EXPECT_EQ(Scalar("SELECT count(*) FROM telemetry_events"), 0);
}

// --- several workers -------------------------------------------------------------------------------

// The cursor rows of `base`, name -> next_seq.
std::map<std::string, int64_t> CursorRows(db::Pool& pool, const std::string& base = "ingest") {
  std::map<std::string, int64_t> out;
  auto lease = pool.Checkout();
  EXPECT_TRUE(lease.ok());
  if (!lease.ok()) return out;
  auto rows = ListIngestCursors(**lease, base);
  EXPECT_TRUE(rows.ok()) << rows.status().ToString();
  if (!rows.ok()) return out;
  for (const IngestCursorRow& r : *rows) out[r.name] = static_cast<int64_t>(r.next_seq);
  return out;
}

TEST_F(IngestTest, WorkersEachStoreTheirOwnRecordsOnce) {
  auto all = AppendMany(31, 7);
  IngestOptions o;
  o.workers = 3;
  o.max_batch_events = 20;  // several batches per worker
  auto ing = MakeIngester(o);
  EXPECT_EQ(ing->workers(), 3u);
  Drain(*ing);
  ExpectExactlyOnce(all);
  auto st = ing->GetStats();
  EXPECT_EQ(st.events_stored, all.size());
  EXPECT_EQ(st.duplicates_skipped, 0u);
  // Each row names the next record its worker owns: 32 (= 2 mod 3) is the first not yet in the WAL.
  EXPECT_EQ(CursorRows(*pool_),
            (std::map<std::string, int64_t>{{"ingest:0/3", 33}, {"ingest:1/3", 34}, {"ingest:2/3", 32}}));
  // The WAL's cursor is the oldest unstored record over all workers.
  ing.reset();
  EXPECT_EQ(*log_->CursorPosition("ingest"), 32u);
  // Running threads store what comes later.
  ing = MakeIngester(o);
  ASSERT_TRUE(ing->Start().ok());
  auto more = AppendMany(10, 3, 10000);
  all.insert(all.end(), more.begin(), more.end());
  for (int i = 0; i < 1000 && ing->NextSequence() != log_->DurableSequence() + 1; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ing->Stop();
  EXPECT_EQ(ing->NextSequence(), log_->DurableSequence() + 1) << ing->GetStats().last_error;
  EXPECT_EQ(ing->OldestUnstoredReceivedNs(), 0);
  EXPECT_EQ(*log_->CursorPosition("ingest"), log_->DurableSequence() + 1);
  ExpectExactlyOnce(all);
}

TEST_F(IngestTest, KilledMidBatchWithSeveralWorkersLosesAndDuplicatesNothing) {
  auto all = AppendMany(30, 20);  // 600 events; batches of 50 (two records) per worker
  for (size_t workers : {2u, 3u}) {
    for (const char* point : {"ingest.after_copy", "ingest.after_commit", "ingest.after_commit"}) {
      SCOPED_TRACE(std::string(point) + " with " + std::to_string(workers) + " workers");
      int64_t before = Scalar("SELECT count(*) FROM telemetry_events");
      log_.reset();  // one Log per directory: the child opens it
      pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) CrashChild(db_->conninfo(), dir_, point, workers);
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      ASSERT_TRUE(WIFEXITED(status));
      ASSERT_EQ(WEXITSTATUS(status), 137);
      int64_t after = Scalar("SELECT count(*) FROM telemetry_events");
      // RunOnce goes worker by worker: the first to COPY dies, having committed nothing (after_copy)
      // or its batch (after_commit).
      if (std::string(point) == "ingest.after_copy") {
        EXPECT_EQ(after, before);
      } else {
        EXPECT_GT(after, before);  // part of a batch may be rows stored before the layout changed
      }
      OpenWal();
    }
  }
  auto more = AppendMany(5, 20, 5000);
  all.insert(all.end(), more.begin(), more.end());
  IngestOptions o;
  o.workers = 2;
  auto ing = MakeIngester(o);
  Drain(*ing);
  ExpectExactlyOnce(all);
}

TEST_F(IngestTest, ThreadedWorkersKilledAnywhereLoseAndDuplicateNothing) {
  // The service's shape: every worker on its own thread; the process dies at a crash point in
  // whichever worker reaches it first while the others are mid-batch.
  auto all = AppendMany(60, 10);
  for (const char* point : {"ingest.after_copy", "ingest.after_commit"}) {
    SCOPED_TRACE(point);
    log_.reset();
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      setenv("GOVERN_TELEMETRY_CRASH_AT", point, 1);
      db::PoolOptions po;
      po.conninfo = db_->conninfo();
      auto pool = db::Pool::Create(po);
      if (!pool.ok()) _exit(2);
      auto log = wal::Log::Open(dir_);
      if (!log.ok()) _exit(3);
      IngestOptions o;
      o.max_batch_events = 30;
      o.workers = 3;
      Ingester ing(log->get(), pool->get(), o, &Clock::Real());
      if (!ing.Start().ok()) _exit(4);
      std::this_thread::sleep_for(seconds(60));
      _exit(5);  // never crashed
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 137);
    OpenWal();
  }
  IngestOptions o;
  o.workers = 3;
  auto ing = MakeIngester(o);
  Drain(*ing);
  ExpectExactlyOnce(all);
}

TEST_F(IngestTest, KilledDuringConcurrentWorkerCommitsLosesAndDuplicatesNothing) {
  // Every worker on its own thread holds a whole uncommitted batch (rows COPYed, its cursor row moved);
  // they COMMIT at once and the process dies as the first COMMIT returns, the others somewhere in
  // theirs (sent or not, landed or not). Right after each kill, each worker's rows must be exactly the
  // records before its cursor row: a COMMIT landed whole (rows and cursor) or not at all.
  constexpr int kRecords = 90, kPer = 10;
  auto all = AppendMany(kRecords, kPer);  // record r + 1 holds all[r * kPer .. (r + 1) * kPer)
  // The stored ids (each once: no id twice) and the cursor rows, from one snapshot: COMMITs the dead
  // child sent may still land while the parent looks, and must be seen whole or not at all.
  auto snapshot = [&](std::set<std::string>* ids, std::map<std::string, int64_t>* cursors) {
    ids->clear();
    cursors->clear();
    Status s = pool_->Transact([&](db::Connection& c) -> Status {
      GOVERN_RETURN_IF_ERROR(c.Exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ").status());
      GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c.Exec("SELECT id FROM telemetry_events"));
      for (int i = 0; i < rows.size(); ++i) {
        GOVERN_ASSIGN_OR_RETURN(std::string id, rows.String(i, 0));
        EXPECT_TRUE(ids->insert(id).second) << id << " stored twice";
      }
      GOVERN_ASSIGN_OR_RETURN(db::Rows cur, c.Exec("SELECT name, next_seq FROM telemetry_ingest_cursor"));
      for (int i = 0; i < cur.size(); ++i) {
        GOVERN_ASSIGN_OR_RETURN(std::string name, cur.String(i, 0));
        GOVERN_ASSIGN_OR_RETURN((*cursors)[name], cur.Int64(i, 1));
      }
      return OkStatus();
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
  };
  int64_t last_count = 0;
  // Two kills with the same three workers, then one with two (a layout change: the new workers read
  // again from the oldest cursor and skip stored ids through the staging path, then die committing).
  for (size_t workers : {3u, 3u, 2u}) {
    SCOPED_TRACE(std::to_string(workers) + " workers");
    log_.reset();
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      setenv("GOVERN_TELEMETRY_CRASH_AT", "ingest.concurrent_commit", 1);
      db::PoolOptions po;
      po.conninfo = db_->conninfo();
      auto pool = db::Pool::Create(po);
      if (!pool.ok()) _exit(2);
      auto log = wal::Log::Open(dir_);
      if (!log.ok()) _exit(3);
      IngestOptions o;
      o.max_batch_events = 30;  // three records per batch: every worker has several batches left
      o.workers = workers;
      Ingester ing(log->get(), pool->get(), o, &Clock::Real());
      if (!ing.Start().ok()) _exit(4);
      std::this_thread::sleep_for(seconds(60));
      _exit(5);  // never crashed
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 137);  // 6: a worker waited alone; 5: no crash at all
    std::set<std::string> have;
    std::map<std::string, int64_t> cursors;
    snapshot(&have, &cursors);
    // At least the first COMMIT landed.
    EXPECT_GT(static_cast<int64_t>(have.size()), last_count);
    last_count = static_cast<int64_t>(have.size());
    EXPECT_EQ(cursors.size(), workers);
    std::set<std::string> expected;
    for (const auto& [name, next] : cursors) {
      const size_t k = std::stoul(name.substr(7, 1));
      ASSERT_EQ(name, IngestCursorRowName("ingest", k, workers));
      for (int seq = 1; seq <= kRecords && seq < next; ++seq) {
        if (static_cast<size_t>(seq) % workers != k) continue;
        for (int j = 0; j < kPer; ++j) expected.insert(all[(seq - 1) * kPer + j].id);
      }
    }
    if (workers == 3) {
      EXPECT_EQ(have, expected);  // one layout since the start: rows and cursors agree exactly
    } else {
      // After the change, rows an old worker stored past the new cursors may be there already.
      EXPECT_TRUE(std::includes(have.begin(), have.end(), expected.begin(), expected.end()));
    }
    OpenWal();
  }
  IngestOptions o;
  o.workers = 2;
  auto ing = MakeIngester(o);
  Drain(*ing);
  ExpectExactlyOnce(all);
}

TEST_F(IngestTest, ChangingTheNumberOfWorkersLosesAndDuplicatesNothing) {
  // Records alternate between 30 events and 1: with batches of 30 events the worker of the big ones
  // stores one record per batch, the other 30, so their cursors drift far apart.
  std::vector<Event> all;
  auto append_mix = [&](int records, int first_id) {
    for (int r = 0; r < records; ++r) {
      std::vector<Event> evs;
      int per = r % 2 == 0 ? 30 : 1;
      for (int j = 0; j < per; ++j)
        evs.push_back(MakeEvent(first_id + r * 100 + j, kNow + (first_id + r * 100 + j) * 1000));
      Append(evs);
      all.insert(all.end(), evs.begin(), evs.end());
    }
  };
  append_mix(80, 0);
  IngestOptions o;
  o.max_batch_events = 30;
  o.workers = 2;
  auto ing = MakeIngester(o);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(ing->RunOnce().ok());
  auto rows = CursorRows(*pool_);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows["ingest:1/2"], 7);   // the 30-event records 1, 3, 5: one per batch
  EXPECT_EQ(rows["ingest:0/2"], 82);  // the 1-event records 2..80: 30 per batch
  ing.reset();

  // Three workers: all start at the lowest old cursor (7); what the old second worker stored after it
  // is read again and skipped by id.
  o.workers = 3;
  ing = MakeIngester(o);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ing->RunOnce().ok());
  rows = CursorRows(*pool_);
  EXPECT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows.count("ingest:0/2") + rows.count("ingest:1/2"), 0u);
  EXPECT_GT(ing->GetStats().duplicates_skipped, 0u);
  EXPECT_GT(ing->GetStats().slow_batches, 0u);
  ing.reset();

  // Back to one worker (the row name a single ingest always used), with more records, then two again.
  append_mix(20, 100000);
  o.workers = 1;
  ing = MakeIngester(o);
  ASSERT_TRUE(ing->RunOnce().ok());
  ing.reset();
  EXPECT_EQ(CursorRows(*pool_).count("ingest"), 1u);
  EXPECT_EQ(CursorRows(*pool_).size(), 1u);
  append_mix(10, 200000);
  o.workers = 2;
  ing = MakeIngester(o);
  Drain(*ing);
  ExpectExactlyOnce(all);
  ing.reset();  // commits the WAL cursor
  EXPECT_EQ(*log_->CursorPosition("ingest"), log_->DurableSequence() + 1);
}

TEST_F(IngestTest, InterruptedLayoutRowsAreMergedAtTheirMinimum) {
  auto all = AppendMany(12, 2);
  IngestOptions o;
  o.workers = 1;
  auto one = MakeIngester(o);
  Drain(*one);
  one.reset();
  // The remains of a layout written by hand or by another version: the old row plus half of another.
  ASSERT_TRUE(pool_
                  ->Transact([](db::Connection& c) {
                    return c.Exec("INSERT INTO telemetry_ingest_cursor VALUES ('ingest:0/2', 5)").status();
                  })
                  .ok());
  // Not one layout: the CLI's replay and skip refuse rather than guess.
  EXPECT_EQ(SkipIngestRecord(*pool_, "ingest", 13).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(ReplayIngestFrom(*pool_, "ingest", 1).status().code(), Code::kFailedPrecondition);
  // Rows of other names are not part of it.
  ASSERT_TRUE(pool_
                  ->Transact([](db::Connection& c) {
                    return c
                        .Exec("INSERT INTO telemetry_ingest_cursor VALUES ('ingest:x', 1), ('ingestor', 1)")
                        .status();
                  })
                  .ok());
  o.workers = 2;
  auto two = MakeIngester(o);
  Drain(*two);
  EXPECT_EQ(two->GetStats().duplicates_skipped, 16u);  // records 5..12 again
  EXPECT_EQ(two->GetStats().events_stored, 0u);
  ExpectExactlyOnce(all);
  EXPECT_EQ(CursorRows(*pool_), (std::map<std::string, int64_t>{{"ingest:0/2", 14}, {"ingest:1/2", 13}}));
  EXPECT_EQ(Scalar("SELECT count(*) FROM telemetry_ingest_cursor WHERE name IN ('ingest:x', 'ingestor')"), 2);
}

TEST_F(IngestTest, PoisonRecordStopsEveryWorker) {
  std::vector<Event> good;
  for (int i = 1; i <= 8; ++i) {
    if (i == 4) {
      ASSERT_TRUE(log_->Append(std::string("\x01\x05garbage")).ok());  // seq 4: worker 0 of 2
      continue;
    }
    std::vector<Event> evs = {MakeEvent(i, kNow + i)};
    Append(evs);
    good.push_back(evs[0]);
  }
  IngestOptions o;
  o.workers = 2;
  o.max_batch_events = 1;  // one record per batch: worker 1 would race ahead if not stopped
  auto ing = MakeIngester(o);
  Result<size_t> r = size_t{0};
  for (int i = 0; i < 10; ++i) r = ing->RunOnce();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("WAL record 4"), std::string::npos) << r.status().message();
  EXPECT_TRUE(ing->GetStats().stopped_on_poison);
  EXPECT_NE(ing->OldestUnstoredReceivedNs(), 0);
  EXPECT_EQ(ing->NextSequence(), 4u);
  // Records 1, 2, 3 are stored; worker 1 stopped before 5 although it could store it.
  EXPECT_EQ(Scalar("SELECT count(*) FROM telemetry_events"), 3);
  EXPECT_EQ(CursorRows(*pool_), (std::map<std::string, int64_t>{{"ingest:0/2", 4}, {"ingest:1/2", 5}}));
  ing.reset();
  // The operator skips record 4: only its owner moves, and only from exactly there.
  EXPECT_EQ(SkipIngestRecord(*pool_, "ingest", 5).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(SkipIngestRecord(*pool_, "ingest", 2).status().code(), Code::kFailedPrecondition);
  auto skipped = SkipIngestRecord(*pool_, "ingest", 4);
  ASSERT_TRUE(skipped.ok()) << skipped.status().ToString();
  EXPECT_EQ(skipped->name, "ingest:0/2");
  EXPECT_FALSE(SkipIngestRecord(*pool_, "ingest", 4).ok());  // a stale second command does nothing
  ing = MakeIngester(o);
  Drain(*ing);
  ExpectExactlyOnce(good);
}

TEST_F(IngestTest, ReplayMovesEveryWorkerBack) {
  auto all = AppendMany(9, 4);
  IngestOptions o;
  o.workers = 2;
  auto ing = MakeIngester(o);
  Drain(*ing);
  ing.reset();
  EXPECT_EQ(ReplayIngestFrom(*pool_, "nothing", 1).status().code(), Code::kNotFound);
  auto before = ReplayIngestFrom(*pool_, "ingest", 4);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(before->size(), 2u);
  EXPECT_EQ(CursorRows(*pool_), (std::map<std::string, int64_t>{{"ingest:0/2", 4}, {"ingest:1/2", 5}}));
  // Forward is not a replay.
  EXPECT_EQ(ReplayIngestFrom(*pool_, "ingest", 6).status().code(), Code::kInvalidArgument);
  ing = MakeIngester(o);
  Drain(*ing);
  EXPECT_EQ(ing->GetStats().duplicates_skipped, 24u);  // records 4..9 again
  ExpectExactlyOnce(all);
}

TEST_F(IngestTest, TerminatedConnectionsWithSeveralWorkersLoseAndDuplicateNothing) {
  IngestOptions o;
  o.max_batch_events = 300;
  o.workers = 3;
  auto ing = MakeIngester(o);
  ASSERT_TRUE(ing->Start().ok());
  std::atomic<bool> done{false};
  std::atomic<int> terminated{0};
  std::thread killer([&] {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> pause(0, 60);
    auto conn = db::Connection::Connect(db_->conninfo());
    if (!conn.ok()) return;
    while (!done) {
      auto r = (*conn)->Exec(
          "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
          "WHERE datname = current_database() AND pid <> pg_backend_pid()");
      if (r.ok()) terminated += static_cast<int>(*r->Int64(0, 0));
      std::this_thread::sleep_for(milliseconds(5 + pause(rng)));
    }
  });
  std::vector<Event> all;
  for (int round = 0; round < 60; ++round) {
    auto part = AppendMany(4, 25, round * 100);
    all.insert(all.end(), part.begin(), part.end());
    std::this_thread::sleep_for(milliseconds(10));
  }
  done = true;
  killer.join();
  for (int i = 0; i < 1200 && ing->NextSequence() != log_->DurableSequence() + 1; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  ing->Stop();
  EXPECT_EQ(ing->NextSequence(), log_->DurableSequence() + 1) << ing->GetStats().last_error;
  EXPECT_GT(terminated.load(), 0);
  ExpectExactlyOnce(all);
  EXPECT_EQ(ing->GetStats().duplicates_skipped, 0u);
}

TEST_F(IngestTest, DroppedPartitionIsCreatedAgainWithoutAnOperator) {
  // Compaction drops a day partition once it archived every row of it; a worker that created the
  // partition earlier still believes in it. Its COPY meets 23514 (no partition for the row): that is a
  // short retry that creates the partition again, not a stop for an operator.
  auto all = AppendMany(2, 5);
  auto ing = MakeIngester();
  Drain(*ing);
  const std::string part = PartitionFor(kNow).name;
  ASSERT_TRUE(pool_
                  ->Transact([&](db::Connection& c) {
                    GOVERN_RETURN_IF_ERROR(c.Exec("DELETE FROM telemetry_events").status());
                    return c.Exec("DROP TABLE " + part).status();
                  })
                  .ok());
  auto more = AppendMany(2, 5, 1000);
  auto r = ing->RunOnce();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kAborted) << r.status().ToString();
  Drain(*ing);
  ExpectExactlyOnce(more);
}

TEST_F(IngestTest, ConfigKeysMapToOptions) {
  config::Schema schema;
  DeclareIngestConfig(schema);
  config::LoadOptions lo;
  lo.flags = {{"telemetry.ingest.max_batch_events", "500"}, {"telemetry.ingest.max_wait", "5ms"}};
  auto cfg = config::Config::Load(schema, lo);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  IngestOptions o = IngestOptionsFromConfig(*cfg);
  EXPECT_EQ(o.max_batch_events, 500u);
  EXPECT_EQ(o.max_wait, milliseconds(5));
  EXPECT_EQ(o.cursor_name, "ingest");
  EXPECT_EQ(o.workers, 2u);  // the service's default
  EXPECT_EQ(o.retry_max, seconds(5));
  lo.flags = {{"telemetry.ingest.max_batch_events", "0"}};
  EXPECT_FALSE(config::Config::Load(schema, lo).ok());
}

}  // namespace
}  // namespace govern::telemetry
