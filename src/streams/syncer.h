// Syncer: group commit for one log directory. Appenders write to their files (page cache) and then ask
// the syncer to call them back once those bytes are on disk. A round takes every request that arrived
// since the last round started and fdatasyncs each distinct file written once. Rounds may be pipelined:
// with depth > 1 a new round starts as soon as a request arrives while fewer than `depth` rounds are in
// flight, without waiting for the round that is syncing, so a produce waits about one sync instead of
// the rest of the round in flight plus its own (the default depth is 1, see kDefaultDepth). Either way a
// request is covered only by a round that starts after it, never by a sync that began before its write,
// and many producers share a few syncs: everything that arrives while `depth` rounds are in flight waits
// for the next one.
//
// Concurrent syncs of one file (depth > 1; depth 1 syncs the writer's own descriptor): each of the
// `depth` round slots syncs through its own open file description of the file (opened through
// /proc/self/fd), because the kernel reports a writeback error
// once per description: two syncs sharing one description could both return 0 after one of them
// swallowed the error. A failed sync marks the file failed for good, and every round completing after
// that (rounds complete in start order) that covers the file reports the error too.
//
// Thread-safe: Request may be called from any thread; callbacks run on the syncer's thread, in request
// order, and must not block long.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
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

  // A sync of this file failed outside the Syncer (e.g. when sealing a segment): requests still waiting
  // on it, and every later one, complete with an error (the page cache can no longer be trusted).
  void MarkFailed() { failed_.store(true, std::memory_order_release); }
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // No more writes will come (a sealed segment, already synced by its owner): the Syncer closes its own
  // descriptions of the file once no round in flight uses them, instead of holding them while the file
  // lives (a later request would open them again).
  void Seal() { sealed_.store(true, std::memory_order_release); }

 private:
  friend class Syncer;
  int fd_;
  std::atomic<bool> failed_{false};
  std::atomic<bool> sealed_{false};
  std::vector<int> slot_fds_;  // the Syncer's own descriptions, one per round slot; its thread only
};

class Syncer {
 public:
  // `parallel`: how many files one round syncs at once. Concurrent fdatasyncs on one file system share
  // its journal commits, so a round over several partitions' segments costs about one sync, not one each.
  // `sync_fn` makes one file durable (fdatasync; a test passes its own to watch what was durable when);
  // it gets a descriptor of the file, not necessarily SyncFile::fd().
  // `depth`: how many rounds may sync at once (1: a round starts only after the previous one ended).
  explicit Syncer(int parallel = 8, std::function<int(int fd)> sync_fn = nullptr, int depth = kDefaultDepth);
  ~Syncer();  // completes every request still pending (after a final sync), then joins
  Syncer(const Syncer&) = delete;
  Syncer& operator=(const Syncer&) = delete;

  // 1: measured on ext4 (docs/benchmarks.md, streams), overlapping syncs queue behind one journal commit,
  // so depth 2 made more, slower syncs (64 producers with 64-record batches lost ~14 %) and the batching
  // producer's rounds almost never overlapped; a disk with independent flushes may want 2.
  static constexpr int kDefaultDepth = 1;

  // Calls `done` once every write to `file` made before this call is durable (an fdatasync that started
  // after this call returned), or with the error when the sync failed. A null `file` syncs nothing:
  // `done` runs after every earlier request's callback (a way to release what those callbacks point into).
  void Request(std::shared_ptr<SyncFile> file, std::function<void(Status)> done);

  // What the rounds cost so far: a request's wait (Request to its callback), one file's sync and one
  // round (all its files, in parallel), as
  // quantiles of histograms with 0.1 ms buckets (capped at 1 s).
  struct Stats {
    uint64_t syncs = 0, rounds = 0, overlapped_rounds = 0, requests = 0;
    double wait_p50_ms = 0, wait_p99_ms = 0, sync_p50_ms = 0, sync_p99_ms = 0;
    double round_p50_ms = 0, round_p99_ms = 0;  // a round's first sync started to its last returned
    // The longest of each (exact, not capped): one stalled round holds every request that arrives
    // meanwhile, so a few stalls make the requests' p99 while the rounds' p99 stays low.
    double wait_max_ms = 0, sync_max_ms = 0, round_max_ms = 0;
  };
  Stats stats() const;

  uint64_t syncs() const { return syncs_.load(std::memory_order_relaxed); }
  uint64_t rounds() const { return rounds_.load(std::memory_order_relaxed); }
  // Rounds that started while an earlier round was still syncing.
  uint64_t overlapped_rounds() const { return overlapped_.load(std::memory_order_relaxed); }

 private:
  struct Pending {
    std::shared_ptr<SyncFile> file;
    std::function<void(Status)> done;
    std::chrono::steady_clock::time_point since;
  };
  struct Histogram {
    std::array<uint64_t, 10001> buckets{};  // 0.1 ms buckets, the last one for 1 s and more
    int64_t max_us = 0;                     // exact: a stall past the last bucket still shows
  };
  static void Record(Histogram& h, std::chrono::steady_clock::duration d);
  static double Quantile(const Histogram& h, double q);
  static double Max(const Histogram& h);
  struct Round {
    std::vector<Pending> waiters;
    std::vector<SyncFile*> files;  // distinct; kept alive by `waiters`
    size_t remaining = 0;          // syncs not yet returned
    Status status;                 // the first failed sync's error
    std::chrono::steady_clock::time_point started;
  };
  struct Job {
    Round* round;
    SyncFile* file;
    int fd;  // the slot's description of `file`, or -1 when it could not be opened
  };
  void Loop();
  void Worker();
  // Takes every pending request as a new round and queues its syncs. Called with mu_ held.
  void StartRound(std::unique_lock<std::mutex>& lock);
  void Complete(Round& round);
  // Closes the slot descriptions of `done`'s sealed files that no round in flight uses. Loop thread only.
  void CloseSealed(const Round& done);

  std::function<int(int)> sync_fn_;
  const size_t depth_;
  std::mutex mu_;
  std::condition_variable cv_;       // Loop: a request arrived, a round finished, or stop
  std::condition_variable work_cv_;  // workers: a job was queued, or stop
  std::vector<Pending> pending_;
  std::deque<std::unique_ptr<Round>> in_flight_;  // in start order
  std::deque<Job> jobs_;
  uint64_t started_ = 0;  // rounds started; round n uses slot n % depth_
  bool stop_ = false, workers_stop_ = false;
  std::atomic<uint64_t> syncs_{0};
  std::atomic<uint64_t> rounds_{0};
  std::atomic<uint64_t> overlapped_{0};
  mutable std::mutex stats_mu_;
  Histogram wait_hist_{}, sync_hist_{}, round_hist_{};
  std::vector<std::thread> workers_;
  std::thread thread_;
};

}  // namespace govern::streams
