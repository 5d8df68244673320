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

Syncer::Syncer(int parallel, std::function<int(int fd)> sync_fn)
    : sync_fn_(sync_fn ? std::move(sync_fn) : [](int fd) { return ::fdatasync(fd); }) {
  for (int i = 1; i < parallel; i++) helpers_.emplace_back([this] { Helper(); });
  thread_ = std::thread([this] { Loop(); });  // last: it uses every member above
}

Syncer::~Syncer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  {
    std::lock_guard<std::mutex> lock(work_mu_);
    work_stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : helpers_) t.join();
}

Status Syncer::SyncOne(SyncFile* f) {
  if (sync_fn_(f->fd()) != 0) return Internal(std::string("fdatasync: ") + std::strerror(errno));
  return OkStatus();
}

void Syncer::Helper() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(work_mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return work_stop_ || generation_ != seen; });
    if (work_stop_) return;
    seen = generation_;
    while (work_ && next_ < work_->size()) {
      SyncFile* f = (*work_)[next_++];
      lock.unlock();
      Status s = SyncOne(f);
      lock.lock();
      if (!s.ok() && work_status_.ok()) work_status_ = s;
      if (--remaining_ == 0) work_done_cv_.notify_all();
    }
  }
}

Status Syncer::SyncAll(const std::vector<SyncFile*>& files) {
  if (files.size() == 1 || helpers_.empty()) {
    Status status;
    for (SyncFile* f : files) {
      Status s = SyncOne(f);
      if (!s.ok() && status.ok()) status = s;
    }
    return status;
  }
  std::unique_lock<std::mutex> lock(work_mu_);
  work_ = &files;
  next_ = 0;
  remaining_ = files.size();
  work_status_ = OkStatus();
  generation_++;
  work_cv_.notify_all();
  while (next_ < files.size()) {  // this thread syncs too
    SyncFile* f = files[next_++];
    lock.unlock();
    Status s = SyncOne(f);
    lock.lock();
    if (!s.ok() && work_status_.ok()) work_status_ = s;
    remaining_--;
  }
  work_done_cv_.wait(lock, [&] { return remaining_ == 0; });
  work_ = nullptr;
  return work_status_;
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
    std::unordered_set<SyncFile*> seen;
    std::vector<SyncFile*> files;
    for (const Pending& p : round)
      if (p.file && seen.insert(p.file.get()).second) files.push_back(p.file.get());
    Status status = SyncAll(files);
    syncs_.fetch_add(files.size(), std::memory_order_relaxed);
    rounds_.fetch_add(1, std::memory_order_relaxed);
    for (Pending& p : round)
      if (p.done) p.done(status);
    round.clear();
  }
}

}  // namespace govern::streams
