// audit_loadgen: concurrent writers appending to `govern serve audit` replicas, for the e2e replica
// test and the benchmark.
//
//   audit_loadgen --urls http://127.0.0.1:7730,... --pg CONNINFO --orgs 50 --writers 64 --duration 10
//                 [--acked FILE] [--summary FILE] [--read-every N] [--org-prefix P] [--run-id ID]
//
// Makes an append and a read key per organisation (straight in PostgreSQL with the service's key
// library), then runs `writers` threads. Writer w appends to organisation (w + n) % orgs, one entry
// per request, with the idempotency key "<run>-w<w>-<n>"; on a connection error or a 5xx it retries
// the same key on the next replica until the deadline (plus a grace period to finish), so every
// append it started is acknowledged exactly once or reported as failed. Every ack goes to --acked as
// "org idempotency_key seq entry_hash"; with --read-every N, every Nth ack is read back at once from
// another replica (read-after-ack; its latency is reported). The summary (JSON) holds entries/s, the
// p50/p99 append latency, retries, failures, the read-after-ack median and the loadgen's own CPU
// seconds (cpu_s). Exit 1 when an append
// failed or was refused, or an acknowledged entry read back as 404.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "db/connection.h"
#include "http_conn.h"  // bench/telemetry: a blocking keep-alive HTTP/1.1 connection
#include "report.h"
#include "services/audit/schema.h"
#include "services/keys/keys.h"

namespace {

using json = nlohmann::json;
using Steady = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> urls;
  std::string pg;
  int orgs = 1;
  int writers = 64;
  double duration_s = 10;
  std::string acked;
  std::string summary;
  int read_every = 0;
  std::string org_prefix = "org";
  std::string run_id;
};

int Usage(const char* why) {
  std::fprintf(stderr, "audit_loadgen: %s\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace govern;
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--urls") {
      std::stringstream ss(next());
      std::string u;
      while (std::getline(ss, u, ',')) o.urls.push_back(u);
    } else if (a == "--pg") {
      o.pg = next();
    } else if (a == "--orgs") {
      o.orgs = std::stoi(next());
    } else if (a == "--writers") {
      o.writers = std::stoi(next());
    } else if (a == "--duration") {
      o.duration_s = std::stod(next());
    } else if (a == "--acked") {
      o.acked = next();
    } else if (a == "--summary") {
      o.summary = next();
    } else if (a == "--read-every") {
      o.read_every = std::stoi(next());
    } else if (a == "--org-prefix") {
      o.org_prefix = next();
    } else if (a == "--run-id") {
      o.run_id = next();
    } else {
      return Usage(("unknown argument " + a).c_str());
    }
  }
  if (o.urls.empty() || o.pg.empty() || o.orgs < 1 || o.writers < 1) {
    return Usage("--urls and --pg are required; --orgs and --writers must be positive");
  }
  if (o.run_id.empty())
    o.run_id = "r" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count() % 1000000007);

  // Keys, one append and one read key per organisation.
  std::vector<std::string> orgs, append_keys, read_keys;
  {
    auto conn = db::Connection::Connect(o.pg);
    if (!conn.ok()) return Usage(("connect: " + conn.status().message()).c_str());
    auto ok = (*conn)->ExecScript("SELECT 1");
    (void)ok;
    for (int i = 0; i < o.orgs; ++i) {
      std::string org = o.org_prefix + std::to_string(i);
      auto a = service_keys::CreateKey(**conn, audit_service::AuditKeyTable(), org, "append", "loadgen");
      auto r = service_keys::CreateKey(**conn, audit_service::AuditKeyTable(), org, "read", "loadgen");
      if (!a.ok() || !r.ok()) {
        return Usage(("create keys (is the audit service's schema in place?): " +
                      (a.ok() ? r.status() : a.status()).message())
                         .c_str());
      }
      orgs.push_back(org);
      append_keys.push_back(*a);
      read_keys.push_back(*r);
    }
  }

  // host:port of each replica (URLs are http://HOST:PORT).
  std::vector<std::pair<std::string, int>> targets;
  for (const std::string& u : o.urls) {
    std::string hp = u.substr(u.find("//") + 2);
    size_t colon = hp.rfind(':');
    if (colon == std::string::npos) return Usage("--urls must be http://HOST:PORT");
    targets.emplace_back(hp.substr(0, colon), std::stoi(hp.substr(colon + 1)));
  }
  std::mutex out_mu;
  std::map<std::string, int64_t> retry_reasons;       // why appends were retried (status and a few words)
  std::map<std::string, int64_t> read_error_reasons;  // why read-after-ack reads failed (not 404)
  std::FILE* acked = o.acked.empty() ? nullptr : std::fopen(o.acked.c_str(), "a");
  if (!o.acked.empty() && acked == nullptr) return Usage("cannot open --acked");

  std::atomic<int64_t> entries{0}, retries{0}, failed{0}, rejected{0}, read_failures{0}, read_errors{0};
  std::vector<bench::LatencyRecorder> lat(o.writers), reads(o.writers);
  const auto start = Steady::now();
  const auto stop_new =
      start + std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(o.duration_s));
  const auto give_up = stop_new + std::chrono::seconds(60);  // an append in flight may retry this long

  std::vector<std::thread> threads;
  threads.reserve(o.writers);
  for (int w = 0; w < o.writers; ++w) {
    threads.emplace_back([&, w] {
      size_t replica = static_cast<size_t>(w) % o.urls.size();
      std::vector<std::unique_ptr<telemetry::loadgen::HttpConnection>> conns;
      for (const auto& [host, port] : targets) {
        conns.push_back(std::make_unique<telemetry::loadgen::HttpConnection>(host, port));
      }
      std::string lines;
      for (int64_t n = 0; Steady::now() < stop_new; ++n) {
        int org = static_cast<int>((w + n) % o.orgs);
        std::string idem = o.run_id + "-w" + std::to_string(w) + "-" + std::to_string(n);
        std::string body = R"({"actor":"user)" + std::to_string(n % 97) + R"(","action":")" +
                           (n % 5 == 0 ? "doc.delete" : "doc.read") + R"(","target":"doc)" +
                           std::to_string(n) + R"(","outcome":"success","details":{"writer":)" +
                           std::to_string(w) + R"(,"n":)" + std::to_string(n) + "}}";
        auto t0 = Steady::now();
        bool done = false;
        while (!done && Steady::now() < give_up) {
          const auto& [host, port] = targets[replica];
          std::string head = "POST /v1/audit/" + orgs[org] + "/entries HTTP/1.1\r\nHost: " + host + ":" +
                             std::to_string(port) + "\r\nAuthorization: Bearer " + append_keys[org] +
                             "\r\nIdempotency-Key: " + idem + "\r\nContent-Type: application/json\r\n";
          auto r = conns[replica]->Post(head, body);
          if (r.ok() && (r->status == 200 || r->status == 201)) {
            lat[w].Record(std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now() - t0).count());
            // "seq":N and "entry_hash":"..." without a full JSON parse (the loadgen shares the cores).
            uint64_t seq = 0;
            std::string hash;
            if (size_t at = r->body.find("\"seq\":"); at != std::string::npos)
              seq = std::stoull(r->body.substr(at + 6, 20));
            if (size_t at = r->body.find("\"entry_hash\":\""); at != std::string::npos)
              hash = r->body.substr(at + 14, 64);
            lines += orgs[org] + " " + idem + " " + std::to_string(seq) + " " + hash + "\n";
            ++entries;
            done = true;
            if (o.read_every > 0 && n % o.read_every == 0) {
              size_t other = (replica + 1) % o.urls.size();
              const auto& [ohost, oport] = targets[other];
              std::string get = "GET /v1/audit/" + orgs[org] + "/entries/" + std::to_string(seq) +
                                " HTTP/1.1\r\nHost: " + ohost + ":" + std::to_string(oport) +
                                "\r\nAuthorization: Bearer " + read_keys[org] + "\r\n";
              auto r0 = Steady::now();
              auto g = conns[other]->Post(get, "");
              if (g.ok() && g->status == 200) {
                reads[w].Record(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now() - r0).count());
              } else if (g.ok() && g->status == 404) {
                ++read_failures;  // an acknowledged entry that another replica cannot see: a bug
              } else {
                ++read_errors;  // the other replica was down (killed, restarting), or shed the read (503)
                std::lock_guard lk(out_mu);
                ++read_error_reasons[g.ok() ? std::to_string(g->status) + " " + g->body.substr(0, 60)
                                            : "error " + g.status().message().substr(0, 60)];
              }
            }
          } else if (!r.ok() || r->status >= 500) {
            ++retries;
            {
              std::lock_guard lk(out_mu);
              std::string why = r.ok() ? std::to_string(r->status) + " " + r->body.substr(0, 60)
                                       : "error " + r.status().message().substr(0, 60);
              ++retry_reasons[why];
            }
            replica = (replica + 1) % o.urls.size();
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          } else {
            ++rejected;
            std::fprintf(stderr, "audit_loadgen: %d %s\n", r->status, r->body.substr(0, 200).c_str());
            done = true;
          }
        }
        if (!done) ++failed;
        if (lines.size() > 64 * 1024 && acked != nullptr) {
          std::lock_guard lk(out_mu);
          std::fputs(lines.c_str(), acked);
          lines.clear();
        }
      }
      if (acked != nullptr) {
        std::lock_guard lk(out_mu);
        std::fputs(lines.c_str(), acked);
      }
    });
  }
  for (auto& t : threads) t.join();
  double secs = std::chrono::duration<double>(Steady::now() - start).count();
  if (acked != nullptr) std::fclose(acked);
  // The load generator's own CPU (it shares the cores with the replicas and PostgreSQL).
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  const double cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                       static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  bench::LatencyRecorder all, all_reads;
  for (auto& l : lat) all.Merge(l);
  for (auto& l : reads) all_reads.Merge(l);
  json s = {{"entries", entries.load()},
            {"seconds", secs},
            {"entries_per_s", static_cast<double>(entries.load()) / std::min(secs, o.duration_s + 1e-9)},
            {"p50_ms", all.Percentile(50) / 1e6},
            {"p99_ms", all.Percentile(99) / 1e6},
            {"retries", retries.load()},
            {"failed", failed.load()},
            {"rejected", rejected.load()},
            {"reads", all_reads.count()},
            {"read_after_ack_median_ms", all_reads.Percentile(50) / 1e6},
            {"read_failures", read_failures.load()},
            {"read_errors", read_errors.load()},
            {"retry_reasons", retry_reasons},
            {"read_error_reasons", read_error_reasons},
            {"cpu_s", cpu_s}};
  std::printf("%s\n", s.dump().c_str());
  if (!o.summary.empty()) {
    std::ofstream f(o.summary);
    f << s.dump() << "\n";
  }
  return failed.load() == 0 && rejected.load() == 0 && read_failures.load() == 0 ? 0 : 1;
}
