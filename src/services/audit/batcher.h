// Batcher: the append path. Gathers concurrent appends of any organisations into one PostgreSQL
// transaction, so one flushed commit acknowledges many entries.
//
// One flush: create missing chain heads (INSERT .. ON CONFLICT DO NOTHING, its own statement), then in
// one transaction lock the batch's heads `ORDER BY org FOR UPDATE` (every replica locks in the same
// order, so replicas never deadlock), look up the idempotency keys already stored (a retried append gets
// the original entry back), compute seq, prev_hash, entry_hash and the Merkle compact range in C++,
// then insert the entries and the completed stride subtrees (multi-row INSERTs of unnested arrays),
// update the heads and COMMIT in one pipeline (the session keeps synchronous_commit on): the locks are
// held for two round trips and the commit's flush. Callbacks run after COMMIT returns: an entry is
// acknowledged only once it is durable. A failed flush fails only its own requests (Unavailable); they may be
// retried with the same idempotency keys. Nothing here must be unique per process: any number of Batchers, in
// any number of processes, may append to one database at once.
//
// Thread-safe. Callbacks run on the Batcher's flush threads: keep them short.
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

struct BatcherOptions {
  size_t max_batch = 1000;                         // entries per transaction (a request is never split)
  std::chrono::microseconds flush_interval{1000};  // how long the first waiting entry waits for company
  int flushers = 2;                                // transactions in flight at once
  size_t max_queued = 100000;                      // entries waiting; more: Unavailable at once
  const Clock* clock = nullptr;                    // nullptr: Clock::Real()
  // Test hook: called inside the transaction after the rows are written, before COMMIT.
  std::function<void()> before_commit;
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

  struct Stats {
    uint64_t batches = 0;
    uint64_t entries_written = 0;
    uint64_t entries_existing = 0;
    uint64_t batches_failed = 0;
  };
  Stats GetStats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::audit_service
