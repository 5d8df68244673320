// WorkHistogram: the gateway's own time per answered request ("gateway work only", docs/gateway.md
// "Measuring the overhead"), kept cheaply enough to stay on in production: Add is a few relaxed atomic
// operations, from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace govern::gateway {

struct WorkTimes {
  uint64_t requests = 0;
  // Percentiles at the middle of their bucket (0.25 µs wide below 256 µs, 4 µs wide to 4.35 ms; beyond,
  // the largest time), never above the largest time; max and mean exact.
  double p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0, mean_us = 0;
};

class WorkHistogram {
 public:
  void Add(std::chrono::nanoseconds d);
  // What was added since the last Take, and starts over (an Add racing with it lands in either window).
  WorkTimes Take();

 private:
  static constexpr size_t kFine = 1024;    // 0.25 µs each: [0, 256 µs)
  static constexpr size_t kCoarse = 1024;  // 4 µs each: [256 µs, 4352 µs)
  static size_t Bucket(uint64_t ns);
  static double Middle(size_t bucket);                                // µs
  std::array<std::atomic<uint64_t>, kFine + kCoarse + 1> buckets_{};  // the last: beyond
  std::atomic<uint64_t> sum_ns_{0};
  std::atomic<uint64_t> max_ns_{0};
};

}  // namespace govern::gateway
