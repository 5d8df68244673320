// telemetry_query_benchmark: what a telemetry query costs, against a private PostgreSQL cluster.
// Prints a table; not a test (nothing is asserted).
//
//   build/release/src/services/telemetry/telemetry_query_benchmark [--rows N] [--runs N] [--keep DIR]
//
// Loads N (default 50,000) realistic agent/gateway events of ~550 bytes for one organisation, spread
// evenly over 24 hours (plus 10% for a second organisation), then measures:
//   - QueryRecent, first 100 rows of one hour, newest and oldest first, with a type filter, with an
//     attribute filter, and the second page (cursor): median and p99 over --runs queries;
//   - the whole GET /v1/query/events of 100 rows over HTTP (real socket, QueryApi, redaction, JSON);
//   - redaction per row (RedactEvent with the built-in detectors) and redaction plus JSON rendering,
//     over every row of the table, in microseconds of one core per row.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "base/log.h"
#include "db/local_cluster.h"
#include "db/pool.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/telemetry/query.h"
#include "services/telemetry/query_api.h"
#include "services/telemetry/query_test_util.h"

namespace {

using namespace govern;
using namespace govern::telemetry;
using SteadyClock = std::chrono::steady_clock;

constexpr int64_t kStart = 1'795'996'800'000'000'000;  // 2026-11-30T00:00:00Z

void Die(const Status& s, const char* what) {
  std::fprintf(stderr, "telemetry_query_benchmark: %s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

// Agent and gateway events: repeating services, actions and templates; varying ids and numbers; a
// few carry an e-mail address or an IP (as real events do), so redaction has work to do.
std::vector<StoredEvent> Generate(const std::string& org, int n, uint64_t seed) {
  static const char* kServices[] = {"gateway", "agent-runner", "policy", "sandbox"};
  static const char* kActions[] = {"tool.call",       "model.request", "model.response",
                                   "policy.decision", "file.read",     "http.fetch"};
  static const char* kTools[] = {"search", "browser", "python", "shell", "sql"};
  std::vector<StoredEvent> out;
  out.reserve(static_cast<size_t>(n));
  uint64_t x = seed;
  auto rnd = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  const int64_t step = 24 * kNanosPerHour / n;
  for (int i = 0; i < n; ++i) {
    int64_t t = kStart + i * step + static_cast<int64_t>(rnd() % 1000);
    const char* action = kActions[rnd() % 6];
    StoredEvent s =
        testing::MakeEvent(org, t, "ev-" + std::to_string(seed) + "-" + std::to_string(i), action);
    Event& e = s.event;
    uint64_t agent = rnd() % 200, run = rnd(), ms = rnd() % 5000;
    e.service_name = kServices[rnd() % 4];
    e.severity_text = ms > 4000 ? "WARN" : "INFO";
    e.severity_number = ms > 4000 ? 13 : 9;
    e.body = "agent a-" + std::to_string(agent) + " " + action + " via " + kTools[rnd() % 5] + " took " +
             std::to_string(ms) + " ms (run " + std::to_string(run % 100000) + ")";
    if (i % 10 == 0) e.body += " on behalf of user" + std::to_string(agent) + "@example.com";
    e.attributes = {{"agent.id", "\"a-" + std::to_string(agent) + "\""},
                    {"run.id", "\"r-" + std::to_string(run) + "\""},
                    {"tool", std::string("\"") + kTools[rnd() % 5] + "\""},
                    {"http.status", std::to_string(rnd() % 10 ? 200 : 500)},
                    {"duration_ms", std::to_string(ms)},
                    {"model", "\"gpt-4o-mini\""},
                    {"tokens", "{\"in\":" + std::to_string(rnd() % 4000) +
                                   ",\"out\":" + std::to_string(rnd() % 800) + "}"}};
    e.attributes.push_back({"http.url", "\"https://api.internal.example/v2/search?q=item-" +
                                            std::to_string(rnd() % 100000) + "\""});
    e.attributes.push_back({"user_agent", "\"govern-agent/1.4.2 (linux; x86_64) python-httpx/0.27\""});
    if (i % 7 == 0) e.attributes.push_back({"client.ip", "\"10.1." + std::to_string(rnd() % 256) + ".7\""});
    e.resource_attributes = {{"service.name", "\"" + e.service_name + "\""},
                             {"host.name", "\"node-" + std::to_string(rnd() % 8) + "\""},
                             {"deployment.environment", "\"production\""}};
    e.scope_name = "govern.agent";
    e.scope_version = "1.4.2";
    char trace[33];
    std::snprintf(trace, sizeof trace, "%016llx%016llx", static_cast<unsigned long long>(rnd()),
                  static_cast<unsigned long long>(rnd()));
    e.trace_id_hex = trace;
    e.span_id_hex = std::string(trace, 16);
    out.push_back(std::move(s));
  }
  return out;
}

struct Stats {
  double median_ms, p99_ms;
};
Stats Measure(int runs, const std::function<void()>& fn) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t0 = SteadyClock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 99 / 100)]};
}

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  int rows = 50000, runs = 300;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rows") && i + 1 < argc) rows = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--keep") && i + 1 < argc) dir = argv[++i];
  }
  if (dir.empty()) dir = (std::filesystem::temp_directory_path() / "govern_query_benchmark").string();
  log::Configure(log::Level::kWarn, log::Format::kText);
  db::LocalClusterOptions o;
  o.data_dir = dir;
  db::LocalCluster cluster(o);
  if (Status s = cluster.Start(); !s.ok()) Die(s, "start cluster");
  auto conn_or = db::Connection::Connect(cluster.ConnInfo());
  if (!conn_or.ok()) Die(conn_or.status(), "connect");
  db::Connection& conn = **conn_or;
  if (Status s = conn.ExecScript("DROP SCHEMA public CASCADE; CREATE SCHEMA public;"); !s.ok())
    Die(s, "reset");
  if (Status s = testing::ApplySchema(conn); !s.ok()) Die(s, "schema");

  std::vector<StoredEvent> events = Generate("acme", rows, 1);
  std::vector<StoredEvent> other = Generate("globex", rows / 10, 2);
  size_t bytes = 0;
  for (const StoredEvent& s : events) {
    bytes += s.event.body.size() + s.event.id.size() + s.event.type.size() + s.event.service_name.size() +
             s.event.trace_id_hex.size() + s.event.span_id_hex.size() + s.event.scope_name.size() + 40;
    for (const Attribute& a : s.event.attributes) bytes += a.key.size() + a.value_json.size() + 4;
    for (const Attribute& a : s.event.resource_attributes) bytes += a.key.size() + a.value_json.size() + 4;
  }
  if (Status s = testing::InsertEvents(conn, events); !s.ok()) Die(s, "insert");
  if (Status s = testing::InsertEvents(conn, other); !s.ok()) Die(s, "insert other");
  if (Status s = conn.ExecScript("VACUUM ANALYZE telemetry_events"); !s.ok()) Die(s, "analyze");

  std::printf("rows: %d for the queried organisation (+%d another), ~%zu bytes/event, over 24 h; %d runs\n",
              rows, rows / 10, bytes / events.size(), runs);
  std::printf("%-58s %10s %10s\n", "query (first 100 rows of one hour)", "median ms", "p99 ms");

  EventQuery hour;
  hour.org = "acme";
  hour.from_ns = kStart + 12 * kNanosPerHour;
  hour.to_ns = hour.from_ns + kNanosPerHour;
  hour.limit = 100;
  auto run = [&](const char* name, EventQuery q) {
    size_t got = 0;
    Stats st = Measure(runs, [&] {
      Result<std::vector<StoredEvent>> r = QueryRecent(conn, q);
      if (!r.ok()) Die(r.status(), name);
      got = r->size();
    });
    std::printf("%-58s %10.3f %10.3f   (%zu rows)\n", name, st.median_ms, st.p99_ms, got);
  };
  run("QueryRecent newest first", hour);
  EventQuery oldest = hour;
  oldest.newest_first = false;
  run("QueryRecent oldest first", oldest);
  EventQuery typed = hour;
  typed.type = "tool.call";
  run("QueryRecent type=tool.call", typed);
  EventQuery attr = hour;
  attr.attributes = {{"http.status", "500"}};
  run("QueryRecent attr http.status:500", attr);
  EventQuery second = hour;
  {
    Result<std::vector<StoredEvent>> first = QueryRecent(conn, hour);
    if (!first.ok()) Die(first.status(), "first page");
    second.after = first->back().key();
  }
  run("QueryRecent second page (cursor)", second);

  // Redaction per row, over every row of the organisation (as stored and read back).
  EventQuery everything;
  everything.org = "acme";
  everything.limit = static_cast<size_t>(rows);
  Result<std::vector<StoredEvent>> stored = QueryRecent(conn, everything);
  if (!stored.ok()) Die(stored.status(), "read all");
  Result<std::shared_ptr<const dlp::RuleSet>> rules = dlp::RuleSet::Compile(dlp::Policy{});
  if (!rules.ok()) Die(rules.status(), "rules");
  for (int pass = 0; pass < 2; ++pass) {  // the first pass warms the scratch pool
    double c0 = CpuSeconds();
    size_t redacted = 0;
    for (const StoredEvent& s : *stored) redacted += RedactEvent(**rules, s).stored.event.body.size();
    double c1 = CpuSeconds();
    std::string out;
    for (const StoredEvent& s : *stored) {
      out.clear();
      AppendEventJson(RedactEvent(**rules, s), &out);
    }
    double c2 = CpuSeconds();
    if (pass == 1) {
      double copy0 = CpuSeconds();
      for (const StoredEvent& s : *stored) {
        StoredEvent copy = s;
        redacted += copy.event.body.size();
      }
      double copy = CpuSeconds() - copy0;  // RedactEvent takes its event by value: subtract the copy
      double n = static_cast<double>(stored->size());
      std::printf("%-58s %10.2f µs/row\n", "redaction (RedactEvent, built-in detectors, mask)",
                  (c1 - c0 - copy) / n * 1e6);
      std::printf("%-58s %10.2f µs/row\n", "redaction + JSON rendering (AppendEventJson)",
                  (c2 - c1 - copy) / n * 1e6);
      std::printf("%-58s %10.2f µs/row\n", "(event copy, subtracted above)", copy / n * 1e6);
      // Where the time goes: the short text fields, the body, the two attribute objects.
      std::string o1;
      double b0 = CpuSeconds();
      for (const StoredEvent& s : *stored) {
        for (const std::string* f : {&s.event.type, &s.event.severity_text, &s.event.service_name,
                                     &s.event.scope_name, &s.event.scope_version}) {
          redacted += (*rules)->Redact(*f, &o1).changed;
        }
      }
      double b1 = CpuSeconds();
      for (const StoredEvent& s : *stored) redacted += (*rules)->Redact(s.event.body, &o1).changed;
      double b2 = CpuSeconds();
      for (const StoredEvent& s : *stored) {
        std::string a = testing::ObjectJson(s.event.attributes),
                    ra = testing::ObjectJson(s.event.resource_attributes);
        redacted += (*rules)->RedactJson(a, &o1).ok() + (*rules)->RedactJson(ra, &o1).ok();
      }
      double b3 = CpuSeconds();
      std::printf("%-58s %10.2f µs/row\n", "  of which 5 short text fields (Redact each)",
                  (b1 - b0) / n * 1e6);
      std::printf("%-58s %10.2f µs/row\n", "  of which the body (Redact)", (b2 - b1) / n * 1e6);
      std::printf("%-58s %10.2f µs/row\n", "  of which attributes + resource attributes (RedactJson)",
                  (b3 - b2) / n * 1e6);
    }
    if (redacted == 0) std::printf("\n");
  }

  // The whole request over HTTP: key check (immediate), worker, PostgreSQL, redaction, JSON.
  {
    auto pool = db::Pool::Create({.conninfo = cluster.ConnInfo(), .max_size = 2});
    if (!pool.ok()) Die(pool.status(), "pool");
    QueryApi api(pool->get(), nullptr, QueryApiOptions{.workers = 1});
    net::Router router;
    api.Register(router, [](std::string_view, std::function<void(Result<std::string>)> done) {
      done(std::string("acme"));
    });
    net::Server server(net::ServerConfig{.workers = 1}, std::move(router));
    if (Status s = server.Start(); !s.ok()) Die(s, "server");
    net::HttpClient client;
    std::string url = "http://127.0.0.1:" + std::to_string(server.port()) +
                      "/v1/query/events?limit=100&from=" + std::to_string(hour.from_ns) +
                      "&to=" + std::to_string(hour.to_ns);
    size_t body = 0;
    Stats st = Measure(runs, [&] {
      net::ClientRequest req;
      req.url = url;
      req.headers.Set("Authorization", "Bearer k");
      Result<net::ClientResponse> r = client.Send(std::move(req));
      if (!r.ok() || r->status != 200) Die(r.ok() ? Internal(r->body) : r.status(), "http");
      body = r->body.size();
    });
    std::printf("%-58s %10.3f %10.3f   (%zu bytes)\n", "GET /v1/query/events limit=100 over HTTP",
                st.median_ms, st.p99_ms, body);
    server.Stop();
  }
  conn_or->reset();
  if (Status s = cluster.Stop(); !s.ok()) Die(s, "stop cluster");
  return 0;
}
