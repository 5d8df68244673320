// Writes the http suite's table and bench/results/http.json from figures bench/http/run measured
// with wrk. Usage: http_bench_report [--quick] [--results DIR] KEY=VALUE...
// Keys: govern_rps nginx_rps govern_p50_us govern_p99_us nginx_p50_us nginx_p99_us (median round),
// govern_best_rps nginx_best_rps (best round), note.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "report.h"

int main(int argc, char** argv) {
  using govern::bench::Row;
  govern::bench::Args args = govern::bench::ParseArgs(argc, argv);
  std::map<std::string, std::string> kv;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    size_t eq = a.find('=');
    if (eq != std::string::npos) kv[a.substr(0, eq)] = a.substr(eq + 1);
  }
  auto num = [&](const char* k) { return kv.count(k) ? std::atof(kv[k].c_str()) : 0.0; };
  std::string note = kv.count("note") ? kv["note"] : "";
  const std::string peer = "nginx 1.22 (1 worker)";
  govern::bench::Report report("http", args.quick);
  Row rps{"requests_per_s_one_core",
          num("govern_rps"),
          "requests/s",
          std::nullopt,
          "higher",
          peer,
          num("nginx_rps"),
          note};
  report.Add(rps);
  report.Add(Row{"latency_p50", num("govern_p50_us"), "us", std::nullopt, "lower", peer, num("nginx_p50_us"),
                 "wrk --latency, same load"});
  report.Add(Row{"latency_p99", num("govern_p99_us"), "us", std::nullopt, "lower", peer, num("nginx_p99_us"),
                 "wrk --latency, same load"});
  report.Add(Row{"requests_per_s_one_core_best_round", num("govern_best_rps"), "requests/s", std::nullopt,
                 "higher", peer, num("nginx_best_rps"),
                 "best of the alternating rounds (least disturbed by other work)"});
  double ratio = num("nginx_rps") > 0 ? num("govern_rps") / num("nginx_rps") : 0;
  report.Add(Row{"requests_per_s_vs_nginx", ratio, "x", 1.0, "higher", "", std::nullopt, "govern / nginx"});
  return report.Finish(args.results_dir) ? 0 : 1;
}
