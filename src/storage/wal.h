// wal::Log: a durable, segmented, append-only record log with group commit, and wal::Reader.
//
// Promises:
//  - Records get dense sequence numbers starting at 1, in the order they are appended (a failed
//    append's sequence is given to the next record, so there are never gaps).
//  - One Log per directory at a time: Open takes an flock on <dir>/LOCK and fails with
//    FailedPrecondition while another Log (in any process) holds it.
//  - An append completes (returns, or calls its callback) only once its record is on disk: written and
//    fdatasync'd. One fdatasync covers every record written since the previous one (group commit).
//  - Two stages before that: *queued* (the append call returned; the record is in this process's
//    memory) and *written* (the log's writer thread wrote it to the segment file: it is in the
//    kernel's page cache, so it survives a crash of this process but not a power cut or kernel crash).
//    The writer writes whatever is queued as soon as it gets to it, in every durability mode: a
//    record is typically written within microseconds of being queued; records queued while the writer
//    runs an fdatasync are written right after it. With Options::appender_writes a kBuffered record
//    that finds the writer asleep and nothing queued is written by the append call itself. An append
//    call returning does not mean written: WrittenSequence() and WaitWritten() tell. kBuffered records
//    are then fdatasync'd within Options::buffered_interval of being queued (one fdatasync per interval
//    under steady load), or sooner when a kSync record or Flush() forces a sync.
//  - After a process crash, reopening recovers every written record (completed or not), in order,
//    once. After a power cut, every completed record; written but unsynced ones may be lost, only as a
//    whole suffix (never partial, never a gap before a surviving record).
//  - A full disk fails appends with ResourceExhausted (their callbacks too, buffered ones included),
//    loses nothing already acknowledged, and appends work again once space is free.
//  - A failed fdatasync poisons the log: the page cache state after it is unknown (PostgreSQL's
//    "fsyncgate"), so every later append fails with FailedPrecondition until the log is reopened,
//    which re-reads what the disk really holds. Written but unsynced records fail with it.
//  - Readers see only durable records (never a written record a power cut could take away).
//    Retention deletes a sealed segment only when every registered cursor is past its last record;
//    with no cursor registered nothing is deleted.
// The format and recovery rules are in docs/wal-format.md.
//
// Thread-safety: every Log method is safe to call from many threads at once. A Reader is used by one
// thread at a time; many Readers may run beside appenders. A Log must outlive its Readers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "storage/wal_fs.h"

namespace govern::wal {

// How soon an append is synced. Either way it is written at once and completes only once durable.
enum class Durability {
  kSync,      // sync as soon as possible (group commit)
  kBuffered,  // sync within Options::buffered_interval, so more records share the sync
};

struct Options {
  uint64_t segment_size = 64ull << 20;  // rotate when the next record would pass this
  bool preallocate = true;              // fallocate each segment to segment_size when created
  // Longest time a kBuffered record waits, once queued, before the fdatasync that covers it starts.
  std::chrono::microseconds buffered_interval{5000};
  Durability default_durability = Durability::kSync;
  uint32_t max_record_size = 16u << 20;  // larger appends fail with InvalidArgument
  // Bytes queued but not yet written beyond which blocking appends wait and async appends fail at once
  // with Unavailable (so an event loop is never blocked).
  size_t max_pending_bytes = 256u << 20;
  // A kBuffered append made while the sync thread sleeps and nothing else is queued is written to the
  // segment file by the appending thread itself (one pwrite, under the queue lock), so it costs no
  // thread switch: the sync thread is woken only to sync (at most once per buffered_interval under
  // steady load) and the append call returns with its record written (it survives a process crash
  // from then on). The appender pays the pwrite (page cache, microseconds): for small records from an
  // event loop (the gateway's usage records). A failed write falls back to the sync thread, which
  // writes the record again (over the same bytes) and reports a failure as usual. Off: every record
  // is written by the sync thread.
  bool appender_writes = false;
  Fs* fs = nullptr;  // nullptr: PosixFs()
};

// One record as a Reader returns it; data stays valid until the Reader's next call.
struct Record {
  uint64_t seq = 0;
  std::string_view data;
};

class Reader;

class Log {
 public:
  using Callback = std::function<void(Result<uint64_t>)>;

  // Opens (creating if needed) the log in `dir`, recovering after a crash: the last segment is
  // scanned and cut at the first torn or corrupt record (logged as a warning). A corrupt record inside
  // a sealed segment fails the open with DataLoss instead of being cut.
  static Result<std::unique_ptr<Log>> Open(const std::string& dir, Options options = {});

  // Syncs everything queued, completes it, and closes the files.
  ~Log();
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // Appends one record and waits until it is durable; returns its sequence.
  Result<uint64_t> Append(std::string_view data);
  Result<uint64_t> Append(std::string_view data, Durability durability);
  // Appends records with consecutive sequences, all in the same sync; returns the first sequence.
  // All or nothing: on error none of them is acknowledged.
  Result<uint64_t> AppendBatch(std::span<const std::string_view> records);
  Result<uint64_t> AppendBatch(std::span<const std::string_view> records, Durability durability);
  // Queues a record (or batch) and returns at once. `done` runs exactly once, on the log's sync thread
  // after the sync, with the (first) sequence or the error; keep it short (post to your own loop).
  // It may run before AppendAsync returns, and on immediate errors it runs on the calling thread.
  void AppendAsync(std::string_view data, Callback done);
  void AppendAsync(std::string_view data, Callback done, Durability durability);
  void AppendBatchAsync(std::span<const std::string_view> records, Callback done, Durability durability);

  // Waits until everything appended before the call is durable (or has failed).
  Status Flush();
  // Waits until everything appended before the call is written to the segment file (or has failed):
  // from then on it survives a crash of this process. Does not sync and does not hurry the writer.
  Status WaitWritten();

  uint64_t FirstSequence() const;    // oldest record kept on disk (retention moves it)
  uint64_t DurableSequence() const;  // last durable record, 0 when none
  // Last record written to the segment file (>= DurableSequence()); every record up to it survives a
  // process crash. A failed fdatasync sets it back to DurableSequence(): what the kernel kept of the
  // unsynced records is then unknown.
  uint64_t WrittenSequence() const;
  // The log's failure, if a failed fdatasync poisoned it; ok otherwise.
  Status Health() const;

  // A reader from `from` onward (FirstSequence() <= from; from may be in the future).
  Result<std::unique_ptr<Reader>> NewReader(uint64_t from);

  // Durable cursors: a named consumer's position, "every record before next_seq is consumed".
  // RegisterCursor creates one at `start` (0: FirstSequence()) if the name is new, durably; an existing
  // cursor keeps its position. A consumer that keeps its position elsewhere (say in PostgreSQL, in the
  // same transaction as its output) registers too and calls CommitCursor after its own commit: the
  // value here only needs to be a lower bound, it only holds retention back.
  Status RegisterCursor(std::string_view name, uint64_t start = 0);
  // Durably records the position (temp file, fsync, rename, fsync directory), then applies retention.
  // next_seq must lie in [FirstSequence(), DurableSequence() + 1].
  Status CommitCursor(std::string_view name, uint64_t next_seq);
  Status UnregisterCursor(std::string_view name);
  Result<uint64_t> CursorPosition(std::string_view name) const;
  std::map<std::string, uint64_t> Cursors() const;
  // A reader positioned at the cursor.
  Result<std::unique_ptr<Reader>> NewCursorReader(std::string_view name);

  // Deletes every sealed segment whose last record is before every cursor; returns how many. Runs by
  // itself after each CommitCursor and each rotation.
  Result<size_t> ApplyRetention();

  struct Stats {
    uint64_t groups = 0;    // fdatasync rounds, each covering every record written before it
    uint64_t writes = 0;    // write rounds: groups of queued records written to the file
    uint64_t records = 0;   // records made durable
    uint64_t segments = 0;  // segment files on disk now
  };
  Stats GetStats() const;

  struct Impl;

 private:
  explicit Log(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Reads records in sequence order from a starting sequence, across segments, and follows records
// appended after it opened. Sees only durable records. Not thread-safe: one thread at a time.
class Reader {
 public:
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // The next record, waiting up to `wait` for one to become durable; nullopt if none came in time.
  // DataLoss if a durable record cannot be read back intact; OutOfRange if retention deleted it.
  Result<std::optional<Record>> Next(std::chrono::milliseconds wait = std::chrono::milliseconds(0));

  // The sequence the next call returns.
  uint64_t next_sequence() const { return next_; }

 private:
  friend class Log;
  Reader(Log::Impl* log, uint64_t from);
  Status OpenSegment();
  Status Fill(size_t need);

  Log::Impl* log_;
  uint64_t next_;  // sequence of the next record to return
  int fd_ = -1;
  uint64_t seg_first_ = 0;
  uint64_t pos_seq_ = 0;   // sequence of the record at file_off_
  uint64_t file_off_ = 0;  // file offset of the record pos_seq_
  std::string buf_;        // bytes of the segment from buf_off_
  uint64_t buf_off_ = 0;
  uint64_t buf_durable_ = 0;  // durable sequence observed before buf_ was read
  bool at_eof_ = false;       // buf_ reaches the end of the file
};

}  // namespace govern::wal
