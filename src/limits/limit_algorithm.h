// LimitAlgorithm: how the concurrency limit follows latency. The Limiter (limiter.h) collects samples
// into windows and hands each closed window to the algorithm, which returns the new limit.
//
// Two algorithms, after Netflix's concurrency-limits library:
// - Gradient2Limit: compares a short-term RTT (this window's mean) with a long-term exponential
//   average; while they agree the limit grows by a queue allowance, when the short-term RTT rises
//   past `rtt_tolerance` times the long-term one the limit shrinks in proportion (never by more than
//   half per window). The default.
// - VegasLimit: estimates the queue as limit * (1 - rtt_noload / rtt) against the lowest RTT seen and
//   keeps it between alpha and beta.
// Both learn the no-load RTT from a periodic probe (NoLoadProbe below): for two windows the limit is
// pinned low, and the second window's RTT is what the server answers in without a queue. Without it,
// an RTT baseline learnt under sustained overload is itself inflated and the limit creeps up without
// bound (in Gradient2 the long-term average catches up with the short-term one; in Vegas Netflix's
// "reset rtt_noload to the current RTT" probe does the same): Simulation.Gradient2WithoutProbeCreepsUp
// shows it. So between
// probes Gradient2's long-term RTT may fall but not rise above the last probe's RTT. A probe costs two
// windows at a low limit every `interval_windows` windows (about 1% of throughput by default).
// A window in which any request was dropped (a timeout or 5xx, Release(ok=false)) always shrinks the
// limit. Algorithms are not thread-safe: the Limiter calls Update() under its update lock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string_view>

namespace govern::limits {

// What one window of completed requests looked like.
struct LimitSample {
  int64_t avg_rtt_nanos = 0;  // mean RTT of the window's successful requests; 0 when there were none
  int64_t min_rtt_nanos = 0;  // lowest RTT of the window (0 when none)
  int64_t max_inflight = 0;   // most requests in flight seen in the window (is the limit being used?)
  int64_t samples = 0;        // successful requests in the window
  bool dropped = false;       // at least one request was a drop
};

class LimitAlgorithm {
 public:
  virtual ~LimitAlgorithm() = default;
  virtual std::string_view name() const = 0;
  virtual int initial_limit() const = 0;
  // Called once per closed window; returns the new limit (within the algorithm's own bounds).
  virtual int Update(const LimitSample& sample) = 0;
};

// Periodic measurement of the no-load RTT (see above). Not thread-safe; owned by an algorithm.
struct ProbeOptions {
  // Windows between probes, jittered to 50-100% so replicas do not probe in step; 0 disables probing.
  int interval_windows = 300;
  // The limit during a probe; 0 means the algorithm's min_limit. Must be below the server's capacity to
  // see its no-load RTT.
  int limit = 0;
  uint32_t seed = 1;
};

class NoLoadProbe {
 public:
  explicit NoLoadProbe(ProbeOptions options);
  enum class Step { kIdle, kPinned, kMeasured };
  // Called first in every Update. kPinned: return the probe limit and change nothing else. kMeasured:
  // the probe is over and `measured_rtt_nanos` is the no-load RTT (0 if the window had no samples).
  Step Next(const LimitSample& sample, int64_t* measured_rtt_nanos);
  // The limit to hold while pinned (the resolved ProbeOptions::limit).
  int limit() const { return options_.limit; }

 private:
  void Schedule();

  ProbeOptions options_;
  std::minstd_rand rng_;
  int64_t windows_ = 0;
  int64_t next_ = 0;
  int phase_ = 0;  // 0 idle, 1 draining (first pinned window), 2 measuring (second)
};

struct Gradient2Options {
  int initial_limit = 20;
  int min_limit = 20;    // never shed below this many concurrent requests
  int max_limit = 1000;  // nor allow more than this
  // Weight of the newly computed limit against the old one per window (0..1]: lower is steadier.
  double smoothing = 0.2;
  // How much the short-term RTT may exceed the long-term RTT before the limit shrinks (1.5: 50%).
  double rtt_tolerance = 1.5;
  // Windows in the long-term RTT average (an EWMA with factor 2/(n+1), after a plain mean of the first 10).
  int long_window = 600;
  // Extra concurrency allowed on top of limit * gradient (a small standing queue keeps the server busy
  // and lets the limit grow). Default: the square root of the limit, at least 4.
  std::function<double(double limit)> queue_size;
  ProbeOptions probe;
};

class Gradient2Limit final : public LimitAlgorithm {
 public:
  explicit Gradient2Limit(Gradient2Options options = {});
  std::string_view name() const override { return "gradient2"; }
  int initial_limit() const override { return options_.initial_limit; }
  int Update(const LimitSample& sample) override;

  double estimated_limit() const { return limit_; }
  double long_rtt_nanos() const { return long_rtt_; }

 private:
  Gradient2Options options_;
  NoLoadProbe probe_;
  double limit_;
  double long_rtt_ = 0;
  double probe_rtt_ = 0;  // the last probe's RTT: a ceiling on long_rtt_ (0: none yet)
  int long_count_ = 0;
};

struct VegasOptions {
  int initial_limit = 20;
  int min_limit = 4;
  int max_limit = 1000;
  double smoothing = 1.0;
  // Queue-size thresholds as functions of the limit (defaults as in Netflix's VegasLimit):
  // grow fast below `threshold`, grow below `alpha`, shrink above `beta`.
  std::function<double(double limit)> alpha;      // default 3 * log10(limit)
  std::function<double(double limit)> beta;       // default 6 * log10(limit)
  std::function<double(double limit)> threshold;  // default log10(limit)
  // A probe replaces rtt_noload, so a workload that became slower for good is not treated as
  // overloaded forever.
  ProbeOptions probe;
};

class VegasLimit final : public LimitAlgorithm {
 public:
  explicit VegasLimit(VegasOptions options = {});
  std::string_view name() const override { return "vegas"; }
  int initial_limit() const override { return options_.initial_limit; }
  int Update(const LimitSample& sample) override;

  double rtt_noload_nanos() const { return static_cast<double>(rtt_noload_); }

 private:
  VegasOptions options_;
  NoLoadProbe probe_;
  double limit_;
  int64_t rtt_noload_ = 0;
};

// A limit that never moves (for tests, and for operators who want a hard cap).
class FixedLimit final : public LimitAlgorithm {
 public:
  explicit FixedLimit(int limit) : limit_(limit) {}
  std::string_view name() const override { return "fixed"; }
  int initial_limit() const override { return limit_; }
  int Update(const LimitSample&) override { return limit_; }

 private:
  int limit_;
};

}  // namespace govern::limits
