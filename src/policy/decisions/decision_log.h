// DecisionLog: every policy decision appended to a local write-ahead log (wal::Log in one directory),
// one WAL record per decision (decision_record.h), before or while the decision takes effect.
//
// Promises:
//  - Modes. kBuffered (the default): Record() queues the record and returns without waiting for a
//    disk sync; the WAL writes and fdatasyncs everything queued in one group every `sync_interval`.
//    kDurable: Record() returns only once the record is fdatasync'd (group commit with concurrent
//    callers). docs/policy-decisions.md says exactly what a process crash and a power cut lose in
//    each mode.
//  - Never a silent drop. When `max_pending_bytes` of records are queued but not yet durable (the disk
//    is slower than the decisions), Record() blocks up to `max_block` for room, then fails with
//    ResourceExhausted: the caller decides (deny the action, retry). A record accepted in buffered
//    mode whose sync later fails is counted (`failed`), logged, and the failure is returned by the
//    next Record() call (once), so the caller learns of it.
//  - Every record gets a decision id (the record's own when set, else a new UUIDv7-like one) and a
//    time (the record's own when set, else now); Record() returns the id.
//  - The request context is kept as configured: in full, as its SHA-256, or not at all.
//  - Retention: WAL segments are deleted once every registered WAL cursor is past them (the shipper
//    registers one). With `max_retained_bytes` > 0 the log registers a cursor of its own ("retention")
//    that it moves past the oldest segments whenever the WAL's files take more than that, so without a
//    shipper the log stays under the bound; a shipper's cursor still holds back what it has not sent.
//
// Thread-safety: Record, Flush, GetStats and Health may be called from many threads at once. The
// DecisionLog must outlive any DecisionShipper reading its WAL.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/status.h"
#include "policy/decisions/decision_record.h"
#include "storage/wal.h"

namespace govern::policy {

enum class RecordMode { kBuffered, kDurable };

struct DecisionLogOptions {
  std::string dir;  // the WAL directory (created if missing)
  RecordMode mode = RecordMode::kBuffered;
  std::chrono::microseconds sync_interval{5000};  // kBuffered: how long a record may wait for its sync
  // What Record keeps of a kFull context: kFull, kHash (SHA-256 of the JSON text) or kNone.
  ContextKind context = ContextKind::kHash;
  size_t max_pending_bytes = 64u << 20;      // records queued but not yet durable, beyond which Record waits
  std::chrono::milliseconds max_block{100};  // how long Record waits for room before failing
  uint32_t max_record_bytes = 1u << 20;      // larger records fail with InvalidArgument
  uint64_t segment_size = 64ull << 20;
  uint64_t max_retained_bytes = 0;  // 0: keep until every cursor is past (see above)
  std::chrono::milliseconds retention_check{1000};
  const Clock* clock = nullptr;  // nullptr: Clock::Real()
  wal::Fs* fs = nullptr;         // nullptr: the real file system (tests inject faults)
};

class DecisionLog {
 public:
  static Result<std::unique_ptr<DecisionLog>> Open(DecisionLogOptions options);
  // Syncs what is queued (buffered records are not lost by a clean close) and closes the WAL.
  ~DecisionLog();
  DecisionLog(const DecisionLog&) = delete;
  DecisionLog& operator=(const DecisionLog&) = delete;

  // Records one decision (see the promises above); returns its id. Errors: InvalidArgument (record
  // over max_record_bytes), ResourceExhausted (no room within max_block, or the disk is full), the
  // failure of an earlier buffered record's sync (reported once), FailedPrecondition (the WAL is
  // poisoned by a failed fdatasync: reopen).
  Result<DecisionId> Record(const DecisionRecord& record);

  // Waits until every record recorded before the call is durable.
  Status Flush();
  // The WAL's failure if a failed fdatasync poisoned it; ok otherwise.
  Status Health() const;

  struct Stats {
    uint64_t recorded = 0;       // Record() returned ok
    uint64_t synced = 0;         // of those, made durable
    uint64_t failed = 0;         // accepted, then lost because their sync failed (buffered mode)
    uint64_t refused = 0;        // Record() returned an error (nothing kept)
    uint64_t pending_bytes = 0;  // queued, not yet durable
  };
  Stats GetStats() const;

  RecordMode mode() const { return options_.mode; }
  const std::string& dir() const { return options_.dir; }
  // The WAL, for the shipper and for tools.
  wal::Log& wal() { return *wal_; }

  // Moves the "retention" cursor past the oldest segments until the WAL's files take at most
  // `max_bytes` (never past the active segment); returns how many segments it passed. Runs by itself
  // every retention_check when max_retained_bytes > 0.
  Result<size_t> EnforceRetention(uint64_t max_bytes);

  static constexpr std::string_view kRetentionCursor = "retention";

 private:
  DecisionLog(DecisionLogOptions options, std::unique_ptr<wal::Log> wal, DecisionIdGenerator ids);
  Status Reserve(size_t n);
  void Release(size_t n);
  void OnSynced(size_t n, const Result<uint64_t>& r);
  void RetentionLoop();

  DecisionLogOptions options_;
  const Clock* clock_;
  std::unique_ptr<wal::Log> wal_;
  DecisionIdGenerator ids_;

  std::atomic<uint64_t> pending_bytes_{0};
  std::atomic<int> space_waiters_{0};
  std::mutex space_mu_;
  std::condition_variable space_cv_;

  std::atomic<bool> has_failure_{false};
  std::mutex failure_mu_;
  Status failure_;  // guarded by failure_mu_; the first unreported buffered failure
  uint64_t failures_unreported_ = 0;

  std::atomic<uint64_t> recorded_{0};
  std::atomic<uint64_t> synced_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> refused_{0};

  std::mutex retention_mu_;
  std::condition_variable retention_cv_;
  bool stop_ = false;  // guarded by retention_mu_
  std::thread retention_thread_;
};

}  // namespace govern::policy
