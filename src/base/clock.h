// Clock: the source of time, passed in so tests can replace it (see ManualClock).
//
// Implementations are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace govern {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic nanoseconds, for measuring intervals.
  virtual int64_t MonotonicNanos() const = 0;
  // Wall-clock microseconds since the Unix epoch, for timestamps.
  virtual int64_t UnixMicros() const = 0;

  // The real clock (a process-wide singleton without state).
  static const Clock& Real();
};

class SystemClock final : public Clock {
 public:
  int64_t MonotonicNanos() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  int64_t UnixMicros() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that moves only when told to. For tests.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_nanos = 1'000'000'000) : nanos_(start_nanos) {}
  int64_t MonotonicNanos() const override { return nanos_.load(); }
  int64_t UnixMicros() const override { return 1'700'000'000'000'000 + nanos_.load() / 1000; }
  void Advance(std::chrono::nanoseconds d) { nanos_ += d.count(); }

 private:
  std::atomic<int64_t> nanos_;
};

inline const Clock& Clock::Real() {
  static const SystemClock clock;
  return clock;
}

}  // namespace govern
