// Compactor: PostgreSQL rows of old hours -> Parquet files in the archive, registered in the manifest
// in the same transaction that deletes the rows.
#include "services/telemetry/compactor.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <future>
#include <optional>
#include <set>
#include <vector>

#include "base/log.h"
#include "base/thread_name.h"
#include "services/telemetry/archive.h"
#include "services/telemetry/schema.h"
#include "storage/parquet/writer.h"

namespace govern::telemetry {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

[[noreturn]] void CrashForTest(const char* point) {
  log::Write(log::Level::kWarn, "telemetry.compactor", "test crash point reached", {{"point", point}});
  _exit(137);
}

// A plain local file for the Parquet bytes before upload. Not fsynced: the upload is what must be
// durable, and a crash loses only a temporary file (removed by the destructor or left in temp_dir).
class TempFileSink final : public parquet::Sink {
 public:
  explicit TempFileSink(int fd) : fd_(fd) {}
  ~TempFileSink() override {
    if (fd_ >= 0) ::close(fd_);
  }
  Status Append(std::string_view data) override {
    while (!data.empty()) {
      ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return Internal(std::string("writing a temporary Parquet file: ") + std::strerror(errno));
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return OkStatus();
  }
  Status Close() override {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0)
      return Internal(std::string("closing a temporary Parquet file: ") + std::strerror(errno));
    return OkStatus();
  }

 private:
  int fd_;
};

// Removes the file at `path` when it goes out of scope.
struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit() {
    if (!path.empty()) ::unlink(path.c_str());
  }
};

// A PostgreSQL array literal of strings: {"a","b\"c"}.
void AppendArrayString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
}

// "telemetry_events_p20261130" -> start of that UTC day in ns; false when the name is not one.
bool PartitionDay(std::string_view name, int64_t* day_ns) {
  constexpr std::string_view kPrefix = "telemetry_events_p";
  if (name.size() != kPrefix.size() + 8 || name.substr(0, kPrefix.size()) != kPrefix) return false;
  std::string_view d = name.substr(kPrefix.size());
  for (char c : d) {
    if (c < '0' || c > '9') return false;
  }
  std::tm tm{};
  tm.tm_year = std::atoi(std::string(d.substr(0, 4)).c_str()) - 1900;
  tm.tm_mon = std::atoi(std::string(d.substr(4, 2)).c_str()) - 1;
  tm.tm_mday = std::atoi(std::string(d.substr(6, 2)).c_str());
  std::time_t secs = timegm(&tm);
  *day_ns = static_cast<int64_t>(secs) * kNanosPerSecond;
  return PartitionFor(*day_ns).name == name;
}

std::string DefaultTempDir() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

}  // namespace

Compactor::Compactor(db::Pool* pool, objstore::Store* store, const Clock* clock, CompactionOptions options)
    : pool_(pool), store_(store), clock_(clock), options_(std::move(options)) {
  if (const char* at = std::getenv("GOVERN_TELEMETRY_CRASH_AT")) crash_at_ = at;
  if (options_.temp_dir.empty()) options_.temp_dir = DefaultTempDir();
  if (options_.read_batch_rows <= 0) options_.read_batch_rows = 20000;
}

Compactor::~Compactor() { Stop(); }

CompactionStats Compactor::totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return totals_;
}

Result<CompactionStats> Compactor::RunOnce() {
  CompactionStats stats;
  const int64_t now_ns = clock_->UnixMicros() * 1000;
  const int64_t age_ns = static_cast<int64_t>(options_.age.count());
  // Whole hours only: an hour is archived once all of it is older than `age`.
  const int64_t cutoff = HourOf(now_ns - age_ns);

  // The lock is session-level, on the connection that does the work: it lasts across the pass's
  // transactions, and goes with the connection. A reconnect therefore means the lock may be someone
  // else's now, so every group checks the reconnect count before it uploads and before it commits.
  GOVERN_ASSIGN_OR_RETURN(auto conn, pool_->Checkout());
  auto locked = conn->Exec("SELECT pg_try_advisory_lock($1)", db::Params(kCompactionLockKey));
  if (!locked.ok()) return locked.status();
  GOVERN_ASSIGN_OR_RETURN(bool have_lock, locked->Bool(0, 0));
  if (!have_lock) {
    stats.skipped_locked = true;
    return stats;
  }
  lock_reconnects_ = conn->reconnects();
  struct Unlock {
    db::Pool::Lease& c;
    ~Unlock() { (void)c->Exec("SELECT pg_advisory_unlock($1)", db::Params(kCompactionLockKey)); }
  } unlock{conn};

  Status result;
  // Each organisation in turn (one index probe per step), then each of its old hours.
  std::optional<std::string> org;
  while (result.ok()) {
    auto next =
        org ? conn->ExecPrepared("SELECT min(org) FROM telemetry_events WHERE org > $1", db::Params(*org))
            : conn->ExecPrepared("SELECT min(org) FROM telemetry_events");
    if (!next.ok()) {
      result = next.status();
      break;
    }
    if (next->IsNull(0, 0)) break;
    org = std::string(next->Text(0, 0));
    int64_t from = INT64_MIN;
    while (result.ok()) {
      auto t = conn->ExecPrepared(
          "SELECT min(time_ns) FROM telemetry_events WHERE org = $1 AND time_ns >= $2 AND time_ns < $3",
          db::Params(*org, from, cutoff));
      if (!t.ok()) {
        result = t.status();
        break;
      }
      if (t->IsNull(0, 0)) break;
      auto first = t->Int64(0, 0);
      if (!first.ok()) {
        result = first.status();
        break;
      }
      int64_t hour = HourOf(*first);
      result = CompactGroup(*conn, *org, hour, &stats);
      from = hour + kNanosPerHour;
    }
  }
  if (result.ok() && options_.drop_empty_partitions) result = DropOldPartitions(*conn, cutoff, &stats);
  {
    std::lock_guard<std::mutex> lock(mu_);
    totals_.groups += stats.groups;
    totals_.rows += stats.rows;
    totals_.bytes += stats.bytes;
    totals_.partitions_dropped += stats.partitions_dropped;
    totals_.repeats_deleted += stats.repeats_deleted;
  }
  if (!result.ok()) return result;
  return stats;
}

Status Compactor::CompactGroup(db::Connection& conn, const std::string& org, int64_t hour_ns,
                               CompactionStats* stats) {
  const int64_t end = hour_ns + kNanosPerHour;
  const CompactionStats before = *stats;  // for this group's phase times in the log
  const auto group_start = std::chrono::steady_clock::now();
  auto seq_rows = conn.ExecPrepared(
      "SELECT COALESCE(max(seq) + 1, 0) FROM telemetry_archive_files WHERE org = $1 AND hour_ns = $2",
      db::Params(org, hour_ns));
  if (!seq_rows.ok()) return seq_rows.status();
  GOVERN_ASSIGN_OR_RETURN(int64_t seq, seq_rows->Int64(0, 0));
  const std::string key = ArchiveObjectKey(org, hour_ns, seq);

  // Rows for an hour that already has files may repeat events that are archived: a client's retry or
  // an operator's `ingest replay` after compaction stores them in PostgreSQL again (its primary key
  // only sees PostgreSQL). Such rows are deleted here instead of being archived a second time, so
  // every event ends up stored once. Only late rows pay for reading the hour's files.
  std::set<std::pair<int64_t, std::string>> archived;
  if (seq > 0) {
    Archive reader(pool_, store_);
    GOVERN_ASSIGN_OR_RETURN(auto files, reader.ListFiles(conn, org, hour_ns, end));
    for (const ArchiveFile& f : files) {
      if (f.hour_ns != hour_ns) continue;
      GOVERN_ASSIGN_OR_RETURN(auto events, reader.ReadFile(f));
      for (const StoredEvent& e : events) archived.emplace(e.event.time_unix_nanos, e.event.id);
    }
  }

  static std::atomic<uint64_t> counter{0};
  RemoveOnExit temp{options_.temp_dir + "/govern-compact-" + std::to_string(::getpid()) + "-" +
                    std::to_string(counter++) + ".parquet"};
  int fd = ::open(temp.path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return Internal("creating " + temp.path + ": " + std::strerror(errno));
  auto writer = parquet::Writer::Create(std::make_unique<TempFileSink>(fd), EventParquetSchema(),
                                        EventWriterOptions(org, hour_ns, options_.row_group_rows));
  if (!writer.ok()) return writer.status();

  // The keys read (archived now or already), in case the delete has to name them (see the
  // transaction below).
  std::vector<int64_t> key_times;
  std::string key_ids;                 // the ids, back to back
  std::vector<size_t> key_ends;        // where each id ends in key_ids
  int64_t rows = 0;                    // written to the new file
  int64_t repeats = 0;                 // already archived: only deleted
  int64_t min_time = 0, max_time = 0;  // of the rows written
  EventColumns batch;
  // Pages are read ahead: while one page is encoded here, the next is fetched on another thread
  // (PostgreSQL works in its own process, so the two overlap on two cores). The connection is used by
  // one thread at a time: the fetch of page k+1 starts after page k arrived.
  auto fetch = [&, batch_rows = options_.read_batch_rows](
                   std::optional<std::pair<int64_t, std::string>> after) -> Result<db::Rows> {
    if (!after) {
      return conn.ExecPrepared(std::string("SELECT ") + kEventColumns +
                                   " FROM telemetry_events WHERE org = $1 AND time_ns >= $2 AND time_ns < $3 "
                                   "ORDER BY time_ns, id LIMIT $4",
                               db::Params(org, hour_ns, end, batch_rows));
    }
    return conn.ExecPrepared(std::string("SELECT ") + kEventColumns +
                                 " FROM telemetry_events WHERE org = $1 AND time_ns >= $2 AND time_ns < $3 "
                                 "AND (time_ns, id) > ($2, $4) ORDER BY time_ns, id LIMIT $5",
                             db::Params(org, after->first, end, after->second, batch_rows));
  };
  auto phase = std::chrono::steady_clock::now();
  Result<db::Rows> page = fetch(std::nullopt);
  while (true) {
    if (!page.ok()) return page.status();
    stats->read_seconds += SecondsSince(phase);
    phase = std::chrono::steady_clock::now();
    if (page->empty()) break;
    const int n = page->size();
    const bool more = n >= options_.read_batch_rows;
    std::future<Result<db::Rows>> next;
    if (more) {
      GOVERN_ASSIGN_OR_RETURN(int64_t last_time, page->Int64(n - 1, 1));
      next = std::async(std::launch::async, fetch,
                        std::make_optional(std::make_pair(last_time, std::string(page->Text(n - 1, 2)))));
    }
    batch.Clear();
    int64_t written = 0;
    for (int r = 0; r < n; ++r) {
      GOVERN_ASSIGN_OR_RETURN(int64_t time_ns, page->Int64(r, 1));
      std::string_view id = page->Text(r, 2);
      key_times.push_back(time_ns);
      key_ids.append(id);
      key_ends.push_back(key_ids.size());
      if (!archived.empty() && archived.count({time_ns, std::string(id)}) > 0) {
        ++repeats;
        continue;
      }
      GOVERN_RETURN_IF_ERROR(batch.AppendPgRow(*page, r));
      if (rows + written == 0) min_time = time_ns;
      max_time = time_ns;
      ++written;
    }
    rows += written;
    if (written > 0) GOVERN_RETURN_IF_ERROR((*writer)->Write(batch.columns()));
    stats->encode_seconds += SecondsSince(phase);
    phase = std::chrono::steady_clock::now();
    if (crash_at_ == "compaction.mid_file") CrashForTest("compaction.mid_file");
    if (!more) break;
    page = next.get();
  }
  GOVERN_ASSIGN_OR_RETURN(auto summary, (*writer)->Close());
  if (rows + repeats == 0) return OkStatus();  // the rows went meanwhile; nothing to archive
  stats->encode_seconds += SecondsSince(phase);
  phase = std::chrono::steady_clock::now();

  GOVERN_RETURN_IF_ERROR(StillLocked(conn));
  if (rows > 0) {
    GOVERN_RETURN_IF_ERROR(store_->PutFile(key, temp.path));
    stats->upload_seconds += SecondsSince(phase);
    phase = std::chrono::steady_clock::now();
    if (crash_at_ == "compaction.after_upload") CrashForTest("compaction.after_upload");
  }

  const auto bytes = static_cast<int64_t>(summary.file_bytes);
  const int64_t deleting = rows + repeats;
  const int64_t del_min = *std::min_element(key_times.begin(), key_times.end());
  const int64_t del_max = *std::max_element(key_times.begin(), key_times.end());
  Status st = conn.Transact([&](db::Connection& c) -> Status {
    GOVERN_RETURN_IF_ERROR(StillLocked(c));
    if (rows > 0) {
      auto ins = c.ExecPrepared(
          "INSERT INTO telemetry_archive_files (org, hour_ns, seq, object_key, rows, bytes, min_time_ns, "
          "max_time_ns) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
          db::Params(org, hour_ns, seq, key, rows, bytes, min_time, max_time));
      if (!ins.ok()) return ins.status();
    }
    // Usually the hour's range holds exactly the rows read (one compactor at a time, and nothing else
    // deletes events), and deleting the range is the cheap way. When a row arrived meanwhile inside
    // the range, the count differs: undo that and delete by the keys read instead, so the newcomer
    // stays for the next pass.
    GOVERN_RETURN_IF_ERROR(c.Exec("SAVEPOINT compaction_range").status());
    auto del =
        c.ExecPrepared("DELETE FROM telemetry_events WHERE org = $1 AND time_ns >= $2 AND time_ns <= $3",
                       db::Params(org, del_min, del_max));
    if (!del.ok()) return del.status();
    if (del->affected() == deleting) return OkStatus();
    GOVERN_RETURN_IF_ERROR(c.Exec("ROLLBACK TO SAVEPOINT compaction_range").status());
    std::string times = "{", ids = "{";
    for (size_t i = 0; i < key_times.size(); ++i) {
      if (i) {
        times.push_back(',');
        ids.push_back(',');
      }
      times.append(std::to_string(key_times[i]));
      size_t from = i ? key_ends[i - 1] : 0;
      AppendArrayString(ids, std::string_view(key_ids).substr(from, key_ends[i] - from));
    }
    times.push_back('}');
    ids.push_back('}');
    del = c.ExecPrepared(
        "DELETE FROM telemetry_events WHERE org = $1 AND time_ns >= $2 AND time_ns <= $3 AND (time_ns, id) "
        "IN "
        "(SELECT * FROM unnest($4::bigint[], $5::text[]))",
        db::Params(org, del_min, del_max, times, ids));
    if (!del.ok()) return del.status();
    if (del->affected() != deleting) {
      // Rows we archived are gone already (someone else deleted them): registering the file would
      // make its manifest row lie. Leave everything as it was; the orphan is overwritten next pass.
      return Aborted("compaction of " + key + ": deleted " + std::to_string(del->affected()) +
                     " rows, read " + std::to_string(deleting));
    }
    return OkStatus();
  });
  if (!st.ok()) return Status(st.code(), "registering " + key + ": " + st.message());
  stats->commit_seconds += SecondsSince(phase);
  stats->repeats_deleted += repeats;
  if (rows == 0) {
    log::Write(log::Level::kInfo, "telemetry.compactor", "deleted rows already archived",
               {{"org", org}, {"hour", HourLabel(hour_ns)}, {"rows", repeats}});
    return OkStatus();
  }
  stats->groups++;
  stats->rows += rows;
  stats->bytes += bytes;
  log::Write(log::Level::kInfo, "telemetry.compactor", "archived hour",
             {{"org", org},
              {"hour", HourLabel(hour_ns)},
              {"seq", seq},
              {"rows", rows},
              {"bytes", bytes},
              {"already_archived", repeats},
              {"read_s", stats->read_seconds - before.read_seconds},
              {"encode_s", stats->encode_seconds - before.encode_seconds},
              {"upload_s", stats->upload_seconds - before.upload_seconds},
              {"commit_s", stats->commit_seconds - before.commit_seconds},
              {"seconds", SecondsSince(group_start)}});
  return OkStatus();
}

Status Compactor::StillLocked(const db::Connection& conn) const {
  if (conn.reconnects() == lock_reconnects_) return OkStatus();
  return Aborted(
      "compaction: the database connection was re-established, so the compaction lock may be "
      "lost; stopping this pass");
}

Status Compactor::DropOldPartitions(db::Connection& conn, int64_t cutoff_ns, CompactionStats* stats) {
  auto parts = conn.Exec(
      "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
      "WHERE i.inhparent = 'telemetry_events'::regclass ORDER BY c.relname");
  if (!parts.ok()) return parts.status();
  for (int r = 0; r < parts->size(); ++r) {
    std::string name(parts->Text(r, 0));
    int64_t day_ns = 0;
    if (!PartitionDay(name, &day_ns)) continue;  // not ours to judge
    if (PartitionFor(day_ns).to_ns > cutoff_ns) continue;
    bool dropped = false;
    // The name matched telemetry_events_pYYYYMMDD above, so it is safe as an identifier.
    Status st = conn.Transact([&](db::Connection& c) -> Status {
      GOVERN_RETURN_IF_ERROR(StillLocked(c));
      dropped = false;
      GOVERN_RETURN_IF_ERROR(c.Exec("SET LOCAL lock_timeout = '2s'").status());
      // The parent first: DROP TABLE of a partition locks its parent, and a query of
      // telemetry_events locks the parent before its partitions. Locking the partition first (as
      // this did) deadlocked with a query that had locked the parent and waited for the partition,
      // and PostgreSQL aborted one of the two: the user's query, when it had waited longer. ONLY:
      // the parent alone, not every partition (the current day's is being written).
      GOVERN_RETURN_IF_ERROR(c.Exec("LOCK TABLE ONLY telemetry_events IN ACCESS EXCLUSIVE MODE").status());
      GOVERN_RETURN_IF_ERROR(c.Exec("LOCK TABLE " + name + " IN ACCESS EXCLUSIVE MODE").status());
      auto any = c.Exec("SELECT EXISTS (SELECT 1 FROM " + name + ")");
      if (!any.ok()) return any.status();
      GOVERN_ASSIGN_OR_RETURN(bool has_rows, any->Bool(0, 0));
      if (has_rows) return OkStatus();
      GOVERN_RETURN_IF_ERROR(c.Exec("DROP TABLE " + name).status());
      dropped = true;
      return OkStatus();
    });
    if (!st.ok()) {
      // Busy (lock timeout) or gone already: try again on the next pass.
      log::Write(log::Level::kWarn, "telemetry.compactor", "could not drop an empty partition",
                 {{"partition", name}, {"error", st.ToString()}});
      continue;
    }
    if (dropped) {
      stats->partitions_dropped++;
      log::Write(log::Level::kInfo, "telemetry.compactor", "dropped empty partition", {{"partition", name}});
    }
  }
  return OkStatus();
}

void Compactor::Start(std::chrono::milliseconds interval) {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this, interval] {
    NameThisThread("tel-compact");
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_) {
      lk.unlock();
      auto r = RunOnce();
      if (!r.ok()) {
        log::Write(log::Level::kError, "telemetry.compactor", "compaction pass failed",
                   {{"error", r.status().ToString()}});
      }
      lk.lock();
      cv_.wait_for(lk, interval, [this] { return stop_; });
    }
  });
}

void Compactor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace govern::telemetry
