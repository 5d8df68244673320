// Syncer: group commit for one log directory. Appenders write to their files (page cache) and then ask
// the syncer to call them back once those bytes are on disk. One thread per Syncer loops: it takes every
// request that arrived since its last round, fdatasyncs each distinct file written once, and completes
// all of those requests. Requests that arrive while a round is syncing wait for the next round, so many
// producers share a few syncs and nobody waits for a timer.
//
// Thread-safe: Request may be called from any thread; callbacks run on the syncer's thread, in request
// order, and must not block long.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/status.h"

namespace govern::streams {

// An open file whose descriptor outlives its directory entry while anyone (a pending sync, a reader)
// holds it. Closes on destruction.
class SyncFile {
 public:
  explicit SyncFile(int fd) : fd_(fd) {}
  ~SyncFile();
  SyncFile(const SyncFile&) = delete;
  SyncFile& operator=(const SyncFile&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

class Syncer {
 public:
  Syncer();
  ~Syncer();  // completes every request still pending (after a final sync), then joins
  Syncer(const Syncer&) = delete;
  Syncer& operator=(const Syncer&) = delete;

  // Calls `done` once every write to `file` made before this call is durable (fdatasync returned), or
  // with the error when the sync failed. A null `file` syncs nothing: `done` runs after every earlier
  // request's callback (a way to release what those callbacks point into).
  void Request(std::shared_ptr<SyncFile> file, std::function<void(Status)> done);

  uint64_t syncs() const { return syncs_.load(std::memory_order_relaxed); }
  uint64_t rounds() const { return rounds_.load(std::memory_order_relaxed); }

 private:
  struct Pending {
    std::shared_ptr<SyncFile> file;
    std::function<void(Status)> done;
  };
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Pending> pending_;
  bool stop_ = false;
  std::atomic<uint64_t> syncs_{0};
  std::atomic<uint64_t> rounds_{0};
  std::thread thread_;
};

}  // namespace govern::streams
