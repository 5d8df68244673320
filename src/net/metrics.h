// A small metrics registry (counters, gauges, histograms) rendered in the Prometheus text format.
//
// Updating a metric is a relaxed atomic operation: no lock, safe from any thread. Registering a
// metric and rendering take the registry's mutex; do them at start-up and on scrape, not per request.
// A metric returned by the registry lives as long as the registry. No Boost; services use it directly.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace govern::net {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void Inc(uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

class Gauge {
 public:
  void Add(int64_t n) { v_.fetch_add(n, std::memory_order_relaxed); }
  void Set(int64_t n) { v_.store(n, std::memory_order_relaxed); }
  int64_t Value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> v_{0};
};

// Fixed upper bounds chosen at registration; Observe is a short scan plus two atomic adds.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  // Count in bucket i (not cumulative); i == bounds().size() is the +Inf bucket.
  uint64_t BucketCount(size_t i) const { return buckets_[i].load(std::memory_order_relaxed); }
  uint64_t Count() const;
  double Sum() const { return sum_.load(std::memory_order_relaxed); }

  // Latency buckets in seconds, 100 µs to 10 s, for request histograms.
  static std::vector<double> LatencySeconds();

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<double> sum_{0};
};

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Registers (or returns the existing) metric `name` with `labels`. `name` must match
  // [a-zA-Z_:][a-zA-Z0-9_:]*; one name has one type and one help text (the first registration's).
  Counter& AddCounter(std::string_view name, std::string_view help, const Labels& labels = {});
  Gauge& AddGauge(std::string_view name, std::string_view help, const Labels& labels = {});
  Histogram& AddHistogram(std::string_view name, std::string_view help, std::vector<double> bounds,
                          const Labels& labels = {});

  // A family whose samples are computed at scrape time: `write` appends complete sample lines
  // ("name{l=\"v\"} 1\n") to its argument. `type` is "counter", "gauge", "histogram" or "untyped".
  // Returns an id for RemoveCollector: whoever owns what `write` reads must remove it before dying.
  uint64_t AddCollector(std::string_view name, std::string_view help, std::string_view type,
                        std::function<void(std::string&)> write);
  void RemoveCollector(uint64_t id);

  // The whole registry in the Prometheus text exposition format (version 0.0.4).
  std::string RenderText() const;

  // Helpers for collectors: `{a="x",b="y"}` with values escaped ("" when empty).
  static std::string FormatLabels(const Labels& labels);
  static void AppendValue(std::string& out, double v);

 private:
  struct Family;
  Family& FamilyFor(std::string_view name, std::string_view help, std::string_view type);
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;
  uint64_t next_collector_id_ = 1;
};

}  // namespace govern::net
