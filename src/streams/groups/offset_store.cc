// OffsetStore (see offset_store.h): an in-memory map made durable by one append-only file with group
// commit on a sync thread, compacted by rewriting a snapshot.
#include "streams/groups/offset_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include "base/file.h"
#include "base/log.h"

namespace govern::streams::groups {
namespace {

constexpr std::string_view kComponent = "streams.groups";
constexpr size_t kSnapshotEntriesPerFrame = 50000;

// Bytes one entry takes in a compacted file, and the fixed bytes of one group's frame.
uint64_t EntryBytes(const TopicPartition& tp, const OffsetValue& v) {
  return 2 + tp.topic.size() + 4 + 8 + 4 + 8 + 8 + 4 + v.metadata.size();
}
uint64_t GroupBytes(const std::string& group) { return kFrameHeaderSize + 1 + 2 + group.size() + 4; }

Status WriteAll(int fd, std::string_view data, const std::string& what) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, "write " + what);
    done += static_cast<size_t>(n);
  }
  return OkStatus();
}

}  // namespace

struct OffsetStore::Impl {
  struct Pending {
    std::string frame;
    OffsetRecord record;
    Done done;
  };

  std::string dir;
  std::string path;
  OffsetStoreOptions options;
  int fd = -1;
  int lock_fd = -1;

  mutable std::mutex mu;
  std::condition_variable work_cv;
  std::condition_variable done_cv;
  std::deque<Pending> queue;
  bool stop = false;
  Status health;
  uint64_t enqueued = 0;
  uint64_t completed = 0;
  std::map<std::string, std::map<TopicPartition, OffsetValue>> offsets;
  uint64_t file_bytes = 0;
  uint64_t live_bytes = kOffsetsFileMagic.size();
  Stats stats;
  std::thread thread;

  ~Impl() {
    if (fd >= 0) ::close(fd);
    if (lock_fd >= 0) ::close(lock_fd);
  }

  // Applies a durable record to the map; caller holds mu (or is Open, before the thread starts).
  void Apply(const OffsetRecord& r) {
    if (r.type == RecordType::kDeleteTopics) {
      // Every group's offsets of these topics, as they stand when the frame is applied (in order after
      // every commit queued before it).
      for (auto git = offsets.begin(); git != offsets.end();) {
        auto& g = git->second;
        for (auto it = g.begin(); it != g.end();) {
          bool hit = std::any_of(r.deletes.begin(), r.deletes.end(),
                                 [&](const TopicPartition& d) { return d.topic == it->first.topic; });
          if (!hit) {
            ++it;
            continue;
          }
          live_bytes -= EntryBytes(it->first, it->second);
          it = g.erase(it);
        }
        if (g.empty()) {
          live_bytes -= GroupBytes(git->first);
          git = offsets.erase(git);
        } else {
          ++git;
        }
      }
      return;
    }
    auto [git, inserted] = offsets.try_emplace(r.group);
    if (inserted) live_bytes += GroupBytes(r.group);
    auto& g = git->second;
    if (r.type == RecordType::kCommit) {
      for (const auto& [tp, v] : r.commits) {
        auto [it, fresh] = g.try_emplace(tp, v);
        if (!fresh) {
          live_bytes -= EntryBytes(tp, it->second);
          it->second = v;
        }
        live_bytes += EntryBytes(tp, v);
      }
    } else {
      for (const auto& tp : r.deletes) {
        auto it = g.find(tp);
        if (it == g.end()) continue;
        live_bytes -= EntryBytes(tp, it->second);
        g.erase(it);
      }
    }
    if (g.empty()) {
      live_bytes -= GroupBytes(r.group);
      offsets.erase(git);
    }
  }

  bool NeedsCompaction() const {
    return file_bytes > options.compact_min_bytes &&
           static_cast<double>(file_bytes) > options.compact_ratio * static_cast<double>(live_bytes);
  }

  // The whole file content for the current map; caller holds mu.
  std::string Snapshot() const {
    std::string out(kOffsetsFileMagic);
    for (const auto& [group, entries] : offsets) {
      OffsetRecord r;
      r.group = group;
      for (const auto& [tp, v] : entries) {
        r.commits.emplace_back(tp, v);
        if (r.commits.size() == kSnapshotEntriesPerFrame) {
          (void)EncodeRecord(r, &out);  // every string was encodable when it was committed
          r.commits.clear();
        }
      }
      if (!r.commits.empty()) (void)EncodeRecord(r, &out);
    }
    return out;
  }

  // Replaces the file by `snapshot`: temporary file, fsync, rename, reopen, fsync of the directory. Runs
  // on the sync thread (or in Open), so no append races it. An error after the rename leaves the new
  // file in place but perhaps not durably named: the caller poisons the store.
  Status Compact(const std::string& snapshot) {
    std::string tmp = path + ".compact";
    ::unlink(tmp.c_str());
    int tfd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (tfd < 0) return ErrnoStatus(errno, "create " + tmp);
    Status s = WriteAll(tfd, snapshot, tmp);
    if (s.ok() && ::fsync(tfd) != 0) s = ErrnoStatus(errno, "fsync " + tmp);
    ::close(tfd);
    if (!s.ok()) {
      ::unlink(tmp.c_str());
      return s;
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return ErrnoStatus(err, "rename " + tmp);
    }
    int nfd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (nfd < 0) return ErrnoStatus(errno, "reopen " + path);
    ::close(fd);
    fd = nfd;
    GOVERN_RETURN_IF_ERROR(SyncDirectory(dir));
    std::lock_guard l(mu);
    file_bytes = snapshot.size();
    ++stats.compactions;
    return OkStatus();
  }

  void Run() {
    for (;;) {
      std::vector<Pending> batch;
      {
        std::unique_lock l(mu);
        work_cv.wait(l, [&] { return stop || !queue.empty(); });
        if (queue.empty()) return;  // stop, and nothing left
        while (!queue.empty()) {
          batch.push_back(std::move(queue.front()));
          queue.pop_front();
        }
      }
      std::string buf;
      for (const auto& p : batch) buf += p.frame;
      Status s;
      {
        std::lock_guard l(mu);
        s = health;
      }
      if (s.ok()) s = WriteAll(fd, buf, path);
      if (s.ok() && ::fdatasync(fd) != 0) s = ErrnoStatus(errno, "fdatasync " + path);
      std::string snapshot;
      {
        std::lock_guard l(mu);
        if (s.ok()) {
          for (const auto& p : batch) Apply(p.record);
          file_bytes += buf.size();
          ++stats.syncs;
          stats.frames += batch.size();
          if (NeedsCompaction()) snapshot = Snapshot();
        } else if (health.ok()) {
          health = s;
          log::Error(kComponent, "offsets file failed; commits refused until reopened",
                     {{"error", s.ToString()}});
        }
      }
      for (auto& p : batch)
        if (p.done) p.done(s);
      if (!snapshot.empty()) {
        if (Status cs = Compact(snapshot); !cs.ok()) {
          log::Error(kComponent, "offsets file compaction failed", {{"error", cs.ToString()}});
          std::lock_guard l(mu);
          if (health.ok()) health = cs;
        }
      }
      {
        std::lock_guard l(mu);
        completed += batch.size();
      }
      done_cv.notify_all();
    }
  }

  void Enqueue(OffsetRecord record, Done done, const OffsetStore::TopicFilter& filter = nullptr,
               std::set<std::string>* dropped = nullptr) {
    Pending p;
    Status s = filter ? OkStatus() : EncodeRecord(record, &p.frame);
    if (s.ok()) {
      std::unique_lock l(mu);
      if (filter && !stop && health.ok()) {
        // Under `mu`: a DeleteTopics record queued before this one saw its topic gone already.
        std::erase_if(record.commits, [&](const auto& c) {
          if (filter(c.first.topic)) return false;
          if (dropped) dropped->insert(c.first.topic);
          return true;
        });
        if (record.commits.empty()) {
          l.unlock();
          if (done) done(OkStatus());
          return;
        }
        s = EncodeRecord(record, &p.frame);
      }
      if (!s.ok()) {
        // answered below
      } else if (stop) {
        s = FailedPrecondition("offset store is closing");
      } else if (!health.ok()) {
        s = health;
      } else {
        p.record = std::move(record);
        p.done = std::move(done);
        queue.push_back(std::move(p));
        ++enqueued;
        work_cv.notify_one();
        return;
      }
    }
    if (done) done(s);
  }
};

OffsetStore::OffsetStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

OffsetStore::~OffsetStore() {
  {
    std::lock_guard l(impl_->mu);
    impl_->stop = true;
  }
  impl_->work_cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<OffsetStore>> OffsetStore::Open(const std::string& dir, OffsetStoreOptions options) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Internal("create " + dir + ": " + ec.message());
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->path = dir + "/offsets.log";
  impl->options = options;

  std::string lock_path = dir + "/LOCK";
  impl->lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (impl->lock_fd < 0) return ErrnoStatus(errno, "open " + lock_path);
  if (::flock(impl->lock_fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return FailedPrecondition(dir + " is in use by another offset store");
    return ErrnoStatus(errno, "flock " + lock_path);
  }
  ::unlink((impl->path + ".compact").c_str());  // left by a compaction that crashed before its rename

  int fd = ::open(impl->path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, "open " + impl->path);
  std::string data;
  {
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        ::close(fd);
        return ErrnoStatus(err, "read " + impl->path);
      }
      if (n == 0) break;
      data.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);

  bool rewrite = false;
  size_t pos = kOffsetsFileMagic.size();
  if (data.size() < kOffsetsFileMagic.size()) {
    // A new file, or one whose creation was cut short: only a prefix of the magic can be there.
    if (std::string_view(kOffsetsFileMagic).substr(0, data.size()) != data)
      return DataLoss(impl->path + " is not an offsets file");
    rewrite = true;
  } else if (std::string_view(data).substr(0, kOffsetsFileMagic.size()) != kOffsetsFileMagic) {
    return DataLoss(impl->path + " is not an offsets file");
  } else {
    std::string_view rest(data);
    while (pos < data.size()) {
      OffsetRecord r;
      auto n = DecodeRecord(rest.substr(pos), &r);
      if (!n.ok()) {
        log::Warn(kComponent, "offsets file: cutting a torn or corrupt tail",
                  {{"path", impl->path},
                   {"offset", pos},
                   {"dropped_bytes", data.size() - pos},
                   {"reason", n.status().message()}});
        break;
      }
      impl->Apply(r);
      pos += *n;
    }
  }

  if (rewrite) {
    // Write the header through Compact so the file is created whole and its name is durable.
    impl->fd = ::open(impl->path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (impl->fd < 0) return ErrnoStatus(errno, "open " + impl->path);
    GOVERN_RETURN_IF_ERROR(impl->Compact(std::string(kOffsetsFileMagic)));
    impl->stats.compactions = 0;
  } else {
    if (pos < data.size()) {
      int tfd = ::open(impl->path.c_str(), O_WRONLY | O_CLOEXEC);
      if (tfd < 0) return ErrnoStatus(errno, "open " + impl->path);
      int rc = ::ftruncate(tfd, static_cast<off_t>(pos));
      if (rc == 0) rc = ::fsync(tfd);
      int err = errno;
      ::close(tfd);
      if (rc != 0) return ErrnoStatus(err, "truncate " + impl->path);
    }
    impl->file_bytes = pos;
    impl->fd = ::open(impl->path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (impl->fd < 0) return ErrnoStatus(errno, "open " + impl->path);
    if (impl->NeedsCompaction()) {
      std::string snapshot;
      {
        std::lock_guard l(impl->mu);
        snapshot = impl->Snapshot();
      }
      GOVERN_RETURN_IF_ERROR(impl->Compact(snapshot));
    }
  }
  Impl* raw = impl.get();
  raw->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<OffsetStore>(new OffsetStore(std::move(impl)));
}

void OffsetStore::Commit(const std::string& group,
                         std::vector<std::pair<TopicPartition, OffsetValue>> offsets, Done done,
                         TopicFilter filter, std::shared_ptr<std::set<std::string>> dropped) {
  OffsetRecord r;
  r.type = RecordType::kCommit;
  r.group = group;
  r.commits = std::move(offsets);
  impl_->Enqueue(std::move(r), std::move(done), filter, dropped.get());
}

void OffsetStore::Delete(const std::string& group, std::vector<TopicPartition> partitions, Done done) {
  OffsetRecord r;
  r.type = RecordType::kDelete;
  r.group = group;
  r.deletes = std::move(partitions);
  impl_->Enqueue(std::move(r), std::move(done));
}

void OffsetStore::DeleteTopics(std::vector<std::string> topics, Done done) {
  OffsetRecord r;
  r.type = RecordType::kDeleteTopics;
  for (auto& t : topics) r.deletes.push_back({std::move(t), -1});
  impl_->Enqueue(std::move(r), std::move(done));
}

Status OffsetStore::Flush() {
  std::unique_lock l(impl_->mu);
  uint64_t target = impl_->enqueued;
  impl_->done_cv.wait(l, [&] { return impl_->completed >= target; });
  return impl_->health;
}

std::optional<OffsetValue> OffsetStore::Get(const std::string& group, const TopicPartition& tp) const {
  std::lock_guard l(impl_->mu);
  auto g = impl_->offsets.find(group);
  if (g == impl_->offsets.end()) return std::nullopt;
  auto it = g->second.find(tp);
  if (it == g->second.end()) return std::nullopt;
  return it->second;
}

std::map<TopicPartition, OffsetValue> OffsetStore::GetGroup(const std::string& group) const {
  std::lock_guard l(impl_->mu);
  auto g = impl_->offsets.find(group);
  if (g == impl_->offsets.end()) return {};
  return g->second;
}

bool OffsetStore::HasOffsets(const std::string& group) const {
  std::lock_guard l(impl_->mu);
  return impl_->offsets.count(group) > 0;
}

std::vector<std::string> OffsetStore::Groups() const {
  std::lock_guard l(impl_->mu);
  std::vector<std::string> out;
  for (const auto& [g, _] : impl_->offsets) out.push_back(g);
  return out;
}

OffsetStore::Stats OffsetStore::GetStats() const {
  std::lock_guard l(impl_->mu);
  Stats s = impl_->stats;
  s.file_bytes = impl_->file_bytes;
  s.live_bytes = impl_->live_bytes;
  return s;
}

}  // namespace govern::streams::groups
