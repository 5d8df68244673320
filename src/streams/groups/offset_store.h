// OffsetStore: the committed offsets of every group on this coordinator, kept in memory and made durable
// in one append-only file (<dir>/offsets.log, format in offset_record.h).
//
// Promises:
//  - A commit (or delete) completes, calling its callback with ok, only after its frame is written and
//    fdatasync'd; only then is it visible to Get/GetGroup. One fdatasync covers every frame queued while
//    the previous one ran (group commit, on the store's own sync thread).
//  - One OffsetCommit request is one frame: after a crash either all of it is there or none.
//  - Open recovers after a crash: the file is read up to the first torn or corrupt frame and cut there
//    (logged as a warning). Frames past that point were never acknowledged: acknowledged frames are
//    whole on disk before their callback runs, and frames are written in order.
//  - Compaction rewrites the file as a snapshot of the live offsets (temporary file, fsync, rename,
//    fsync of the directory: a crash leaves the old file or the new one), at Open and whenever the file
//    grows past both Options::compact_min_bytes and compact_ratio times the live size.
//  - A failed write or fdatasync poisons the store: the page cache is then in an unknown state, so this
//    and every later commit fails (callbacks get the error) until the store is reopened.
//  - One store per directory: Open takes an flock on <dir>/LOCK.
//
// Thread-safety: every method is safe to call from many threads. Callbacks run on the sync thread
// (or on the caller's thread for an immediate error), never under the store's lock; keep them short.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "streams/groups/offset_record.h"

namespace govern::streams::groups {

struct OffsetStoreOptions {
  uint64_t compact_min_bytes = 16u << 20;
  double compact_ratio = 4.0;
};

class OffsetStore {
 public:
  using Done = std::function<void(Status)>;

  static Result<std::unique_ptr<OffsetStore>> Open(const std::string& dir, OffsetStoreOptions options = {});
  // Completes everything queued, then closes the file.
  ~OffsetStore();
  OffsetStore(const OffsetStore&) = delete;
  OffsetStore& operator=(const OffsetStore&) = delete;

  // Whether a topic still exists, asked as a commit is queued (under the queue's lock, so in the order
  // of DeleteTopics records): the commits of topics it refuses are dropped and their names added to
  // `dropped` (read it once `done` runs). Must not call back into this store.
  using TopicFilter = std::function<bool(const std::string& topic)>;

  // Queues a commit of `offsets` for `group`; `done` runs once it is durable (or failed). With a filter,
  // a commit of a topic deleted concurrently is never put back after its DeleteTopics record.
  void Commit(const std::string& group, std::vector<std::pair<TopicPartition, OffsetValue>> offsets,
              Done done, TopicFilter filter = nullptr,
              std::shared_ptr<std::set<std::string>> dropped = nullptr);
  // Queues the deletion of offsets (absent ones are ignored).
  void Delete(const std::string& group, std::vector<TopicPartition> partitions, Done done);
  // Queues the deletion of every group's offsets of these topics (the topics were deleted). Applied in
  // order: commits queued before it are removed too.
  void DeleteTopics(std::vector<std::string> topics, Done done);
  // Waits until everything queued before the call is durable or failed; returns the store's health.
  Status Flush();

  std::optional<OffsetValue> Get(const std::string& group, const TopicPartition& tp) const;
  std::map<TopicPartition, OffsetValue> GetGroup(const std::string& group) const;
  bool HasOffsets(const std::string& group) const;
  std::vector<std::string> Groups() const;

  struct Stats {
    uint64_t syncs = 0;        // fdatasync rounds of appended frames
    uint64_t frames = 0;       // frames made durable since Open
    uint64_t compactions = 0;  // since Open, including one at Open
    uint64_t file_bytes = 0;   // current size of offsets.log
    uint64_t live_bytes = 0;   // size a compacted file would have
  };
  Stats GetStats() const;

  struct Impl;

 private:
  explicit OffsetStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::streams::groups
