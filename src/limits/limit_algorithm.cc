// Gradient2 and Vegas, following Netflix concurrency-limits' Gradient2Limit and VegasLimit, with one
// change: a window with a drop always shrinks the limit (Netflix's Gradient2 ignores drops).
#include "limits/limit_algorithm.h"

#include <algorithm>
#include <cmath>

namespace govern::limits {
namespace {

double Log10Floor1(double limit) { return std::log10(std::max(limit, 10.0)); }

ProbeOptions WithLimit(ProbeOptions p, int min_limit) {
  if (p.limit <= 0) p.limit = min_limit;
  return p;
}

// Normalises the bounds every algorithm shares (min >= 1, max >= min, smoothing in [0.01, 1]) and
// returns the starting limit, `initial` clamped into them.
double NormalizeBounds(int initial, int* min_limit, int* max_limit, double* smoothing) {
  *min_limit = std::max(1, *min_limit);
  *max_limit = std::max(*min_limit, *max_limit);
  *smoothing = std::clamp(*smoothing, 0.01, 1.0);
  return std::clamp<double>(initial, *min_limit, *max_limit);
}

}  // namespace

NoLoadProbe::NoLoadProbe(ProbeOptions options) : options_(options), rng_(options.seed) { Schedule(); }

void NoLoadProbe::Schedule() {
  windows_ = 0;
  next_ = static_cast<int64_t>(options_.interval_windows *
                               std::uniform_real_distribution<double>(0.5, 1.0)(rng_));
}

NoLoadProbe::Step NoLoadProbe::Next(const LimitSample& sample, int64_t* measured_rtt_nanos) {
  if (options_.interval_windows <= 0) return Step::kIdle;
  switch (phase_) {
    case 0:
      if (++windows_ < next_) return Step::kIdle;
      phase_ = 1;  // pin the limit; this window still holds requests admitted under the old limit
      return Step::kPinned;
    case 1:
      phase_ = 2;  // the window now closing drained them; measure the next one
      return Step::kPinned;
    default:
      phase_ = 0;
      *measured_rtt_nanos = sample.samples > 0 ? sample.avg_rtt_nanos : 0;
      Schedule();
      return Step::kMeasured;
  }
}

Gradient2Limit::Gradient2Limit(Gradient2Options options)
    : options_(std::move(options)), probe_(WithLimit(options_.probe, std::max(1, options_.min_limit))) {
  if (!options_.queue_size) {
    options_.queue_size = [](double limit) { return std::max(4.0, std::sqrt(limit)); };
  }
  limit_ = NormalizeBounds(options_.initial_limit, &options_.min_limit, &options_.max_limit,
                           &options_.smoothing);
}

int Gradient2Limit::Update(const LimitSample& s) {
  int64_t measured = 0;
  switch (probe_.Next(s, &measured)) {
    case NoLoadProbe::Step::kPinned:
      return std::min(static_cast<int>(limit_), probe_.limit());
    case NoLoadProbe::Step::kMeasured:
      if (measured > 0) {
        probe_rtt_ = static_cast<double>(measured);
        long_rtt_ = probe_rtt_;
        long_count_ = std::max(long_count_, 10);
      }
      return static_cast<int>(limit_);
    case NoLoadProbe::Step::kIdle:
      break;
  }
  double new_limit;
  if (s.samples > 0) {
    const double short_rtt = static_cast<double>(s.avg_rtt_nanos);
    // Long-term RTT: a plain mean while warming up, then an EWMA over `long_window` windows.
    if (long_count_ < 10) {
      long_rtt_ = (long_rtt_ * long_count_ + short_rtt) / (long_count_ + 1);
      ++long_count_;
    } else {
      const double factor = 2.0 / (options_.long_window + 1);
      long_rtt_ = long_rtt_ * (1 - factor) + short_rtt * factor;
    }
    // After a long overload the long-term RTT is inflated; when latency is back to normal, pull it
    // down faster than the EWMA would, so the limit can grow again.
    if (short_rtt > 0 && long_rtt_ / short_rtt > 2) long_rtt_ *= 0.95;
    // Only a probe may raise the baseline: under sustained overload every sample is queued, and
    // letting the average follow them would let the limit creep up without bound.
    if (probe_rtt_ > 0) long_rtt_ = std::min(long_rtt_, probe_rtt_);
  }
  if (s.dropped) {
    // A drop says "overloaded" more plainly than any RTT: take the largest step down Gradient2 allows.
    new_limit = limit_ * 0.5;
  } else if (s.samples == 0 || s.max_inflight < limit_ / 2) {
    // Nothing measured, or the limit is not what holds requests back (app-limited): growing it would
    // only raise a limit nobody tests.
    return static_cast<int>(limit_);
  } else {
    const double short_rtt = static_cast<double>(s.avg_rtt_nanos);
    // Up to `rtt_tolerance` of extra latency counts as no queueing (gradient 1); beyond it the limit
    // follows long/short, but never drops by more than half on one (possibly outlying) window.
    const double gradient = std::clamp(options_.rtt_tolerance * long_rtt_ / short_rtt, 0.5, 1.0);
    new_limit = limit_ * gradient + options_.queue_size(limit_);
  }
  new_limit = limit_ * (1 - options_.smoothing) + new_limit * options_.smoothing;
  limit_ = std::clamp<double>(new_limit, options_.min_limit, options_.max_limit);
  return static_cast<int>(limit_);
}

VegasLimit::VegasLimit(VegasOptions options)
    : options_(std::move(options)), probe_(WithLimit(options_.probe, std::max(1, options_.min_limit))) {
  if (!options_.alpha) options_.alpha = [](double l) { return 3 * Log10Floor1(l); };
  if (!options_.beta) options_.beta = [](double l) { return 6 * Log10Floor1(l); };
  if (!options_.threshold) options_.threshold = [](double l) { return Log10Floor1(l); };
  limit_ = NormalizeBounds(options_.initial_limit, &options_.min_limit, &options_.max_limit,
                           &options_.smoothing);
}

int VegasLimit::Update(const LimitSample& s) {
  int64_t measured = 0;
  switch (probe_.Next(s, &measured)) {
    case NoLoadProbe::Step::kPinned:
      return std::min(static_cast<int>(limit_), probe_.limit());
    case NoLoadProbe::Step::kMeasured:
      if (measured > 0) rtt_noload_ = measured;
      return static_cast<int>(limit_);
    case NoLoadProbe::Step::kIdle:
      break;
  }
  if (s.samples > 0 && (rtt_noload_ == 0 || s.avg_rtt_nanos < rtt_noload_)) {
    rtt_noload_ = s.avg_rtt_nanos;
    if (!s.dropped) return static_cast<int>(limit_);
  }
  double new_limit;
  if (s.dropped) {
    new_limit = limit_ - Log10Floor1(limit_);
    new_limit = std::min(new_limit, limit_ * 0.9);
  } else if (s.samples == 0 || s.max_inflight * 2 < limit_) {
    return static_cast<int>(limit_);  // app-limited
  } else {
    const double rtt = static_cast<double>(s.avg_rtt_nanos);
    const double queue = std::ceil(limit_ * (1 - static_cast<double>(rtt_noload_) / rtt));
    if (queue <= options_.threshold(limit_)) {
      new_limit = limit_ + options_.beta(limit_);
    } else if (queue < options_.alpha(limit_)) {
      new_limit = limit_ + Log10Floor1(limit_);
    } else if (queue > options_.beta(limit_)) {
      new_limit = limit_ - Log10Floor1(limit_);
    } else {
      return static_cast<int>(limit_);
    }
  }
  new_limit = limit_ * (1 - options_.smoothing) + new_limit * options_.smoothing;
  limit_ = std::clamp<double>(new_limit, options_.min_limit, options_.max_limit);
  return static_cast<int>(limit_);
}

}  // namespace govern::limits
