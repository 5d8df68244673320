// The `policy` benchmark suite: Cedar decisions on the benchmark organisation (bench/policy/org: 3
// guardrails, 12 agent policies, a few hundred entities, 2,000 mixed requests), one thread, on the core
// the run script pins the process to. Rows (BENCHMARKS.md, policy):
//   - evaluation alone: what an embedding agent pays per decision without a log: govern_policy_decide
//     through the C ABI (the request built from its parts, the context JSON read by RequestBuilder's
//     fast path, then Decider), beside the C++ paths (RequestBuilder + Decider; the older
//     Request::Make + Authorize; Authorize on a prebuilt request);
//   - the same with limits on (a rate and a budget that never run out, so the decisions stay the
//     reference's), without and with a decision log;
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
#include "policy/limits.h"
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

// One step of a typed request (govern_policy_request_*), made beforehand from the context JSON.
struct Op {
  enum Kind { kString, kLong, kBool, kRecord, kSet, kEnd } kind;
  std::string key, str;
  int64_t n = 0;
};

void ToOps(const nlohmann::json& object, bool in_set, std::vector<Op>* ops) {
  auto add = [&](const std::string& key, const nlohmann::json& v) {
    if (v.is_string()) {
      ops->push_back({Op::kString, key, v.get<std::string>(), 0});
    } else if (v.is_boolean()) {
      ops->push_back({Op::kBool, key, "", v.get<bool>() ? 1 : 0});
    } else if (v.is_number_integer()) {
      ops->push_back({Op::kLong, key, "", v.get<int64_t>()});
    } else if (v.is_object() || v.is_array()) {
      ops->push_back({v.is_object() ? Op::kRecord : Op::kSet, key, "", 0});
      ToOps(v, v.is_array(), ops);
      ops->push_back({Op::kEnd, "", "", 0});
    } else {
      std::fprintf(stderr, "policy bench: a context value the typed path does not take\n");
      std::exit(1);
    }
  };
  if (in_set) {
    for (const auto& v : object) add("", v);
  } else {
    for (const auto& [k, v] : object.items()) add(k, v);
  }
}

struct Req {
  std::string pt, pid, at, aid, rt, rid, context;
  std::string expect;  // "allow" / "deny"
  bool guardrail = false;
  bool plain = false;   // the context has no __extn / __entity escapes
  std::vector<Op> ops;  // the context as typed calls (plain ones)
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

int DecideTyped(govern_policy_engine* e, govern_policy_result* r, const Req& q) {
  govern_policy_request_begin(r, q.pt.c_str(), q.pid.c_str(), q.at.c_str(), q.aid.c_str(), q.rt.c_str(),
                              q.rid.c_str());
  for (const Op& o : q.ops) {
    switch (o.kind) {
      case Op::kString:
        govern_policy_request_string(r, o.key.c_str(), o.str.c_str());
        break;
      case Op::kLong:
        govern_policy_request_long(r, o.key.c_str(), o.n);
        break;
      case Op::kBool:
        govern_policy_request_bool(r, o.key.c_str(), static_cast<int>(o.n));
        break;
      case Op::kRecord:
        govern_policy_request_begin_record(r, o.key.c_str());
        break;
      case Op::kSet:
        govern_policy_request_begin_set(r, o.key.c_str());
        break;
      case Op::kEnd:
        govern_policy_request_end(r);
        break;
    }
  }
  return govern_policy_decide_request(e, r);
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
            j["expect"]["decision"],
            false,
            {}};
      // The typed calls have no extension values or entity escapes: such contexts stay JSON-only.
      q.plain = q.context.find("\"__") == std::string::npos;
      if (q.plain) ToOps(j.value("context", nlohmann::json::object()), false, &q.ops);
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
  std::vector<size_t> plain;
  for (size_t k = 0; k < reqs.size(); ++k) {  // the typed path decides alike
    const Req& q = reqs[k];
    if (!q.plain) continue;
    plain.push_back(k);
    if (DecideTyped(engine, res, q) != GOVERN_POLICY_OK) Die("decide typed", nullptr);
    if (govern_policy_decision_name(govern_policy_result_decision(res)) != q.expect) ++wrong;
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

  // Evaluation alone, as an embedding agent pays it: govern_policy_decide without a log (uids and
  // context JSON in, decision out).
  uint64_t sink = 0;
  auto evaluate = [&](size_t i) {
    Decide(engine, res, reqs[i % nr]);
    sink += static_cast<uint64_t>(govern_policy_result_decision(res));
  };
  Run(n_eval / 10, evaluate);  // warm-up
  Timing eval = Run(n_eval, evaluate);
  // The typed C path: the context given member by member (govern_policy_request_*), no JSON.
  // On the requests whose context is plain (no ip/decimal/entity escapes), beside the JSON call on the
  // same requests.
  Timing typed = Run(n_eval, [&](size_t i) {
    DecideTyped(engine, res, reqs[plain[i % plain.size()]]);
    sink += static_cast<uint64_t>(govern_policy_result_decision(res));
  });
  Timing json_plain = Run(n_eval, [&](size_t i) {
    Decide(engine, res, reqs[plain[i % plain.size()]]);
    sink += static_cast<uint64_t>(govern_policy_result_decision(res));
  });
  // The C++ API: RequestBuilder (ContextJson) + Decider, and the older Request::Make + Authorize.
  policy::Outcome out;
  policy::Decider decider(*ps, *es, policy::Limits());
  policy::RequestBuilder builder;
  Timing builder_decide = Run(n_eval, [&](size_t i) {
    size_t k = i % nr;
    const Req& q = reqs[k];
    builder.Reset().Principal(q.pt, q.pid).Action(q.at, q.aid).Resource(q.rt, q.rid);
    if (!builder.ContextJson(q.context).ok()) std::abort();
    decider.Decide(builder, &out);
    sink += static_cast<uint64_t>(out.decision);
  });
  Timing make_authorize = Run(n_eval, [&](size_t i) {
    size_t k = i % nr;
    auto r = policy::Request::Make(refs[3 * k], refs[3 * k + 1], refs[3 * k + 2], reqs[k].context);
    policy::Authorize(*ps, *es, *r, &out);
    sink += static_cast<uint64_t>(out.decision);
  });
  // Authorize alone on prebuilt requests (what the engine costs once the request is built).
  std::vector<policy::Request> built;
  for (size_t k = 0; k < nr; ++k)
    built.push_back(*policy::Request::Make(refs[3 * k], refs[3 * k + 1], refs[3 * k + 2], reqs[k].context));
  Timing authorize = Run(n_eval, [&](size_t i) {
    policy::Authorize(*ps, *es, built[i % nr], &out);
    sink += static_cast<uint64_t>(out.decision);
  });

  // Limits on: a rate on every tool call and a budget on messages' cost_cents, both too large to run
  // out (each principal gets its counters; every allowed call takes from them), so every decision stays
  // the reference's.
  const std::string limits = R"([
 {"id": "tool-rate", "action": "Action::\"call_tool\"", "rate": {"requests": 1000000000, "per": "1s"}},
 {"id": "message-budget", "action": "Action::\"send_message\"",
  "budget": {"amount_from": "context.cost_cents", "limit": 1000000000000000, "per": "24h"}}
])";
  auto limited_engine = [&]() {
    govern_policy_engine* e = nullptr;
    char* error = nullptr;
    if (govern_policy_engine_from_text_with_limits(policies.c_str(), entities.c_str(), limits.c_str(), &e,
                                                   &error) != GOVERN_POLICY_OK) {
      Die("engine with limits", error);
    }
    return e;
  };
  govern_policy_engine* with_limits = limited_engine();
  size_t limit_wrong = 0;
  for (const Req& q : reqs) {
    if (Decide(with_limits, res, q) != GOVERN_POLICY_OK) Die("decide with limits", nullptr);
    if (govern_policy_decision_name(govern_policy_result_decision(res)) != q.expect) ++limit_wrong;
  }
  if (limit_wrong) {
    std::fprintf(stderr, "policy bench: with limits, %zu decisions differ\n", limit_wrong);
    return 1;
  }
  Timing limits_eval = Run(n_eval, [&](size_t i) { Decide(with_limits, res, reqs[i % nr]); });
  uint64_t limit_counters = govern_policy_engine_stat(with_limits, GOVERN_POLICY_STAT_LIMIT_COUNTERS);
  govern_policy_engine_free(with_limits);

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

  // Limits on and recorded (buffered).
  fs::remove_all(data_dir + "/limits");
  govern_policy_engine* limited_logged = limited_engine();
  if (govern_policy_engine_open_log(limited_logged, (data_dir + "/limits").c_str(),
                                    GOVERN_POLICY_LOG_BUFFERED, GOVERN_POLICY_CONTEXT_HASH, "acme",
                                    &err) != GOVERN_POLICY_OK) {
    Die("open_log", err);
  }
  Run(n_buffered / 10, decide_on(limited_logged));
  int64_t lc0 = Now(CLOCK_PROCESS_CPUTIME_ID), lw0 = Now();
  for (size_t i = 0; i < n_buffered; ++i) decide_on(limited_logged)(i);
  if (govern_policy_engine_flush_log(limited_logged, &err) != GOVERN_POLICY_OK) Die("flush", err);
  Timing rec_limits{static_cast<double>(Now(CLOCK_PROCESS_CPUTIME_ID) - lc0) / 1e9,
                    static_cast<double>(Now() - lw0) / 1e9, n_buffered};
  govern_policy_engine_free(limited_logged);
  fs::remove_all(data_dir + "/limits");

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
                 ref_slice_median, "govern_policy_decide, no log: uids + context JSON -> decision (C ABI)"});
  report.Add(Row{"evaluation_per_s_per_core", eval.PerS(), "decisions/s", kTargetEvalPerS, "higher",
                 ref_slice, ref_slice_per_s, "the reference's figure is calls per wall second"});
  report.Add(Row{"evaluation_latency_median_us", us(lat_eval.Percentile(50)), "us", std::nullopt, "lower", "",
                 std::nullopt, ""});
  report.Add(Row{"evaluation_latency_p99_us", us(lat_eval.Percentile(99)), "us", std::nullopt, "lower", "",
                 std::nullopt, ""});
  report.Add(Row{"authorize_prebuilt_request_us", authorize.UsPerOp(), "us", std::nullopt, "lower", "",
                 std::nullopt, "Authorize alone, request built beforehand"});
  std::snprintf(note, sizeof note,
                "govern_policy_request_* + decide_request, no log; the %zu requests without escapes",
                plain.size());
  report.Add(
      Row{"typed_request_decide_us", typed.UsPerOp(), "us", std::nullopt, "lower", "", std::nullopt, note});
  report.Add(Row{"json_context_decide_same_us", json_plain.UsPerOp(), "us", std::nullopt, "lower", "",
                 std::nullopt, "govern_policy_decide (context JSON) on those same requests"});
  report.Add(Row{"builder_decide_us", builder_decide.UsPerOp(), "us", std::nullopt, "lower", "", std::nullopt,
                 "C++: RequestBuilder (ContextJson) + Decider::Decide"});
  report.Add(Row{"request_make_authorize_us", make_authorize.UsPerOp(), "us", std::nullopt, "lower", "",
                 std::nullopt, "C++: Request::Make (context JSON parsed) + Authorize"});
  std::snprintf(note, sizeof note, "rate on call_tool + budget on send_message; %" PRIu64 " counters",
                limit_counters);
  report.Add(Row{"evaluation_with_limits_us", limits_eval.UsPerOp(), "us", std::nullopt, "lower", "",
                 std::nullopt, note});
  report.Add(Row{"decision_recorded_with_limits_us", rec_limits.UsPerOp(), "us", std::nullopt, "lower", "",
                 std::nullopt, "the same, buffered DecisionLog, context hashed"});
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
