// Compactor and Archive against a real PostgreSQL and a LocalStore in a temporary directory: round
// trips, pagination, late rows, pruning, crashes at each crash point, orphans.
#include "services/telemetry/compactor.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "db/migrator.h"
#include "db/testing.h"
#include "services/telemetry/archive.h"
#include "services/telemetry/archive_testing.h"
#include "storage/objstore/local_store.h"

namespace govern::telemetry {
namespace {

using testing::kDay0;
using testing::MakeEvent;

class CompactorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_.emplace(std::move(db).value());
    pool_ = MakePool();
    ASSERT_TRUE(pool_);
    auto applied = db::Migrator("telemetry", Migrations()).Apply(*pool_);
    ASSERT_TRUE(applied.ok()) << applied.status().ToString();
    dir_ = std::filesystem::temp_directory_path() /
           ("govern-compactor-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(dir_ / "tmp");
    auto store = objstore::LocalStore::Open((dir_ / "archive").string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    options_.temp_dir = (dir_ / "tmp").string();
    options_.row_group_rows = 50;
    options_.read_batch_rows = 70;  // several pages per hour
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<db::Pool> MakePool() {
    db::PoolOptions o;
    o.conninfo = db_->conninfo();
    o.max_size = 4;
    auto p = db::Pool::Create(o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? std::move(p).value() : nullptr;
  }

  void Insert(const std::vector<StoredEvent>& events) {
    auto lease = pool_->Checkout();
    ASSERT_TRUE(lease.ok());
    auto st = testing::InsertEvents(**lease, events);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  // `per_hour` events in each of `hours` hours from kDay0, for each org.
  std::vector<StoredEvent> Generate(const std::vector<std::string>& orgs, int hours, int per_hour,
                                    uint64_t seed = 0) {
    std::vector<StoredEvent> out;
    for (const auto& org : orgs) {
      for (int h = 0; h < hours; ++h) {
        for (int i = 0; i < per_hour; ++i) {
          uint64_t n = seed + out.size();
          // Spread over the hour, with a few events sharing a nanosecond (ids break the tie).
          int64_t t = kDay0 + h * kNanosPerHour + (i / 2) * (kNanosPerHour / per_hour) * 2 + 17;
          out.push_back(MakeEvent(org, t, n));
        }
      }
    }
    return out;
  }

  int64_t PgCount(const std::string& where = "true") {
    auto lease = pool_->Checkout();
    auto r = (*lease)->Exec("SELECT count(*) FROM telemetry_events WHERE " + where);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r->Int64(0, 0) : -1;
  }

  std::vector<ArchiveFile> Manifest() {
    auto lease = pool_->Checkout();
    auto r = (*lease)->Exec(
        "SELECT org, hour_ns, seq, object_key, rows, bytes, min_time_ns, max_time_ns FROM "
        "telemetry_archive_files "
        "ORDER BY org, hour_ns, seq");
    EXPECT_TRUE(r.ok());
    std::vector<ArchiveFile> files;
    for (int i = 0; r.ok() && i < r->size(); ++i) {
      files.push_back({std::string(r->Text(i, 0)), *r->Int64(i, 1), *r->Int64(i, 2),
                       std::string(r->Text(i, 3)), *r->Int64(i, 4), *r->Int64(i, 5), *r->Int64(i, 6),
                       *r->Int64(i, 7)});
    }
    return files;
  }

  // Every event, from PostgreSQL and from every manifest-listed file, with how often each id is seen.
  std::map<std::string, int> EverywhereCounts(Archive& archive, std::vector<StoredEvent>* all = nullptr) {
    std::map<std::string, int> counts;
    auto lease = pool_->Checkout();
    auto r = (*lease)->Exec(std::string("SELECT ") + kEventColumns + " FROM telemetry_events");
    EXPECT_TRUE(r.ok());
    EventColumns cols;
    for (int i = 0; r.ok() && i < r->size(); ++i) EXPECT_TRUE(cols.AppendPgRow(*r, i).ok());
    for (size_t i = 0; i < cols.size(); ++i) {
      auto ev = EventFromColumns(cols.columns(), i);
      EXPECT_TRUE(ev.ok());
      counts[ev->event.id]++;
      if (all) all->push_back(*ev);
    }
    for (const auto& f : Manifest()) {
      auto events = archive.ReadFile(f);
      EXPECT_TRUE(events.ok()) << events.status().ToString();
      if (!events.ok()) continue;
      EXPECT_EQ(static_cast<int64_t>(events->size()), f.rows);
      for (auto& ev : *events) {
        counts[ev.event.id]++;
        if (all) all->push_back(ev);
      }
    }
    return counts;
  }

  // A clock `hours_after` hours after the start of kDay0's hour `h`.
  static int64_t At(int h, int minutes = 0) {
    return kDay0 + h * kNanosPerHour + minutes * 60 * kNanosPerSecond;
  }

  static EventQuery Query(const std::string& org, bool newest_first, size_t limit) {
    EventQuery q;
    q.org = org;
    q.newest_first = newest_first;
    q.limit = limit;
    return q;
  }

  static void SortByKey(std::vector<StoredEvent>& v, bool newest_first) {
    std::sort(v.begin(), v.end(), [&](const StoredEvent& a, const StoredEvent& b) {
      return newest_first ? b.key() < a.key() : a.key() < b.key();
    });
  }

  static inline int counter_ = 0;
  std::optional<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Pool> pool_;
  std::filesystem::path dir_;
  std::unique_ptr<objstore::LocalStore> store_;
  CompactionOptions options_;
};

TEST_F(CompactorTest, RoundTripEveryFieldEqual) {
  auto events = Generate({"acme", "globex"}, 3, 200);
  events[0].event.body_kind = BodyKind::kJson;
  events[0].event.body = R"({"k":[1,2,{"x":"y"}]})";
  events[1].event.attributes = {{"e", "{\"nested\":{\"a\":[true,false,null]}}"}, {"unicode", "\"ünï\\\"q\""}};
  events[2].event.flags = 0xffffffffu;
  events[2].event.dropped_attributes_count = 7;
  Insert(events);
  testing::SettableClock clock(At(4, 1));  // hours 0..2 ended over an hour ago
  Compactor compactor(pool_.get(), store_.get(), &clock, options_);
  auto stats = compactor.RunOnce();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->groups, 6);
  EXPECT_EQ(stats->rows, 1200);
  EXPECT_EQ(PgCount(), 0);
  auto files = Manifest();
  ASSERT_EQ(files.size(), 6u);
  EXPECT_EQ(files[0].object_key, "events/org=acme/hour=2026-11-02T00/0.parquet");
  for (const auto& f : files) {
    EXPECT_EQ(f.rows, 200);
    EXPECT_EQ(HourOf(f.min_time_ns), f.hour_ns);
    EXPECT_EQ(HourOf(f.max_time_ns), f.hour_ns);
    auto head = store_->Head(f.object_key);
    ASSERT_TRUE(head.ok());
    EXPECT_EQ(static_cast<int64_t>(head->size), f.bytes);
  }
  // The temporary files are gone.
  EXPECT_TRUE(std::filesystem::is_empty(dir_ / "tmp"));

  Archive archive(pool_.get(), store_.get());
  for (const std::string org : {"acme", "globex"}) {
    auto q = Query(org, false, 10000);
    auto got = archive.Scan(q);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    std::vector<StoredEvent> want;
    for (const auto& e : events) {
      if (e.event.org == org) want.push_back(e);
    }
    SortByKey(want, false);
    ASSERT_EQ(got->size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ((*got)[i], want[i]) << org << " row " << i;
  }
  // A second pass finds nothing to do.
  auto again = compactor.RunOnce();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->groups, 0);
}

TEST_F(CompactorTest, OnlyWholeHoursOlderThanAgeAreArchived) {
  Insert(Generate({"acme"}, 3, 20));
  testing::SettableClock clock(At(2, 30));  // now - 1h = 01:30: only hour 0 has ended before it
  Compactor compactor(pool_.get(), store_.get(), &clock, options_);
  auto stats = compactor.RunOnce();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->groups, 1);
  EXPECT_EQ(PgCount(), 40);
  EXPECT_EQ(PgCount("time_ns < " + std::to_string(At(1))), 0);
}

TEST_F(CompactorTest, PaginationBothOrdersAcrossFilesAndHours) {
  auto events = Generate({"acme", "other"}, 4, 60);
  Insert(events);
  testing::SettableClock clock(At(3, 1));
  Compactor compactor(pool_.get(), store_.get(), &clock, options_);
  ASSERT_TRUE(compactor.RunOnce().ok());
  // Late events for hours 0 and 1 (a second file each), and hour 3 stays in PostgreSQL.
  auto late = Generate({"acme"}, 2, 15, 100000);
  for (auto& e : late) e.event.time_unix_nanos += 3;  // between the earlier events' times
  Insert(late);
  ASSERT_TRUE(compactor.RunOnce().ok());
  std::set<std::pair<int64_t, int64_t>> seqs;
  for (const auto& f : Manifest()) seqs.insert({f.hour_ns, f.seq});
  EXPECT_TRUE(seqs.count({At(0), 1}) && seqs.count({At(1), 1}));

  std::vector<StoredEvent> want;
  for (const auto& e : events) {
    if (e.event.org == "acme" && e.event.time_unix_nanos < At(2)) want.push_back(e);
  }
  for (const auto& e : late) want.push_back(e);
  Archive archive(pool_.get(), store_.get());
  for (bool newest_first : {false, true}) {
    for (size_t limit : {1, 7, 50, 1000}) {
      SortByKey(want, newest_first);
      auto q = Query("acme", newest_first, limit);
      q.from_ns = At(0);
      q.to_ns = At(2);
      std::vector<StoredEvent> got;
      for (int pages = 0; pages < 1000; ++pages) {
        auto page = archive.Scan(q);
        ASSERT_TRUE(page.ok()) << page.status().ToString();
        ASSERT_LE(page->size(), limit);
        for (auto& e : *page) got.push_back(e);
        if (page->size() < limit) break;
        q.after = page->back().key();
      }
      ASSERT_EQ(got.size(), want.size()) << "newest_first=" << newest_first << " limit=" << limit;
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].key(), want[i].key()) << i;
    }
  }
}

TEST_F(CompactorTest, FiltersByTimeTypeAndAttributes) {
  auto events = Generate({"acme"}, 2, 100);
  Insert(events);
  testing::SettableClock clock(At(5));
  Compactor compactor(pool_.get(), store_.get(), &clock, options_);
  ASSERT_TRUE(compactor.RunOnce().ok());
  Archive archive(pool_.get(), store_.get());
  auto q = Query("acme", true, 1000);
  q.from_ns = At(0, 10);
  q.to_ns = At(1, 20);
  q.type = "audit";
  q.attributes = {{"http.status", "200.0"}, {"model", "\"gpt-4o\""}};
  auto got = archive.Scan(q);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  size_t want = 0;
  for (const auto& e : events) {
    const Event& ev = e.event;
    bool ok = ev.time_unix_nanos >= q.from_ns && ev.time_unix_nanos < q.to_ns && ev.type == "audit";
    bool status200 = false, model = false;
    for (const auto& a : ev.attributes) {
      status200 |= a.key == "http.status" && a.value_json == "200";
      model |= a.key == "model" && a.value_json == "\"gpt-4o\"";
    }
    want += ok && status200 && model;
  }
  EXPECT_GT(want, 0u);
  EXPECT_EQ(got->size(), want);
  for (const auto& e : *got) EXPECT_EQ(e.event.type, "audit");
  // Another organisation sees nothing.
  auto other = archive.Scan(Query("nobody", true, 10));
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->empty());
  // A filter value that is not JSON is a clear error.
  q.attributes = {{"k", "{oops"}};
  EXPECT_EQ(archive.Scan(q).status().code(), Code::kInvalidArgument);
}

TEST_F(CompactorTest, FilesOutsideTheRangeAreNotRead) {
  Insert(Generate({"acme"}, 3, 30));
  testing::SettableClock clock(At(5));
  Compactor compactor(pool_.get(), store_.get(), &clock, options_);
  ASSERT_TRUE(compactor.RunOnce().ok());
  auto files = Manifest();
  ASSERT_EQ(files.size(), 3u);
  // Damage hour 0's file: a query of hour 2 never opens it, one of hour 0 reports the damage.
  ASSERT_TRUE(store_->Put(files[0].object_key, std::string(files[0].bytes, 'x')).ok());
  Archive archive(pool_.get(), store_.get());
  auto q = Query("acme", true, 1000);
  q.from_ns = At(2);
  q.to_ns = At(3);
  auto got = archive.Scan(q);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->size(), 30u);
  EXPECT_EQ(archive.cached_files(), 1u);
  // Newest first with a small limit stops after the newest file.
  auto newest = archive.Scan(Query("acme", true, 5));
  ASSERT_TRUE(newest.ok()) << newest.status().ToString();
  EXPECT_EQ(newest->size(), 5u);
  q.from_ns = At(0);
  q.to_ns = At(1);
  auto bad = archive.Scan(q);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(files[0].object_key), std::string::npos) << bad.status().ToString();
}

TEST_F(CompactorTest, OrphanFileIsIgnoredAndOverwritten) {
  auto events = Generate({"acme"}, 1, 40);
  Insert(events);
  // An orphan at the key the next file will take (a crash after upload), and one at a later seq.
  const std::string key0 = ArchiveObjectKey("acme", At(0), 0);
  ASSERT_TRUE(store_->Put(key0, "orphan bytes").ok());
  ASSERT_TRUE(store_->Put(ArchiveObjectKey("acme", At(0), 7), "orphan bytes").ok());
  Archive archive(pool_.get(), store_.get());
  auto none = archive.Scan(Query("acme", true, 100));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
  testing::SettableClock clock(At(3));
  Compactor compactor(pool_.get(), store_.get(), &clock, options_);
  ASSERT_TRUE(compactor.RunOnce().ok());
  auto got = archive.Scan(Query("acme", true, 100));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->size(), 40u);
  auto counts = EverywhereCounts(archive);
  EXPECT_EQ(counts.size(), 40u);
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id;
}

// A store that, while the file uploads, lets "ingest" insert a late event into the same hour: it was
// not read, so it must stay in PostgreSQL (and not be deleted unarchived).
class InsertDuringUpload final : public objstore::Store {
 public:
  InsertDuringUpload(objstore::Store* inner, std::function<void()> during)
      : inner_(inner), during_(std::move(during)) {}
  Status Put(std::string_view k, std::string_view b) override { return inner_->Put(k, b); }
  Status PutFile(std::string_view k, const std::string& p) override {
    if (during_) std::exchange(during_, nullptr)();
    return inner_->PutFile(k, p);
  }
  Result<std::string> Get(std::string_view k) override { return inner_->Get(k); }
  Result<std::string> GetRange(std::string_view k, uint64_t o, uint64_t n) override {
    return inner_->GetRange(k, o, n);
  }
  Result<objstore::ObjectInfo> Head(std::string_view k) override { return inner_->Head(k); }
  Result<std::vector<objstore::ObjectInfo>> List(std::string_view p) override { return inner_->List(p); }
  Status Delete(std::string_view k) override { return inner_->Delete(k); }

 private:
  objstore::Store* inner_;
  std::function<void()> during_;
};

TEST_F(CompactorTest, RowsInsertedDuringCompactionStayInPostgres) {
  auto events = Generate({"acme"}, 1, 30);
  // Ids that need quoting in an array literal, for the delete by keys.
  events[0].event.id = "id \"with\" \\quotes\\, {braces} and 'ticks'";
  events[1].event.id = "NULL";
  Insert(events);
  // Between the first and last event's time, so a delete by time range alone would take it.
  StoredEvent late = MakeEvent("acme", events[10].event.time_unix_nanos + 1, 999999);
  InsertDuringUpload store(store_.get(), [&] { Insert({late}); });
  testing::SettableClock clock(At(3));
  Compactor compactor(pool_.get(), &store, &clock, options_);
  auto stats = compactor.RunOnce();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->rows, 30);
  EXPECT_EQ(PgCount(), 1);
  EXPECT_EQ(PgCount("id = '" + late.event.id + "'"), 1);
  // The next pass archives it as the hour's second file.
  auto next = compactor.RunOnce();
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->rows, 1);
  auto files = Manifest();
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[1].seq, 1);
  Archive archive(pool_.get(), store_.get());
  auto counts = EverywhereCounts(archive);
  EXPECT_EQ(counts.size(), 31u);
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id;
}

TEST_F(CompactorTest, LosingTheConnectionStopsThePassBeforeItCommits) {
  Insert(Generate({"acme"}, 1, 30));
  // While the file uploads, every other session of this database is terminated: the compactor's
  // advisory lock goes with its session, so it must not commit on a new one.
  InsertDuringUpload store(store_.get(), [&] {
    auto lease = pool_->Checkout();
    ASSERT_TRUE((*lease)
                    ->Exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
                           "current_database() AND pid <> pg_backend_pid()")
                    .ok());
  });
  testing::SettableClock clock(At(3));
  auto own_pool = MakePool();
  Compactor compactor(own_pool.get(), &store, &clock, options_);
  auto stats = compactor.RunOnce();
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), Code::kAborted) << stats.status().ToString();
  EXPECT_EQ(PgCount(), 30);
  EXPECT_TRUE(Manifest().empty());
  // The next pass (a fresh session, the lock taken again) archives the hour over the orphan.
  auto again = compactor.RunOnce();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->rows, 30);
  EXPECT_EQ(PgCount(), 0);
}

TEST_F(CompactorTest, EmptyOldPartitionsAreDropped) {
  Insert(Generate({"acme"}, 2, 10));
  // Another day, still recent: stays.
  Insert({MakeEvent("acme", kDay0 + 3 * kNanosPerDay, 5)});
  testing::SettableClock clock(kDay0 + 3 * kNanosPerDay);
  Compactor compactor(pool_.get(), store_.get(), &clock, options_);
  auto stats = compactor.RunOnce();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->partitions_dropped, 1);
  auto lease = pool_->Checkout();
  auto r = (*lease)->Exec("SELECT to_regclass($1) IS NULL, to_regclass($2) IS NULL",
                          db::Params(PartitionFor(kDay0).name, PartitionFor(kDay0 + 3 * kNanosPerDay).name));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->Text(0, 0), "t");
  EXPECT_EQ(r->Text(0, 1), "f");
  EXPECT_EQ(PgCount(), 1);
}

// A query of telemetry_events locks the parent, then its partitions. Dropping an empty partition must
// take the locks in the same order: when it locked the partition first and then waited for the
// parent (DROP TABLE locks it), a query holding the parent and asking for that partition closed a
// cycle, and PostgreSQL aborted the query ("deadlock detected"; it had waited longer).
TEST_F(CompactorTest, DroppingAPartitionDoesNotDeadlockWithAQuery) {
  Insert(Generate({"acme"}, 2, 10));
  Insert({MakeEvent("acme", kDay0 + 3 * kNanosPerDay, 5)});
  testing::SettableClock clock(kDay0 + 3 * kNanosPerDay);
  CompactionOptions keep = options_;
  keep.drop_empty_partitions = false;
  {
    Compactor archive_only(pool_.get(), store_.get(), &clock, keep);
    auto stats = archive_only.RunOnce();
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    ASSERT_EQ(stats->partitions_dropped, 0);
  }
  const std::string part = PartitionFor(kDay0).name;
  // The query's session: the parent locked, as the planner of `SELECT ... FROM telemetry_events` does
  // first. A short deadlock_timeout makes it the one to look for a cycle, so a cycle aborts it.
  auto query = pool_->Checkout();
  ASSERT_TRUE(query.ok());
  ASSERT_TRUE((*query)->Exec("SET deadlock_timeout = '20ms'").ok());
  ASSERT_TRUE((*query)->Exec("BEGIN").ok());
  ASSERT_TRUE((*query)->Exec("LOCK TABLE ONLY telemetry_events IN ACCESS SHARE MODE").ok());
  const int query_pid = (*query)->BackendPid();

  auto own_pool = MakePool();
  Compactor compactor(own_pool.get(), store_.get(), &clock, options_);
  Result<CompactionStats> dropped = Internal("not run");
  std::thread pass([&] { dropped = compactor.RunOnce(); });
  // Until the compactor waits for a lock the query holds.
  auto watch = pool_->Checkout();
  ASSERT_TRUE(watch.ok());
  bool waiting = false;
  for (int i = 0; i < 1000 && !waiting; ++i) {
    auto r =
        (*watch)->Exec("SELECT count(*) FROM pg_locks WHERE NOT granted AND $1 = ANY (pg_blocking_pids(pid))",
                       db::Params(query_pid));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    waiting = *r->Int64(0, 0) > 0;
    if (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(waiting) << "the compactor never waited for the query's lock";
  // The query goes on to the partition: it must get it, not a deadlock error.
  auto locked = (*query)->Exec("LOCK TABLE " + part + " IN ACCESS SHARE MODE");
  EXPECT_TRUE(locked.ok()) << locked.status().ToString();
  ASSERT_TRUE((*query)->Exec(locked.ok() ? "COMMIT" : "ROLLBACK").ok());
  pass.join();
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(dropped->partitions_dropped, 1);
}

TEST_F(CompactorTest, SecondCompactorWaitsItsTurn) {
  Insert(Generate({"acme"}, 1, 10));
  auto lease = pool_->Checkout();
  ASSERT_TRUE((*lease)->Exec("SELECT pg_advisory_lock($1)", db::Params(kCompactionLockKey)).ok());
  testing::SettableClock clock(At(3));
  Compactor compactor(pool_.get(), store_.get(), &clock, options_);
  auto stats = compactor.RunOnce();
  ASSERT_TRUE(stats.ok());
  EXPECT_TRUE(stats->skipped_locked);
  EXPECT_EQ(PgCount(), 10);
  ASSERT_TRUE((*lease)->Exec("SELECT pg_advisory_unlock($1)", db::Params(kCompactionLockKey)).ok());
  auto after = compactor.RunOnce();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->rows, 10);
}

TEST_F(CompactorTest, ExportHourJoinsPostgresAndArchive) {
  auto events = Generate({"acme"}, 1, 50);
  Insert(events);
  testing::SettableClock clock(At(3));
  Compactor compactor(pool_.get(), store_.get(), &clock, options_);
  ASSERT_TRUE(compactor.RunOnce().ok());
  auto late = Generate({"acme"}, 1, 10, 5000);
  for (auto& e : late) e.event.time_unix_nanos += 1;
  Insert(late);  // still in PostgreSQL
  Archive archive(pool_.get(), store_.get());
  const std::string path = (dir_ / "export.parquet").string();
  auto lease = pool_->Checkout();
  auto st = archive.ExportHour(**lease, "acme", At(0, 30), path);
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto reader = parquet::Reader::Open(path);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->num_rows(), 60);
  std::vector<StoredEvent> want = events;
  for (const auto& e : late) want.push_back(e);
  SortByKey(want, false);
  size_t i = 0;
  for (size_t g = 0; g < (*reader)->row_groups().size(); ++g) {
    auto cols = (*reader)->ReadRowGroup(g);
    ASSERT_TRUE(cols.ok());
    for (size_t r = 0; r < (*cols)[0].size(); ++r, ++i) {
      auto ev = EventFromColumns(*cols, r);
      ASSERT_TRUE(ev.ok());
      EXPECT_EQ(*ev, want[i]);
    }
  }
  EXPECT_EQ(i, 60u);
}

TEST_F(CompactorTest, StartRunsPassesUntilStop) {
  Insert(Generate({"acme"}, 2, 10));
  testing::SettableClock clock(At(4));
  Compactor compactor(pool_.get(), store_.get(), &clock, options_);
  compactor.Start(std::chrono::milliseconds(10));
  for (int i = 0; i < 1000 && compactor.totals().rows < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  compactor.Stop();
  compactor.Stop();
  EXPECT_EQ(compactor.totals().rows, 20);
  EXPECT_EQ(PgCount(), 0);
}

// A child process runs the real compactor with a crash point set and _exits there; the parent then
// checks that every event is in PostgreSQL or in exactly one listed file, and that a normal rerun
// finishes the job with each event exactly once.
class CompactorCrashTest : public CompactorTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(CompactorCrashTest, EveryEventExactlyOnceAfterCrashAndRerun) {
  auto events = Generate({"acme", "globex"}, 3, 150);
  Insert(events);
  testing::SettableClock clock(At(4));
  // One hour already archived before the crash, so the crash hits a later group.
  {
    testing::SettableClock early(At(2));
    Compactor first(pool_.get(), store_.get(), &early, options_);
    ASSERT_TRUE(first.RunOnce().ok());
  }
  const int64_t before_files = static_cast<int64_t>(Manifest().size());
  ASSERT_EQ(before_files, 2);  // hour 0 of each org
  std::fflush(nullptr);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child must not use the parent's connections: a pool of its own.
    ::setenv("GOVERN_TELEMETRY_CRASH_AT", GetParam(), 1);
    auto pool = MakePool();
    if (!pool) _exit(3);
    Compactor c(pool.get(), store_.get(), &clock, options_);
    auto r = c.RunOnce();
    _exit(r.ok() ? 0 : 2);  // reaching here means the crash point was never hit
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 137) << "the child did not stop at " << GetParam();

  Archive archive(pool_.get(), store_.get());
  auto counts = EverywhereCounts(archive);
  EXPECT_EQ(counts.size(), events.size());
  for (const auto& [id, n] : counts) ASSERT_EQ(n, 1) << id;
  EXPECT_EQ(static_cast<int64_t>(Manifest().size()), before_files);  // the crashed group was not listed
  if (std::string(GetParam()) == "compaction.after_upload") {
    // The orphan is there, unlisted, and queries do not see it twice.
    auto orphan = store_->Head(ArchiveObjectKey("acme", At(1), 0));
    EXPECT_TRUE(orphan.ok());
  }
  auto all = archive.Scan(Query("acme", false, 100000));
  ASSERT_TRUE(all.ok());

  Compactor rerun(pool_.get(), store_.get(), &clock, options_);
  auto stats = rerun.RunOnce();
  // The child died holding the compaction lock, a session lock that PostgreSQL releases when its
  // backend sees the connection gone, which can be after waitpid returns: a pass that finds the lock
  // still held skips, as it must while another compactor runs. Try again until the lock is free.
  for (int i = 0; i < 1000 && stats.ok() && stats->skipped_locked; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stats = rerun.RunOnce();
  }
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_FALSE(stats->skipped_locked) << "the crashed child's compaction lock was never released";
  EXPECT_EQ(PgCount(), 0);
  std::vector<StoredEvent> everything;
  counts = EverywhereCounts(archive, &everything);
  EXPECT_EQ(counts.size(), events.size());
  for (const auto& [id, n] : counts) ASSERT_EQ(n, 1) << id;
  // Content too, not only ids.
  SortByKey(everything, false);
  auto want = events;
  SortByKey(want, false);
  ASSERT_EQ(everything.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(everything[i], want[i]) << i;
  EXPECT_EQ(Manifest().size(), 6u);
}

INSTANTIATE_TEST_SUITE_P(CrashPoints, CompactorCrashTest,
                         ::testing::Values("compaction.mid_file", "compaction.after_upload"));

}  // namespace
}  // namespace govern::telemetry

namespace govern::telemetry {
namespace {

// A client's retry or an operator's `ingest replay` after compaction puts archived events back into
// PostgreSQL (its primary key cannot see the archive). The next pass deletes them instead of archiving
// them twice; new late events beside them are archived in a second file.
TEST_F(CompactorTest, RowsRepeatingArchivedEventsAreDeletedNotArchivedAgain) {
  auto events = Generate({"acme"}, 1, 100);
  Insert(events);
  testing::SettableClock clock(At(3, 1));
  Compactor compactor(pool_.get(), store_.get(), &clock, options_);
  ASSERT_TRUE(compactor.RunOnce().ok());
  ASSERT_EQ(PgCount(), 0);
  ASSERT_EQ(Manifest().size(), 1u);

  Insert(events);  // every one again
  auto stats = compactor.RunOnce();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->groups, 0);
  EXPECT_EQ(stats->repeats_deleted, 100);
  EXPECT_EQ(PgCount(), 0);
  EXPECT_EQ(Manifest().size(), 1u);

  auto late = Generate({"acme"}, 1, 10, 100000);
  for (auto& e : late) e.event.time_unix_nanos += 3;
  std::vector<StoredEvent> mixed(events.begin(), events.begin() + 20);
  mixed.insert(mixed.end(), late.begin(), late.end());
  Insert(mixed);
  stats = compactor.RunOnce();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->groups, 1);
  EXPECT_EQ(stats->rows, 10);
  EXPECT_EQ(stats->repeats_deleted, 20);
  EXPECT_EQ(PgCount(), 0);
  Archive archive(pool_.get(), store_.get());
  auto counts = EverywhereCounts(archive);
  EXPECT_EQ(counts.size(), 110u);
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id;
}

}  // namespace
}  // namespace govern::telemetry
