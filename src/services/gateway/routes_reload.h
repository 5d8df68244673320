// Reloading the gateway's routes file without a restart: the routes (deployments, retries, fallbacks,
// breakers), virtual keys, prices and DLP rules are re-read when the file changes (its modification
// time, size or inode, polled every `interval`) and on request (`ReloadNow`: SIGHUP to `govern serve
// gateway`).
//
// Promises:
//  - A new file is checked whole before anything changes (ParseProxyConfig: every route, key, price and
//    DLP profile; the budgets; the longest answer its routes can take, with the provider client's
//    timeouts in force, against the server's handler timeout). A file that fails is logged with the field
//    named and the routes in place stay: a file is never half applied.
//  - What Proxy::Reload keeps: requests in flight finish on the routes they began with; deployments still
//    configured keep their breaker state and calls in flight; keys keep their rate-limit buckets.
//  - Budgets and the upstream and usage settings are not reloaded: a changed "budgets" is logged and
//    takes effect at the next start (the leases held in PostgreSQL are per budget).
//  - A file that changed but failed is reported once, not at every poll; writing it again (fixed) is
//    picked up at the next poll. Replace the file atomically (write a new one and rename it over the
//    old) so a poll never reads it half written; a half-written file fails the check and is read again
//    when it changes.
//
// Thread-safety: ReloadNow and CheckOnce may be called from any thread (one reload at a time); Start and
// Stop from the owner.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"
#include "config/config.h"
#include "services/gateway/proxy.h"

namespace govern::gateway {

// Declares gateway.routes_reload_interval (in the gateway service's DeclareConfig).
void DeclareRoutesReloadConfig(config::Schema& schema);

struct RoutesReloadOptions {
  std::string file;
  std::chrono::milliseconds interval{std::chrono::seconds(5)};  // 0: no polling, ReloadNow only
  // The server's handler timeout: a file whose routes can take longer over a whole answer
  // (LongestAnswerTime) is refused, since the server's timeout is set at start. 0: not checked.
  std::chrono::milliseconds max_answer_time{0};
  // The provider client's settings in force (the service's gateway.upstream_* keys, not the file's): the
  // timeouts the check above counts with.
  UpstreamOptions upstream;
  // The file's text at start, to tell whether its budgets changed.
  std::string initial_text;
};

class RoutesReloader {
 public:
  // `proxy` must outlive the reloader.
  RoutesReloader(Proxy& proxy, RoutesReloadOptions options);
  ~RoutesReloader();
  RoutesReloader(const RoutesReloader&) = delete;
  RoutesReloader& operator=(const RoutesReloader&) = delete;

  // Starts the polling thread (when interval > 0).
  void Start();
  void Stop();

  // Reads the file now and applies it if it passes the checks; the error otherwise (logged; the routes
  // in place stay).
  Status ReloadNow();
  // One poll: ReloadNow when the file changed since it was last read; OK when it did not.
  Status CheckOnce();

  uint64_t reloads() const;   // files applied
  uint64_t failures() const;  // files refused

 private:
  struct Identity {
    int64_t mtime_ns = -1, size = -1;
    uint64_t inode = 0, device = 0;
    bool operator==(const Identity&) const = default;
  };
  static Identity Stat(const std::string& file);
  Status Apply(const Identity& seen);
  void Loop();

  Proxy& proxy_;
  RoutesReloadOptions options_;
  mutable std::mutex mu_;  // guards below; held across a reload (one at a time)
  Identity last_;          // of the file last read, applied or not
  uint64_t reloads_ = 0, failures_ = 0;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace govern::gateway
