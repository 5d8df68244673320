// telemetry_ingest_benchmark: events/s that the Ingester stores from a real WAL into a private
// PostgreSQL with production durability (fsync on). Prints a table; asserts nothing.
//
//   build/release/src/services/telemetry/telemetry_ingest_benchmark [--events N] [--batch N] [--workers N]
//       [--keep DIR]
//
// --workers: IngestOptions::workers (default 1), each on its own thread and connection, as in the
// service; the clock runs from Start() until every record is stored.
//
// Rows: the fast path (binary COPY straight into telemetry_events), the slow path replaying every
// record as duplicates (COPY fails on the first one, then staging table + INSERT ... ON CONFLICT DO
// NOTHING skips all), and the slow path with new rows (each record carries one already stored event,
// so every batch takes the staging route but inserts nearly everything). Events are ~550 bytes in the
// WAL encoding: agent and gateway events with repeating services, actions and templates and varying
// ids and numbers.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "db/local_cluster.h"
#include "db/migrator.h"
#include "services/telemetry/ingest.h"
#include "services/telemetry/schema.h"

namespace {
using namespace govern;
using namespace govern::telemetry;
using Steady = std::chrono::steady_clock;

void Die(const Status& s, const char* what) {
  std::fprintf(stderr, "telemetry_ingest_benchmark: %s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

// A realistic event: fixed vocabularies, varying ids and numbers.
Event MakeEvent(uint64_t i, int64_t base_ns) {
  static const char* kServices[] = {"gateway", "agent-runner", "policy", "sandbox", "checkout-bot"};
  static const char* kActions[] = {"tool.call", "model.request", "policy.decision", "file.read",
                                   "http.fetch"};
  static const char* kModels[] = {"gpt-4o", "claude-3-5-sonnet", "llama-3-70b"};
  Event e;
  char id[40];
  std::snprintf(id, sizeof id, "%016llx%016llx", static_cast<unsigned long long>(i * 0x9e3779b97f4a7c15ull),
                static_cast<unsigned long long>(i));
  e.id = id;
  e.org = "org-" + std::to_string(i % 7);
  e.time_unix_nanos = base_ns + static_cast<int64_t>(i) * 1000;
  e.observed_unix_nanos = e.time_unix_nanos + 150'000;
  e.type = kActions[i % 5];
  e.severity_text = i % 13 ? "INFO" : "WARN";
  e.severity_number = i % 13 ? 9 : 13;
  e.body_kind = BodyKind::kString;
  e.body = std::string("agent ") + kServices[i % 5] + " ran " + kActions[(i / 5) % 5] + " on model " +
           kModels[i % 3] + " for request " + std::to_string(i * 31 % 100000) + " in " +
           std::to_string(i % 900 + 12) + " ms; tokens in " + std::to_string(i % 4000) + ", out " +
           std::to_string(i % 700) + "; outcome ok";
  e.attributes = {{"agent.id", "\"agent-" + std::to_string(i % 250) + "\""},
                  {"action", std::string("\"") + kActions[i % 5] + "\""},
                  {"model", std::string("\"") + kModels[i % 3] + "\""},
                  {"tokens.input", std::to_string(i % 4000)},
                  {"tokens.output", std::to_string(i % 700)},
                  {"latency_ms", std::to_string(i % 900 + 12)},
                  {"http.status", i % 17 ? "200" : "429"},
                  {"user.id", "\"u-" + std::to_string(i * 7 % 10000) + "\""},
                  {"http.url", "\"https://api.internal/v1/tools/" + std::string(kActions[i % 5]) +
                                   "?page=" + std::to_string(i % 40) + "\""}};
  e.resource_attributes = {{"service.name", std::string("\"") + kServices[i % 5] + "\""},
                           {"deployment.environment", "\"production\""},
                           {"host.name", "\"node-" + std::to_string(i % 12) + "\""}};
  e.service_name = kServices[i % 5];
  e.scope_name = "govern.agent";
  e.scope_version = "1.4.0";
  char trace[33], span[17];
  std::snprintf(trace, sizeof trace, "%016llx%016llx", static_cast<unsigned long long>(i / 4 + 1),
                static_cast<unsigned long long>(i * 0x2545f4914f6cdd1dull));
  std::snprintf(span, sizeof span, "%016llx", static_cast<unsigned long long>(i * 0x9e37ull + 7));
  e.trace_id_hex = trace;
  e.span_id_hex = span;
  e.flags = 1;
  return e;
}

// CPU seconds (user + system) used so far by the PostgreSQL server: the postmaster and every child
// (backends, WAL writer, checkpointer), read from /proc. Wall time is noisy on a shared machine; CPU
// per row is the robust unit.
double PgCpuSeconds(const std::string& data_dir) {
  std::FILE* f = std::fopen((data_dir + "/postmaster.pid").c_str(), "r");
  if (!f) return 0;
  long master = 0;
  if (std::fscanf(f, "%ld", &master) != 1) master = 0;
  std::fclose(f);
  double ticks = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::FILE* st = std::fopen((entry.path() / "stat").c_str(), "r");
    if (!st) continue;
    char buf[1024];
    size_t n = std::fread(buf, 1, sizeof buf - 1, st);
    std::fclose(st);
    buf[n] = 0;
    const char* close = std::strrchr(buf, ')');  // the command name may hold spaces
    if (!close) continue;
    char state;
    long ppid = 0, pid = std::atol(name.c_str());
    unsigned long long utime = 0, stime = 0;
    long long cutime = 0, cstime = 0;
    if (std::sscanf(close + 2, "%c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld", &state,
                    &ppid, &utime, &stime, &cutime, &cstime) != 6) {
      continue;
    }
    if (pid == master)
      ticks += static_cast<double>(utime + stime) + static_cast<double>(cutime + cstime);
    else if (ppid == master)
      ticks += static_cast<double>(utime + stime);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double SelfCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct Run {
  double events_per_s = 0;
  double events_per_pg_cpu_s = 0;
  double events_per_client_cpu_s = 0;
  Ingester::Stats stats;
};

// Runs the Ingester's threads until they have stored everything durable.
Run Ingest(wal::Log* log, db::Pool* pool, IngestOptions o, uint64_t events, const std::string& pg_dir) {
  Ingester ing(log, pool, o, &Clock::Real());
  double pg0 = PgCpuSeconds(pg_dir), self0 = SelfCpuSeconds();
  auto t0 = Steady::now();
  if (Status s = ing.Start(); !s.ok()) Die(s, "start ingest");
  while (ing.NextSequence() <= log->DurableSequence()) {
    if (ing.GetStats().stopped_on_poison) Die(DataLoss(ing.GetStats().last_error), "ingest");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ing.Stop();
  double secs = std::chrono::duration<double>(Steady::now() - t0).count();
  Run run;
  run.stats = ing.GetStats();
  double n = static_cast<double>(events);
  run.events_per_s = n / secs;
  run.events_per_pg_cpu_s = n / std::max(1e-9, PgCpuSeconds(pg_dir) - pg0);
  run.events_per_client_cpu_s = n / std::max(1e-9, SelfCpuSeconds() - self0);
  return run;
}

void Print(const char* name, const Run& r) {
  std::printf(
      "%-36s %10.0f events/s  %10.0f per PG CPU-s  %10.0f per client CPU-s  (stored %llu, dup %llu, "
      "staging batches %llu)\n",
      name, r.events_per_s, r.events_per_pg_cpu_s, r.events_per_client_cpu_s,
      static_cast<unsigned long long>(r.stats.events_stored),
      static_cast<unsigned long long>(r.stats.duplicates_skipped),
      static_cast<unsigned long long>(r.stats.slow_batches));
}

Result<std::unique_ptr<wal::Log>> OpenWal(const std::string& dir) {
  std::filesystem::remove_all(dir);
  return wal::Log::Open(dir);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t events = 200'000;
  size_t batch = 20'000;
  size_t workers = 1;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--events") && i + 1 < argc) events = std::strtoull(argv[++i], nullptr, 10);
    if (!std::strcmp(argv[i], "--batch") && i + 1 < argc) batch = std::strtoull(argv[++i], nullptr, 10);
    if (!std::strcmp(argv[i], "--keep") && i + 1 < argc) dir = argv[++i];
    if (!std::strcmp(argv[i], "--workers") && i + 1 < argc) workers = std::strtoull(argv[++i], nullptr, 10);
  }
  bool temp = dir.empty();
  if (temp) dir = (std::filesystem::temp_directory_path() / "govern_ingest_benchmark").string();
  log::Configure(log::Level::kWarn, log::Format::kText);
  db::LocalClusterOptions co;
  co.data_dir = dir + "/pg";
  db::LocalCluster cluster(co);
  if (auto s = cluster.Start(); !s.ok()) Die(s, "start cluster");
  (void)cluster.EnsureDatabase("ingest_bench");
  db::PoolOptions po;
  po.conninfo = cluster.ConnInfo("ingest_bench");
  auto pool = db::Pool::Create(po);
  if (!pool.ok()) Die(pool.status(), "pool");
  {
    auto lease = (*pool)->Checkout();
    if (!lease.ok()) Die(lease.status(), "checkout");
    (void)(*lease)->ExecScript(
        "DROP TABLE IF EXISTS telemetry_events, telemetry_ingest_cursor, telemetry_ingest_keys, "
        "telemetry_archive_files, telemetry_dlp_policies CASCADE; DELETE FROM govern_migrations WHERE "
        "service = 'telemetry'");
  }
  if (auto m = db::Migrator("telemetry", Migrations()).Apply(**pool); !m.ok()) Die(m.status(), "migrate");

  const int64_t base = 1'764'460'800'000'000'000;  // one day: one partition
  const size_t per_record = 1000;
  auto log = OpenWal(dir + "/wal");
  if (!log.ok()) Die(log.status(), "wal");
  // Holds retention back so the replay below reads every record again.
  if (auto s = (*log)->RegisterCursor("replay", 1); !s.ok()) Die(s, "register");
  std::string rec;
  size_t bytes = 0;
  for (uint64_t i = 0; i < events; i += per_record) {
    std::vector<Event> evs;
    for (uint64_t j = i; j < std::min<uint64_t>(events, i + per_record); ++j)
      evs.push_back(MakeEvent(j, base));
    for (const Event& e : evs) bytes += EncodedEventSize(e);
    rec.clear();
    EncodeRecord(evs, base, &rec);
    if (auto s = (*log)->Append(rec); !s.ok()) Die(s.status(), "append");
  }
  IngestOptions o;
  o.max_batch_events = batch;
  o.max_wait = std::chrono::milliseconds(1);
  o.workers = std::max<size_t>(workers, 1);
  std::printf("events %llu, %.0f bytes each (WAL encoding), %zu per record, batches of %zu, %zu worker(s)\n",
              static_cast<unsigned long long>(events),
              static_cast<double>(bytes) / static_cast<double>(events), per_record, batch, o.workers);
  Print("ingest_fast_path_copy", Ingest(log->get(), pool->get(), o, events, co.data_dir));
  o.cursor_name = "replay";
  Print("ingest_slow_path_all_duplicates", Ingest(log->get(), pool->get(), o, events, co.data_dir));

  // New rows, each record led by one already stored event: every batch goes through staging.
  log->reset();
  auto log2 = OpenWal(dir + "/wal2");
  if (!log2.ok()) Die(log2.status(), "wal2");
  for (uint64_t i = 0; i < events; i += per_record) {
    std::vector<Event> evs{MakeEvent(i, base)};
    for (uint64_t j = i + 1; j < std::min<uint64_t>(events, i + per_record); ++j)
      evs.push_back(MakeEvent(events + j, base));
    rec.clear();
    EncodeRecord(evs, base, &rec);
    if (auto s = (*log2)->Append(rec); !s.ok()) Die(s.status(), "append");
  }
  o.cursor_name = "slow";
  Print("ingest_slow_path_new_rows", Ingest(log2->get(), pool->get(), o, events, co.data_dir));
  log2->reset();
  pool->reset();
  if (temp) {
    (void)cluster.Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return 0;
}
