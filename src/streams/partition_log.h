// PartitionLog: the on-disk log of one partition: a directory of segments, each a file of record batches
// named by its base offset (00000000000000000042.log), with a sparse offset index (.index: relative
// offset u32, file position u32, big-endian) and a time index (.timeindex: max timestamp so far i64,
// relative offset u32) written every `index_interval_bytes`.
//
// Append stamps each checked batch with its offsets and the leader epoch, writes it to the active
// segment and asks the directory's Syncer to make it durable; the high watermark (what Fetch may serve)
// moves past a batch only once it is on disk, and `on_durable` runs after that. For replication later,
// every batch carries the leader epoch, a leader-epoch cache (leader-epoch-checkpoint: "epoch
// start_offset" lines, replaced durably when a new epoch appears) maps epochs to offsets, and the log
// can be truncated to an offset.
//
// Opening recovers from a crash: the last segment is scanned and CRC-checked from its start, a torn or
// corrupt tail is cut off, and its indexes are rebuilt; older segments' indexes are loaded (rebuilt when
// missing or inconsistent). Idempotent-producer state (last five batches per producer id) is rebuilt from
// the batch headers.
//
// Thread-safe: every method takes the partition's mutex; callbacks run on the Syncer thread without it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "streams/batch.h"
#include "streams/syncer.h"

namespace govern::streams {

struct LogOptions {
  int64_t segment_bytes = int64_t{1} << 30;
  int64_t index_interval_bytes = 4096;
  int64_t retention_ms = -1;     // -1: keep forever
  int64_t retention_bytes = -1;  // -1: no size limit
};

// What Append did with one batch.
struct AppendInfo {
  int16_t error = 0;         // a kerr code (idempotence, storage); 0 when appended or a duplicate
  int64_t base_offset = -1;  // the batch's offset (the original offset for a duplicate)
  bool duplicate = false;
};

class PartitionLog {
 public:
  static Result<std::unique_ptr<PartitionLog>> Open(std::string dir, LogOptions options, Syncer* syncer);
  ~PartitionLog();

  // Appends one batch that ParseBatch accepted (`batch` is stamped in place). Checks producer sequences
  // for idempotent batches: a repeat of one of the producer's last five batches is not written again but
  // answered with its original offset (duplicate = true). `on_durable` runs once the batch (or the
  // original, for a duplicate) is on disk; it is not called when error != 0.
  AppendInfo Append(std::string& batch, const BatchHeader& header, int32_t leader_epoch,
                    std::function<void(Status)> on_durable);

  // Whole batches from the one holding `offset`, stopping before `limit_offset` (the high watermark for
  // consumers) and after `max_bytes` (at least one whole batch is returned when one exists). Empty when
  // offset >= limit. OutOfRange when offset is below the log start or above the end.
  Result<std::string> Read(int64_t offset, size_t max_bytes, int64_t limit_offset) const;

  // The offset of the first batch whose max timestamp is >= ts; -1 when none is.
  int64_t OffsetForTime(int64_t ts) const;

  int64_t log_start_offset() const;
  int64_t log_end_offset() const;
  int64_t high_watermark() const;
  int32_t latest_epoch() const;
  // The end offset of `epoch` (the start of the next larger epoch, or the log end): what a follower
  // truncates to. -1 when epoch precedes every entry.
  int64_t EndOffsetForEpoch(int32_t epoch) const;
  std::vector<std::pair<int32_t, int64_t>> EpochEntries() const;

  // Removes every batch at or after `offset` (a batch that straddles it goes too), for a follower that
  // diverged. The high watermark and epoch cache follow.
  Status TruncateTo(int64_t offset);

  // Deletes whole segments (never the active one) older than retention_ms by their newest timestamp, or
  // beyond retention_bytes from the oldest. Returns how many were deleted.
  Result<int> ApplyRetention(int64_t now_ms);

  // Called (on the Syncer thread) whenever the high watermark moves.
  void set_on_advance(std::function<void()> fn);

  size_t segment_count() const;
  const std::string& dir() const { return dir_; }

 private:
  struct IndexEntry {
    uint32_t rel_offset;
    uint32_t position;
  };
  struct TimeEntry {
    int64_t timestamp;
    uint32_t rel_offset;
  };
  struct Segment {
    int64_t base = 0;
    int64_t next_offset = 0;  // one past its last batch
    uint64_t size = 0;
    int64_t max_timestamp = -1;
    uint64_t bytes_since_index = 0;
    std::shared_ptr<SyncFile> file;
    int index_fd = -1;
    int time_fd = -1;
    std::vector<IndexEntry> index;
    std::vector<TimeEntry> time_index;
  };
  struct SeqEntry {
    int32_t first_seq;
    int32_t last_seq;
    int64_t base_offset;
  };
  struct ProducerState {
    int16_t epoch = -1;
    std::deque<SeqEntry> recent;  // oldest first, at most 5
  };

  PartitionLog(std::string dir, LogOptions options, Syncer* syncer);
  std::string PathFor(int64_t base, const char* ext) const;
  Status OpenSegment(int64_t base, bool last);
  Status NewSegment(int64_t base);
  Status ScanSegment(Segment& seg, bool check, bool truncate_tail);
  void IndexBatch(Segment& seg, const BatchHeader& h, uint64_t position, uint64_t size, bool write_files);
  Status WriteIndexFiles(Segment& seg);
  void CloseSegment(Segment& seg);
  Status RemoveSegmentFiles(Segment& seg);
  Status SaveEpochs();
  void TrackProducer(const BatchHeader& h);
  uint64_t PositionFor(const Segment& seg, int64_t offset) const;
  void Advance(int64_t end);

  const std::string dir_;
  const LogOptions options_;
  Syncer* const syncer_;
  mutable std::mutex mu_;
  std::map<int64_t, Segment> segments_;  // by base offset
  int64_t hw_ = 0;
  std::vector<std::pair<int32_t, int64_t>> epochs_;
  std::map<int64_t, ProducerState> producers_;
  std::function<void()> on_advance_;
  bool failed_ = false;  // a write or sync failed: refuse appends (the page cache can no longer be trusted)
};

}  // namespace govern::streams
