// Compaction rows/s and size ratio (PostgreSQL table + indexes vs Parquet), and the three archive
// queries of BENCHMARKS.md, on realistic ~550-byte events (archive_testing.h MakeEvent).
//
// Needs a PostgreSQL: GOVERN_TEST_PG_DIR of a cluster started with `govern_testpg start DIR`.
// Usage: telemetry_archive_benchmark [rows_to_compact (default 500000)] [repetitions (default 50)]
//        [row_group_rows (default: CompactionOptions's)]
// Prints one line per figure.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"
#include "services/telemetry/archive.h"
#include "services/telemetry/archive_testing.h"
#include "services/telemetry/compactor.h"
#include "storage/objstore/local_store.h"

using namespace govern;
using namespace govern::telemetry;

namespace {

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void Die(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

// CPU seconds used so far by this process.
double SelfCpu() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// CPU seconds used so far by the PostgreSQL cluster (the postmaster and every backend: their
// utime + stime, plus cutime + cstime of the postmaster for exited children), from /proc.
double PgCpu() {
  const char* dir = std::getenv("GOVERN_TEST_PG_DIR");
  if (!dir) return 0;
  std::ifstream pidfile(std::string(dir) + "/postmaster.pid");
  long postmaster = 0;
  pidfile >> postmaster;
  double ticks = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::vector<std::string> f{std::istream_iterator<std::string>(rest),
                               std::istream_iterator<std::string>()};
    if (f.size() < 15) continue;
    long pid = std::atol(name.c_str());
    long ppid = std::atol(f[1].c_str());
    if (pid != postmaster && ppid != postmaster) continue;
    ticks += std::atof(f[11].c_str()) + std::atof(f[12].c_str());
    if (pid == postmaster) ticks += std::atof(f[13].c_str()) + std::atof(f[14].c_str());
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int64_t PgEventBytes(db::Pool& pool, const char* fn) {
  auto lease = pool.Checkout();
  auto r = (*lease)->Exec(std::string("SELECT COALESCE(sum(") + fn +
                          "(inhrelid)), 0) FROM pg_inherits WHERE inhparent = 'telemetry_events'::regclass");
  Die(r.status(), "size");
  return *r->Int64(0, 0);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 500000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 50;
  auto tdb = db::testing::TestDatabase::Create();
  Die(tdb.status(), "test database (is GOVERN_TEST_PG_DIR set?)");
  db::PoolOptions po;
  po.conninfo = tdb->conninfo();
  po.max_size = 4;
  auto pool = db::Pool::Create(po);
  Die(pool.status(), "pool");
  Die(db::Migrator("telemetry", Migrations()).Apply(**pool).status(), "migrations");
  auto dir = std::filesystem::temp_directory_path() / ("govern-archive-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "tmp");
  auto store = objstore::LocalStore::Open((dir / "archive").string());
  Die(store.status(), "store");

  // 1. Compaction: `rows` events of one organisation over 10 hours.
  const int hours = 10;
  double event_bytes = 0;
  {
    auto lease = (*pool)->Checkout();
    std::vector<StoredEvent> batch;
    for (int64_t i = 0; i < rows; ++i) {
      int64_t t = testing::kDay0 + i * (hours * kNanosPerHour / rows);
      batch.push_back(testing::MakeEvent("acme", t, static_cast<uint64_t>(i)));
      const Event& e = batch.back().event;
      event_bytes += static_cast<double>(
          e.id.size() + e.org.size() + e.type.size() + e.severity_text.size() + e.body.size() +
          AttributesToJson(e.attributes).size() + AttributesToJson(e.resource_attributes).size() +
          e.service_name.size() + e.scope_name.size() + e.scope_version.size() + e.trace_id_hex.size() +
          e.span_id_hex.size() + 6 * 8 + 2 * 4);
      if (batch.size() == 20000 || i + 1 == rows) {
        Die(testing::InsertEvents(**lease, batch), "insert");
        batch.clear();
      }
    }
    Die((*lease)->Exec("VACUUM ANALYZE telemetry_events").status(), "vacuum");
  }
  const int64_t pg_total = PgEventBytes(**pool, "pg_total_relation_size");
  const int64_t pg_heap = PgEventBytes(**pool, "pg_table_size");
  testing::SettableClock clock(testing::kDay0 + (hours + 2) * kNanosPerHour);
  CompactionOptions co;
  co.temp_dir = (dir / "tmp").string();
  if (argc > 3) co.row_group_rows = std::atoll(argv[3]);
  Compactor compactor(pool->get(), store->get(), &clock, co);
  const double self0 = SelfCpu(), pg0 = PgCpu();
  auto t0 = std::chrono::steady_clock::now();
  auto stats = compactor.RunOnce();
  auto t1 = std::chrono::steady_clock::now();
  const double self_cpu = SelfCpu() - self0, pg_cpu = PgCpu() - pg0;
  Die(stats.status(), "compaction");
  std::printf("events: %lld, average %.0f bytes of field data each\n", static_cast<long long>(stats->rows),
              event_bytes / static_cast<double>(rows));
  std::printf("compaction: %lld rows in %.2f s = %.0f rows/s, %lld files\n",
              static_cast<long long>(stats->rows), Seconds(t0, t1),
              static_cast<double>(stats->rows) / Seconds(t0, t1), static_cast<long long>(stats->groups));
  std::printf("  CPU: compactor %.2f s, PostgreSQL %.2f s: %.0f rows per CPU-second (both together)\n",
              self_cpu, pg_cpu, static_cast<double>(stats->rows) / (self_cpu + pg_cpu));
  std::printf(
      "  of which: read from PostgreSQL %.2f s, encode Parquet %.2f s, upload %.2f s, manifest+delete %.2f "
      "s\n",
      stats->read_seconds, stats->encode_seconds, stats->upload_seconds, stats->commit_seconds);
  std::printf(
      "size: PostgreSQL %.1f MB with indexes (%.1f MB table+toast), Parquet %.1f MB: %.1fx smaller "
      "(%.1fx vs table alone)\n",
      static_cast<double>(pg_total) / 1e6, static_cast<double>(pg_heap) / 1e6,
      static_cast<double>(stats->bytes) / 1e6,
      static_cast<double>(pg_total) / static_cast<double>(stats->bytes),
      static_cast<double>(pg_heap) / static_cast<double>(stats->bytes));

  // 2. Queries: a day of 48,000 events (2,000 an hour) of another organisation.
  {
    auto lease = (*pool)->Checkout();
    std::vector<StoredEvent> batch;
    const int64_t day = testing::kDay0 + kNanosPerDay;
    for (int64_t i = 0; i < 48000; ++i) {
      batch.push_back(
          testing::MakeEvent("day", day + (i * kNanosPerDay) / 48000, static_cast<uint64_t>(i) + 7000000));
    }
    Die(testing::InsertEvents(**lease, batch), "insert day");
  }
  clock.Set(testing::kDay0 + 3 * kNanosPerDay);
  Die(compactor.RunOnce().status(), "compaction of the day");
  Archive archive(pool->get(), store->get());
  const int64_t day = testing::kDay0 + kNanosPerDay;
  auto measure = [&](const char* name, EventQuery q, size_t want) {
    std::vector<double> ms;
    for (int i = 0; i < reps; ++i) {
      auto a = std::chrono::steady_clock::now();
      auto r = archive.Scan(q);
      auto b = std::chrono::steady_clock::now();
      Die(r.status(), name);
      if (r->size() != want) {
        std::fprintf(stderr, "%s: %zu rows, want %zu\n", name, r->size(), want);
        std::exit(1);
      }
      ms.push_back(Seconds(a, b) * 1e3);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("query %s: median %.2f ms, p99 %.2f ms (%d runs)\n", name, ms[ms.size() / 2],
                ms[std::min(ms.size() - 1, ms.size() * 99 / 100)], reps);
  };
  EventQuery hour;
  hour.org = "day";
  hour.from_ns = day + 5 * kNanosPerHour;
  hour.to_ns = hour.from_ns + kNanosPerHour;
  hour.limit = 100;
  measure("first 100 rows of an hour", hour, 100);
  EventQuery whole = hour;
  whole.from_ns = day;
  whole.to_ns = day + kNanosPerDay;
  measure("first 100 rows of a day", whole, 100);
  whole.limit = 100000;
  measure("every row of a day (48,000)", whole, 48000);
  std::filesystem::remove_all(dir);
  return 0;
}
