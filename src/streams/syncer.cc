// Group commit for one log directory, with pipelined rounds (see syncer.h).
#include "streams/syncer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <unordered_set>
#include <utility>

namespace govern::streams {

SyncFile::~SyncFile() {
  for (int fd : slot_fds_)
    if (fd >= 0) ::close(fd);
  if (fd_ >= 0) ::close(fd_);
}

Syncer::Syncer(int parallel, std::function<int(int fd)> sync_fn, int depth)
    : sync_fn_(sync_fn ? std::move(sync_fn) : [](int fd) { return ::fdatasync(fd); }),
      depth_(depth < 1 ? 1 : static_cast<size_t>(depth)) {
  // Enough workers that every round in flight syncs `parallel` files at once.
  const size_t workers = (parallel < 1 ? 1 : static_cast<size_t>(parallel)) * depth_;
  for (size_t i = 0; i < workers; i++) workers_.emplace_back([this] { Worker(); });
  thread_ = std::thread([this] { Loop(); });  // last: it uses every member above
}

Syncer::~Syncer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();  // returns once nothing is pending or in flight
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers_stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void Syncer::Request(std::shared_ptr<SyncFile> file, std::function<void(Status)> done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back({std::move(file), std::move(done), std::chrono::steady_clock::now()});
  }
  cv_.notify_one();
}

void Syncer::Worker() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return workers_stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // workers_stop_: the loop has completed everything
    Job job = jobs_.front();
    jobs_.pop_front();
    lock.unlock();
    Status status;
    const auto start = std::chrono::steady_clock::now();
    if (job.fd < 0) {
      status = Internal(std::string("reopen for sync: ") + std::strerror(-job.fd));
    } else if (sync_fn_(job.fd) != 0) {
      status = Internal(std::string("fdatasync: ") + std::strerror(errno));
    }
    // Set before this round can complete, so every round completing after it sees the failure too.
    if (!status.ok()) job.file->MarkFailed();
    syncs_.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> l(stats_mu_);
      Record(sync_hist_, std::chrono::steady_clock::now() - start);
    }
    lock.lock();
    if (!status.ok() && job.round->status.ok()) job.round->status = status;
    if (--job.round->remaining == 0) {
      {
        std::lock_guard<std::mutex> l(stats_mu_);
        Record(round_hist_, std::chrono::steady_clock::now() - job.round->started);
      }
      cv_.notify_all();
    }
  }
}

void Syncer::StartRound(std::unique_lock<std::mutex>& lock) {
  auto round = std::make_unique<Round>();
  round->waiters.swap(pending_);
  const size_t slot = started_++ % depth_;
  const bool overlapped = !in_flight_.empty();
  // Only this thread adds to or removes from in_flight_ and opens slot descriptors: the rest runs unlocked.
  lock.unlock();
  std::unordered_set<SyncFile*> seen;
  std::vector<Job> jobs;
  for (const Pending& p : round->waiters) {
    SyncFile* f = p.file.get();
    if (!f || !seen.insert(f).second) continue;
    round->files.push_back(f);
    if (depth_ == 1) {
      // One round at a time: the writer's own descriptor, as before pipelining (no /proc, no extra
      // descriptor per file; a writeback error is reported to it once, to the one round syncing it).
      jobs.push_back({round.get(), f, f->fd()});
      continue;
    }
    if (f->slot_fds_.size() < depth_) f->slot_fds_.resize(depth_, -1);
    int& fd = f->slot_fds_[slot];
    if (fd < 0) {
      // A description of our own (not dup: that would share the original's error state). Rounds that
      // share this slot never overlap: round n+depth starts after round n completed.
      const std::string path = "/proc/self/fd/" + std::to_string(f->fd());
      int opened = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (opened < 0) {
        jobs.push_back({round.get(), f, -errno});  // fails this round; the next one tries again
        continue;
      }
      fd = opened;
    }
    jobs.push_back({round.get(), f, fd});
  }
  round->remaining = jobs.size();
  round->started = std::chrono::steady_clock::now();
  lock.lock();
  in_flight_.push_back(std::move(round));
  for (const Job& j : jobs) jobs_.push_back(j);
  rounds_.fetch_add(1, std::memory_order_relaxed);
  if (overlapped) overlapped_.fetch_add(1, std::memory_order_relaxed);
  if (!jobs.empty()) work_cv_.notify_all();
}

void Syncer::Record(Histogram& h, std::chrono::steady_clock::duration d) {
  const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  const int64_t last = static_cast<int64_t>(h.buckets.size()) - 1;
  h.buckets[static_cast<size_t>(std::clamp<int64_t>(us / 100, 0, last))]++;
  h.max_us = std::max(h.max_us, us);
}

double Syncer::Quantile(const Histogram& h, double q) {
  uint64_t total = 0;
  for (uint64_t n : h.buckets) total += n;
  if (total == 0) return 0;
  const auto rank = static_cast<uint64_t>(q * static_cast<double>(total - 1));
  uint64_t seen = 0;
  for (size_t i = 0; i < h.buckets.size(); i++) {
    seen += h.buckets[i];
    if (seen > rank) return static_cast<double>(i + 1) / 10;  // the bucket's upper edge, in ms
  }
  return static_cast<double>(h.buckets.size()) / 10;
}

double Syncer::Max(const Histogram& h) { return static_cast<double>(h.max_us) / 1000; }

Syncer::Stats Syncer::stats() const {
  Stats s;
  s.syncs = syncs();
  s.rounds = rounds();
  s.overlapped_rounds = overlapped_rounds();
  std::lock_guard<std::mutex> l(stats_mu_);
  for (uint64_t n : wait_hist_.buckets) s.requests += n;
  s.wait_p50_ms = Quantile(wait_hist_, 0.5);
  s.wait_p99_ms = Quantile(wait_hist_, 0.99);
  s.sync_p50_ms = Quantile(sync_hist_, 0.5);
  s.sync_p99_ms = Quantile(sync_hist_, 0.99);
  s.round_p50_ms = Quantile(round_hist_, 0.5);
  s.round_p99_ms = Quantile(round_hist_, 0.99);
  s.wait_max_ms = Max(wait_hist_);
  s.sync_max_ms = Max(sync_hist_);
  s.round_max_ms = Max(round_hist_);
  return s;
}

void Syncer::Complete(Round& round) {
  Status status = round.status;
  // A sync of one of these files failed in an earlier round or outside the Syncer: this round's fdatasync
  // may have returned 0 only because that error was reported elsewhere.
  if (status.ok())
    for (SyncFile* f : round.files)
      if (f->failed()) {
        status = Internal("fdatasync failed earlier on this file");
        break;
      }
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> l(stats_mu_);
    for (const Pending& p : round.waiters)
      if (p.file) Record(wait_hist_, now - p.since);
  }
  for (Pending& p : round.waiters)
    if (p.done) p.done(status);
}

void Syncer::CloseSealed(const Round& done) {
  for (SyncFile* f : done.files) {
    if (!f->sealed_.load(std::memory_order_acquire) || f->slot_fds_.empty()) continue;
    // Rounds in flight are added and removed by this thread only, and their file lists never change.
    bool in_use = false;
    for (const auto& r : in_flight_)
      for (SyncFile* g : r->files) in_use = in_use || g == f;
    if (in_use) continue;
    for (int& fd : f->slot_fds_)
      if (fd >= 0) ::close(std::exchange(fd, -1));
  }
}

void Syncer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] {
      return (!in_flight_.empty() && in_flight_.front()->remaining == 0) ||
             (!pending_.empty() && in_flight_.size() < depth_) ||
             (stop_ && pending_.empty() && in_flight_.empty());
    });
    if (!in_flight_.empty() && in_flight_.front()->remaining == 0) {
      std::unique_ptr<Round> done = std::move(in_flight_.front());
      in_flight_.pop_front();
      // The next round starts before these callbacks run, so its sync does not wait for them.
      if (!pending_.empty() && in_flight_.size() < depth_) StartRound(lock);
      lock.unlock();
      Complete(*done);
      CloseSealed(*done);
      done.reset();  // may close files: off the lock
      lock.lock();
      continue;
    }
    if (!pending_.empty() && in_flight_.size() < depth_) {
      StartRound(lock);
      continue;
    }
    return;  // stop_, and nothing pending or in flight
  }
}

}  // namespace govern::streams
