// telemetry_loadgen: sends realistic telemetry events (generator.h) to a Govern telemetry intake and
// records every acknowledged event. See loadgen.h for what counts as acknowledged and README.md.
//
//   telemetry_loadgen --url http://127.0.0.1:4318 --key gvk_... --org ORG [--format ndjson|otlp-proto]
//     [--connections 4] [--batch 1000] [--rate EVENTS_PER_S | --max] [--duration SECONDS]
//     [--events N] [--seed N] [--acked FILE] [--content-type TYPE] [--summary FILE]
//
// Prints the achieved rate, acknowledged and refused batches and request latency percentiles, and a
// last line "summary {json}" (also written to --summary FILE). Exit 0 when it ran (whatever the
// server answered), 2 on a bad command line, 1 when it could not start.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "loadgen.h"

namespace {

void Usage() {
  std::fprintf(
      stderr,
      "usage: telemetry_loadgen --url http://HOST:PORT --org ORG [--key KEY] [--format ndjson|otlp-proto]\n"
      "  [--connections N] [--batch N] [--rate EVENTS_PER_S | --max] [--duration S] [--events N]\n"
      "  [--seed N] [--acked FILE] [--content-type TYPE] [--summary FILE] [--start-unix-nanos N]\n");
}

}  // namespace

int main(int argc, char** argv) {
  using govern::telemetry::loadgen::Format;
  govern::telemetry::loadgen::Options o;
  std::string summary_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        Usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--url") {
      if (auto s = govern::telemetry::loadgen::ParseUrl(value(), &o); !s.ok()) {
        std::fprintf(stderr, "telemetry_loadgen: %s\n", s.message().c_str());
        return 2;
      }
    } else if (a == "--key")
      o.key = value();
    else if (a == "--org")
      o.org = value();
    else if (a == "--format") {
      const std::string f = value();
      if (f == "ndjson")
        o.format = Format::kNdjson;
      else if (f == "otlp-proto")
        o.format = Format::kOtlpProto;
      else {
        Usage();
        return 2;
      }
    } else if (a == "--connections")
      o.connections = std::atoi(value().c_str());
    else if (a == "--batch")
      o.batch = std::atoi(value().c_str());
    else if (a == "--rate")
      o.rate = std::atof(value().c_str());
    else if (a == "--max")
      o.rate = 0;
    else if (a == "--duration")
      o.duration_s = std::atof(value().c_str());
    else if (a == "--events")
      o.max_events = std::atoll(value().c_str());
    else if (a == "--seed")
      o.seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--acked")
      o.acked_path = value();
    else if (a == "--content-type")
      o.content_type = value();
    else if (a == "--summary")
      summary_path = value();
    else if (a == "--start-unix-nanos")
      o.start_unix_nanos = std::atoll(value().c_str());
    else {
      Usage();
      return 2;
    }
  }
  if (o.org.empty() || o.connections < 1 || o.batch < 1 || o.duration_s <= 0 || o.rate < 0) {
    Usage();
    return 2;
  }
  auto r = govern::telemetry::loadgen::Run(o);
  if (!r.ok()) {
    std::fprintf(stderr, "telemetry_loadgen: %s\n", r.status().message().c_str());
    return 1;
  }
  std::printf("acked %lld events in %lld batches over %.2f s: %.0f events/s\n",
              static_cast<long long>(r->acked_events), static_cast<long long>(r->acked_batches), r->elapsed_s,
              r->acked_rate());
  std::printf(
      "refused %lld (429/503), server errors %lld, failed %lld, connection errors %lld, abandoned %lld\n",
      static_cast<long long>(r->refused), static_cast<long long>(r->server_errors),
      static_cast<long long>(r->failed_batches), static_cast<long long>(r->connection_errors),
      static_cast<long long>(r->abandoned_batches));
  if (r->id_mismatches > 0)
    std::printf("ids in replies that differ from the computed ones: %lld\n",
                static_cast<long long>(r->id_mismatches));
  std::printf("request latency ms: p50 %.2f p90 %.2f p99 %.2f max %.2f\n", r->latency_p50_ms,
              r->latency_p90_ms, r->latency_p99_ms, r->latency_max_ms);
  if (r->acked_events > 0)
    std::printf("loadgen CPU: %.2f s, %.2f us per acked event\n", r->cpu_seconds,
                r->cpu_seconds * 1e6 / static_cast<double>(r->acked_events));
  if (!r->first_failure.empty()) std::printf("first failure: %s\n", r->first_failure.c_str());
  const std::string json = r->Json();
  std::printf("summary %s\n", json.c_str());
  if (!summary_path.empty()) std::ofstream(summary_path) << json << "\n";
  return 0;
}
