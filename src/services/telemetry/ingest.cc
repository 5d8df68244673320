// Ingester: WAL records -> telemetry_events, the cursor moved in the same transaction.
#include "services/telemetry/ingest.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <tuple>

#include "base/log.h"
#include "base/thread_name.h"
#include "db/error.h"
#include "services/telemetry/record_rows.h"
#include "services/telemetry/schema.h"

namespace govern::telemetry {
namespace {

constexpr std::string_view kLog = "telemetry.ingest";

constexpr const char* kInsertCursor =
    "INSERT INTO telemetry_ingest_cursor (name, next_seq) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING";
// Every row of one base name: the base itself (one worker) and "base:k/N".
constexpr const char* kSelectLayout =
    "SELECT name, next_seq FROM telemetry_ingest_cursor WHERE name = $1 OR starts_with(name, $1 || ':') "
    "FOR UPDATE";
// Serialises layout checks and changes (the rows of a layout change together).
constexpr const char* kLayoutLock =
    "SELECT pg_advisory_xact_lock(hashtext('govern.telemetry_ingest_cursor'))";
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

bool IsDataError(const Status& s) {
  std::string_view state = db::SqlStateOf(s);
  // Class 22 (data exception: bad jsonb, bad encoding); an encoder refusal has no SQLSTATE.
  return state.substr(0, 2) == "22" || (state.empty() && s.code() == Code::kInvalidArgument);
}

// The first sequence at or after `seq` that worker `shard` of `shards` owns.
uint64_t FirstOwned(uint64_t seq, size_t shard, size_t shards) {
  return seq + (shard + shards - seq % shards) % shards;
}

// Parses a row name of `base`'s layouts: base itself is worker 0 of 1, "base:k/N" worker k of N.
bool ParseRowName(const std::string& base, const std::string& name, size_t* shard, size_t* shards) {
  if (name == base) {
    *shard = 0;
    *shards = 1;
    return true;
  }
  if (name.size() <= base.size() + 1 || name.compare(0, base.size(), base) != 0 || name[base.size()] != ':')
    return false;
  unsigned long k = 0, n = 0;
  int used = 0;
  std::string rest = name.substr(base.size() + 1);
  if (std::sscanf(rest.c_str(), "%lu/%lu%n", &k, &n, &used) != 2 || used != static_cast<int>(rest.size()))
    return false;
  if (n < 2 || k >= n || IngestCursorRowName(base, k, n) != name) return false;
  *shard = k;
  *shards = n;
  return true;
}

Result<std::vector<IngestCursorRow>> ReadLayout(db::Connection& c, const std::string& base) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c.Exec(kSelectLayout, db::Params(base)));
  std::vector<IngestCursorRow> out;
  for (int i = 0; i < rows.size(); ++i) {
    IngestCursorRow row;
    GOVERN_ASSIGN_OR_RETURN(row.name, rows.String(i, 0));
    GOVERN_ASSIGN_OR_RETURN(int64_t next, rows.Int64(i, 1));
    row.next_seq = next < 0 ? 0 : static_cast<uint64_t>(next);
    if (ParseRowName(base, row.name, &row.shard, &row.shards)) out.push_back(std::move(row));
  }
  std::sort(out.begin(), out.end(), [](const IngestCursorRow& a, const IngestCursorRow& b) {
    return std::tie(a.shards, a.shard) < std::tie(b.shards, b.shard);
  });
  return out;
}

// True when `rows` are exactly the N rows of one layout.
bool OneLayout(const std::vector<IngestCursorRow>& rows) {
  if (rows.empty() || rows.size() != rows[0].shards) return false;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].shards != rows.size() || rows[i].shard != i) return false;
  }
  return true;
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
                  "Name of the ingest cursor: the WAL cursor, and the rows in telemetry_ingest_cursor (this "
                  "name with one worker, name:k/N with N). Change it only to run a second, independent "
                  "ingest of the same WAL."});
  schema.Add({.key = "telemetry.ingest.workers",
              .type = Type::kInt,
              .default_value = "2",
              .help = "Ingest workers, each storing every N-th WAL record on its own PostgreSQL connection "
                      "(database.pool_size must leave that many free). Changing it between runs is safe: the "
                      "old workers' cursors are merged at their minimum and records stored twice over are "
                      "skipped by id.",
              .min = 1,
              .max = 16});
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
  o.workers = static_cast<size_t>(config.GetInt("telemetry.ingest.workers"));
  o.max_batch_events = static_cast<size_t>(config.GetInt("telemetry.ingest.max_batch_events"));
  o.max_wait = config.GetDuration("telemetry.ingest.max_wait");
  o.retry_max = config.GetDuration("telemetry.ingest.retry_max");
  o.retry_initial = std::min(o.retry_initial, o.retry_max);
  o.wal_cursor_interval = config.GetDuration("telemetry.ingest.wal_cursor_interval");
  return o;
}

std::string IngestCursorRowName(const std::string& base, size_t shard, size_t shards) {
  if (shards <= 1) return base;
  return base + ":" + std::to_string(shard) + "/" + std::to_string(shards);
}

Result<std::vector<IngestCursorRow>> ListIngestCursors(db::Connection& conn, const std::string& base) {
  std::vector<IngestCursorRow> out;
  Status s = conn.Transact([&](db::Connection& c) -> Status {
    GOVERN_ASSIGN_OR_RETURN(out, ReadLayout(c, base));
    return OkStatus();
  });
  if (!s.ok()) return s;
  return out;
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

namespace {

// The rows of `base` under the layout lock, required to be one complete layout.
Result<std::vector<IngestCursorRow>> LockOneLayout(db::Connection& c, const std::string& base) {
  GOVERN_RETURN_IF_ERROR(c.Exec(kLayoutLock).status());
  GOVERN_ASSIGN_OR_RETURN(std::vector<IngestCursorRow> rows, ReadLayout(c, base));
  if (rows.empty()) return NotFound("no ingest cursor \"" + base + "\": ingest has not run yet");
  if (!OneLayout(rows)) {
    return FailedPrecondition("the ingest cursors of \"" + base +
                              "\" are not one complete layout (a change of telemetry.ingest.workers was "
                              "interrupted): start the service once so ingest merges them");
  }
  return rows;
}

Status SetRow(db::Connection& c, const std::string& name, uint64_t from, uint64_t to) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows r, c.Exec("UPDATE telemetry_ingest_cursor SET next_seq = $3 WHERE name = $1 AND next_seq = $2",
                         db::Params(name, static_cast<int64_t>(from), static_cast<int64_t>(to))));
  if (r.affected() != 1) return Aborted("ingest cursor \"" + name + "\" moved meanwhile; nothing changed");
  return OkStatus();
}

}  // namespace

Result<std::vector<IngestCursorRow>> ReplayIngestFrom(db::Pool& pool, const std::string& base,
                                                      uint64_t from_seq) {
  std::vector<IngestCursorRow> before;
  Status s = pool.Transact([&](db::Connection& c) -> Status {
    GOVERN_ASSIGN_OR_RETURN(before, LockOneLayout(c, base));
    for (const IngestCursorRow& r : before) {
      if (FirstOwned(from_seq, r.shard, r.shards) > r.next_seq) {
        return InvalidArgument("ingest cursor \"" + r.name + "\" stands at " + std::to_string(r.next_seq) +
                               ", before " + std::to_string(from_seq) + ": replay only goes back");
      }
    }
    for (const IngestCursorRow& r : before) {
      GOVERN_RETURN_IF_ERROR(SetRow(c, r.name, r.next_seq, FirstOwned(from_seq, r.shard, r.shards)));
    }
    return OkStatus();
  });
  if (!s.ok()) return s;
  return before;
}

Result<IngestCursorRow> SkipIngestRecord(db::Pool& pool, const std::string& base, uint64_t seq) {
  IngestCursorRow owner;
  Status s = pool.Transact([&](db::Connection& c) -> Status {
    GOVERN_ASSIGN_OR_RETURN(std::vector<IngestCursorRow> rows, LockOneLayout(c, base));
    owner = rows[seq % rows.size()];
    uint64_t oldest = owner.next_seq;
    for (const IngestCursorRow& r : rows) oldest = std::min(oldest, r.next_seq);
    // Every worker stops at a record that cannot be stored, so it is the oldest unstored one; a worker
    // merely waiting there must not have its own next record skipped.
    if (owner.next_seq != seq || oldest != seq) {
      return FailedPrecondition(
          "ingest cursor \"" + owner.name + "\" (the worker that owns record " + std::to_string(seq) +
          ") stands at " + std::to_string(owner.next_seq) + " and the oldest unstored record is " +
          std::to_string(oldest) +
          ": only the record it is stopped on (the oldest unstored one) can be skipped; nothing "
          "changed");
    }
    return SetRow(c, owner.name, seq, seq + rows.size());
  });
  if (!s.ok()) return s;
  return owner;
}

// What the workers share: the borrowed parts, the options, the poison stop, the WAL cursor and Stats.
struct Ingester::Shared {
  enum class CrashPoint { kNone, kAfterCopy, kAfterCommit, kConcurrentCommit };

  wal::Log* log;
  db::Pool* pool;
  IngestOptions opts;
  const Clock* clock;
  CrashPoint crash = CrashPoint::kNone;
  std::vector<Worker*> workers;

  // kConcurrentCommit only: workers holding a whole uncommitted batch, waiting to COMMIT together.
  std::mutex crash_mu;
  std::condition_variable crash_cv;
  size_t crash_waiting = 0;
  bool crash_released = false;
  void CrashBarrier();

  // The lowest sequence of a record found unstorable: no worker stores a record at or after it.
  std::atomic<uint64_t> stop_at{std::numeric_limits<uint64_t>::max()};

  std::mutex layout_mu;
  bool layout_ready = false;  // the rows of this layout exist (checked once per Ingester)

  std::mutex wal_mu;
  int64_t last_wal_commit_mono = 0;
  uint64_t wal_committed = 0;

  mutable std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  Stats stats;

  uint64_t MinNext() const;
  Status EnsureLayout(db::Connection& conn);
  void CommitWalCursor(bool force);
  void NoteError(const Status& s, size_t shard, uint64_t pos);
};

class Ingester::Worker {
 public:
  Worker(Shared* shared, size_t shard)
      : sh_(shared),
        shard_(shard),
        n_(shared->opts.workers),
        name_(IngestCursorRowName(shared->opts.cursor_name, shard, n_)) {
    auto at = sh_->log->CursorPosition(sh_->opts.cursor_name);
    read_next_ = at.ok() ? std::max(*at, sh_->log->FirstSequence()) : sh_->log->FirstSequence();
  }

  void Loop();
  Result<size_t> Attempt();
  uint64_t next_seq() const { return next_seq_.load(std::memory_order_acquire); }
  int64_t OldestUnstoredReceivedNs() const;
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  void Run() {
    thread_ = std::thread([this] {
      NameThisThread("tel-ingest");
      Loop();
    });
  }

 private:
  // A record as read from the WAL, checked (CheckRecord) but not decoded: its rows are written
  // straight from these bytes when it is stored (record_rows.h), with no per-event allocation.
  struct Pending {
    uint64_t seq;
    std::string data;
    RecordInfo info;
  };

  Status Sync(db::Connection& conn);
  Status Fill();
  Result<size_t> Store(size_t records);
  Status EnsurePartitions(db::Connection& conn, size_t records);
  void SetPoison(uint64_t seq, Status why);
  void Stored(size_t records, uint64_t inserted, uint64_t duplicates, bool slow);
  void PublishOldest();
  void NoteError(const Status& s) { sh_->NoteError(s, shard_, pos_); }
  bool Owns(uint64_t seq) const { return seq % n_ == shard_; }

  Shared* sh_;
  const size_t shard_;
  const size_t n_;
  const std::string name_;  // this worker's telemetry_ingest_cursor row

  // Owned by the thread running attempts.
  bool synced_ = false;
  uint64_t pos_ = 0;  // next owned sequence to store (valid when synced_)
  std::unique_ptr<wal::Reader> reader_;
  std::deque<Pending> pending_;  // decoded owned records, from pos_ on in order, not yet stored
  size_t pending_events_ = 0;
  Status poison_;  // not ok once a record that cannot be stored was found at poison_seq_
  uint64_t poison_seq_ = 0;
  int64_t poison_seen_ns_ = 0;
  uint64_t single_until_ = 0;         // after a data error: batches of one record up to this sequence
  std::set<std::string> partitions_;  // created (or found) by this worker
  RowScratch scratch_;                // reused by every COPY

  std::atomic<uint64_t> next_seq_{0};
  std::atomic<uint64_t> read_next_{0};  // the next sequence the reader will read
  std::atomic<int64_t> oldest_ns_{0};
  std::thread thread_;
};

uint64_t Ingester::Shared::MinNext() const {
  uint64_t m = 0;
  for (const Worker* w : workers) {
    uint64_t v = w->next_seq();
    if (v == 0) return 0;
    if (m == 0 || v < m) m = v;
  }
  return m;
}

// Test only (ingest.concurrent_commit): holds each worker with its batch COPYed and its cursor row
// moved but not committed until every worker is there, then lets them all COMMIT at once; the first
// COMMIT to return ends the process, so the others die somewhere in their own COMMIT. A worker left
// waiting 30 s (the test gave some worker nothing to store) exits 6 instead, so the test fails.
void Ingester::Shared::CrashBarrier() {
  std::unique_lock lk(crash_mu);
  if (++crash_waiting >= opts.workers) {
    crash_released = true;
    crash_cv.notify_all();
    return;
  }
  if (!crash_cv.wait_for(lk, std::chrono::seconds(30), [&] { return crash_released; })) _exit(6);
}

void Ingester::Shared::NoteError(const Status& s, size_t shard, uint64_t pos) {
  {
    std::lock_guard lk(mu);
    ++stats.retries;
    stats.last_error = s.ToString();
  }
  std::string worker = std::to_string(shard) + "/" + std::to_string(opts.workers);
  if (NeedsOperator(s)) {
    log::Error(kLog, "ingest is stuck and needs an operator",
               {{"cursor", opts.cursor_name}, {"worker", worker}, {"error", s.ToString()}});
  } else {
    log::Warn(kLog, "ingest attempt failed; retrying from the same WAL position",
              {{"cursor", opts.cursor_name}, {"worker", worker}, {"next_seq", pos}, {"error", s.ToString()}});
  }
}

Status Ingester::Shared::EnsureLayout(db::Connection& conn) {
  std::lock_guard lk(layout_mu);
  if (layout_ready) return OkStatus();
  const std::string& base = opts.cursor_name;
  const size_t n = opts.workers;
  uint64_t start = 0;
  bool changed = false;
  std::string old_layout;
  db::TxOptions tx;
  tx.max_attempts = 1;
  Status s = conn.Transact(
      [&](db::Connection& c) -> Status {
        GOVERN_RETURN_IF_ERROR(c.Exec(kLayoutLock).status());
        GOVERN_ASSIGN_OR_RETURN(std::vector<IngestCursorRow> rows, ReadLayout(c, base));
        changed = false;
        old_layout.clear();
        if (OneLayout(rows) && rows.size() == n) {
          start = rows[0].next_seq;
          for (const IngestCursorRow& r : rows) start = std::min(start, r.next_seq);
          return OkStatus();
        }
        if (rows.empty()) {
          start = log->FirstSequence();
        } else {
          // Another layout (or the remains of an interrupted change): every record before the lowest
          // cursor is stored; from there on the new workers read everything again and skip by id.
          changed = true;
          start = rows[0].next_seq;
          for (const IngestCursorRow& r : rows) {
            start = std::min(start, r.next_seq);
            old_layout += (old_layout.empty() ? "" : ", ") + r.name + "=" + std::to_string(r.next_seq);
            GOVERN_RETURN_IF_ERROR(
                c.Exec("DELETE FROM telemetry_ingest_cursor WHERE name = $1", db::Params(r.name)).status());
          }
        }
        for (size_t k = 0; k < n; ++k) {
          GOVERN_RETURN_IF_ERROR(
              c.ExecPrepared(kInsertCursor, db::Params(IngestCursorRowName(base, k, n),
                                                       static_cast<int64_t>(FirstOwned(start, k, n))))
                  .status());
        }
        return OkStatus();
      },
      tx);
  if (!s.ok()) return s.WithContext("checking the ingest workers' cursor rows");
  if (changed) {
    log::Warn(kLog,
              "ingest workers changed: every new worker starts at the oldest old cursor; records stored "
              "already are read again and skipped by id",
              {{"cursor", base}, {"old", old_layout}, {"workers", n}, {"from_seq", start}});
  }
  // The WAL cursor holds retention at the oldest record any worker still needs.
  // (Within the WAL's range: a row outside it is refused by the worker that owns it.)
  uint64_t hold = std::clamp(start, log->FirstSequence(), log->DurableSequence() + 1);
  if (Status r = log->RegisterCursor(base, hold); !r.ok()) {
    log::Warn(kLog, "could not register the WAL cursor (retention waits)", {{"error", r.ToString()}});
  }
  layout_ready = true;
  return OkStatus();
}

void Ingester::Shared::CommitWalCursor(bool force) {
  std::lock_guard lk(wal_mu);
  uint64_t pos = MinNext();
  if (pos == 0 || pos == wal_committed) return;
  int64_t now = clock->MonotonicNanos();
  if (!force && now - last_wal_commit_mono < std::chrono::nanoseconds(opts.wal_cursor_interval).count())
    return;
  last_wal_commit_mono = now;
  // The lowest worker cursor is the first unstored record; it never passes the WAL's end.
  pos = std::min(pos, log->DurableSequence() + 1);
  if (Status s = log->CommitCursor(opts.cursor_name, pos); !s.ok()) {
    log::Warn(kLog, "could not commit the WAL cursor (retention waits)", {{"error", s.ToString()}});
    return;
  }
  wal_committed = pos;
}

Ingester::Ingester(wal::Log* log, db::Pool* pool, IngestOptions options, const Clock* clock)
    : shared_(std::make_unique<Shared>()) {
  Shared& sh = *shared_;
  sh.log = log;
  sh.pool = pool;
  sh.opts = std::move(options);
  sh.clock = clock;
  if (sh.opts.max_batch_events == 0) sh.opts.max_batch_events = 1;
  if (sh.opts.workers == 0) sh.opts.workers = 1;
  if (const char* at = std::getenv("GOVERN_TELEMETRY_CRASH_AT")) {
    std::string_view v(at);
    if (v == "ingest.after_copy") sh.crash = Shared::CrashPoint::kAfterCopy;
    if (v == "ingest.after_commit") sh.crash = Shared::CrashPoint::kAfterCommit;
    if (v == "ingest.concurrent_commit") sh.crash = Shared::CrashPoint::kConcurrentCommit;
  }
  for (size_t k = 0; k < sh.opts.workers; ++k) {
    workers_.push_back(std::make_unique<Worker>(&sh, k));
    sh.workers.push_back(workers_.back().get());
  }
}

Ingester::~Ingester() {
  Stop();
  shared_->CommitWalCursor(true);
}

Status Ingester::Start() {
  {
    std::lock_guard lk(shared_->mu);
    if (running_) return FailedPrecondition("telemetry ingest already started");
    running_ = true;
    shared_->stop = false;
  }
  for (auto& w : workers_) w->Run();
  return OkStatus();
}

void Ingester::Stop() {
  {
    std::lock_guard lk(shared_->mu);
    if (!running_) return;
    shared_->stop = true;
  }
  shared_->cv.notify_all();
  for (auto& w : workers_) w->Join();
  {
    std::lock_guard lk(shared_->mu);
    running_ = false;
    shared_->stop = false;
  }
  shared_->CommitWalCursor(true);
}

Result<size_t> Ingester::RunOnce() {
  {
    std::lock_guard lk(shared_->mu);
    if (running_) return FailedPrecondition("RunOnce() while the ingest threads run");
  }
  size_t total = 0;
  Status first_error;
  for (auto& w : workers_) {
    auto r = w->Attempt();
    if (r.ok()) {
      total += *r;
    } else if (first_error.ok()) {
      first_error = r.status();
    }
  }
  if (!first_error.ok()) return first_error;
  return total;
}

uint64_t Ingester::NextSequence() const { return shared_->MinNext(); }

int64_t Ingester::OldestUnstoredReceivedNs() const {
  int64_t oldest = 0;
  for (const auto& w : workers_) {
    int64_t v = w->OldestUnstoredReceivedNs();
    if (v != 0 && (oldest == 0 || v < oldest)) oldest = v;
  }
  return oldest;
}

Ingester::Stats Ingester::GetStats() const {
  std::lock_guard lk(shared_->mu);
  return shared_->stats;
}

void Ingester::Worker::Loop() {
  std::chrono::milliseconds backoff = sh_->opts.retry_initial;
  for (;;) {
    {
      std::lock_guard lk(sh_->mu);
      if (sh_->stop) break;
    }
    auto r = Attempt();
    if (r.ok()) {
      backoff = sh_->opts.retry_initial;
      continue;
    }
    std::chrono::milliseconds wait = NeedsOperator(r.status()) ? sh_->opts.retry_max : backoff;
    backoff = std::min(backoff * 2, sh_->opts.retry_max);
    std::unique_lock lk(sh_->mu);
    if (sh_->cv.wait_for(lk, wait, [&] { return sh_->stop; })) break;
  }
}

int64_t Ingester::Worker::OldestUnstoredReceivedNs() const {
  int64_t v = oldest_ns_.load(std::memory_order_acquire);
  if (v != 0) return v;
  // Durable records not read yet (the thread is between reads): no older than now.
  uint64_t next = read_next_.load(std::memory_order_acquire);
  if (next != 0 && sh_->log->DurableSequence() >= next) return sh_->clock->UnixMicros() * 1000;
  return 0;
}

void Ingester::Worker::SetPoison(uint64_t seq, Status why) {
  poison_seq_ = seq;
  poison_ = DataLoss("WAL record " + std::to_string(seq) + " cannot be stored (" + why.message() +
                     "); ingest stops before it until an operator acts (see docs/telemetry-ingest.md)");
  poison_seen_ns_ = sh_->clock->UnixMicros() * 1000;
  // Every worker stops there: the operator sees one place to act on, and the cursors stay close.
  uint64_t at = sh_->stop_at.load();
  while (seq < at && !sh_->stop_at.compare_exchange_weak(at, seq)) {
  }
  std::lock_guard lk(sh_->mu);
  sh_->stats.stopped_on_poison = true;
}

void Ingester::Worker::PublishOldest() {
  int64_t v = 0;
  if (!pending_.empty()) {
    v = std::max<int64_t>(pending_.front().info.received_unix_nanos, 1);
  } else if (!poison_.ok()) {
    v = poison_seen_ns_;
  }
  oldest_ns_.store(v, std::memory_order_release);
}

Status Ingester::Worker::Fill() {
  if (!poison_.ok()) return OkStatus();  // read nothing past a record that cannot be stored
  wal::Log* log = sh_->log;
  if (!reader_) {
    uint64_t from = synced_ ? pos_ : read_next_.load();
    if (from < log->FirstSequence()) from = log->FirstSequence();
    GOVERN_ASSIGN_OR_RETURN(reader_, log->NewReader(from));
    read_next_ = from;
  }
  constexpr size_t kMaxPendingRecords = 1 << 16;
  while (pending_events_ < sh_->opts.max_batch_events && pending_.size() < kMaxPendingRecords) {
    auto wait = pending_.empty() ? sh_->opts.max_wait : std::chrono::milliseconds(0);
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
    if (!Owns(rec.seq)) {  // another worker's: not even decoded
      read_next_.store(rec.seq + 1, std::memory_order_release);
      continue;
    }
    // Malformed (DataLoss), or an event PostgreSQL cannot hold: an empty id (the primary key needs the
    // id intake always assigns) or a NUL character (intake refuses those; a WAL written before it did,
    // or by hand, may still hold one).
    RecordInfo info;
    if (Status check = CheckRecord(rec.data, &info); !check.ok()) {
      SetPoison(rec.seq, check);
      break;
    }
    pending_events_ += info.events;
    pending_.push_back({rec.seq, std::string(rec.data), std::move(info)});
    read_next_.store(rec.seq + 1, std::memory_order_release);
  }
  PublishOldest();
  return OkStatus();
}

Status Ingester::Worker::Sync(db::Connection& conn) {
  wal::Log* log = sh_->log;
  GOVERN_RETURN_IF_ERROR(sh_->EnsureLayout(conn));
  uint64_t first = log->FirstSequence();
  GOVERN_RETURN_IF_ERROR(
      conn.ExecPrepared(kInsertCursor, db::Params(name_, static_cast<int64_t>(FirstOwned(first, shard_, n_))))
          .status());
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, conn.ExecPrepared(kSelectCursor, db::Params(name_)));
  if (rows.empty()) return Internal("ingest cursor row \"" + name_ + "\" missing right after its insert");
  GOVERN_ASSIGN_OR_RETURN(int64_t stored_next, rows.Int64(0, 0));
  first = log->FirstSequence();
  uint64_t durable = log->DurableSequence();  // read after the row: it only grows
  if (stored_next < 1 || static_cast<uint64_t>(stored_next) < first) {
    return FailedPrecondition("ingest cursor \"" + name_ + "\" in PostgreSQL is at WAL record " +
                              std::to_string(stored_next) + " but the WAL begins at " +
                              std::to_string(first) +
                              ": records were deleted before they were stored; ingest will not skip them "
                              "(see docs/telemetry-ingest.md)");
  }
  uint64_t next = static_cast<uint64_t>(stored_next);
  // The cursor names an owned record: at most N - 1 past the WAL's end once everything is stored.
  if (next > durable + n_) {
    return FailedPrecondition("ingest cursor \"" + name_ + "\" in PostgreSQL is at WAL record " +
                              std::to_string(next) + " but the WAL ends at " + std::to_string(durable) +
                              ": this WAL directory is not the one this database was fed from "
                              "(see docs/telemetry-ingest.md)");
  }
  pos_ = next;
  synced_ = true;
  next_seq_.store(pos_, std::memory_order_release);
  // Keep what was read ahead when no owned record between the cursor and the read position is missing.
  const uint64_t read = read_next_.load();
  if (reader_ && pos_ < read + n_ && (pending_.empty() ? read <= pos_ : pending_.front().seq <= pos_)) {
    while (!pending_.empty() && pending_.front().seq < pos_) {
      pending_events_ -= pending_.front().info.events;
      pending_.pop_front();
    }
  } else {
    reader_.reset();
    pending_.clear();
    pending_events_ = 0;
    if (!poison_.ok()) {
      // The cursor moved under a stopped worker (an operator): the stop is its to lift.
      uint64_t at = poison_seq_;
      sh_->stop_at.compare_exchange_strong(at, std::numeric_limits<uint64_t>::max());
    }
    poison_ = OkStatus();
    read_next_ = pos_;
  }
  PublishOldest();
  sh_->CommitWalCursor(true);
  log::Info(kLog, "ingest resumes", {{"cursor", name_}, {"next_seq", pos_}, {"wal_durable", durable}});
  return OkStatus();
}

Status Ingester::Worker::EnsurePartitions(db::Connection& conn, size_t records) {
  std::map<std::string, Partition> need;
  int64_t known_from = 0, known_to = 0;  // the day last checked: most events share it
  for (size_t r = 0; r < records; ++r) {
    for (int64_t t : pending_[r].info.day_times) {
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

void Ingester::Worker::Stored(size_t records, uint64_t inserted, uint64_t duplicates, bool slow) {
  for (size_t i = 0; i < records; ++i) {
    pending_events_ -= pending_.front().info.events;
    pos_ = pending_.front().seq + n_;
    pending_.pop_front();
  }
  next_seq_.store(pos_, std::memory_order_release);
  PublishOldest();
  {
    std::lock_guard lk(sh_->mu);
    sh_->stats.events_stored += inserted;
    sh_->stats.duplicates_skipped += duplicates;
    ++sh_->stats.batches;
    if (slow) ++sh_->stats.slow_batches;
  }
  sh_->CommitWalCursor(false);
}

Result<size_t> Ingester::Worker::Attempt() {
  Status s = Fill();  // read ahead even before the cursor is known: OldestUnstored works with PG down
  if (s.ok() && !synced_) {
    auto lease = sh_->pool->Checkout();
    s = lease.ok() ? Sync(**lease) : lease.status();
    if (s.ok()) s = Fill();
  }
  if (!s.ok()) {
    NoteError(s);
    return s;
  }
  const uint64_t stop_at = sh_->stop_at.load(std::memory_order_acquire);
  if (pending_.empty() || pending_[0].seq >= stop_at) {
    if (!poison_.ok() && poison_seq_ == pos_) {
      NoteError(poison_);
      return poison_;
    }
    if (pending_.empty()) return size_t{0};
    // Another worker found a record it cannot store: this one waits at the same place.
    Status waits = DataLoss("WAL record " + std::to_string(stop_at) +
                            " cannot be stored; this worker stops before its next record " +
                            std::to_string(pending_[0].seq) + " too (see docs/telemetry-ingest.md)");
    NoteError(waits);
    return waits;
  }
  // Whole records up to max_batch_events (at least one), none past a record that cannot be stored; one
  // record at a time while narrowing down a data error PostgreSQL reported for a batch.
  const bool single = pending_[0].seq <= single_until_;
  size_t n = 0, events = 0;
  while (n < pending_.size() && pending_[n].seq < stop_at) {
    size_t more = pending_[n].info.events;
    if (n > 0 && (single || events + more > sh_->opts.max_batch_events)) break;
    events += more;
    ++n;
  }
  auto r = Store(n);
  if (!r.ok()) NoteError(r.status());
  return r;
}

Result<size_t> Ingester::Worker::Store(size_t n) {
  const std::string& name = name_;
  const uint64_t first = pending_[0].seq;  // == pos_: pending_ starts at the cursor
  const uint64_t end = pending_[n - 1].seq + n_;
  size_t events = 0;
  for (size_t i = 0; i < n; ++i) events += pending_[i].info.events;

  GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease lease, sh_->pool->Checkout());
  db::Connection& conn = *lease;
  if (Status s = EnsurePartitions(conn, n); !s.ok()) return s;

  int64_t cursor_at = -1;  // set when the cursor row is not where this batch starts
  int64_t inserted = 0;
  static const std::string kCopyEvents = CopySql("telemetry_events");
  static const std::string kCopyStaging = CopySql("telemetry_ingest_staging");
  static const std::string kInsertStaged = InsertFromStagingSql();
  const Shared::CrashPoint crash = sh_->crash;
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
    size_t written = 0;
    for (size_t i = 0; i < n; ++i) {
      written += AppendRecordRows(pending_[i].data, &scratch_,
                                  [&]() -> db::CopyEncoder& { return copy.Row(kEventColumnCount); });
    }
    // CheckRecord vouched for every record; a mismatch would be a bug, never a reason to commit.
    if (written != events)
      return Internal("wrote " + std::to_string(written) + " rows of " + std::to_string(events));
    GOVERN_ASSIGN_OR_RETURN(int64_t copied, copy.Finish());
    if (staging) {
      GOVERN_ASSIGN_OR_RETURN(db::Rows ins, c.Exec(kInsertStaged));
      inserted = ins.affected();
    } else {
      inserted = copied;
    }
    if (crash == Shared::CrashPoint::kAfterCopy) _exit(137);
    GOVERN_ASSIGN_OR_RETURN(db::Rows moved,
                            c.ExecPrepared(kUpdateCursor, db::Params(name, static_cast<int64_t>(end),
                                                                     static_cast<int64_t>(first))));
    if (moved.affected() != 1) {
      // Not inside the transaction that holds the rows: the connection was lost and reopened.
      return db::SqlError("08006", "the ingest transaction was lost before the cursor update");
    }
    if (crash == Shared::CrashPoint::kConcurrentCommit) sh_->CrashBarrier();
    return OkStatus();
  };
  db::TxOptions tx;
  tx.max_attempts = 1;  // retries are ours: each re-reads the cursor first
  bool slow = false;
  Status s = conn.Transact([&](db::Connection& c) { return body(c, false); }, tx);
  if (db::SqlStateOf(s) == "23505") {
    // Some of these ids are stored already (a retried client batch, or records read again after the
    // number of workers changed): skip them row by row.
    slow = true;
    s = conn.Transact([&](db::Connection& c) { return body(c, true); }, tx);
  }
  if (cursor_at >= 0) {
    const uint64_t at = static_cast<uint64_t>(cursor_at);
    if (at > first && at < read_next_.load() + n_) {
      // An earlier attempt's COMMIT landed although its outcome was reported unknown.
      size_t done = 0;
      uint64_t done_events = 0;
      while (done < pending_.size() && pending_[done].seq < at) {
        done_events += pending_[done].info.events;
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
    if (db::SqlStateOf(s) == "23514" && s.message().find("no partition of relation") != std::string::npos) {
      // A day partition this worker had seen was dropped under it (compaction drops emptied days):
      // the next attempt creates it again. Not a case for an operator (23 maps to FailedPrecondition).
      // Any other check violation is the data's, and goes on to be bisected and poisoned below.
      partitions_.clear();
      return Aborted("storing WAL records " + std::to_string(first) + ".." + std::to_string(end - n_) +
                     ": a day partition was dropped meanwhile; creating it again (" + s.message() + ")");
    }
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
    return s.WithContext("storing WAL records " + std::to_string(first) + ".." + std::to_string(end - n_) +
                         (n_ > 1 ? " (every " + std::to_string(n_) + "th)" : ""));
  }
  if (crash == Shared::CrashPoint::kAfterCommit || crash == Shared::CrashPoint::kConcurrentCommit) _exit(137);
  Stored(n, static_cast<uint64_t>(inserted), events - static_cast<uint64_t>(inserted), slow);
  return static_cast<size_t>(inserted);
}

}  // namespace govern::telemetry
