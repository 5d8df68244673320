// Ingester: the WAL -> PostgreSQL stage of telemetry. Reads the intake's WAL records from cursors kept
// in PostgreSQL and stores their events in telemetry_events, moving a cursor in the same transaction
// as the rows it covers, so every durable event is stored exactly once across crashes, retries,
// restarts and changes of the number of workers.
//
// Promises:
//  - IngestOptions::workers workers (N), each with its own thread and PostgreSQL connection. Worker k
//    stores exactly the WAL records whose sequence % N == k. Its telemetry_ingest_cursor row
//    (IngestCursorRowName(cursor_name, k, N)) holds the next record it owns (a sequence that is k mod
//    N) and is the truth: every owned record before it is stored, none after it.
//  - Layout: before any worker starts, the rows of cursor_name are checked in one transaction. None:
//    they are created at the WAL's FirstSequence(). Exactly the current layout: kept. Anything else
//    (another N, or half of one): every row found is replaced by the current layout's rows, all
//    starting at the minimum of the old ones. Records between that minimum and the old maximum may
//    already be stored; they are read again and their ids, already in the primary key, are skipped
//    (the staging path below). Nothing is lost, nothing is stored twice.
//  - A cursor row below FirstSequence() (records deleted) or past the WAL's end (a different WAL
//    directory) stops its worker (FailedPrecondition, logged, in Stats), which keeps checking slowly;
//    it never skips.
//  - One batch = whole owned WAL records (up to max_batch_events events; a bigger record goes alone)
//    in one transaction: the day partitions it needs exist first, the rows go in by binary COPY, and
//    the worker's cursor row moves past the batch before COMMIT. A retried client batch re-sends the
//    same event ids: when the COPY meets an existing row (23505) the batch is redone through a
//    temporary staging table and INSERT ... ON CONFLICT DO NOTHING, and the rows already there are
//    counted as duplicates.
//  - Connection loss, pg_terminate_backend, a restart or a COMMIT whose outcome is unknown: the batch
//    is retried from the same WAL position with backoff; each attempt first re-reads the cursor row
//    (FOR UPDATE), which says whether an earlier COMMIT landed. No loss, no duplicate.
//  - A record that cannot be stored (it does not decode, a string holds a NUL byte, or PostgreSQL
//    rejects its data) stops every worker at that record's sequence with DataLoss (logged as an error,
//    in Stats) until an operator acts (docs/telemetry-ingest.md): no worker stores a record after it
//    from then on (other workers may have committed some already), nothing is skipped silently.
//  - After PostgreSQL commits the WAL's own cursor named cursor_name follows the oldest unstored
//    record over all workers (at most every wal_cursor_interval, and at Stop), so WAL retention may
//    delete only what every worker has stored.
//
// Thread-safety: NextSequence(), OldestUnstoredReceivedNs() and GetStats() may be called from any
// thread at any time. Start()/Stop() from one owning thread. RunOnce() only while not Start()ed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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
  // Workers, each on its own PostgreSQL connection (the service's pool needs that many to spare);
  // worker k stores the WAL records whose sequence % workers == k. Changing it between runs is safe
  // (see the layout promise above).
  size_t workers = 1;
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

// The telemetry_ingest_cursor row of worker `shard` of `shards`: `base` itself for one worker (the name
// a single ingest always used), "base:k/N" otherwise.
std::string IngestCursorRowName(const std::string& base, size_t shard, size_t shards);

// One row of an ingest layout as found in PostgreSQL.
struct IngestCursorRow {
  std::string name;
  size_t shard = 0;
  size_t shards = 1;
  uint64_t next_seq = 0;
};
// The rows of `base` (base itself and "base:k/N"), ordered by shards then shard. Rows of more than one
// layout appear only between a crash and the next start (see the layout promise above).
Result<std::vector<IngestCursorRow>> ListIngestCursors(db::Connection& conn, const std::string& base);

// For the operator's CLI, with the Ingester stopped: moves row `cursor_name` from exactly `from_seq` to
// `to_seq`, so a stale command cannot move it twice. FailedPrecondition, nothing changed, when the
// row is not at `from_seq`.
Status MoveIngestCursor(db::Pool& pool, const std::string& cursor_name, uint64_t from_seq, uint64_t to_seq);
// With the Ingester stopped: every worker of `base`'s layout goes back to its first record at or after
// `from_seq` (stored again; ids already stored are skipped), in one transaction. InvalidArgument,
// nothing changed, when some worker is before that already; FailedPrecondition when the rows are not
// one complete layout. Returns the rows as they were.
Result<std::vector<IngestCursorRow>> ReplayIngestFrom(db::Pool& pool, const std::string& base,
                                                      uint64_t from_seq);
// With the Ingester stopped: moves the worker that owns record `seq` past it (to seq + N), only when
// that worker stands exactly at `seq` and `seq` is the oldest unstored record (where every worker
// stops on a poison record). FailedPrecondition, nothing changed, otherwise. Returns the row as it was.
Result<IngestCursorRow> SkipIngestRecord(db::Pool& pool, const std::string& base, uint64_t seq);

class Ingester {
 public:
  struct Stats {
    uint64_t events_stored = 0;       // rows inserted
    uint64_t duplicates_skipped = 0;  // events whose id was already stored
    uint64_t batches = 0;             // committed transactions
    uint64_t slow_batches = 0;        // of those, through the staging table
    uint64_t retries = 0;             // failed attempts
    bool stopped_on_poison = false;   // a record cannot be stored: an operator must act
    std::string last_error;           // the latest failure of any worker ("" when none yet)
  };

  // Borrows `log`, `pool` and `clock`; they must outlive the Ingester. Reads the test-only crash point
  // GOVERN_TELEMETRY_CRASH_AT once, here: "ingest.after_copy" _exits(137) after a COPY and before its
  // COMMIT, "ingest.after_commit" right after a COMMIT (in whichever worker gets there first),
  // "ingest.concurrent_commit" once every worker holds a whole uncommitted batch (rows and cursor row):
  // they COMMIT at once and the first COMMIT to return _exits(137) while the others are in theirs.
  // Unset in production: costs one branch per batch.
  Ingester(wal::Log* log, db::Pool* pool, IngestOptions options, const Clock* clock);
  ~Ingester();  // Stop()s
  Ingester(const Ingester&) = delete;
  Ingester& operator=(const Ingester&) = delete;

  // Starts one thread per worker. FailedPrecondition if already started.
  Status Start();
  // Asks the threads to stop and joins them. An in-flight attempt finishes (commits or fails; bounded
  // by the pool's connect timeouts), none is started after. Commits the WAL cursor. Idempotent.
  void Stop();

  // One attempt at one batch by every worker in turn (for tests and the CLI): each synchronises with
  // its cursor row when needed, waits up to max_wait for records, stores them. Returns the events
  // inserted (0 when there was nothing to do or an attempt resolved an earlier unknown COMMIT), or
  // the first worker's error (the next call retries the same batches). Not while Start()ed.
  Result<size_t> RunOnce();

  // The first WAL sequence not yet stored (the lowest worker cursor), 0 until every worker has read
  // its cursor from PostgreSQL.
  uint64_t NextSequence() const;
  // received_unix_nanos of the oldest WAL record that is durable but not yet committed to PostgreSQL,
  // over all workers; 0 when everything durable is stored. While PostgreSQL is unreachable or ingest is
  // stopped on a poison record it stays at that oldest record's time, so now minus it (the lag) keeps
  // growing. Two atomic loads per worker: cheap enough for intake to call per request.
  int64_t OldestUnstoredReceivedNs() const;

  // Summed over workers.
  Stats GetStats() const;
  size_t workers() const { return workers_.size(); }

  class Worker;  // one shard (ingest.cc)
  struct Shared;

 private:
  std::unique_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Worker>> workers_;
  bool running_ = false;
};

}  // namespace govern::telemetry
