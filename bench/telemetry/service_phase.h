// The rows of the telemetry suite that need the running service: `govern serve telemetry` started with
// a private data directory, an ingest key created with `govern telemetry keys create`, telemetry_loadgen
// sending over HTTP, and every acknowledged event counted in PostgreSQL afterwards. When the govern
// binary does not hold the telemetry service (or a step fails), each of those rows is reported as not
// run, with the reason: never a figure that was not measured. Not thread-safe; call once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report.h"

namespace govern::telemetry::benchtool {

struct NotRun {
  std::string metric;
  std::optional<double> target;
  std::string reason;
};

struct ServiceOptions {
  bool quick = false;
  std::string dir;             // private data directory for the service (wiped first)
  std::string govern;          // path of the govern binary; empty: not run
  std::string loadgen;         // path of telemetry_loadgen
  double copy_rows_per_s = 0;  // the raw limit measured in this run, shown as the peer
  // The sustained run's send rate (the target's 100,000/s by default; lower to measure send-to-stored
  // latency where the pipeline keeps up, e.g. 50,000).
  double sustained_rate = 100000;
  // Only the sustained run (with its latency probes): no peak, soak or compaction (quick A/B runs).
  bool sustained_only = false;
};

void RunServicePhase(const ServiceOptions& options, bench::Report& report, std::vector<NotRun>& not_run);

// Nanoseconds since the Unix epoch, by the system clock (both phases stamp events with it).
int64_t NowNanos();

}  // namespace govern::telemetry::benchtool
