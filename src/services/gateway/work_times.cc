#include "services/gateway/work_times.h"

#include <algorithm>

namespace govern::gateway {

size_t WorkHistogram::Bucket(uint64_t ns) {
  if (ns < kFine * 250) return ns / 250;
  uint64_t coarse = (ns - kFine * 250) / 4000;
  return coarse < kCoarse ? kFine + coarse : kFine + kCoarse;
}

double WorkHistogram::Middle(size_t b) {
  if (b < kFine) return (static_cast<double>(b) + 0.5) * 0.25;
  return 256.0 + (static_cast<double>(b - kFine) + 0.5) * 4.0;
}

void WorkHistogram::Add(std::chrono::nanoseconds d) {
  uint64_t ns = d.count() > 0 ? static_cast<uint64_t>(d.count()) : 0;
  buckets_[Bucket(ns)].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(ns, std::memory_order_relaxed);
  uint64_t max = max_ns_.load(std::memory_order_relaxed);
  while (ns > max && !max_ns_.compare_exchange_weak(max, ns, std::memory_order_relaxed)) {
  }
}

WorkTimes WorkHistogram::Take() {
  std::array<uint64_t, kFine + kCoarse + 1> counts{};
  uint64_t n = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    counts[i] = buckets_[i].exchange(0, std::memory_order_relaxed);
    n += counts[i];
  }
  WorkTimes t;
  t.requests = n;
  uint64_t sum = sum_ns_.exchange(0, std::memory_order_relaxed);
  t.max_us = static_cast<double>(max_ns_.exchange(0, std::memory_order_relaxed)) / 1000.0;
  if (n == 0) return t;
  t.mean_us = static_cast<double>(sum) / 1000.0 / static_cast<double>(n);
  auto at = [&](double q) {
    // The smallest bucket holding at least q of the requests (rank ceil(q*n), 1-based).
    uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(n));
    if (static_cast<double>(rank) < q * static_cast<double>(n)) ++rank;
    if (rank == 0) rank = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      seen += counts[i];
      // Beyond the last bucket: the largest time (an upper bound, as the bucket has none).
      if (seen >= rank) return i + 1 < counts.size() ? Middle(i) : t.max_us;
    }
    return Middle(counts.size() - 1);
  };
  // A bucket's middle can lie beyond the largest time it holds.
  t.p50_us = std::min(at(0.50), t.max_us);
  t.p90_us = std::min(at(0.90), t.max_us);
  t.p99_us = std::min(at(0.99), t.max_us);
  return t;
}

}  // namespace govern::gateway
