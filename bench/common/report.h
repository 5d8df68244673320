// Benchmark reporting shared by every suite: a table on stdout and bench/results/<suite>.json in the
// format ../shared/BENCHMARKS.md describes, plus a latency recorder that computes real percentiles.
// Not thread-safe: fill a LatencyRecorder per thread and Merge() them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace govern::bench {

struct Row {
  std::string metric;  // snake_case, e.g. "append_records_per_s_256"
  double value = 0;
  std::string unit;                  // "records/s", "us", "ms", "x"
  std::optional<double> target;      // the published figure for this row, when there is one
  std::string better = "higher";     // "higher" or "lower"
  std::string peer;                  // what was measured beside it ("fdatasync loop", "nginx 1.22")
  std::optional<double> peer_value;  // measured in the same run
  std::string note;
};

class Report {
 public:
  Report(std::string suite, bool quick);
  void Add(Row row);
  // Prints the table to stdout and writes <results_dir>/<suite>.json. Returns false on an I/O error.
  bool Finish(const std::string& results_dir);

 private:
  std::string suite_;
  bool quick_;
  std::vector<Row> rows_;
};

// Records latencies in nanoseconds; percentiles come from the sorted samples, never averages.
class LatencyRecorder {
 public:
  void Record(int64_t nanos) { samples_.push_back(nanos); }
  void Merge(const LatencyRecorder& other);
  size_t count() const { return samples_.size(); }
  // p in [0, 100]. Sorts lazily. Returns 0 when empty.
  int64_t Percentile(double p);

 private:
  std::vector<int64_t> samples_;
  bool sorted_ = false;
};

// Parses "--quick" and "--results DIR" from argv (the convention every suite binary follows).
struct Args {
  bool quick = false;
  std::string results_dir = "bench/results";
};
Args ParseArgs(int argc, char** argv);

}  // namespace govern::bench
