// The Limiter's hot path (TryAdmit/Release: atomics only) and its window bookkeeping (try_lock'd).
#include "limits/limiter.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace govern::limits {
namespace {

size_t ClassIndex(net::RequestClass cls) {
  auto i = static_cast<size_t>(cls);
  return i < 4 ? i : static_cast<size_t>(net::RequestClass::kBulk);  // unknown values: treat as bulk
}

void StoreMax(std::atomic<int64_t>& a, int64_t v) {
  int64_t cur = a.load(std::memory_order_relaxed);
  while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

void StoreMin(std::atomic<int64_t>& a, int64_t v) {
  int64_t cur = a.load(std::memory_order_relaxed);
  while (cur > v && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

}  // namespace

Limiter::Limiter(const Clock& clock, LimiterOptions options)
    : clock_(clock),
      options_(std::move(options)),
      algorithm_(options_.algorithm ? std::move(options_.algorithm) : std::make_unique<Gradient2Limit>()),
      limit_(std::max(1, algorithm_->initial_limit())),
      org_slots_(static_cast<size_t>(std::max(1, options_.org_slots))),
      win_end_nanos_(clock.MonotonicNanos() + options_.window_min_nanos) {
  for (double& f : options_.class_fraction) f = std::clamp(f, 0.0, 1.0);
  options_.org_share = std::clamp(options_.org_share, 0.0, 1.0);
  options_.window_min_samples = std::max(1, options_.window_min_samples);
  options_.window_max_nanos = std::max(options_.window_min_nanos, options_.window_max_nanos);
  options_.max_retry_after_seconds = std::max(1, options_.max_retry_after_seconds);
}

Limiter::~Limiter() = default;

uint32_t Limiter::OrgSlot(std::string_view org) const {
  return static_cast<uint32_t>(std::hash<std::string_view>{}(org) % org_slots_.size()) + 1;
}

int64_t Limiter::org_inflight(uint32_t slot) const {
  if (slot == 0 || slot > org_slots_.size()) return 0;
  return org_slots_[slot - 1].inflight.load(std::memory_order_relaxed);
}

int Limiter::ClassCap(net::RequestClass cls, int limit) const {
  return std::max(1, static_cast<int>(std::floor(limit * options_.class_fraction[ClassIndex(cls)])));
}

// Takes one unit of `counter` if that keeps it at or below `cap`.
bool Limiter::TryAcquire(std::atomic<int64_t>& counter, int64_t cap) {
  int64_t cur = counter.load(std::memory_order_relaxed);
  while (cur < cap) {
    if (counter.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel, std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

// Gives one unit back, never going below zero (a double Release is counted, not applied).
bool Limiter::ReleaseOne(std::atomic<int64_t>& counter) {
  int64_t cur = counter.load(std::memory_order_relaxed);
  while (cur > 0) {
    if (counter.compare_exchange_weak(cur, cur - 1, std::memory_order_acq_rel, std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

net::AdmissionTicket Limiter::TryAdmit(net::RequestClass cls, std::string_view org) {
  const int64_t now = clock_.MonotonicNanos();
  net::AdmissionTicket ticket;
  ticket.cls = cls;
  ticket.start_nanos = now;
  const size_t idx = ClassIndex(cls);
  if (cls == net::RequestClass::kHealth) {
    ticket.admitted = true;
    admitted_by_class_[idx].fetch_add(1, std::memory_order_relaxed);
    return ticket;
  }

  const int limit = limit_.load(std::memory_order_relaxed);
  const int64_t share_cap = std::max(1, static_cast<int>(std::floor(limit * options_.org_share)));
  const uint32_t slot = org.empty() ? 0 : OrgSlot(org);
  auto shed = [&](bool by_org_share) {
    shed_by_class_[idx].fetch_add(1, std::memory_order_relaxed);
    win_shed_.fetch_add(1, std::memory_order_relaxed);
    if (by_org_share) shed_by_org_share_.fetch_add(1, std::memory_order_relaxed);
    return ticket;
  };

  if (!TryAcquire(inflight_, ClassCap(cls, limit))) {
    // An organisation turned away while below its share is being crowded out by others: hold every
    // organisation to its share for a while.
    if (slot != 0 && org_inflight(slot) < share_cap) {
      fair_until_nanos_.store(now + options_.fairness_hold_nanos, std::memory_order_relaxed);
    }
    return shed(false);
  }
  if (slot != 0) {
    auto& counter = org_slots_[slot - 1].inflight;
    if (fair_until_nanos_.load(std::memory_order_relaxed) > now) {
      if (!TryAcquire(counter, share_cap)) {
        ReleaseOne(inflight_);
        return shed(true);
      }
    } else {
      counter.fetch_add(1, std::memory_order_acq_rel);
    }
    ticket.org_slot = slot;
  }
  inflight_by_class_[idx].fetch_add(1, std::memory_order_relaxed);
  admitted_by_class_[idx].fetch_add(1, std::memory_order_relaxed);
  ticket.admitted = true;
  return ticket;
}

void Limiter::Release(const net::AdmissionTicket& ticket, bool ok) {
  if (!ticket.admitted || ticket.cls == net::RequestClass::kHealth) return;
  const int64_t now = clock_.MonotonicNanos();
  const int64_t inflight_before = inflight_.load(std::memory_order_relaxed);
  bool balanced = ReleaseOne(inflight_);
  balanced &= ReleaseOne(inflight_by_class_[ClassIndex(ticket.cls)]);
  if (ticket.org_slot != 0) {
    balanced &= ticket.org_slot <= org_slots_.size() && ReleaseOne(org_slots_[ticket.org_slot - 1].inflight);
  }
  if (!balanced) {
    release_underflows_.fetch_add(1, std::memory_order_relaxed);
    return;  // not a request we admitted (or released twice): no sample either
  }
  RecordSample(now, now - ticket.start_nanos, inflight_before, ok);
  MaybeCloseWindow(now);
}

void Limiter::RecordSample(int64_t /*now*/, int64_t rtt, int64_t inflight_before, bool ok) {
  StoreMax(win_max_inflight_, inflight_before);
  if (!ok) {
    win_drops_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (rtt < options_.min_rtt_nanos || rtt < 0) return;
  win_rtt_sum_.fetch_add(rtt, std::memory_order_relaxed);
  StoreMin(win_min_rtt_, rtt);
  win_samples_.fetch_add(1, std::memory_order_release);
}

void Limiter::MaybeCloseWindow(int64_t now) {
  if (now < win_end_nanos_.load(std::memory_order_relaxed)) return;
  if (win_samples_.load(std::memory_order_relaxed) + win_drops_.load(std::memory_order_relaxed) <
      options_.window_min_samples) {
    return;
  }
  std::unique_lock<std::mutex> lock(update_mu_, std::try_to_lock);
  if (!lock.owns_lock() || now < win_end_nanos_.load(std::memory_order_relaxed)) return;

  // The accumulators are taken one by one: a Release racing with this may land half in this window and
  // half in the next, which shifts one sample's weight and nothing more.
  LimitSample s;
  s.samples = win_samples_.exchange(0, std::memory_order_acquire);
  const int64_t sum = win_rtt_sum_.exchange(0, std::memory_order_relaxed);
  const int64_t min_rtt = win_min_rtt_.exchange(INT64_MAX, std::memory_order_relaxed);
  s.max_inflight = win_max_inflight_.exchange(0, std::memory_order_relaxed);
  const int64_t drops = win_drops_.exchange(0, std::memory_order_relaxed);
  const int64_t shed = win_shed_.exchange(0, std::memory_order_relaxed);
  s.dropped = drops > 0;
  if (s.samples > 0) {
    s.avg_rtt_nanos = sum / s.samples;
    s.min_rtt_nanos = min_rtt == INT64_MAX ? s.avg_rtt_nanos : min_rtt;
  }
  limit_.store(std::max(1, algorithm_->Update(s)), std::memory_order_relaxed);

  if (s.samples > 0) last_avg_rtt_.store(s.avg_rtt_nanos, std::memory_order_relaxed);
  last_mostly_shed_.store(shed > s.samples + drops, std::memory_order_relaxed);
  windows_.fetch_add(1, std::memory_order_relaxed);
  const int64_t length =
      std::clamp(2 * s.min_rtt_nanos, options_.window_min_nanos, options_.window_max_nanos);
  win_end_nanos_.store(now + length, std::memory_order_relaxed);
}

int Limiter::RetryAfterSeconds() const {
  const double rtt_seconds = static_cast<double>(last_avg_rtt_.load(std::memory_order_relaxed)) / 1e9;
  int seconds = std::max(1, static_cast<int>(std::ceil(2 * rtt_seconds)));
  if (last_mostly_shed_.load(std::memory_order_relaxed)) seconds *= 2;
  return std::min(seconds, options_.max_retry_after_seconds);
}

LimiterStats Limiter::Stats() const {
  LimiterStats st;
  st.limit = limit();
  st.inflight = inflight();
  for (size_t i = 0; i < 4; ++i) {
    st.inflight_by_class[i] = inflight_by_class_[i].load(std::memory_order_relaxed);
    st.admitted_by_class[i] = admitted_by_class_[i].load(std::memory_order_relaxed);
    st.shed_by_class[i] = shed_by_class_[i].load(std::memory_order_relaxed);
  }
  st.shed_by_org_share = shed_by_org_share_.load(std::memory_order_relaxed);
  st.windows = windows_.load(std::memory_order_relaxed);
  st.release_underflows = release_underflows_.load(std::memory_order_relaxed);
  st.org_fairness_active = fair_until_nanos_.load(std::memory_order_relaxed) > clock_.MonotonicNanos();
  return st;
}

}  // namespace govern::limits
