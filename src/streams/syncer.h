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
  // `parallel`: how many files one round syncs at once. Concurrent fdatasyncs on one file system share
  // its journal commits, so a round over several partitions' segments costs about one sync, not one each.
  // `sync_fn` makes one file durable (fdatasync; a test passes its own to watch what was durable when).
  explicit Syncer(int parallel = 8, std::function<int(int fd)> sync_fn = nullptr);
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
  void Helper();
  // Syncs every file of one round, `parallel` at a time; the first error, or ok.
  Status SyncAll(const std::vector<SyncFile*>& files);
  Status SyncOne(SyncFile* f);

  std::function<int(int)> sync_fn_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Pending> pending_;
  bool stop_ = false;
  std::atomic<uint64_t> syncs_{0};
  std::atomic<uint64_t> rounds_{0};
  std::thread thread_;

  // The helpers of one round: they take files from work_ by index until none are left.
  std::mutex work_mu_;
  std::condition_variable work_cv_, work_done_cv_;
  const std::vector<SyncFile*>* work_ = nullptr;
  size_t next_ = 0, remaining_ = 0;
  uint64_t generation_ = 0;
  bool work_stop_ = false;
  Status work_status_;
  std::vector<std::thread> helpers_;
};

}  // namespace govern::streams
