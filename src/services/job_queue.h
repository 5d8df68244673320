// JobQueue: a few threads that run HTTP handlers' blocking work (PostgreSQL, password hashes), so an
// event loop never waits on it and the number of such jobs running at once is bounded. Bounded queue:
// Post refuses work beyond `max_queued` (the caller answers 503). Thread-safe; Stop (also the
// destructor) runs what is queued, then joins. One queue for every service (policy server and sidecar,
// auth, audit, dns).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace govern::services {

class JobQueue {
 public:
  JobQueue(int threads, size_t max_queued) : max_queued_(max_queued) {
    for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Run(); });
  }
  ~JobQueue() { Stop(); }
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  // False (and `job` not run) when the queue is full or stopped.
  bool Post(std::function<void()> job) {
    {
      std::lock_guard lk(mu_);
      if (stop_ || jobs_.size() >= max_queued_) return false;
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
    return true;
  }

  void Stop() {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
    threads_.clear();
  }

 private:
  void Run() {
    std::unique_lock lk(mu_);
    for (;;) {
      cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lk.unlock();
      job();
      lk.lock();
    }
  }

  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace govern::services
