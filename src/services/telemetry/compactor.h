// Compactor: moves telemetry events older than a configured age from PostgreSQL to Parquet files in
// the archive (a local directory or S3), one set of files per organisation and UTC hour.
//
// For each (org, hour) whose whole hour lies before now - age and that still has rows in
// telemetry_events, RunOnce reads the rows in (time_ns, id) order, writes them to a local temporary
// Parquet file, uploads it with Store::PutFile under ArchiveObjectKey(org, hour, seq) (seq = one past
// the highest seq the manifest holds for that org and hour: late events for an archived hour make a
// second file), then in ONE transaction inserts the manifest row and deletes exactly the rows it read
// (by their keys; rows that arrived meanwhile stay for the next run).
//
// Crash safety: rows leave PostgreSQL only in the transaction that lists their file. A crash after the
// upload and before that commit leaves an orphan object that no query reads (queries read only listed
// keys) and that the next run overwrites, since it reuses the same seq. So after a crash at any point
// every event is either in PostgreSQL or in exactly one manifest-listed file.
//
// One compactor at a time per database: RunOnce holds the PostgreSQL advisory lock
// kCompactionLockKey (session level, on its working connection) while it works, and a second compactor finds
// it taken and does nothing (stats.skipped_locked). The delete relies on that: it removes the hour's time
// range when the range holds exactly as many rows as were read, else only the keys read. Anything else that
// ever deletes events (retention, erasure) must hold the same lock while it does.
//
// Test crash points: GOVERN_TELEMETRY_CRASH_AT=compaction.after_upload or compaction.mid_file (read
// once, at construction) makes the process _exit(137) at that point.
//
// Thread-safety: RunOnce may not run twice at once on one Compactor (Start's thread calls it; don't
// call it yourself while started). Start/Stop are for one owner thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/status.h"
#include "db/pool.h"
#include "storage/objstore/store.h"

namespace govern::telemetry {

// The advisory lock (pg_advisory_lock key) held by a compaction pass.
inline constexpr int64_t kCompactionLockKey = 0x676f76636f6d70;  // "govcomp"

struct CompactionOptions {
  // Hours that ended at least this long ago are archived.
  std::chrono::nanoseconds age = std::chrono::hours(1);
  // How often Start()'s thread runs a pass (the caller passes it to Start; kept here with the rest).
  std::chrono::milliseconds interval = std::chrono::minutes(1);
  int64_t row_group_rows = 16384;
  int64_t read_batch_rows = 20000;  // rows read from PostgreSQL per statement
  // Where temporary Parquet files are written before upload; empty: $TMPDIR or /tmp.
  std::string temp_dir;
  // Drop a day's partition of telemetry_events once it is empty and the whole day is older than age.
  bool drop_empty_partitions = true;
};

struct CompactionStats {
  int64_t groups = 0;  // (org, hour) files written and registered
  int64_t rows = 0;
  int64_t bytes = 0;  // Parquet bytes uploaded
  int64_t partitions_dropped = 0;
  int64_t repeats_deleted = 0;  // late rows repeating archived events: deleted, not archived again
  bool skipped_locked = false;  // another compactor held the lock
  // Where the time went (seconds, summed over groups): reading rows from PostgreSQL, encoding
  // Parquet, uploading, and the manifest + delete transaction.
  double read_seconds = 0, encode_seconds = 0, upload_seconds = 0, commit_seconds = 0;
};

class Compactor {
 public:
  // Borrows everything; each must outlive the Compactor.
  Compactor(db::Pool* pool, objstore::Store* store, const Clock* clock, CompactionOptions options = {});
  ~Compactor();  // Stop()s
  Compactor(const Compactor&) = delete;
  Compactor& operator=(const Compactor&) = delete;

  // One pass over everything old enough. Stops at the first failing group (its rows stay in
  // PostgreSQL) and returns the error; groups done before it stay done.
  Result<CompactionStats> RunOnce();

  // Runs RunOnce now and then every `interval` on a thread, logging failures, until Stop().
  void Start(std::chrono::milliseconds interval);
  // Waits for a pass in progress to end, then stops the thread. Safe to call twice.
  void Stop();

  // Totals over every RunOnce since construction.
  CompactionStats totals() const;

 private:
  Status CompactGroup(db::Connection& conn, const std::string& org, int64_t hour_ns, CompactionStats* stats);
  Status DropOldPartitions(db::Connection& conn, int64_t cutoff_ns, CompactionStats* stats);
  // Aborted when `conn` reconnected since the pass took the advisory lock (the lock went with the
  // old session).
  Status StillLocked(const db::Connection& conn) const;

  db::Pool* pool_;
  objstore::Store* store_;
  const Clock* clock_;
  CompactionOptions options_;
  std::string crash_at_;
  int lock_reconnects_ = 0;  // conn->reconnects() when RunOnce took the lock

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
  CompactionStats totals_;
};

}  // namespace govern::telemetry
