// Table printing and JSON results for benchmark suites.
#include "report.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace govern::bench {

Report::Report(std::string suite, bool quick) : suite_(std::move(suite)), quick_(quick) {}

void Report::Add(Row row) { rows_.push_back(std::move(row)); }

bool Report::Finish(const std::string& results_dir) {
  std::printf("\n%-44s %14s %-10s %14s %14s  %s\n", "metric", "value", "unit", "target", "peer value", "peer");
  for (const Row& r : rows_) {
    char target[32] = "-";
    char peer[32] = "-";
    if (r.target) std::snprintf(target, sizeof target, "%.6g", *r.target);
    if (r.peer_value) std::snprintf(peer, sizeof peer, "%.6g", *r.peer_value);
    std::printf("%-44s %14.6g %-10s %14s %14s  %s%s%s\n", r.metric.c_str(), r.value, r.unit.c_str(), target,
                peer, r.peer.c_str(), r.note.empty() ? "" : "  # ", r.note.c_str());
  }
  nlohmann::json j;
  j["suite"] = suite_;
  j["quick"] = quick_;
  j["cores"] = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  j["date"] = date;
  j["rows"] = nlohmann::json::array();
  for (const Row& r : rows_) {
    nlohmann::json row = {{"metric", r.metric}, {"value", r.value}, {"unit", r.unit}, {"better", r.better}};
    if (r.target) row["target"] = *r.target;
    if (!r.peer.empty()) row["peer"] = r.peer;
    if (r.peer_value) row["peer_value"] = *r.peer_value;
    if (!r.note.empty()) row["note"] = r.note;
    j["rows"].push_back(row);
  }
  std::error_code ec;
  std::filesystem::create_directories(results_dir, ec);
  std::string path = results_dir + "/" + suite_ + ".json";
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  std::printf("\nwrote %s\n", path.c_str());
  return true;
}

void LatencyRecorder::Merge(const LatencyRecorder& other) {
  samples_.insert(samples_.end(), other.samples_.begin(), other.samples_.end());
  sorted_ = false;
}

int64_t LatencyRecorder::Percentile(double p) {
  if (samples_.empty()) return 0;
  if (!sorted_) {
    std::sort(samples_.begin(), samples_.end());
    sorted_ = true;
  }
  double rank = p / 100.0 * static_cast<double>(samples_.size() - 1);
  size_t idx = static_cast<size_t>(rank + 0.5);
  return samples_[std::min(idx, samples_.size() - 1)];
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--quick") a.quick = true;
    else if (s == "--results" && i + 1 < argc) a.results_dir = argv[++i];
  }
  return a;
}

}  // namespace govern::bench
