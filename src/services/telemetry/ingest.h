// Ingester: the WAL -> PostgreSQL stage of telemetry. Reads the intake's WAL records from the cursor
// kept in PostgreSQL and stores their events in telemetry_events, moving the cursor in the same
// transaction, so every durable event is stored exactly once across crashes, retries and restarts.
//
// Promises:
//  - PostgreSQL's telemetry_ingest_cursor row (name = IngestOptions::cursor_name) is the truth: the
//    next batch always starts there. On first start the row is created at the WAL's FirstSequence().
//    When it points below FirstSequence() (records deleted) or above DurableSequence() + 1 (a different
//    WAL directory) the Ingester refuses to move (FailedPrecondition, logged, in Stats) and keeps
//    checking slowly; it never skips.
//  - One batch = whole WAL records (up to max_batch_events events; a bigger record goes alone) in one
//    transaction: the day partitions it needs exist first, the rows go in by binary COPY, and the cursor
//    row moves past the batch before COMMIT. A retried client batch re-sends the same event ids: when
//    the COPY meets an existing row (23505) the batch is redone through a temporary staging table and
//    INSERT ... ON CONFLICT DO NOTHING, and the rows already there are counted as duplicates.
//  - Connection loss, pg_terminate_backend, a restart or a COMMIT whose outcome is unknown: the batch
//    is retried from the same WAL position with backoff; each attempt first re-reads the cursor row
//    (FOR UPDATE), which says whether an earlier COMMIT landed. No loss, no duplicate.
//  - A record that cannot be stored (it does not decode, a string holds a NUL byte, or PostgreSQL
//    rejects its data) stops the Ingester at that record's sequence with DataLoss (logged as an error,
//    in Stats) until an operator acts (docs/telemetry-ingest.md): nothing after it is stored, nothing
//    is skipped silently. Records before it in the same batch are stored.
//  - After each PostgreSQL commit the WAL's own cursor of the same name follows (at most every
//    wal_cursor_interval, and at Stop), so WAL retention may delete what is stored.
//
// Thread-safety: NextSequence(), OldestUnstoredReceivedNs() and GetStats() may be called from any
// thread at any time. Start()/Stop() from one owning thread. RunOnce() only while not Start()ed.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/status.h"
#include "config/config.h"
#include "db/pool.h"
#include "services/telemetry/record.h"
#include "storage/wal.h"

namespace govern::telemetry {

struct IngestOptions {
  // Names both the telemetry_ingest_cursor row and the wal::Log cursor.
  std::string cursor_name = "ingest";
  // Events per transaction (whole records; a record larger than this is stored alone).
  size_t max_batch_events = 20000;
  // How long to wait for the first record of a batch; once one is there the batch takes what is
  // already durable and goes (low latency when idle, big batches under load).
  std::chrono::milliseconds max_wait{20};
  // Backoff between failed attempts doubles from retry_initial up to retry_max; errors that need an
  // operator (cursor out of the WAL's range, a poison record) are retried at retry_max.
  std::chrono::milliseconds retry_initial{50};
  std::chrono::milliseconds retry_max{5000};
  // Least time between WAL CommitCursor calls (each is an fsync; it only holds retention back).
  std::chrono::milliseconds wal_cursor_interval{1000};
};

// Keys under telemetry.ingest.* (see docs/telemetry-ingest.md).
void DeclareIngestConfig(config::Schema& schema);
IngestOptions IngestOptionsFromConfig(const config::Config& config);

// For the operator's CLI, with the Ingester stopped: moves cursor `cursor_name` from exactly `from_seq`
// to `to_seq` (for example past a poison record), so a stale command cannot move it twice.
// FailedPrecondition, nothing changed, when the row is not at `from_seq`.
Status MoveIngestCursor(db::Pool& pool, const std::string& cursor_name, uint64_t from_seq, uint64_t to_seq);

class Ingester {
 public:
  struct Stats {
    uint64_t events_stored = 0;       // rows inserted
    uint64_t duplicates_skipped = 0;  // events whose id was already stored
    uint64_t batches = 0;             // committed transactions
    uint64_t slow_batches = 0;        // of those, through the staging table
    uint64_t retries = 0;             // failed attempts
    bool stopped_on_poison = false;   // a record cannot be stored: an operator must act
    std::string last_error;           // the latest failure ("" when none yet)
  };

  // Borrows `log`, `pool` and `clock`; they must outlive the Ingester. Reads the test-only crash point
  // GOVERN_TELEMETRY_CRASH_AT once, here: "ingest.after_copy" _exits(137) after the COPY and before
  // the COMMIT, "ingest.after_commit" right after the COMMIT. Unset in production: costs one branch.
  Ingester(wal::Log* log, db::Pool* pool, IngestOptions options, const Clock* clock);
  ~Ingester();  // Stop()s
  Ingester(const Ingester&) = delete;
  Ingester& operator=(const Ingester&) = delete;

  // Starts the one ingest thread. FailedPrecondition if already started.
  Status Start();
  // Asks the thread to stop and joins it. An in-flight attempt finishes (commits or fails; bounded by
  // the pool's connect timeouts), none is started after. Commits the WAL cursor. Idempotent.
  void Stop();

  // One attempt at one batch (for tests and the CLI): synchronises with the cursor row when needed,
  // waits up to max_wait for records, stores them. Returns the events inserted (0 when there was
  // nothing to do or the attempt resolved an earlier unknown COMMIT). The error of a failed attempt
  // (the next call retries the same batch). Not while Start()ed.
  Result<size_t> RunOnce();

  // The first WAL sequence not yet stored (the cursor), 0 until it has been read from PostgreSQL.
  uint64_t NextSequence() const { return next_seq_.load(std::memory_order_acquire); }
  // received_unix_nanos of the oldest WAL record that is durable but not yet committed to PostgreSQL;
  // 0 when everything durable is stored. While PostgreSQL is unreachable or the Ingester is stopped on
  // a poison record it stays at that oldest record's time, so now minus it (the lag) keeps growing.
  // Two atomic loads: cheap enough for intake to call per request.
  int64_t OldestUnstoredReceivedNs() const;

  Stats GetStats() const;

 private:
  struct Pending {
    uint64_t seq;
    RecordBatch record;
  };
  enum class CrashPoint { kNone, kAfterCopy, kAfterCommit };

  void Loop();
  Result<size_t> Attempt();
  Status Sync(db::Connection& conn);
  Status Fill();
  Result<size_t> Store(size_t records);
  Status EnsurePartitions(db::Connection& conn, size_t records);
  void SetPoison(uint64_t seq, Status why);
  void Stored(size_t records, uint64_t inserted, uint64_t duplicates, bool slow);
  void CommitWalCursor(bool force);
  void PublishOldest();
  void NoteError(const Status& s);

  wal::Log* log_;
  db::Pool* pool_;
  IngestOptions opts_;
  const Clock* clock_;
  CrashPoint crash_ = CrashPoint::kNone;

  // Owned by the thread running attempts.
  bool synced_ = false;
  uint64_t pos_ = 0;  // next sequence to store (valid when synced_)
  std::unique_ptr<wal::Reader> reader_;
  std::deque<Pending> pending_;  // decoded, contiguous from pending_.front().seq, not yet stored
  size_t pending_events_ = 0;
  Status poison_;  // not ok once a record that cannot be stored was found at poison_seq_
  uint64_t poison_seq_ = 0;
  int64_t poison_seen_ns_ = 0;
  uint64_t single_until_ = 0;         // after a data error: batches of one record up to this sequence
  std::set<std::string> partitions_;  // created (or found) by this Ingester
  int64_t last_wal_commit_mono_ = 0;
  uint64_t wal_committed_ = 0;

  std::atomic<uint64_t> next_seq_{0};
  std::atomic<uint64_t> read_next_{0};  // the next sequence the reader will decode
  std::atomic<int64_t> oldest_ns_{0};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool running_ = false;
  std::thread thread_;
  Stats stats_;
};

}  // namespace govern::telemetry
