// Workers: a few threads that run the handlers' PostgreSQL and Argon2id work, so an event loop never
// waits on the database or a password hash, and the number of hashes running at once is bounded (a
// flood of sign-ins queues here instead of taking every core). Bounded queue: Post refuses work beyond
// `max_queued` (the caller answers 503). Thread-safe; Stop (also the destructor) runs what is queued,
// then joins. (The policy server has the same small queue in its own folder; services do not include
// each other.)
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace govern::auth_service {

class Workers {
 public:
  Workers(int threads, size_t max_queued) : max_queued_(max_queued) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
  }
  ~Workers() { Stop(); }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

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
      if (jobs_.empty()) return;
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

}  // namespace govern::auth_service
