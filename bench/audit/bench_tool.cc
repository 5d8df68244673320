// audit_bench_tool: the in-process parts of the audit benchmark, and its report.
//
//   audit_bench_tool measure --pg CONNINFO --entries 100000 --dir DIR     -> DIR/measure.json
//     Appends `entries` entries to organisation "benchsearch" (through the Batcher, as the service
//     does), spread over the last two hours, with a checkpoint; then times the three searches (newest
//     100, one action, the last hour; median of 200 runs each, EXPLAIN checked for an index), exports the
//     chain to DIR/export.ndjson and verifies it offline with the core Verifier (entries/s, best of 3).
//   audit_bench_tool report --dir DIR --results RESULTS_DIR [--quick]
//     Reads DIR/row_<orgs>_<writers>.json (audit_loadgen summaries), DIR/measure.json and
//     DIR/pgbench.json and prints the table / writes RESULTS_DIR/audit.json.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "audit/checkpoint.h"
#include "audit/export.h"
#include "db/connection.h"
#include "db/pool.h"
#include "report.h"
#include "services/audit/batcher.h"
#include "services/audit/files.h"
#include "services/audit/store.h"

namespace {

using json = nlohmann::json;
using Steady = std::chrono::steady_clock;
namespace as = govern::audit_service;

int Fail(const std::string& why) {
  std::fprintf(stderr, "audit_bench_tool: %s\n", why.c_str());
  return 1;
}

std::string Arg(int argc, char** argv, const std::string& name, const std::string& dflt = "") {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return argv[i + 1];
  }
  return dflt;
}
bool Flag(int argc, char** argv, const std::string& name) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i] == name) return true;
  }
  return false;
}

int Measure(int argc, char** argv) {
  using namespace govern;
  std::string pg = Arg(argc, argv, "--pg");
  std::string dir = Arg(argc, argv, "--dir");
  int64_t n = std::stoll(Arg(argc, argv, "--entries", "100000"));
  auto pool = db::Pool::Create({.conninfo = pg, .max_size = 8});
  if (!pool.ok()) return Fail(pool.status().message());
  const std::string org = "benchsearch";
  const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  {
    as::Batcher b(pool->get(), {.max_batch = 2000});
    constexpr int64_t kChunk = 1000;
    for (int64_t done = 0; done < n; done += kChunk) {
      std::vector<as::AppendInput> batch;
      for (int64_t i = done; i < std::min(n, done + kChunk); ++i) {
        as::AppendInput in;
        in.idempotency_key = "s" + std::to_string(i);
        in.actor = "user" + std::to_string(i % 500);
        in.action = i % 50 == 0 ? "policy.change" : (i % 3 == 0 ? "doc.delete" : "doc.read");
        in.target = "doc" + std::to_string(i);
        in.outcome = "success";
        in.details = "{\"n\":" + std::to_string(i) + "}";
        in.time_micros = now - int64_t{7200} * 1000000 + i * (int64_t{7200} * 1000000 / n);  // two hours
        batch.push_back(std::move(in));
      }
      auto r = b.AppendBlocking(org, std::move(batch));
      if (!r.ok()) return Fail("fill: " + r.status().message());
    }
  }
  auto lease = (*pool)->Checkout();
  if (!lease.ok()) return Fail(lease.status().message());
  db::Connection& c = **lease;
  (void)c.Exec("ANALYZE audit_entries");
  auto signer = as::CheckpointSigner::FromSeed(std::string(32, '\x42'));
  if (!signer.ok()) return Fail(signer.status().message());
  auto cp = as::MakeCheckpoint(c, org, *signer, now);
  if (!cp.ok()) return Fail(cp.status().message());

  json out;
  struct Search {
    const char* name;
    as::SearchQuery q;
  } searches[] = {
      {"newest_100", {.limit = 100}},
      {"one_action", {.action = "policy.change", .limit = 100}},
      {"last_hour", {.since_micros = now - int64_t{3600} * 1000000, .limit = 100}},
  };
  for (Search& s : searches) {
    govern::bench::LatencyRecorder rec;
    for (int i = 0; i < 200; ++i) {
      auto t0 = Steady::now();
      auto page = as::Search(c, org, s.q);
      rec.Record(std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now() - t0).count());
      if (!page.ok() || page->entries.size() != 100) return Fail(std::string("search ") + s.name + " failed");
    }
    out[std::string("search_") + s.name + "_median_ms"] = rec.Percentile(50) / 1e6;
  }
  const std::string path = dir + "/export.ndjson";
  {
    std::ofstream f(path);
    auto t0 = Steady::now();
    Status st = as::Export(c, org, [&](std::string_view line) {
      f << line << '\n';
      return OkStatus();
    });
    if (!st.ok()) return Fail("export: " + st.message());
    f.flush();
    out["export_entries_per_s"] =
        static_cast<double>(n) / std::chrono::duration<double>(Steady::now() - t0).count();
  }
  // The running replicas sign checkpoints of this organisation too (every audit.checkpoint_interval),
  // and the export carries them: their key (--replica-key, the text of checkpoint.pub) as well.
  std::vector<audit::VerifierKey> keys = signer->verifier_keys();
  if (std::string k = Arg(argc, argv, "--replica-key", ""); !k.empty()) {
    std::ifstream kf(k);
    std::string text((std::istreambuf_iterator<char>(kf)), std::istreambuf_iterator<char>());
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
      text.pop_back();
    auto vk = audit::ParseVerifierKey(text);
    if (!vk.ok()) return Fail("--replica-key: " + vk.status().message());
    keys.push_back(std::move(*vk));
  }
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    auto t0 = Steady::now();
    auto report = audit::VerifyExportFile(path, keys);
    double secs = std::chrono::duration<double>(Steady::now() - t0).count();
    if (!report.ok() || !report->ok() || report->entries_verified != static_cast<uint64_t>(n)) {
      return Fail("verify: " + (report.ok() ? report->reason : report.status().message()));
    }
    best = std::max(best, static_cast<double>(n) / secs);
  }
  out["verify_entries_per_s"] = best;
  out["entries"] = n;
  std::ofstream(dir + "/measure.json") << out.dump() << "\n";
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

json Load(const std::string& path) {
  std::ifstream f(path);
  if (!f) return json();
  return json::parse(f, nullptr, false);
}

int Report(int argc, char** argv) {
  std::string dir = Arg(argc, argv, "--dir");
  govern::bench::Report report("audit", Flag(argc, argv, "--quick"));
  json pgb = Load(dir + "/pgbench.json");
  double raw = pgb.is_object() ? pgb.value("tps", 0.0) : 0.0;
  struct Target {
    int orgs, writers;
    double eps, p99;
  } targets[] = {{1, 64, 12521, 11},     {1, 1024, 34949, 114}, {50, 64, 4775, 39},
                 {50, 1024, 26160, 111}, {500, 64, 2613, 80},   {500, 1024, 5915, 488}};
  for (const Target& t : targets) {
    std::string tag = std::to_string(t.orgs) + "_orgs_" + std::to_string(t.writers) + "_writers";
    json s = Load(dir + "/row_" + std::to_string(t.orgs) + "_" + std::to_string(t.writers) + ".json");
    if (!s.is_object()) {
      report.Add(
          {.metric = "append_entries_per_s_" + tag, .value = 0, .unit = "entries/s", .note = "not run"});
      continue;
    }
    report.Add({.metric = "append_entries_per_s_" + tag,
                .value = s.value("entries_per_s", 0.0),
                .unit = "entries/s",
                .target = t.eps,
                .peer = "pgbench single-row INSERT, 64 clients, flushed commits",
                .peer_value = raw,
                .note = "3 replicas; retries " + std::to_string(s.value("retries", 0))});
    report.Add({.metric = "append_p99_ms_" + tag,
                .value = s.value("p99_ms", 0.0),
                .unit = "ms",
                .target = t.p99,
                .better = "lower"});
  }
  json r64 = Load(dir + "/row_1_64.json");
  if (r64.is_object()) {
    report.Add({.metric = "read_after_ack_median_ms",
                .value = r64.value("read_after_ack_median_ms", 0.0),
                .unit = "ms",
                .target = 1.0,
                .better = "lower",
                .note = "GET of the acknowledged seq from another replica"});
  }
  json m = Load(dir + "/measure.json");
  if (m.is_object()) {
    report.Add(
        {.metric = "offline_verify_entries_per_s",
         .value = m.value("verify_entries_per_s", 0.0),
         .unit = "entries/s",
         .target = 98000,
         .note = "core Verifier over an export of " + std::to_string(m.value("entries", 0)) + " entries"});
    for (const char* s : {"newest_100", "one_action", "last_hour"}) {
      report.Add({.metric = std::string("search_") + s + "_median_ms",
                  .value = m.value(std::string("search_") + s + "_median_ms", 0.0),
                  .unit = "ms",
                  .target = 1.6,
                  .better = "lower",
                  .note = "100,000 entries in one organisation"});
    }
  }
  if (raw > 0) {
    report.Add({.metric = "pgbench_single_row_insert_tps_64_clients",
                .value = raw,
                .unit = "tx/s",
                .note = "the raw limit: one flushed commit per row"});
  }
  std::string results = Arg(argc, argv, "--results", dir);
  return report.Finish(results) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Fail("usage: audit_bench_tool measure|report ...");
  std::string mode = argv[1];
  if (mode == "measure") return Measure(argc, argv);
  if (mode == "report") return Report(argc, argv);
  return Fail("unknown mode " + mode);
}
