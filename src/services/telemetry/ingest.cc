// Ingester: WAL records -> telemetry_events, the cursor moved in the same transaction.
#include "services/telemetry/ingest.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string_view>

#include "base/log.h"
#include "db/error.h"
#include "services/telemetry/schema.h"

namespace govern::telemetry {
namespace {

constexpr std::string_view kLog = "telemetry.ingest";

constexpr const char* kInsertCursor =
    "INSERT INTO telemetry_ingest_cursor (name, next_seq) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING";
constexpr const char* kSelectCursor = "SELECT next_seq FROM telemetry_ingest_cursor WHERE name = $1";
// FOR UPDATE: the row says whether an earlier COMMIT of this batch landed, and holds off a second
// Ingester on the same cursor until this transaction ends. It also marks the transaction (a setting
// local to it) so that the cursor update below moves the row only inside this very transaction: were
// the connection lost and silently reopened between statements, the update would otherwise run on
// its own in autocommit and move the cursor past rows that were rolled back.
constexpr const char* kLockCursor =
    "SELECT next_seq, set_config('govern.ingest_tx', 'on', true) FROM telemetry_ingest_cursor WHERE name = "
    "$1 "
    "FOR UPDATE";
constexpr const char* kUpdateCursor =
    "UPDATE telemetry_ingest_cursor SET next_seq = $2 WHERE name = $1 AND next_seq = $3 "
    "AND current_setting('govern.ingest_tx', true) = 'on'";
constexpr const char* kCreateStaging =
    "CREATE TEMP TABLE telemetry_ingest_staging (LIKE telemetry_events) ON COMMIT DROP";
// Serialises partition creation between processes, so CREATE TABLE IF NOT EXISTS never races itself
// (two concurrent ones can otherwise fail on the catalog's unique index).
constexpr const char* kPartitionLock =
    "SELECT pg_advisory_xact_lock(hashtext('govern.telemetry_events.partitions'))";

std::string CopySql(std::string_view table) {
  return "COPY " + std::string(table) + " (" + kEventColumns + ") FROM STDIN (FORMAT binary)";
}
std::string InsertFromStagingSql() {
  return std::string("INSERT INTO telemetry_events (") + kEventColumns + ") SELECT " + kEventColumns +
         " FROM telemetry_ingest_staging ON CONFLICT DO NOTHING";
}

// Why an event cannot be stored as it is, or "" when it can: the primary key needs the id that intake
// always assigns, and PostgreSQL holds no NUL character (intake refuses those; a WAL written before it
// did, or by hand, may still hold one).
std::string Unstorable(const RecordBatch& record) {
  for (size_t i = 0; i < record.events.size(); ++i) {
    const Event& e = record.events[i];
    std::string why = e.id.empty() ? "id (empty)" : UnstorableReason(e);
    if (!why.empty()) return "event " + std::to_string(i) + " (id \"" + e.id.substr(0, 64) + "\"): " + why;
  }
  return "";
}

bool IsDataError(const Status& s) {
  std::string_view state = db::SqlStateOf(s);
  // Class 22 (data exception: bad jsonb, bad encoding); an encoder refusal has no SQLSTATE.
  return state.substr(0, 2) == "22" || (state.empty() && s.code() == Code::kInvalidArgument);
}

bool NeedsOperator(const Status& s) {
  return s.code() == Code::kFailedPrecondition || s.code() == Code::kDataLoss;
}

}  // namespace

void DeclareIngestConfig(config::Schema& schema) {
  using config::Type;
  schema.Add({.key = "telemetry.ingest.cursor",
              .type = Type::kString,
              .default_value = "ingest",
              .help =
                  "Name of the ingest cursor: the row in telemetry_ingest_cursor and the WAL cursor. Change "
                  "it only to run a second, independent ingest of the same WAL."});
  schema.Add({.key = "telemetry.ingest.max_batch_events",
              .type = Type::kInt,
              .default_value = "20000",
              .help = "Most events stored in one PostgreSQL transaction (whole WAL records; a larger record "
                      "goes alone).",
              .min = 1,
              .max = 1'000'000});
  schema.Add({.key = "telemetry.ingest.max_wait",
              .type = Type::kDuration,
              .default_value = "20ms",
              .help = "How long ingest waits for the first record of a batch; once one is there it stores "
                      "what is already on disk without waiting.",
              .min = 0,
              .max = 10'000});
  schema.Add({.key = "telemetry.ingest.retry_max",
              .type = Type::kDuration,
              .default_value = "5s",
              .help =
                  "Longest pause between retries after a PostgreSQL failure (the pause doubles from 50ms); "
                  "failures that need an operator are retried at this pace.",
              .min = 10,
              .max = 600'000});
  schema.Add({.key = "telemetry.ingest.wal_cursor_interval",
              .type = Type::kDuration,
              .default_value = "1s",
              .help = "Least time between updates of the WAL's copy of the cursor (each is an fsync; it only "
                      "lets WAL retention delete stored segments).",
              .min = 0,
              .max = 3'600'000});
}

IngestOptions IngestOptionsFromConfig(const config::Config& config) {
  IngestOptions o;
  o.cursor_name = config.GetString("telemetry.ingest.cursor");
  o.max_batch_events = static_cast<size_t>(config.GetInt("telemetry.ingest.max_batch_events"));
  o.max_wait = config.GetDuration("telemetry.ingest.max_wait");
  o.retry_max = config.GetDuration("telemetry.ingest.retry_max");
  o.retry_initial = std::min(o.retry_initial, o.retry_max);
  o.wal_cursor_interval = config.GetDuration("telemetry.ingest.wal_cursor_interval");
  return o;
}

Status MoveIngestCursor(db::Pool& pool, const std::string& cursor_name, uint64_t from_seq, uint64_t to_seq) {
  return pool.Transact([&](db::Connection& c) -> Status {
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows r,
        c.Exec("UPDATE telemetry_ingest_cursor SET next_seq = $3 WHERE name = $1 AND next_seq = $2",
               db::Params(cursor_name, static_cast<int64_t>(from_seq), static_cast<int64_t>(to_seq))));
    if (r.affected() != 1) {
      return FailedPrecondition("ingest cursor \"" + cursor_name + "\" is not at " +
                                std::to_string(from_seq) + "; nothing changed");
    }
    return OkStatus();
  });
}

Ingester::Ingester(wal::Log* log, db::Pool* pool, IngestOptions options, const Clock* clock)
    : log_(log), pool_(pool), opts_(std::move(options)), clock_(clock) {
  if (opts_.max_batch_events == 0) opts_.max_batch_events = 1;
  if (const char* at = std::getenv("GOVERN_TELEMETRY_CRASH_AT")) {
    std::string_view v(at);
    if (v == "ingest.after_copy") crash_ = CrashPoint::kAfterCopy;
    if (v == "ingest.after_commit") crash_ = CrashPoint::kAfterCommit;
  }
  auto at = log_->CursorPosition(opts_.cursor_name);
  read_next_ = at.ok() ? std::max(*at, log_->FirstSequence()) : log_->FirstSequence();
}

Ingester::~Ingester() {
  Stop();
  CommitWalCursor(true);
}

Status Ingester::Start() {
  std::lock_guard lk(mu_);
  if (running_) return FailedPrecondition("telemetry ingest already started");
  running_ = true;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
  return OkStatus();
}

void Ingester::Stop() {
  {
    std::lock_guard lk(mu_);
    if (!running_) return;
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  {
    std::lock_guard lk(mu_);
    running_ = false;
    stop_ = false;
  }
  CommitWalCursor(true);
}

Result<size_t> Ingester::RunOnce() {
  {
    std::lock_guard lk(mu_);
    if (running_) return FailedPrecondition("RunOnce() while the ingest thread runs");
  }
  return Attempt();
}

void Ingester::Loop() {
  std::chrono::milliseconds backoff = opts_.retry_initial;
  for (;;) {
    {
      std::lock_guard lk(mu_);
      if (stop_) break;
    }
    auto r = Attempt();
    if (r.ok()) {
      backoff = opts_.retry_initial;
      continue;
    }
    std::chrono::milliseconds wait = NeedsOperator(r.status()) ? opts_.retry_max : backoff;
    backoff = std::min(backoff * 2, opts_.retry_max);
    std::unique_lock lk(mu_);
    if (cv_.wait_for(lk, wait, [&] { return stop_; })) break;
  }
}

int64_t Ingester::OldestUnstoredReceivedNs() const {
  int64_t v = oldest_ns_.load(std::memory_order_acquire);
  if (v != 0) return v;
  // Durable records not decoded yet (the thread is between reads): no older than now.
  uint64_t next = read_next_.load(std::memory_order_acquire);
  if (next != 0 && log_->DurableSequence() >= next) return clock_->UnixMicros() * 1000;
  return 0;
}

Ingester::Stats Ingester::GetStats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

void Ingester::NoteError(const Status& s) {
  {
    std::lock_guard lk(mu_);
    ++stats_.retries;
    stats_.last_error = s.ToString();
  }
  if (NeedsOperator(s)) {
    log::Error(kLog, "ingest is stuck and needs an operator",
               {{"cursor", opts_.cursor_name}, {"error", s.ToString()}});
  } else {
    log::Warn(kLog, "ingest attempt failed; retrying from the same WAL position",
              {{"cursor", opts_.cursor_name}, {"next_seq", pos_}, {"error", s.ToString()}});
  }
}

void Ingester::SetPoison(uint64_t seq, Status why) {
  poison_seq_ = seq;
  poison_ = DataLoss("WAL record " + std::to_string(seq) + " cannot be stored (" + why.message() +
                     "); ingest stops before it until an operator acts (see docs/telemetry-ingest.md)");
  poison_seen_ns_ = clock_->UnixMicros() * 1000;
  std::lock_guard lk(mu_);
  stats_.stopped_on_poison = true;
}

void Ingester::PublishOldest() {
  int64_t v = 0;
  if (!pending_.empty()) {
    v = std::max<int64_t>(pending_.front().record.received_unix_nanos, 1);
  } else if (!poison_.ok()) {
    v = poison_seen_ns_;
  }
  oldest_ns_.store(v, std::memory_order_release);
}

Status Ingester::Fill() {
  if (!poison_.ok()) return OkStatus();  // read nothing past a record that cannot be stored
  if (!reader_) {
    uint64_t from = synced_ ? pos_ : read_next_.load();
    if (from < log_->FirstSequence()) from = log_->FirstSequence();
    GOVERN_ASSIGN_OR_RETURN(reader_, log_->NewReader(from));
    read_next_ = from;
  }
  constexpr size_t kMaxPendingRecords = 1 << 16;
  while (pending_events_ < opts_.max_batch_events && pending_.size() < kMaxPendingRecords) {
    auto wait = pending_.empty() ? opts_.max_wait : std::chrono::milliseconds(0);
    auto next = reader_->Next(wait);
    if (!next.ok()) {
      uint64_t at = reader_->next_sequence();
      reader_.reset();
      pending_.clear();
      pending_events_ = 0;
      PublishOldest();
      return next.status().WithContext("reading WAL record " + std::to_string(at));
    }
    if (!next->has_value()) break;
    const wal::Record& rec = **next;
    auto decoded = DecodeRecord(rec.data);
    if (!decoded.ok()) {
      SetPoison(rec.seq, decoded.status());
      break;
    }
    if (std::string why = Unstorable(*decoded); !why.empty()) {
      SetPoison(rec.seq, InvalidArgument(why));
      break;
    }
    pending_events_ += decoded->events.size();
    pending_.push_back({rec.seq, std::move(decoded).value()});
    read_next_.store(rec.seq + 1, std::memory_order_release);
  }
  PublishOldest();
  return OkStatus();
}

Status Ingester::Sync(db::Connection& conn) {
  const std::string& name = opts_.cursor_name;
  uint64_t first = log_->FirstSequence();
  GOVERN_RETURN_IF_ERROR(
      conn.ExecPrepared(kInsertCursor, db::Params(name, static_cast<int64_t>(first))).status());
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, conn.ExecPrepared(kSelectCursor, db::Params(name)));
  if (rows.empty()) return Internal("ingest cursor row \"" + name + "\" missing right after its insert");
  GOVERN_ASSIGN_OR_RETURN(int64_t stored_next, rows.Int64(0, 0));
  first = log_->FirstSequence();
  uint64_t durable = log_->DurableSequence();  // read after the row: it only grows
  if (stored_next < 1 || static_cast<uint64_t>(stored_next) < first) {
    return FailedPrecondition("ingest cursor \"" + name + "\" in PostgreSQL is at WAL record " +
                              std::to_string(stored_next) + " but the WAL begins at " +
                              std::to_string(first) +
                              ": records were deleted before they were stored; ingest will not skip them "
                              "(see docs/telemetry-ingest.md)");
  }
  uint64_t next = static_cast<uint64_t>(stored_next);
  if (next > durable + 1) {
    return FailedPrecondition("ingest cursor \"" + name + "\" in PostgreSQL is at WAL record " +
                              std::to_string(next) + " but the WAL ends at " + std::to_string(durable) +
                              ": this WAL directory is not the one this database was fed from "
                              "(see docs/telemetry-ingest.md)");
  }
  pos_ = next;
  synced_ = true;
  next_seq_.store(pos_, std::memory_order_release);
  // Keep what was read ahead when it starts at or before the cursor and reaches it.
  if (reader_ && !pending_.empty() && pending_.front().seq <= pos_ && pos_ <= read_next_.load()) {
    while (!pending_.empty() && pending_.front().seq < pos_) {
      pending_events_ -= pending_.front().record.events.size();
      pending_.pop_front();
    }
  } else if (!(reader_ && pending_.empty() && read_next_.load() == pos_)) {
    reader_.reset();
    pending_.clear();
    pending_events_ = 0;
    poison_ = OkStatus();
    read_next_ = pos_;
  }
  PublishOldest();
  if (Status s = log_->RegisterCursor(name, pos_); !s.ok()) {
    log::Warn(kLog, "could not register the WAL cursor (retention waits)", {{"error", s.ToString()}});
  }
  CommitWalCursor(true);
  log::Info(kLog, "ingest resumes", {{"cursor", name}, {"next_seq", pos_}, {"wal_durable", durable}});
  return OkStatus();
}

Status Ingester::EnsurePartitions(db::Connection& conn, size_t records) {
  std::map<std::string, Partition> need;
  int64_t known_from = 0, known_to = 0;  // the day last checked: most events share it
  for (size_t r = 0; r < records; ++r) {
    for (const Event& e : pending_[r].record.events) {
      int64_t t = e.time_unix_nanos;
      if (known_to != 0 && t >= known_from && t < known_to) continue;
      Partition p = PartitionFor(t);
      known_from = p.from_ns;
      known_to = p.to_ns;
      if (!partitions_.count(p.name)) need.emplace(p.name, std::move(p));
    }
  }
  db::TxOptions tx;
  tx.max_attempts = 1;
  for (const auto& [name, p] : need) {
    Status s = conn.Transact(
        [&](db::Connection& c) -> Status {
          GOVERN_RETURN_IF_ERROR(c.Exec(kPartitionLock).status());
          return c.Exec(PartitionDdl(p)).status();
        },
        tx);
    std::string_view state = db::SqlStateOf(s);
    // 42P07/23505: created by someone else after all; 42P17: an existing partition already covers it.
    if (!s.ok() && state != "42P07" && state != "23505" && state != "42P17") {
      return s.WithContext("creating partition " + name);
    }
    partitions_.insert(name);
  }
  return OkStatus();
}

void Ingester::CommitWalCursor(bool force) {
  if (!synced_ || pos_ == wal_committed_) return;
  int64_t now = clock_->MonotonicNanos();
  if (!force && now - last_wal_commit_mono_ < std::chrono::nanoseconds(opts_.wal_cursor_interval).count())
    return;
  last_wal_commit_mono_ = now;
  if (Status s = log_->CommitCursor(opts_.cursor_name, pos_); !s.ok()) {
    log::Warn(kLog, "could not commit the WAL cursor (retention waits)", {{"error", s.ToString()}});
    return;
  }
  wal_committed_ = pos_;
}

void Ingester::Stored(size_t records, uint64_t inserted, uint64_t duplicates, bool slow) {
  for (size_t i = 0; i < records; ++i) {
    pending_events_ -= pending_.front().record.events.size();
    pos_ = pending_.front().seq + 1;
    pending_.pop_front();
  }
  next_seq_.store(pos_, std::memory_order_release);
  PublishOldest();
  {
    std::lock_guard lk(mu_);
    stats_.events_stored += inserted;
    stats_.duplicates_skipped += duplicates;
    ++stats_.batches;
    if (slow) ++stats_.slow_batches;
  }
  CommitWalCursor(false);
}

Result<size_t> Ingester::Attempt() {
  Status s = Fill();  // read ahead even before the cursor is known: OldestUnstored works with PG down
  if (s.ok() && !synced_) {
    auto lease = pool_->Checkout();
    s = lease.ok() ? Sync(**lease) : lease.status();
    if (s.ok()) s = Fill();
  }
  if (!s.ok()) {
    NoteError(s);
    return s;
  }
  if (pending_.empty()) {
    if (!poison_.ok() && poison_seq_ == pos_) {
      NoteError(poison_);
      return poison_;
    }
    return size_t{0};
  }
  // Whole records up to max_batch_events (at least one); one record at a time while narrowing down a
  // data error PostgreSQL reported for a batch.
  const bool single = pending_[0].seq <= single_until_;
  size_t n = 0, events = 0;
  while (n < pending_.size()) {
    size_t more = pending_[n].record.events.size();
    if (n > 0 && (single || events + more > opts_.max_batch_events)) break;
    events += more;
    ++n;
  }
  auto r = Store(n);
  if (!r.ok()) NoteError(r.status());
  return r;
}

Result<size_t> Ingester::Store(size_t n) {
  const std::string& name = opts_.cursor_name;
  const uint64_t first = pending_[0].seq;
  const uint64_t end = pending_[n - 1].seq + 1;
  size_t events = 0;
  for (size_t i = 0; i < n; ++i) events += pending_[i].record.events.size();

  GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease lease, pool_->Checkout());
  db::Connection& conn = *lease;
  if (Status s = EnsurePartitions(conn, n); !s.ok()) return s;

  int64_t cursor_at = -1;  // set when the cursor row is not where this batch starts
  int64_t inserted = 0;
  static const std::string kCopyEvents = CopySql("telemetry_events");
  static const std::string kCopyStaging = CopySql("telemetry_ingest_staging");
  static const std::string kInsertStaged = InsertFromStagingSql();
  auto body = [&](db::Connection& c, bool staging) -> Status {
    GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c.ExecPrepared(kLockCursor, db::Params(name)));
    if (rows.empty()) return FailedPrecondition("ingest cursor row \"" + name + "\" disappeared");
    GOVERN_ASSIGN_OR_RETURN(int64_t at, rows.Int64(0, 0));
    if (at != static_cast<int64_t>(first)) {
      cursor_at = at;
      return Aborted("the ingest cursor moved");
    }
    if (staging) GOVERN_RETURN_IF_ERROR(c.Exec(kCreateStaging).status());
    GOVERN_ASSIGN_OR_RETURN(db::CopyIn copy, c.CopyFrom(staging ? kCopyStaging : kCopyEvents));
    std::string attrs, res;
    for (size_t i = 0; i < n; ++i) {
      const RecordBatch& rec = pending_[i].record;
      for (const Event& e : rec.events) AppendEventRow(copy, e, rec.received_unix_nanos, &attrs, &res);
    }
    GOVERN_ASSIGN_OR_RETURN(int64_t copied, copy.Finish());
    if (staging) {
      GOVERN_ASSIGN_OR_RETURN(db::Rows ins, c.Exec(kInsertStaged));
      inserted = ins.affected();
    } else {
      inserted = copied;
    }
    if (crash_ == CrashPoint::kAfterCopy) _exit(137);
    GOVERN_ASSIGN_OR_RETURN(db::Rows moved,
                            c.ExecPrepared(kUpdateCursor, db::Params(name, static_cast<int64_t>(end),
                                                                     static_cast<int64_t>(first))));
    if (moved.affected() != 1) {
      // Not inside the transaction that holds the rows: the connection was lost and reopened.
      return db::SqlError("08006", "the ingest transaction was lost before the cursor update");
    }
    return OkStatus();
  };
  db::TxOptions tx;
  tx.max_attempts = 1;  // retries are ours: each re-reads the cursor first
  bool slow = false;
  Status s = conn.Transact([&](db::Connection& c) { return body(c, false); }, tx);
  if (db::SqlStateOf(s) == "23505") {
    // Some of these ids are stored already (a retried client batch): skip them row by row.
    slow = true;
    s = conn.Transact([&](db::Connection& c) { return body(c, true); }, tx);
  }
  if (cursor_at >= 0) {
    if (static_cast<uint64_t>(cursor_at) > first && static_cast<uint64_t>(cursor_at) <= read_next_.load()) {
      // An earlier attempt's COMMIT landed although its outcome was reported unknown.
      size_t done = 0;
      uint64_t done_events = 0;
      while (done < pending_.size() && pending_[done].seq < static_cast<uint64_t>(cursor_at)) {
        done_events += pending_[done].record.events.size();
        ++done;
      }
      log::Info(kLog, "an earlier COMMIT whose outcome was unknown did commit",
                {{"cursor", name}, {"next_seq", cursor_at}});
      Stored(done, done_events, 0, false);
      return size_t{0};
    }
    synced_ = false;  // someone else moved it (an operator, a second ingest): start over from the row
    return Aborted("ingest cursor \"" + name + "\" is at " + std::to_string(cursor_at) + ", expected " +
                   std::to_string(first) + "; re-reading it");
  }
  if (!s.ok()) {
    if (db::SqlStateOf(s) == "23514") partitions_.clear();  // a partition was dropped under us
    if (IsDataError(s)) {
      if (n == 1) {
        SetPoison(first, s);
        pending_.clear();
        pending_events_ = 0;
        reader_.reset();
        read_next_ = first;
        PublishOldest();
        return poison_;
      }
      single_until_ = end - 1;  // find the record: one per transaction until past this batch
    }
    return s.WithContext("storing WAL records " + std::to_string(first) + ".." + std::to_string(end - 1));
  }
  if (crash_ == CrashPoint::kAfterCommit) _exit(137);
  Stored(n, static_cast<uint64_t>(inserted), events - static_cast<uint64_t>(inserted), slow);
  return static_cast<size_t>(inserted);
}

}  // namespace govern::telemetry
