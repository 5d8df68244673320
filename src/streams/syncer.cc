// Group commit for one log directory (see syncer.h).
#include "streams/syncer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_set>

namespace govern::streams {

SyncFile::~SyncFile() {
  if (fd_ >= 0) ::close(fd_);
}

Syncer::Syncer() : thread_([this] { Loop(); }) {}

Syncer::~Syncer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Syncer::Request(std::shared_ptr<SyncFile> file, std::function<void(Status)> done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back({std::move(file), std::move(done)});
  }
  cv_.notify_one();
}

void Syncer::Loop() {
  std::vector<Pending> round;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stop_ and nothing left
      round.swap(pending_);
    }
    std::unordered_set<SyncFile*> synced;
    Status status;
    for (const Pending& p : round) {
      if (!p.file || !synced.insert(p.file.get()).second) continue;
      if (::fdatasync(p.file->fd()) != 0 && status.ok())
        status = Internal(std::string("fdatasync: ") + std::strerror(errno));
      syncs_.fetch_add(1, std::memory_order_relaxed);
    }
    rounds_.fetch_add(1, std::memory_order_relaxed);
    for (Pending& p : round)
      if (p.done) p.done(status);
    round.clear();
  }
}

}  // namespace govern::streams
