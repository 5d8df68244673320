// The `telemetry` benchmark suite: every row of BENCHMARKS.md's telemetry table, with the generator of
// generator.h as the data. What it measures in this process, needing no service:
//  - the generator's event sizes in each encoding;
//  - intake per core: decode a batch (NDJSON or OTLP protobuf) + assign ids + encode the WAL record +
//    append it durably to a wal::Log, events per CPU-second of the whole process (WAL thread included);
//  - WAL records/s: one-event records appended asynchronously with group commit;
//  - the raw limit of storing: binary COPY of the same rows into a table shaped like telemetry_events
//    (schema.h Migrations(), one partition), on a private PostgreSQL (fsync on) in --dir, 1 and 2
//    connections, 5,000 rows per transaction, every row counted afterwards;
//  - a compaction stand-in: the rows of one organisation read back from PostgreSQL and written to a
//    ZSTD Parquet file by our writer (no manifest, no delete), rows/s and size ratio.
// The rows that need `govern serve telemetry` (HTTP intake, sustained/peak/soak with every event stored,
// send-to-stored latency, the compactor, archive queries) are run by service_phase.cc when the govern
// binary given with --govern holds the telemetry service; otherwise they are listed as "not run" with
// the reason, never with a figure.
//
// Usage: telemetry_bench --dir DIR [--quick] [--results DIR] [--govern PATH] [--loadgen PATH]
// [--service-only] [--sustained-rate EVENTS_PER_S] [--sustained-only]
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "db/connection.h"
#include "db/local_cluster.h"
#include "db/migrator.h"
#include "generator.h"
#include "report.h"
#include "service_phase.h"
#include "services/telemetry/ndjson.h"
#include "services/telemetry/otlp_proto.h"
#include "services/telemetry/record.h"
#include "services/telemetry/schema.h"
#include "storage/parquet/writer.h"
#include "storage/wal.h"

namespace govern::telemetry::benchtool {
namespace {

using bench::Report;
using bench::Row;
using benchgen::Generator;
using benchgen::GeneratorOptions;
using Clock = std::chrono::steady_clock;

// Published targets (BENCHMARKS.md, telemetry).
constexpr double kIntakeTarget = 250000;
constexpr double kWalTarget = 500000;
constexpr double kCompactionTarget = 277000;
constexpr double kCompactionRatioTarget = 25.7;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct Config {
  bool quick = false;
  std::string results = "bench/results";
  std::string dir;
  std::string govern;
  std::string loadgen;
  bool service_only = false;  // skip the in-process rows (to try the service rows alone)
  double sustained_rate = 100000;
  bool sustained_only = false;
};

std::vector<Event> Batch(Generator& g, size_t n) {
  std::vector<Event> out(n);
  for (Event& e : out) g.Next(&e);
  return out;
}

// --- sizes -------------------------------------------------------------------------------------------

void Sizes(Report& report) {
  GeneratorOptions o;
  o.org = "org_acme";
  Generator g(o);
  constexpr size_t kBatchSize = 1000, kBatches = 20;
  size_t ndjson = 0, otlp = 0, record = 0, values = 0;
  for (size_t b = 0; b < kBatches; ++b) {
    auto ev = Batch(g, kBatchSize);
    ndjson += benchgen::RenderNdjson(ev).size();
    otlp += benchgen::RenderOtlpProto(ev).size();
    AssignMissingIds(ev);
    for (const Event& e : ev) {
      record += EncodedEventSize(e);
      values += e.org.size() + e.id.size() + e.type.size() + e.severity_text.size() + e.body.size() +
                e.service_name.size() + e.scope_name.size() + e.scope_version.size() + e.trace_id_hex.size() +
                e.span_id_hex.size() + 8 * 6;
      for (const Attribute& a : e.attributes) values += a.key.size() + a.value_json.size();
      for (const Attribute& a : e.resource_attributes) values += a.key.size() + a.value_json.size();
    }
  }
  const double n = kBatchSize * kBatches;
  const std::string note = "generator.h, batches of 1000, 20,000 events";
  report.Add(Row{"event_bytes_ndjson", ndjson / n, "bytes", 550, "lower", "", {}, note});
  report.Add(Row{"event_bytes_otlp_proto", otlp / n, "bytes", {}, "lower", "", {}, note});
  report.Add(Row{"event_bytes_wal_record", record / n, "bytes", {}, "lower", "", {}, "with its 64-char id"});
  report.Add(Row{"event_bytes_values",
                 values / n,
                 "bytes",
                 {},
                 "lower",
                 "",
                 {},
                 "string bytes + 8 per number, id included (the size-ratio base)"});
}

// --- intake per core ---------------------------------------------------------------------------------

// Waits until at most `limit` appends are in flight.
void WaitPending(const std::atomic<int>& pending, int limit) {
  while (pending.load(std::memory_order_acquire) > limit) std::this_thread::yield();
}

void IntakePerCore(const Config& cfg, Report& report, bool otlp) {
  const std::string dir = cfg.dir + "/intake-wal";
  std::filesystem::remove_all(dir);
  auto log = wal::Log::Open(dir);
  if (!log.ok()) {
    std::fprintf(stderr, "intake: %s\n", log.status().message().c_str());
    return;
  }
  GeneratorOptions o;
  o.org = "org_acme";
  o.events_per_second = 100000;
  Generator g(o);
  constexpr size_t kBatchSize = 1000;
  std::vector<std::string> bodies;
  for (int i = 0; i < 16; ++i) {
    auto ev = Batch(g, kBatchSize);
    bodies.push_back(otlp ? benchgen::RenderOtlpProto(ev) : benchgen::RenderNdjson(ev));
  }
  std::atomic<int> pending{0};
  std::atomic<int64_t> failed{0};
  const auto duration = std::chrono::milliseconds(cfg.quick ? 3000 : 10000);
  int64_t events = 0;
  const double cpu0 = CpuSeconds();
  const auto t0 = Clock::now();
  std::string record;
  double decode_s = 0, ids_s = 0, encode_s = 0;  // this thread's CPU time in each stage
  for (size_t i = 0; Clock::now() - t0 < duration; ++i) {
    const std::string& body = bodies[i % bodies.size()];
    double c0 = ThreadCpuSeconds();
    auto batch = otlp ? DecodeOtlpLogsProto(body, "org_acme") : DecodeNdjson(body, "org_acme");
    if (!batch.ok() || batch->events.size() != kBatchSize) {
      std::fprintf(stderr, "intake: decode failed\n");
      return;
    }
    double c1 = ThreadCpuSeconds();
    AssignMissingIds(batch->events);
    double c2 = ThreadCpuSeconds();
    record.clear();
    EncodeRecord(batch->events, NowNanos(), &record);
    double c3 = ThreadCpuSeconds();
    decode_s += c1 - c0;
    ids_s += c2 - c1;
    encode_s += c3 - c2;
    WaitPending(pending, 64);
    pending.fetch_add(1);
    (*log)->AppendAsync(record, [&](Result<uint64_t> r) {
      if (!r.ok()) failed.fetch_add(1);
      pending.fetch_sub(1, std::memory_order_release);
    });
    events += static_cast<int64_t>(kBatchSize);
  }
  WaitPending(pending, 0);
  const double wall = Seconds(Clock::now() - t0);
  const double cpu = CpuSeconds() - cpu0;
  log->reset();
  std::filesystem::remove_all(dir);
  if (failed.load() != 0) {
    std::fprintf(stderr, "intake: %lld appends failed\n", static_cast<long long>(failed.load()));
    return;
  }
  char note[300];
  const double us = 1e6 / static_cast<double>(events);
  std::snprintf(note, sizeof note,
                "batches of 1000, %.0f events/s wall, %.2f CPU-s over %.1f s; CPU us/event: decode %.2f, ids "
                "%.2f, WAL record %.2f, WAL append+rest %.2f",
                events / wall, cpu, wall, decode_s * us, ids_s * us, encode_s * us,
                (cpu - decode_s - ids_s - encode_s) * us);
  report.Add(Row{otlp ? "intake_per_core_otlp_proto_inprocess" : "intake_per_core_ndjson_inprocess",
                 events / cpu,
                 "events/s",
                 kIntakeTarget,
                 "higher",
                 "",
                 {},
                 note});
}

// --- WAL ---------------------------------------------------------------------------------------------

void WalRecords(const Config& cfg, Report& report) {
  const std::string dir = cfg.dir + "/records-wal";
  std::filesystem::remove_all(dir);
  auto log = wal::Log::Open(dir);
  if (!log.ok()) {
    std::fprintf(stderr, "wal: %s\n", log.status().message().c_str());
    return;
  }
  Generator g({});
  std::vector<std::string> records;
  size_t bytes = 0;
  for (int i = 0; i < 4096; ++i) {
    std::vector<Event> one = Batch(g, 1);
    AssignMissingIds(one);
    records.emplace_back();
    EncodeRecord(one, NowNanos(), &records.back());
    bytes += records.back().size();
  }
  std::atomic<int> pending{0};
  std::atomic<int64_t> failed{0};
  const auto duration = std::chrono::milliseconds(cfg.quick ? 3000 : 10000);
  int64_t n = 0;
  const auto t0 = Clock::now();
  while (Clock::now() - t0 < duration) {
    for (int k = 0; k < 256; ++k, ++n) {
      WaitPending(pending, 16384);
      pending.fetch_add(1);
      (*log)->AppendAsync(records[static_cast<size_t>(n) % records.size()], [&](Result<uint64_t> r) {
        if (!r.ok()) failed.fetch_add(1);
        pending.fetch_sub(1, std::memory_order_release);
      });
    }
  }
  WaitPending(pending, 0);
  const double wall = Seconds(Clock::now() - t0);
  log->reset();
  std::filesystem::remove_all(dir);
  if (failed.load() != 0) {
    std::fprintf(stderr, "wal: %lld appends failed\n", static_cast<long long>(failed.load()));
    return;
  }
  char note[160];
  std::snprintf(note, sizeof note,
                "one event per record (%zu B avg), AppendAsync from 1 thread, group commit",
                bytes / records.size());
  report.Add(Row{"wal_records_per_s", n / wall, "records/s", kWalTarget, "higher", "", {}, note});
}

// --- PostgreSQL COPY ---------------------------------------------------------------------------------

std::string JsonObject(const std::vector<Attribute>& attrs) {
  std::string out = "{";
  for (const Attribute& a : attrs) {
    if (out.size() > 1) out.push_back(',');
    out += "\"" + a.key + "\":" + a.value_json;
  }
  return out + "}";
}

// `json_text`: the attribute columns are `json` (binary COPY sends json as its text) instead of jsonb.
void CopyRow(db::CopyIn& copy, const Event& e, int64_t received, bool json_text) {
  db::CopyEncoder& row = copy.Row(kEventColumnCount);
  row.Text(e.org)
      .Int64(e.time_unix_nanos)
      .Text(e.id)
      .Int64(e.observed_unix_nanos)
      .Int64(received)
      .Text(e.type)
      .Text(e.severity_text)
      .Int32(e.severity_number)
      .Int16(static_cast<int16_t>(e.body_kind))
      .Text(e.body);
  if (json_text)
    row.Text(JsonObject(e.attributes)).Text(JsonObject(e.resource_attributes));
  else
    row.Jsonb(JsonObject(e.attributes)).Jsonb(JsonObject(e.resource_attributes));
  row.Text(e.service_name)
      .Text(e.scope_name)
      .Text(e.scope_version)
      .Text(e.trace_id_hex)
      .Text(e.span_id_hex)
      .Int64(e.flags)
      .Int64(e.dropped_attributes_count);
}

class Postgres {
 public:
  Status Start(const Config& cfg) {
    db::LocalClusterOptions o;
    o.data_dir = cfg.dir + "/pg";
    o.relocate_root = "/var/lib/govern-bench";
    o.listen_tcp = false;
    o.shared_buffers = "256MB";
    cluster_ = std::make_unique<db::LocalCluster>(o);
    GOVERN_RETURN_IF_ERROR(cluster_->Start());
    GOVERN_RETURN_IF_ERROR(cluster_->EnsureDatabase("postgres"));
    GOVERN_ASSIGN_OR_RETURN(auto admin, db::Connection::Connect(cluster_->ConnInfo("postgres")));
    (void)admin->Exec("DROP DATABASE IF EXISTS telemetry_bench");
    GOVERN_RETURN_IF_ERROR(admin->Exec("CREATE DATABASE telemetry_bench").status());
    GOVERN_ASSIGN_OR_RETURN(auto conn, Connect());
    GOVERN_RETURN_IF_ERROR(db::Migrator("telemetry", Migrations()).Apply(*conn).status());
    return Status::Ok();
  }
  Result<std::unique_ptr<db::Connection>> Connect() {
    return db::Connection::Connect(cluster_->ConnInfo("telemetry_bench"));
  }
  void Stop() {
    if (cluster_) (void)cluster_->Stop();
  }

 private:
  std::unique_ptr<db::LocalCluster> cluster_;
};

Status EnsurePartition(db::Connection& conn, int64_t time_ns) {
  Partition p = PartitionFor(time_ns);
  return conn
      .Exec("CREATE TABLE IF NOT EXISTS " + p.name + " PARTITION OF telemetry_events FOR VALUES FROM (" +
            std::to_string(p.from_ns) + ") TO (" + std::to_string(p.to_ns) + ")")
      .status();
}

// COPYs `rows` events from `threads` connections (each its own generator stream), `per_tx` rows per
// transaction. Returns rows/s over the wall time spent in COPY and COMMIT (generation excluded).
Result<double> CopyRows(Postgres& pg, const std::string& table, bool json_text, int threads, int64_t rows,
                        int64_t per_tx, uint32_t stream_base) {
  std::vector<std::thread> workers;
  std::vector<Status> errors(static_cast<size_t>(threads));
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::vector<std::vector<Event>>> work(static_cast<size_t>(threads));
  // Generate first (all threads' events), so COPY timing holds only COPY.
  for (int t = 0; t < threads; ++t) {
    GeneratorOptions o;
    o.stream = stream_base + static_cast<uint32_t>(t);
    o.events_per_second = 100000;
    o.start_unix_nanos = 1'796'083'200'000'000'000LL + 3'600'000'000'000LL;  // 01:00 of one day
    Generator g(o);
    for (int64_t done = 0; done < rows / threads; done += per_tx) {
      auto b = Batch(g, static_cast<size_t>(std::min(per_tx, rows / threads - done)));
      AssignMissingIds(b);
      work[static_cast<size_t>(t)].push_back(std::move(b));
    }
  }
  {
    GOVERN_ASSIGN_OR_RETURN(auto conn, pg.Connect());
    if (table == "telemetry_events")
      GOVERN_RETURN_IF_ERROR(EnsurePartition(*conn, work[0][0][0].time_unix_nanos));
  }
  Clock::time_point t0;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto conn = pg.Connect();
      if (!conn.ok()) {
        errors[static_cast<size_t>(t)] = conn.status();
        ready.fetch_add(1);
        return;
      }
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      for (const auto& batch : work[static_cast<size_t>(t)]) {
        Status s = (*conn)->Exec("BEGIN").status();
        auto copy =
            (*conn)->CopyFrom("COPY " + table + " (" + kEventColumns + ") FROM STDIN (FORMAT binary)");
        if (!copy.ok()) s = copy.status();
        if (s.ok()) {
          const int64_t received = NowNanos();
          for (const Event& e : batch) CopyRow(*copy, e, received, json_text);
          s = copy->Finish().status();
        }
        if (s.ok()) s = (*conn)->Exec("COMMIT").status();
        if (!s.ok()) {
          errors[static_cast<size_t>(t)] = s;
          return;
        }
      }
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  t0 = Clock::now();
  go = true;
  for (auto& w : workers) w.join();
  const double wall = Seconds(Clock::now() - t0);
  for (const Status& s : errors) GOVERN_RETURN_IF_ERROR(s);
  return static_cast<double>(rows / threads * threads) / wall;
}

struct CopyFigures {
  double best_rows_per_s = 0;
};

// The variants beside the real table show where the time goes: jsonb instead of json attribute
// columns (what the schema had first), and json without the (org, type, time_ns) index. Plain tables,
// same columns.
constexpr const char* kVariantsSql = R"sql(
CREATE TABLE bench_events_jsonb (LIKE telemetry_events);
ALTER TABLE bench_events_jsonb ALTER COLUMN attributes TYPE jsonb USING attributes::jsonb,
  ALTER COLUMN resource_attributes TYPE jsonb USING resource_attributes::jsonb,
  ADD PRIMARY KEY (org, time_ns, id);
CREATE INDEX ON bench_events_jsonb (org, type, time_ns);
CREATE TABLE bench_events_pk_only (LIKE telemetry_events);
ALTER TABLE bench_events_pk_only ADD PRIMARY KEY (org, time_ns, id);
)sql";

CopyFigures PostgresCopy(const Config& cfg, Report& report, Postgres& pg) {
  CopyFigures f;
  const int64_t rows = cfg.quick ? 200000 : 1000000;
  {
    auto conn = pg.Connect();
    if (!conn.ok() || !(*conn)->ExecScript(kVariantsSql).ok()) {
      std::fprintf(stderr, "copy: cannot create the variant tables\n");
      return f;
    }
  }
  struct Case {
    std::string metric, table;
    bool json_text;
    int threads;
    std::string what;
  };
  const std::vector<Case> cases = {
      {"pg_copy_rows_per_s_1conn", "telemetry_events", true, 1, "telemetry_events (PK + type index, json)"},
      {"pg_copy_rows_per_s_2conn", "telemetry_events", true, 2, "telemetry_events (PK + type index, json)"},
      {"pg_copy_rows_per_s_2conn_jsonb", "bench_events_jsonb", false, 2,
       "same with jsonb, not json, attributes"},
      {"pg_copy_rows_per_s_2conn_pk_only", "bench_events_pk_only", true, 2, "same without the type index"},
  };
  uint32_t stream = 100;
  for (const Case& c : cases) {
    auto rate = CopyRows(pg, c.table, c.json_text, c.threads, rows, 5000, stream);
    stream += 10;
    if (!rate.ok()) {
      std::fprintf(stderr, "copy %s: %s\n", c.metric.c_str(), rate.status().message().c_str());
      continue;
    }
    // Every row must be there: count the ones this case stored (its streams' request ids).
    auto conn = pg.Connect();
    if (!conn.ok()) continue;
    auto counted = (*conn)->Exec("SELECT count(*) FROM " + c.table + " WHERE received_ns > 0");
    const int64_t want = rows / c.threads * c.threads;
    if (!counted.ok() || !counted->Int64(0, 0).ok()) continue;
    int64_t n = *counted->Int64(0, 0);
    if (c.table == "telemetry_events") n -= c.threads == 2 ? rows : 0;  // the 1-connection case came first
    if (n != want) {
      std::fprintf(stderr, "copy %s: %lld rows counted, %lld sent\n", c.metric.c_str(),
                   static_cast<long long>(n), static_cast<long long>(want));
      continue;
    }
    if (c.table == "telemetry_events") f.best_rows_per_s = std::max(f.best_rows_per_s, *rate);
    char note[240];
    std::snprintf(note, sizeof note,
                  "raw limit: binary COPY into %s, %lld rows counted, 5000 per tx, fsync on", c.what.c_str(),
                  static_cast<long long>(want));
    report.Add(Row{c.metric, *rate, "rows/s", {}, "higher", "", {}, note});
  }
  return f;
}

// --- compaction stand-in -----------------------------------------------------------------------------

parquet::Schema ArchiveSchema() {
  using parquet::Type;
  return {{"org", Type::kString},
          {"time_ns", Type::kInt64},
          {"id", Type::kString},
          {"observed_ns", Type::kInt64},
          {"received_ns", Type::kInt64},
          {"type", Type::kString},
          {"severity_text", Type::kString},
          {"severity_number", Type::kInt32},
          {"body_kind", Type::kInt32},
          {"body", Type::kString},
          {"attributes", Type::kString},
          {"resource_attributes", Type::kString},
          {"service_name", Type::kString},
          {"scope_name", Type::kString},
          {"scope_version", Type::kString},
          {"trace_id", Type::kString},
          {"span_id", Type::kString},
          {"flags", Type::kInt64},
          {"dropped_attributes", Type::kInt64}};
}

void CompactionStandIn(const Config& cfg, Report& report, Postgres& pg) {
  auto conn = pg.Connect();
  if (!conn.ok()) return;
  const std::string path = cfg.dir + "/standin.parquet";
  const auto t0 = Clock::now();
  auto rows = (*conn)->Exec(std::string("SELECT ") + kEventColumns +
                            " FROM telemetry_events WHERE org = 'org_acme' ORDER BY org, time_ns, id");
  if (!rows.ok()) {
    std::fprintf(stderr, "compaction: %s\n", rows.status().message().c_str());
    return;
  }
  auto writer = parquet::Writer::Open(path, ArchiveSchema());
  if (!writer.ok()) return;
  const parquet::Schema schema = ArchiveSchema();
  std::vector<int64_t> ints(schema.size());
  std::vector<parquet::Value> values(schema.size());
  uint64_t raw = 0;
  for (int r = 0; r < rows->size(); ++r) {
    for (size_t c = 0; c < schema.size(); ++c) {
      std::string_view text = rows->Text(r, static_cast<int>(c));
      switch (schema[c].type) {
        case parquet::Type::kString:
          values[c] = text;
          raw += text.size();
          break;
        case parquet::Type::kInt32:
          values[c] = static_cast<int32_t>(std::stol(std::string(text)));
          raw += 4;
          break;
        default:
          values[c] = static_cast<int64_t>(std::stoll(std::string(text)));
          raw += 8;
      }
    }
    if (!(*writer)->AppendRow(values).ok()) return;
  }
  auto summary = (*writer)->Close();
  const double wall = Seconds(Clock::now() - t0);
  std::filesystem::remove(path);
  if (!summary.ok()) return;
  char note[220];
  std::snprintf(
      note, sizeof note,
      "stand-in, not the compactor: SELECT one org (%d rows) + our Parquet writer, ZSTD, durable file",
      rows->size());
  report.Add(Row{"compaction_standin_rows_per_s",
                 rows->size() / wall,
                 "rows/s",
                 kCompactionTarget,
                 "higher",
                 "",
                 {},
                 note});
  report.Add(Row{"compaction_standin_size_ratio",
                 static_cast<double>(raw) / static_cast<double>(summary->file_bytes),
                 "x",
                 kCompactionRatioTarget,
                 "higher",
                 "",
                 {},
                 "value bytes (json text) / Parquet file bytes"});
}

// Adds the rows that were not run to the JSON the report wrote.
void AddNotRun(const std::string& results, const std::vector<NotRun>& not_run) {
  const std::string path = results + "/telemetry.json";
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return;
  j["not_run"] = nlohmann::json::array();
  for (const NotRun& n : not_run) {
    nlohmann::json row = {{"metric", n.metric}, {"reason", n.reason}};
    if (n.target) row["target"] = *n.target;
    j["not_run"].push_back(row);
  }
  std::ofstream(path) << j.dump(2) << "\n";
}

CopyFigures InProcess(const Config& cfg, Report& report, std::vector<NotRun>& not_run) {
  std::printf("telemetry: event sizes\n");
  Sizes(report);
  std::printf("telemetry: intake per core, in process (NDJSON, OTLP protobuf)\n");
  IntakePerCore(cfg, report, /*otlp=*/false);
  IntakePerCore(cfg, report, /*otlp=*/true);
  std::printf("telemetry: WAL records/s\n");
  WalRecords(cfg, report);

  std::printf("telemetry: PostgreSQL COPY (private cluster under %s/pg)\n", cfg.dir.c_str());
  Postgres pg;
  CopyFigures copy;
  if (Status s = pg.Start(cfg); !s.ok()) {
    std::fprintf(stderr, "postgres: %s\n", s.message().c_str());
    not_run.push_back({"pg_copy_rows_per_s", {}, "private PostgreSQL did not start: " + s.message()});
  } else {
    copy = PostgresCopy(cfg, report, pg);
    std::printf("telemetry: compaction stand-in\n");
    CompactionStandIn(cfg, report, pg);
  }
  pg.Stop();

  return copy;
}

int Main(int argc, char** argv) {
  Config cfg;
  bench::Args args = bench::ParseArgs(argc, argv);
  cfg.quick = args.quick;
  cfg.results = args.results_dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc)
      cfg.dir = argv[++i];
    else if (a == "--govern" && i + 1 < argc)
      cfg.govern = argv[++i];
    else if (a == "--loadgen" && i + 1 < argc)
      cfg.loadgen = argv[++i];
    else if (a == "--service-only")
      cfg.service_only = true;
    else if (a == "--sustained-rate" && i + 1 < argc)
      cfg.sustained_rate = std::stod(argv[++i]);
    else if (a == "--sustained-only")
      cfg.sustained_only = true;
  }
  if (cfg.dir.empty()) {
    std::fprintf(stderr,
                 "usage: telemetry_bench --dir DIR [--quick] [--results DIR] [--govern PATH] "
                 "[--loadgen PATH] [--service-only] [--sustained-rate EVENTS_PER_S] [--sustained-only]\n");
    return 2;
  }
  std::filesystem::create_directories(cfg.dir);
  log::Configure(log::Level::kWarn, log::Format::kText, 2);
  Report report("telemetry", cfg.quick);
  std::vector<NotRun> not_run;

  CopyFigures copy;
  if (!cfg.service_only) copy = InProcess(cfg, report, not_run);

  ServiceOptions so;
  so.quick = cfg.quick;
  so.dir = cfg.dir + "/service";
  so.govern = cfg.govern;
  so.loadgen = cfg.loadgen;
  so.copy_rows_per_s = copy.best_rows_per_s;
  so.sustained_rate = cfg.sustained_rate;
  so.sustained_only = cfg.sustained_only;
  RunServicePhase(so, report, not_run);

  const bool ok = report.Finish(cfg.results);
  if (!not_run.empty()) {
    std::printf("\nnot run:\n");
    for (const NotRun& n : not_run) {
      char target[32] = "-";
      if (n.target) std::snprintf(target, sizeof target, "%.6g", *n.target);
      std::printf("%-44s %14s  not run: %s\n", n.metric.c_str(), target, n.reason.c_str());
    }
    AddNotRun(cfg.results, not_run);
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace govern::telemetry::benchtool

int main(int argc, char** argv) { return govern::telemetry::benchtool::Main(argc, argv); }
