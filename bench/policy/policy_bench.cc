// The `policy` benchmark suite: Cedar decisions on the benchmark organisation (bench/policy/org: 3
// guardrails, 12 agent policies, a few hundred entities, 2,000 mixed requests), one thread, on the core
// the run script pins the process to. Rows (BENCHMARKS.md, policy):
//   - evaluation alone: Request::Make (uids + context JSON) and Authorize, the C++ API;
//   - decision including recording it: govern_policy_decide through the C ABI (libgovern_policy.so)
//     with a decision log open in a real directory, buffered mode (the default), and durable mode;
//   - latency median / p99 of single decisions, each timed with clock_gettime(CLOCK_MONOTONIC), the
//     clock's own cost (measured, printed) subtracted.
// Per-core figures divide by the process's CPU time (every thread, so the decision log's sync thread
// is counted), not by wall time: the machine is shared and another process may take the core for a while.
// The Cedar reference's figures (cedar_reference.mjs, same policies and requests, run just before by
// the run script) come in as --reference FILE and stand beside Govern's as the peer.
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "govern_policy.h"
#include "policy/cedar.h"
#include "report.h"

namespace {

using govern::bench::LatencyRecorder;
using govern::bench::Report;
using govern::bench::Row;
namespace policy = govern::policy;
namespace fs = std::filesystem;

// BENCHMARKS.md, policy (one core, 3 guardrails and 12 agent policies).
constexpr double kTargetDecisionUs = 10.2, kTargetDecisionsPerS = 97800;
constexpr double kTargetMedianUs = 5.7, kTargetP99Us = 35;
constexpr double kTargetEvalUs = 2.05, kTargetEvalPerS = 487000;

struct Req {
  std::string pt, pid, at, aid, rt, rid, context;
  std::string expect;  // "allow" / "deny"
  bool guardrail = false;
};

int64_t Now(clockid_t c = CLOCK_MONOTONIC) {
  timespec ts;
  clock_gettime(c, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "policy bench: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The median cost of one clock_gettime(CLOCK_MONOTONIC) as seen between two reads.
int64_t ClockCost() {
  std::vector<int64_t> d(200000);
  for (auto& x : d) {
    int64_t a = Now();
    x = Now() - a;
  }
  std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
  return d[d.size() / 2];
}

struct Timing {
  double cpu_s = 0, wall_s = 0;
  size_t n = 0;
  double UsPerOp() const { return cpu_s * 1e6 / static_cast<double>(n); }
  double PerS() const { return static_cast<double>(n) / cpu_s; }
};

template <typename F>
Timing Run(size_t n, F&& f) {
  int64_t c0 = Now(CLOCK_PROCESS_CPUTIME_ID), w0 = Now();
  for (size_t i = 0; i < n; ++i) f(i);
  return Timing{static_cast<double>(Now(CLOCK_PROCESS_CPUTIME_ID) - c0) / 1e9,
                static_cast<double>(Now() - w0) / 1e9, n};
}

template <typename F>
void Latencies(size_t n, int64_t clock_cost, LatencyRecorder* rec, F&& f) {
  for (size_t i = 0; i < n; ++i) {
    int64_t a = Now();
    f(i);
    rec->Record(std::max<int64_t>(0, Now() - a - clock_cost));
  }
}

int Decide(govern_policy_engine* e, govern_policy_result* r, const Req& q) {
  return govern_policy_decide(e, r, q.pt.c_str(), q.pid.c_str(), q.at.c_str(), q.aid.c_str(), q.rt.c_str(),
                              q.rid.c_str(), q.context.c_str());
}

void Die(const char* what, char* err) {
  std::fprintf(stderr, "policy bench: %s: %s\n", what, err ? err : "");
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::string org_dir = "bench/policy/org", data_dir = "/tmp/govern-policy-bench", results = "bench/results",
              reference_path;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "policy bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--quick")
      quick = true;
    else if (a == "--org")
      org_dir = next();
    else if (a == "--dir")
      data_dir = next();
    else if (a == "--results")
      results = next();
    else if (a == "--reference")
      reference_path = next();
    else {
      std::fprintf(
          stderr,
          "usage: policy_bench [--quick] [--org DIR] [--dir DATA] [--results DIR] [--reference FILE]\n");
      return 2;
    }
  }

  const std::string policies = ReadFile(org_dir + "/policies.cedar");
  const std::string entities = ReadFile(org_dir + "/entities.json");
  std::vector<Req> reqs;
  {
    std::istringstream lines(ReadFile(org_dir + "/requests.ndjson"));
    std::string line;
    while (std::getline(lines, line)) {
      if (line.empty()) continue;
      auto j = nlohmann::json::parse(line);
      Req q{j["principal"]["type"],
            j["principal"]["id"],
            j["action"]["type"],
            j["action"]["id"],
            j["resource"]["type"],
            j["resource"]["id"],
            j.value("context", nlohmann::json::object()).dump(),
            j["expect"]["decision"]};
      for (const auto& p : j["expect"]["reason"]) {
        // The guardrails are the first three policies of org/policies.cedar.
        if (p == "policy0" || p == "policy1" || p == "policy2") q.guardrail = true;
      }
      reqs.push_back(std::move(q));
    }
  }
  const size_t n_eval = quick ? 200000 : 2000000;
  const size_t n_buffered = quick ? 100000 : 1000000;
  const size_t n_latency = quick ? 100000 : 500000;
  const size_t n_durable = quick ? 300 : 2000;

  // The C++ API, for evaluation alone.
  auto ps = policy::PolicySet::Parse(policies);
  auto es = policy::Entities::FromJson(entities);
  if (!ps.ok() || !es.ok()) {
    std::fprintf(stderr, "policy bench: org does not load\n");
    return 1;
  }
  std::vector<policy::EntityRef> refs;
  for (const Req& q : reqs) {
    refs.push_back({q.pt, q.pid});
    refs.push_back({q.at, q.aid});
    refs.push_back({q.rt, q.rid});
  }

  // The C ABI engine; every request's decision is checked against the reference's before timing.
  govern_policy_engine* engine = nullptr;
  char* err = nullptr;
  if (govern_policy_engine_from_text(policies.c_str(), entities.c_str(), &engine, &err) != GOVERN_POLICY_OK) {
    Die("engine", err);
  }
  govern_policy_result* res = govern_policy_result_new();
  size_t allowed = 0, guardrail = 0, by_default = 0, wrong = 0;
  for (const Req& q : reqs) {
    if (Decide(engine, res, q) != GOVERN_POLICY_OK) Die("decide", nullptr);
    std::string got = govern_policy_decision_name(govern_policy_result_decision(res));
    if (got != q.expect) ++wrong;
    if (got == "allow")
      ++allowed;
    else if (q.guardrail)
      ++guardrail;
    else
      ++by_default;
  }
  if (wrong) {
    std::fprintf(stderr, "policy bench: %zu of %zu decisions differ from org/requests.ndjson\n", wrong,
                 reqs.size());
    return 1;
  }
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  std::string pinned;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &cpus)) pinned += (pinned.empty() ? "" : ",") + std::to_string(c);
  }
  const int64_t clock_cost = ClockCost();
  std::printf(
      "policy bench: %zu policies, %zu entities, %zu requests (%zu allowed, %zu denied by a guardrail, "
      "%zu denied by default), all as the reference decides; cpus %s; clock_gettime costs %" PRId64
      " ns (subtracted from each latency)\n",
      ps->size(), es->size(), reqs.size(), allowed, guardrail, by_default, pinned.c_str(), clock_cost);

  const size_t nr = reqs.size();
  Report report("policy", quick);

  // Evaluation alone: Request::Make + Authorize, one reused Outcome.
  policy::Outcome out;
  uint64_t sink = 0;
  auto evaluate = [&](size_t i) {
    size_t k = i % nr;
    auto r = policy::Request::Make(refs[3 * k], refs[3 * k + 1], refs[3 * k + 2], reqs[k].context);
    policy::Authorize(*ps, *es, *r, &out);
    sink += static_cast<uint64_t>(out.decision);
  };
  Run(n_eval / 10, evaluate);  // warm-up
  Timing eval = Run(n_eval, evaluate);
  // Authorize alone on prebuilt requests (what the engine costs once the request is built).
  std::vector<policy::Request> built;
  for (size_t k = 0; k < nr; ++k)
    built.push_back(*policy::Request::Make(refs[3 * k], refs[3 * k + 1], refs[3 * k + 2], reqs[k].context));
  Timing authorize = Run(n_eval, [&](size_t i) {
    policy::Authorize(*ps, *es, built[i % nr], &out);
    sink += static_cast<uint64_t>(out.decision);
  });
  // The C ABI without a log: what the boundary adds.
  Timing capi = Run(n_eval, [&](size_t i) { Decide(engine, res, reqs[i % nr]); });

  // Reference figures.
  std::optional<double> ref_slice_per_s, ref_slice_median, ref_slice_p99, ref_full_per_s;
  std::string ref_name = "cedar-wasm (node)";
  if (!reference_path.empty() && fs::exists(reference_path)) {
    auto j = nlohmann::json::parse(ReadFile(reference_path));
    ref_name = j.value("engine", ref_name) + " in node " + j.value("node", "");
    for (const auto& r : j["results"]) {
      if (r["mode"] == "slice") {
        ref_slice_per_s = r["decisions_per_s"].get<double>();
        ref_slice_median = r["median_us"].get<double>();
        ref_slice_p99 = r["p99_us"].get<double>();
      } else if (r["mode"] == "full") {
        ref_full_per_s = r["decisions_per_s"].get<double>();
      }
    }
  }
  const std::string ref_slice = ref_name + ", request's entity slice";

  // Decisions recorded to a decision log: buffered (the default) and durable.
  auto open_logged = [&](int mode, const std::string& dir) {
    fs::remove_all(dir);
    govern_policy_engine* e = nullptr;
    char* error = nullptr;
    if (govern_policy_engine_from_text(policies.c_str(), entities.c_str(), &e, &error) != GOVERN_POLICY_OK) {
      Die("engine", error);
    }
    if (govern_policy_engine_open_log(e, dir.c_str(), mode, GOVERN_POLICY_CONTEXT_HASH, "acme", &error) !=
        GOVERN_POLICY_OK) {
      Die("open_log", error);
    }
    return e;
  };
  size_t failures = 0;
  auto decide_on = [&](govern_policy_engine* e) {
    return [&, e](size_t i) {
      if (Decide(e, res, reqs[i % nr]) != GOVERN_POLICY_OK) ++failures;
    };
  };

  govern_policy_engine* buffered = open_logged(GOVERN_POLICY_LOG_BUFFERED, data_dir + "/buffered");
  Run(n_buffered / 10, decide_on(buffered));  // warm-up (and the WAL's first segment)
  int64_t c0 = Now(CLOCK_PROCESS_CPUTIME_ID), w0 = Now();
  for (size_t i = 0; i < n_buffered; ++i) decide_on(buffered)(i);
  if (govern_policy_engine_flush_log(buffered, &err) != GOVERN_POLICY_OK) Die("flush", err);
  Timing rec_buf{static_cast<double>(Now(CLOCK_PROCESS_CPUTIME_ID) - c0) / 1e9,
                 static_cast<double>(Now() - w0) / 1e9, n_buffered};
  LatencyRecorder lat_buf;
  Latencies(n_latency, clock_cost, &lat_buf, decide_on(buffered));
  if (govern_policy_engine_flush_log(buffered, &err) != GOVERN_POLICY_OK) Die("flush", err);
  uint64_t recorded = govern_policy_engine_stat(buffered, GOVERN_POLICY_STAT_LOG_RECORDED);
  govern_policy_engine_free(buffered);

  LatencyRecorder lat_eval;
  Latencies(n_latency, clock_cost, &lat_eval, evaluate);

  govern_policy_engine* durable = open_logged(GOVERN_POLICY_LOG_DURABLE, data_dir + "/durable");
  Run(20, decide_on(durable));
  LatencyRecorder lat_dur;
  int64_t dc0 = Now(CLOCK_PROCESS_CPUTIME_ID), dw0 = Now();
  Latencies(n_durable, clock_cost, &lat_dur, decide_on(durable));
  Timing rec_dur{static_cast<double>(Now(CLOCK_PROCESS_CPUTIME_ID) - dc0) / 1e9,
                 static_cast<double>(Now() - dw0) / 1e9, n_durable};
  govern_policy_engine_free(durable);
  fs::remove_all(data_dir + "/buffered");
  fs::remove_all(data_dir + "/durable");
  if (failures) {
    std::fprintf(stderr, "policy bench: %zu decisions failed to record\n", failures);
    return 1;
  }

  auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  char note[256];
  std::snprintf(note, sizeof note,
                "C ABI + DecisionLog buffered, context hashed; CPU of every thread; wall %.3g us; %" PRIu64
                " recorded",
                rec_buf.wall_s * 1e6 / static_cast<double>(rec_buf.n), recorded);
  // The reference's per-decision peer is its median (wall clock): its mean is dominated by the pauses of
  // a shared machine, which Govern's CPU-time figures do not see.
  report.Add(Row{"decision_recorded_us", rec_buf.UsPerOp(), "us", kTargetDecisionUs, "lower",
                 ref_slice + " (median)", ref_slice_median, note});
  report.Add(Row{"decision_recorded_per_s_per_core", rec_buf.PerS(), "decisions/s", kTargetDecisionsPerS,
                 "higher", ref_slice, ref_slice_per_s,
                 "buffered; the reference's figure is calls per wall second"});
  report.Add(Row{"decision_recorded_latency_median_us", us(lat_buf.Percentile(50)), "us", kTargetMedianUs,
                 "lower", ref_slice, ref_slice_median, "each call timed, clock cost subtracted"});
  report.Add(Row{"decision_recorded_latency_p99_us", us(lat_buf.Percentile(99)), "us", kTargetP99Us, "lower",
                 ref_slice, ref_slice_p99, ""});
  report.Add(Row{"evaluation_us", eval.UsPerOp(), "us", kTargetEvalUs, "lower", ref_slice + " (median)",
                 ref_slice_median, "Request::Make (context JSON parsed) + Authorize, C++ API"});
  report.Add(Row{"evaluation_per_s_per_core", eval.PerS(), "decisions/s", kTargetEvalPerS, "higher",
                 ref_slice, ref_slice_per_s, "the reference's figure is calls per wall second"});
  report.Add(Row{"evaluation_latency_median_us", us(lat_eval.Percentile(50)), "us", std::nullopt, "lower", "",
                 std::nullopt, ""});
  report.Add(Row{"evaluation_latency_p99_us", us(lat_eval.Percentile(99)), "us", std::nullopt, "lower", "",
                 std::nullopt, ""});
  report.Add(Row{"authorize_prebuilt_request_us", authorize.UsPerOp(), "us", std::nullopt, "lower", "",
                 std::nullopt, "Authorize alone, request built beforehand"});
  report.Add(Row{"capi_decide_no_log_us", capi.UsPerOp(), "us", std::nullopt, "lower", "", std::nullopt,
                 "govern_policy_decide through libgovern_policy.so, no log"});
  std::snprintf(note, sizeof note,
                "one caller, each decide waits for its fdatasync; CPU %.3g us per decision",
                rec_dur.UsPerOp());
  report.Add(Row{"decision_durable_per_s", static_cast<double>(rec_dur.n) / rec_dur.wall_s, "decisions/s",
                 std::nullopt, "higher", "", std::nullopt, note});
  report.Add(Row{"decision_durable_latency_median_us", us(lat_dur.Percentile(50)), "us", std::nullopt,
                 "lower", "", std::nullopt, ""});
  report.Add(Row{"decision_durable_latency_p99_us", us(lat_dur.Percentile(99)), "us", std::nullopt, "lower",
                 "", std::nullopt, ""});
  if (ref_full_per_s) {
    report.Add(Row{"reference_full_entities_us", 1e6 / *ref_full_per_s, "us", std::nullopt, "lower", ref_name,
                   std::nullopt, "cedar-wasm given all entities per call (it keeps no entity store)"});
  }
  report.Add(Row{"clock_gettime_cost_ns", static_cast<double>(clock_cost), "ns", std::nullopt, "lower", "",
                 std::nullopt, "subtracted from every latency sample"});
  govern_policy_result_free(res);
  govern_policy_engine_free(engine);
  if (sink == 42) std::printf(" ");
  return report.Finish(results) ? 0 : 1;
}
