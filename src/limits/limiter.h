// Limiter: load shedding for every request (implements net::Admission).
//
// An adaptive concurrency limit (a LimitAlgorithm, Gradient2 by default) caps how many requests run
// at once. Each request class may use only a fraction of it, so when the server is saturated bulk work
// is refused first and interactive work keeps headroom:
//   kHealth       never shed, not counted against the limit (probes must answer under any load);
//   kInteractive  up to 100% of the limit (sign-in, a person waiting);
//   kNormal       up to 90%;
//   kBulk         up to 60% (batch ingest, exports).
// A class's fraction bounds the *total* in flight at the moment it is admitted: bulk is admitted only
// while fewer than 60% of the limit are busy, whatever their class.
//
// Organisation share: while organisations compete (a request of an organisation was refused when that
// organisation held less than its share), each organisation may hold at most `org_share` of the limit,
// for `fairness_hold` after the last such refusal. So one organisation alone may use the whole limit,
// but once a second organisation is being turned away the first is held to its share as its requests
// finish, and the second gets in. Organisations are kept in a fixed table of `org_slots` slots chosen
// by a hash of the name: two organisations that collide share one slot and one share (with the default
// 256 slots and n active organisations, the chance that a given one shares is about n/256). Requests
// without an organisation count only against the global limit.
//
// Latency samples come from Release(): now - ticket.start_nanos on the injected Clock. Samples are
// summed with atomics into a window; when a window closes (at least `window_min_samples` samples and
// its time is up), whichever Release gets the update lock with try_lock hands the window to the
// algorithm, and the others carry on. TryAdmit is a few atomic operations and never blocks or
// allocates. Thread-safe: every method may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "limits/limit_algorithm.h"
#include "net/admission.h"

namespace govern::limits {

struct LimiterOptions {
  // Default: Gradient2Limit with its default options.
  std::unique_ptr<LimitAlgorithm> algorithm;
  // Share of the limit each class may fill, indexed by net::RequestClass (kHealth's entry is ignored).
  std::array<double, 4> class_fraction = {1.0, 1.0, 0.9, 0.6};
  // Share of the limit one organisation may hold while organisations compete.
  double org_share = 0.5;
  int org_slots = 256;
  // How long organisations stay held to their share after an organisation below its share was refused.
  int64_t fairness_hold_nanos = 2'000'000'000;
  // A window closes after this many samples and once its time is up; its length is twice the lowest RTT
  // of the previous window, kept within [window_min, window_max] (as Netflix's WindowedLimit does).
  int window_min_samples = 10;
  int64_t window_min_nanos = 50'000'000;
  int64_t window_max_nanos = 1'000'000'000;
  // Samples below this RTT are ignored (cached or trivially cheap answers say nothing about load).
  int64_t min_rtt_nanos = 0;
  // Upper bound on RetryAfterSeconds().
  int max_retry_after_seconds = 30;
};

// Counters for /metrics and tests. Read without a lock, so fields may be from slightly different moments.
struct LimiterStats {
  int limit = 0;
  int64_t inflight = 0;  // counted requests in flight (health excluded)
  std::array<int64_t, 4> inflight_by_class{};
  std::array<int64_t, 4> admitted_by_class{};
  std::array<int64_t, 4> shed_by_class{};
  int64_t shed_by_org_share = 0;   // of the above, refused because of the organisation share
  int64_t windows = 0;             // windows handed to the algorithm
  int64_t release_underflows = 0;  // Release() calls that found nothing to release (caller bug)
  bool org_fairness_active = false;
};

class Limiter final : public net::Admission {
 public:
  explicit Limiter(const Clock& clock, LimiterOptions options = {});
  ~Limiter() override;

  net::AdmissionTicket TryAdmit(net::RequestClass cls, std::string_view org) override;
  void Release(const net::AdmissionTicket& ticket, bool ok) override;
  // About twice the recent mean RTT, rounded up to whole seconds (at least 1), doubled while most
  // requests of the last window were shed; capped at max_retry_after_seconds.
  int RetryAfterSeconds() const override;

  int limit() const { return limit_.load(std::memory_order_relaxed); }
  int64_t inflight() const { return inflight_.load(std::memory_order_relaxed); }
  // Requests in flight for an organisation slot as numbered in tickets (1-based; 0 means none).
  int64_t org_inflight(uint32_t slot) const;
  uint32_t OrgSlot(std::string_view org) const;
  LimiterStats Stats() const;
  const LimitAlgorithm& algorithm() const { return *algorithm_; }

 private:
  struct alignas(64) OrgSlotState {
    std::atomic<int64_t> inflight{0};
  };

  int ClassCap(net::RequestClass cls, int limit) const;
  bool TryAcquire(std::atomic<int64_t>& counter, int64_t cap);
  static bool ReleaseOne(std::atomic<int64_t>& counter);
  void RecordSample(int64_t now, int64_t rtt, int64_t inflight_before, bool ok);
  void MaybeCloseWindow(int64_t now);

  const Clock& clock_;
  LimiterOptions options_;
  std::unique_ptr<LimitAlgorithm> algorithm_;

  alignas(64) std::atomic<int> limit_;
  alignas(64) std::atomic<int64_t> inflight_{0};
  std::array<std::atomic<int64_t>, 4> inflight_by_class_{};
  std::array<std::atomic<int64_t>, 4> admitted_by_class_{};
  std::array<std::atomic<int64_t>, 4> shed_by_class_{};
  std::atomic<int64_t> shed_by_org_share_{0};
  std::atomic<int64_t> release_underflows_{0};
  std::atomic<int64_t> fair_until_nanos_{0};
  std::vector<OrgSlotState> org_slots_;

  // The open window, filled by Release with atomics.
  alignas(64) std::atomic<int64_t> win_samples_{0};
  std::atomic<int64_t> win_rtt_sum_{0};
  std::atomic<int64_t> win_min_rtt_{INT64_MAX};
  std::atomic<int64_t> win_max_inflight_{0};
  std::atomic<int64_t> win_drops_{0};
  std::atomic<int64_t> win_shed_{0};
  std::atomic<int64_t> win_end_nanos_;
  // Results of the last closed window, for RetryAfterSeconds().
  std::atomic<int64_t> last_avg_rtt_{0};
  std::atomic<bool> last_mostly_shed_{false};
  std::atomic<int64_t> windows_{0};

  std::mutex update_mu_;  // held (try_lock) while a window is handed to the algorithm
};

}  // namespace govern::limits
