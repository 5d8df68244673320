// telemetry_ingest_benchmark: events/s that the Ingester stores from a real WAL into a private
// PostgreSQL with production durability (fsync on). Prints a table; asserts nothing.
//
//   build/release/src/services/telemetry/telemetry_ingest_benchmark [--events N] [--batch N] [--keep DIR]
//
// Rows: the fast path (binary COPY straight into telemetry_events), the slow path replaying every
// record as duplicates (COPY fails on the first one, then staging table + INSERT ... ON CONFLICT DO
// NOTHING skips all), and the slow path with new rows (each record carries one already stored event,
// so every batch takes the staging route but inserts nearly everything). Events are ~550 bytes in the
// WAL encoding: agent and gateway events with repeating services, actions and templates and varying
// ids and numbers.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
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
                  {"user.id", "\"u-" + std::to_string(i * 7 % 10000) + "\""}};
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

// Runs the Ingester until it has stored everything durable; returns events/s.
double Ingest(wal::Log* log, db::Pool* pool, IngestOptions o, uint64_t events, Ingester::Stats* stats) {
  Ingester ing(log, pool, o, &Clock::Real());
  auto t0 = Steady::now();
  while (ing.NextSequence() <= log->DurableSequence()) {
    auto r = ing.RunOnce();
    if (!r.ok()) Die(r.status(), "ingest");
  }
  double secs = std::chrono::duration<double>(Steady::now() - t0).count();
  *stats = ing.GetStats();
  return static_cast<double>(events) / secs;
}

Result<std::unique_ptr<wal::Log>> OpenWal(const std::string& dir) {
  std::filesystem::remove_all(dir);
  return wal::Log::Open(dir);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t events = 200'000;
  size_t batch = 20'000;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--events") && i + 1 < argc) events = std::strtoull(argv[++i], nullptr, 10);
    if (!std::strcmp(argv[i], "--batch") && i + 1 < argc) batch = std::strtoull(argv[++i], nullptr, 10);
    if (!std::strcmp(argv[i], "--keep") && i + 1 < argc) dir = argv[++i];
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
        "telemetry_archive_files CASCADE; DELETE FROM govern_migrations WHERE service = 'telemetry'");
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
  std::printf("events %llu, %.0f bytes each (WAL encoding), %zu per record, batches of %zu\n",
              static_cast<unsigned long long>(events),
              static_cast<double>(bytes) / static_cast<double>(events), per_record, batch);
  std::printf("%-44s %14s  %s\n", "metric", "value", "unit");
  Ingester::Stats st;
  double fast = Ingest(log->get(), pool->get(), o, events, &st);
  std::printf("%-44s %14.0f  %s  (stored %llu, staging batches %llu)\n", "ingest_fast_path_copy", fast,
              "events/s", static_cast<unsigned long long>(st.events_stored),
              static_cast<unsigned long long>(st.slow_batches));

  o.cursor_name = "replay";
  double dups = Ingest(log->get(), pool->get(), o, events, &st);
  std::printf("%-44s %14.0f  %s  (duplicates %llu, staging batches %llu)\n",
              "ingest_slow_path_all_duplicates", dups, "events/s",
              static_cast<unsigned long long>(st.duplicates_skipped),
              static_cast<unsigned long long>(st.slow_batches));

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
  double slow = Ingest(log2->get(), pool->get(), o, events, &st);
  std::printf("%-44s %14.0f  %s  (stored %llu, duplicates %llu, staging batches %llu)\n",
              "ingest_slow_path_new_rows", slow, "events/s",
              static_cast<unsigned long long>(st.events_stored),
              static_cast<unsigned long long>(st.duplicates_skipped),
              static_cast<unsigned long long>(st.slow_batches));
  log2->reset();
  pool->reset();
  if (temp) {
    (void)cluster.Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return 0;
}
