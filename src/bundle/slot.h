// BundleSlot<T>: the bundle a service decides from, swapped atomically while decisions continue.
//
// A slot holds one immutable Loaded {bundle, value}, where value is what the consumer compiled from the
// bundle (policy: the parsed and indexed policy set). Both are published together as one
// shared_ptr<const Loaded>, so a reader sees one bundle and its own compiled value, never a mix.
//
// Offer(archive) verifies the archive against the slot's trust store with the loaded version as the
// minimum, calls the builder to compile it (a builder error refuses the bundle as Reason::kRejected),
// and only then publishes it. A refused offer changes nothing: the old bundle keeps serving, and the
// reason is kept in stats(). Equal version: the same manifest bytes are "unchanged" (ok, no swap, as a
// poll that fetched the same bundle again); different content under the loaded version number is
// kVersionReplayed. Offers are serialised among themselves (a mutex; never taken by readers).
//
// Reading: Load() is an atomic shared_ptr load (libstdc++ guards it with a short internal spin, never
// a sleeping lock). The hot path is a Reader, one per thread: Get() costs one acquire load of a
// generation counter and returns its cached pointer unless a swap happened since; it touches no lock and
// no reference count. A Reader keeps the bundle it last returned alive until its next Get() after a
// swap, or until it is destroyed. A Reader must not outlive its slot and is used by one thread at a
// time; the slot itself is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "base/status.h"
#include "bundle/bundle.h"

namespace govern::bundle {

template <typename T>
class BundleSlot {
 public:
  struct Loaded {
    std::shared_ptr<const Bundle> bundle;
    T value;
  };
  // Compiles a verified bundle into what readers use; an error refuses the bundle.
  using Builder = std::function<Result<T>(const Bundle&)>;

  struct Stats {
    uint64_t version = 0;    // of the loaded bundle; 0 before any
    uint64_t accepted = 0;   // offers that swapped a bundle in
    uint64_t unchanged = 0;  // offers of the bundle already loaded
    uint64_t refused = 0;
    Reason last_reason = Reason::kOk;  // of the last refused offer
    std::string last_error;            // its Verdict::ToString(), empty when none was ever refused
  };

  // `options.min_version` applies to the first bundle; later offers must be at least the loaded one.
  BundleSlot(TrustStore trust, VerifyOptions options, Builder build)
      : trust_(std::move(trust)), options_(std::move(options)), build_(std::move(build)) {}
  BundleSlot(const BundleSlot&) = delete;
  BundleSlot& operator=(const BundleSlot&) = delete;

  // The loaded bundle and value, or nullptr before the first accepted offer.
  std::shared_ptr<const Loaded> Load() const { return current_.load(std::memory_order_acquire); }

  // Verifies, builds and swaps in `archive` (see the class comment). Returns the verdict: ok with the
  // bundle now loaded, or the reason for refusing it.
  Verdict Offer(std::string_view archive) {
    std::lock_guard<std::mutex> lock(offer_mu_);
    std::shared_ptr<const Loaded> old = current_.load(std::memory_order_acquire);
    VerifyOptions opts = options_;
    if (old) opts.min_version = old->bundle->version();
    Verdict v = Verify(archive, trust_, opts);
    if (v.ok() && old && v.bundle->version() == old->bundle->version()) {
      if (v.bundle->digest() == old->bundle->digest()) {
        ++stats_.unchanged;
        v.bundle = old->bundle;
        v.detail = "unchanged: version " + std::to_string(old->bundle->version()) + " is already loaded";
        return v;
      }
      v = Verdict{Reason::kVersionReplayed,
                  "version " + std::to_string(old->bundle->version()) +
                      " is loaded with different content; a new bundle needs a higher version",
                  nullptr};
    }
    if (v.ok()) {
      Result<T> built = build_(*v.bundle);
      if (built.ok()) {
        auto next = std::make_shared<const Loaded>(Loaded{v.bundle, std::move(*built)});
        current_.store(std::move(next), std::memory_order_release);
        generation_.fetch_add(1, std::memory_order_release);
        ++stats_.accepted;
        stats_.version = v.bundle->version();
        return v;
      }
      v = Verdict{Reason::kRejected, built.status().message(), nullptr};
    }
    ++stats_.refused;
    stats_.last_reason = v.reason;
    stats_.last_error = v.ToString();
    return v;
  }

  // Replaces the trusted keys for later offers (key rotation: add the new key, later drop the old one).
  // The loaded bundle keeps serving whoever signed it.
  void SetTrust(TrustStore trust) {
    std::lock_guard<std::mutex> lock(offer_mu_);
    trust_ = std::move(trust);
  }

  Stats stats() const {
    std::lock_guard<std::mutex> lock(offer_mu_);
    return stats_;
  }

  // A per-thread cached view of the slot (see the class comment).
  class Reader {
   public:
    explicit Reader(const BundleSlot& slot) : slot_(&slot) {}
    // The loaded bundle and value (nullptr before the first), valid until the next Get().
    const Loaded* Get() {
      uint64_t g = slot_->generation_.load(std::memory_order_acquire);
      if (g != generation_) {
        cached_ = slot_->Load();
        generation_ = g;
      }
      return cached_.get();
    }

   private:
    const BundleSlot* slot_;
    uint64_t generation_ = ~uint64_t{0};
    std::shared_ptr<const Loaded> cached_;
  };

 private:
  TrustStore trust_;  // guarded by offer_mu_
  const VerifyOptions options_;
  const Builder build_;
  std::atomic<std::shared_ptr<const Loaded>> current_;
  // Bumped after each swap; Readers compare it to decide whether to reload.
  std::atomic<uint64_t> generation_{0};
  mutable std::mutex offer_mu_;
  Stats stats_;
};

}  // namespace govern::bundle
