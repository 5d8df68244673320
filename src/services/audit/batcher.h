// Batcher: the append path. Gathers concurrent appends of any organisations into one PostgreSQL
// transaction, so one flushed commit acknowledges many entries.
//
// Organisations are split into `lanes` by a hash of their name; a lane has at most one transaction
// holding head locks at a time in this process, so a replica's own transactions never wait on each
// other's locks, and transactions of different lanes (disjoint organisations) run concurrently on
// different connections. A lane flushes as soon as it is free (natural group commit: whatever queued
// while the previous transaction ran goes into the next one, up to max_batch entries).
//
// One flush: create missing chain heads (INSERT .. ON CONFLICT DO NOTHING, its own statement), then in
// one transaction and one round trip: lock
// the head of the batch's oldest request (waiting for it if another transaction holds it), and lock the
// batch's other heads only if they are free (FOR UPDATE SKIP LOCKED; the requests of busy heads go back
// to the front of the lane for its next batch). Appends for the heads it now holds that queued in the
// lane meanwhile (while it waited for a busy head) join the batch late, up to max_batch: one lock hold
// carries them instead of a later one. The idempotency keys are not looked up: almost all are new, and
// a stored one (a retried append) fails the INSERT with a unique violation (the unique index on (org,
// key) finds it), and the batch runs once more with every key looked up after the locks are granted,
// none joining late, so the retry gets the original entry back. For a second after such a conflict
// (retries come in runs, e.g. when a replica died) batches look their keys up first, before the lock
// wait, so the lookup is not part of the lock hold (a key committed after that lookup by the head's
// previous holder fails the INSERT as above). A transaction
// never waits for a lock while it holds one, so transactions of several replicas over overlapping
// organisations neither queue behind each other in chains nor deadlock. Then compute seq, prev_hash,
// entry_hash and the Merkle compact range in C++ (the columns that do not depend on seq were encoded
// before the locks), and insert the entries and the completed stride subtrees, update the heads and
// COMMIT in a second round trip. With flush_outside_lock (the default) that COMMIT does not wait for
// the WAL flush, so the head locks are released at once, and the batch goes to the Batcher's durability
// thread, whose next barrier covers it: a transaction that writes WAL (a transactional logical message:
// one that only took an xid would commit without a flush) and commits with synchronous_commit on, which
// returns only once the WAL up to its own commit record, and so every batch's commit before it, is
// flushed. One barrier serves every batch of every lane committed since the previous one began, and the
// lanes' threads go on to their next batches meanwhile. Either way
// callbacks run only after the batch's commit is flushed: an entry is acknowledged only once it is durable. A
// later transaction (another replica's) may build on a commit that is not flushed yet; its own commit comes
// later in the WAL, so it can never be durable without it. A failed flush fails only its own requests
// (Unavailable); they may be retried with the same idempotency keys. Nothing here must be unique per process:
// any number of Batchers, in any number of processes, may append to one database at once.
//
// Thread-safe. Callbacks run on the Batcher's own threads (with flush_outside_lock, every batch's on the
// durability thread, before its next barrier): keep them short. Committed batches waiting for a barrier
// are not counted in max_queued: their requests are bounded by what the caller lets in flight.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "services/audit/entry.h"

namespace govern::db {
class Pool;
}  // namespace govern::db

namespace govern::audit_service {

// Whether the database role may run the durability barrier (pg_logical_emit_message, granted to PUBLIC
// by default; some hardened setups revoke it). Without it every batch would commit and then fail its
// barrier, so every append would be reported failed although stored. FailedPrecondition naming the
// GRANT otherwise. The service checks at start.
Status CheckDurabilityBarrier(db::Pool& pool);

struct BatcherOptions {
  size_t max_batch = 1000;                      // entries per transaction (a request is never split)
  std::chrono::microseconds flush_interval{0};  // how long a free lane waits for company (0: flush at once)
  int flushers = 1;                             // lanes: transactions holding head locks at once
  size_t max_queued = 20000;                    // entries waiting; more: Unavailable at once (503)
  bool flush_outside_lock = true;               // release head locks before the WAL flush (see above)
  // One round trip per batch instead of two: the canonical text of each entry is built here split
  // around the seq (audit::CanonicalEntrySplit) and the PL/pgSQL function audit_append (schema.cc) does
  // the lookup, the locks, seq, hashes, Merkle, INSERT and head UPDATE in PostgreSQL, so a head is held
  // only while PostgreSQL works, never across a round trip; no late joiners (there is no moment to
  // join). Same rows, same bytes hashed. Off by default: on the loaded 2-core benchmark machine it
  // costs PostgreSQL more CPU per entry than hashing here, which lowered the many-organisation rows and
  // the 1 organisation x 64 writers row (docs/audit.md, Throughput).
  bool append_in_database = false;
  // Log the batch statistics (Stats, per interval) at info level this often; 0: never.
  std::chrono::milliseconds stats_interval{0};
  const Clock* clock = nullptr;  // nullptr: Clock::Real()
  // Test hook: called inside the transaction after the rows are written, before COMMIT.
  std::function<void()> before_commit;
  // Test hook: called on the durability thread before each barrier with the batches it will cover.
  std::function<void(size_t batches)> before_barrier;
};

struct AppendOutcome {
  std::vector<StoredEntry> entries;  // in request order
  std::vector<bool> created;         // false: the idempotency key was already stored (original returned)
};

class Batcher {
 public:
  using Callback = std::function<void(Result<AppendOutcome>)>;

  Batcher(db::Pool* pool, BatcherOptions options = {});
  // Calls Shutdown().
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues the entries of one request for `org` (validated by the caller). `done` runs once: after the
  // commit with the stored entries, or with an error (Unavailable: retry with the same keys).
  void Append(std::string org, std::vector<AppendInput> entries, Callback done);
  Result<AppendOutcome> AppendBlocking(std::string org, std::vector<AppendInput> entries);

  // Flushes what is queued, then stops the flush threads. Idempotent.
  void Shutdown();

  // Counters since start; the *_us sums over batches divided by `batches` give the mean of each phase.
  struct Stats {
    uint64_t batches = 0;
    uint64_t entries_written = 0;
    uint64_t entries_existing = 0;
    uint64_t batches_failed = 0;
    uint64_t requests = 0;       // requests in successful batches
    uint64_t late_requests = 0;  // of them, requests that joined while their batch held the locks
    uint64_t lookups = 0;        // successful batches whose idempotency keys were looked up
    uint64_t key_conflicts = 0;  // of them, batches that met a stored key and ran once more
    uint64_t orgs = 0;           // organisations per batch, summed
    uint64_t max_batch_entries = 0;
    uint64_t queue_us = 0;  // oldest request's wait in the queue before its batch started
    // With append_in_database: lock_us is the wait for the oldest request's head and compute_us the
    // work under the locks, both measured in PostgreSQL; commit_us the one round trip (waits included).
    uint64_t lock_us = 0;     // BEGIN + head locks (+ key lookup, if any) round trip (includes lock waits)
    uint64_t compute_us = 0;  // seq, hashes, Merkle, statement parameters (locks held)
    uint64_t commit_us = 0;   // insert + update + COMMIT round trip (locks held until it returns)
    uint64_t flush_us = 0;    // COMMIT returned to flush confirmed (locks released); 0 when inside
    uint64_t barriers =
        0;  // durability barriers that succeeded (each covers the batches committed before it)
    uint64_t queue_full = 0;      // appends refused because max_queued entries were waiting
    uint64_t awaiting_flush = 0;  // now (not a counter): batches committed, not yet in a barrier
  };
  Stats GetStats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::audit_service
