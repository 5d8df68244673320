// wal::Log and wal::Reader: group commit on a dedicated sync thread, recovery, cursors, retention.
//
// Shape of the write path: an appender checksums its payload, takes the queue lock, gets its sequence,
// copies header and payload once into the pending group buffer, and leaves. The sync thread swaps the
// pending buffer out and writes it with one pwrite (more only when it crosses a segment boundary) as
// soon as it can, whatever its durability. If the group holds a kSync record (or a sync is due or
// asked for) it calls fdatasync once, publishes the new durable sequence and wakes the waiters with
// one futex broadcast. Otherwise the group joins the written-but-unsynced records, which one
// fdatasync covers once the oldest of them has waited buffered_interval. With Options::appender_writes
// an appender whose buffered record finds nothing queued and the sync thread asleep writes it itself,
// under the queue lock (the sleeping thread owns no file state: it needs the lock to wake), and leaves
// it to the sync thread as written but unsynced.
#include "storage/wal.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/thread_name.h"
#include "storage/crc32c.h"
#include "storage/wal_format.h"

namespace govern::wal {

namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr std::string_view kComponent = "wal";
constexpr size_t kReadChunk = 256 << 10;
// Buffered records are written at most once per this gap (and at once when the last such write is
// older): without it, under a steady stream every append would wake the sync thread for a write of its
// own, costing the appender a futex wake and both sides the queue lock, with no durability gained (a
// buffered write is no sync). 50 us bounds the extra time a buffered record spends only in memory.
constexpr auto kBufferedWriteGap = std::chrono::microseconds(50);

struct Completion {
  uint64_t first_seq;
  Log::Callback done;
};

// Records queued for one write+sync round.
struct Group {
  std::string bytes;  // framed records, back to back
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;
  std::vector<Completion> callbacks;
  bool urgent = false;  // holds a kSync record
  SteadyClock::time_point oldest;

  bool empty() const { return bytes.empty(); }
  void Reset() {
    bytes.clear();  // keeps the capacity, so steady state allocates nothing
    callbacks.clear();
    urgent = false;
  }
};

// A segment the sync thread writes to.
struct Segment {
  int fd = -1;
  uint64_t first = 0;
  uint64_t end = 0;  // file offset after the last record
  bool preallocated = false;
  bool dirty = false;  // holds written records not yet fdatasync'd
};

// The appenders' sleep. std::atomic::wait spins with sched_yield first, which with hundreds of waiters
// on two cores burns the CPU the sync thread needs; a plain futex sleeps at once.
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void FutexWakeAll(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

Result<std::string> ReadWholeFile(Fs* fs, int fd) {
  GOVERN_ASSIGN_OR_RETURN(uint64_t size, fs->FileSize(fd));
  std::string data(size, '\0');
  GOVERN_ASSIGN_OR_RETURN(size_t got, fs->Pread(fd, data.data(), size, 0));
  data.resize(got);
  return data;
}

std::string_view TailName(TailKind t) {
  switch (t) {
    case TailKind::kClean:
      return "clean";
    case TailKind::kTruncated:
      return "torn";
    case TailKind::kZerosThenData:
      return "torn";
    case TailKind::kCorrupt:
      return "corrupt";
  }
  return "unknown";
}

}  // namespace

struct Log::Impl {
  std::string dir;
  Options opt;
  Fs* fs = nullptr;

  // Segment list: first sequences, sorted; the last is the active segment. Guarded by seg_mu.
  mutable std::mutex seg_mu;
  std::vector<uint64_t> seg_firsts;
  std::atomic<uint64_t> first_seq{1};

  // Owned by the sync thread once it runs (by Open before that); an appender writing itself
  // (appender_writes) uses it only while holding mu with the sync thread asleep (sync_idle).
  Segment active;
  int lock_fd = -1;  // flock on <dir>/LOCK: one open Log per directory

  // The append queue, guarded by mu.
  mutable std::mutex mu;
  std::condition_variable work_cv;   // the sync thread waits here
  std::condition_variable space_cv;  // blocking appenders wait here when the backlog is full
  int space_waiters = 0;
  Group pending;
  uint64_t next_seq = 1;
  bool sync_idle = false;
  bool sync_requested = false;  // Flush: sync what is written even though no sync is due
  bool write_hold = false;      // the sync thread waits out kBufferedWriteGap before a buffered write
  uint64_t gather_target = 0;   // while the sync thread gathers: wake it when pending holds this many
  bool stop = false;
  Status poison;  // set once by a failed fdatasync; then every append fails
  uint64_t epoch = 0;
  // For each finished epoch (a failure ends one): the durable sequence then, and the failure.
  std::vector<std::pair<uint64_t, Status>> epoch_end;

  // Published by the sync thread; appenders wait on a futex word and then read these. Group g wakes
  // wake[g % 2] only: appenders queued for the next group sleep on through it.
  std::atomic<uint64_t> durable{0};
  std::atomic<uint64_t> written{0};  // last record written to the file (>= durable)
  std::atomic<uint64_t> epoch_now{0};
  std::atomic<uint32_t> wake[2] = {0, 0};
  // WaitWritten callers sleep on this word; the sync thread bumps it only while there are some.
  std::atomic<uint32_t> written_wake{0};
  std::atomic<int> written_waiters{0};
  uint64_t pending_gen = 0;  // number of the group `pending` becomes (guarded by mu)
  // Records appenders wrote themselves (Options::appender_writes) that the sync thread has not taken
  // over yet: [inl_first, inl_last] of groups [inl_first_gen, inl_last_gen]; inl_first == 0 when none.
  // Guarded by mu; the sync thread takes them into its unsynced set whenever it holds mu.
  uint64_t inl_first = 0, inl_last = 0, inl_first_gen = 0, inl_last_gen = 0;
  SteadyClock::time_point inl_oldest;
  std::vector<Completion> inl_callbacks;
  bool sync_untimed = false;  // the sync thread sleeps with no deadline (nothing written is unsynced)

  // Tailing readers wait here.
  std::mutex tail_mu;
  std::condition_variable tail_cv;
  std::atomic<int> tail_waiters{0};
  std::atomic<bool> closing{false};

  // Cursors, guarded by cur_mu (which also serialises their files and retention).
  mutable std::mutex cur_mu;
  std::map<std::string, uint64_t, std::less<>> cursors;

  std::atomic<uint64_t> stat_groups{0};
  std::atomic<uint64_t> stat_writes{0};
  std::atomic<uint64_t> stat_records{0};

  std::thread sync_thread;

  std::string PathOf(uint64_t first) const { return dir + "/" + SegmentFileName(first); }
  std::string CursorDir() const { return dir + "/cursors"; }
  std::string CursorPath(std::string_view name) const {
    return CursorDir() + "/" + std::string(name) + ".cursor";
  }

  Status Recover();
  Result<Segment> CreateSegment(uint64_t first);
  Status LoadCursors();
  Status WriteCursorFile(std::string_view name, uint64_t next);

  struct Ticket {
    uint64_t gen;  // the group the last record is in
    uint64_t epoch;
    uint64_t last_seq;
    uint64_t first_seq;
  };
  Result<Ticket> Enqueue(std::span<const std::string_view> records, Durability durability, Callback* done);
  Status WaitDurable(const Ticket& t);
  Status WaitWritten(const Ticket& t);
  void SyncLoop();
  Status WriteGroup(Group& g, bool sync, bool* fatal, bool* rotated);
  uint64_t WaitTail(uint64_t seq, std::chrono::milliseconds wait);
};

// Deletes sealed segments every cursor is past. With try_only it gives up when a cursor commit holds
// the lock (the sync thread must never wait on a cursor's fsync; that commit retains by itself).
Result<size_t> ApplyRetentionFor(Log::Impl* impl, bool try_only);

// ---------------------------------------------------------------------------------------------------
// Recovery

Result<Segment> Log::Impl::CreateSegment(uint64_t first) {
  // Built under a temporary name and renamed, so a segment with its real name always has a whole header.
  std::string path = PathOf(first);
  std::string tmp = path + ".tmp";
  GOVERN_ASSIGN_OR_RETURN(int fd, fs->Open(tmp, O_RDWR | O_CREAT | O_TRUNC));
  auto fail = [&](Status st) {
    fs->Close(fd);
    (void)fs->Unlink(tmp);
    return st.WithContext("wal: create segment " + path);
  };
  std::string header = EncodeSegmentHeader(first);
  Status st = fs->PwriteAll(fd, header.data(), header.size(), 0);
  if (!st.ok()) return fail(st);
  bool preallocated = false;
  if (opt.preallocate) {
    st = fs->Preallocate(fd, std::max<uint64_t>(opt.segment_size, kSegmentHeaderSize));
    if (!st.ok()) return fail(st);
    preallocated = true;
  }
  if (st = fs->Fdatasync(fd); !st.ok()) return fail(st);
  if (st = fs->Rename(tmp, path); !st.ok()) return fail(st);
  if (st = fs->SyncDir(dir); !st.ok()) {
    fs->Close(fd);
    (void)fs->Unlink(path);
    return st.WithContext("wal: create segment " + path);
  }
  Segment s;
  s.fd = fd;
  s.first = first;
  s.end = kSegmentHeaderSize;
  s.preallocated = preallocated;
  return s;
}

Status Log::Impl::Recover() {
  GOVERN_RETURN_IF_ERROR(fs->MakeDir(dir));
  GOVERN_ASSIGN_OR_RETURN(lock_fd, fs->LockFile(dir + "/LOCK"));
  GOVERN_RETURN_IF_ERROR(fs->MakeDir(CursorDir()));
  GOVERN_ASSIGN_OR_RETURN(auto names, fs->ListDir(dir));
  std::vector<uint64_t> firsts;
  for (const std::string& name : names) {
    uint64_t first;
    if (ParseSegmentFileName(name, &first)) {
      firsts.push_back(first);
    } else if (name.size() > 4 && name.ends_with(".tmp")) {
      (void)fs->Unlink(dir + "/" + name);  // an unfinished segment creation
    }
  }
  std::sort(firsts.begin(), firsts.end());
  GOVERN_RETURN_IF_ERROR(LoadCursors());

  if (firsts.empty()) {
    GOVERN_ASSIGN_OR_RETURN(active, CreateSegment(1));
    seg_firsts = {1};
    first_seq = 1;
    next_seq = 1;
    durable = 0;
    written = 0;
    return OkStatus();
  }

  // Sealed segments older than the last two: check their headers (readers check their records).
  for (size_t i = 0; i + 2 < firsts.size(); ++i) {
    GOVERN_ASSIGN_OR_RETURN(int fd, fs->Open(PathOf(firsts[i]), O_RDONLY));
    char h[kSegmentHeaderSize];
    Result<size_t> got = fs->Pread(fd, h, sizeof(h), 0);
    fs->Close(fd);
    if (!got.ok()) return got.status();
    Result<uint64_t> first = DecodeSegmentHeader(std::string_view(h, *got));
    if (!first.ok()) return first.status().WithContext("wal: " + PathOf(firsts[i]));
    if (*first != firsts[i]) return DataLoss("wal: " + PathOf(firsts[i]) + ": header names another sequence");
  }

  auto scan = [&](uint64_t first, int* fd_out) -> Result<SegmentScan> {
    GOVERN_ASSIGN_OR_RETURN(int fd, fs->Open(PathOf(first), O_RDWR));
    Result<std::string> data = ReadWholeFile(fs, fd);
    if (!data.ok()) {
      fs->Close(fd);
      return data.status();
    }
    Result<SegmentScan> s = ScanSegment(*data);
    if (s.ok() && s->first_seq != first)
      s = DataLoss("header names sequence " + std::to_string(s->first_seq));
    if (!s.ok()) {
      fs->Close(fd);
      return s.status().WithContext("wal: " + PathOf(first));
    }
    *fd_out = fd;
    return s;
  };

  // Closes the descriptors recovery opened unless it hands one over as the active segment.
  struct FdCloser {
    Fs* fs;
    int fd = -1;
    ~FdCloser() {
      if (fd >= 0) fs->Close(fd);
    }
  };
  int last_fd = -1;
  GOVERN_ASSIGN_OR_RETURN(SegmentScan last, scan(firsts.back(), &last_fd));
  FdCloser last_guard{fs, last_fd};
  FdCloser prev_guard{fs, -1};
  Segment act;
  act.fd = last_fd;
  act.first = last.first_seq;
  SegmentScan act_scan = last;

  if (firsts.size() >= 2) {
    int prev_fd = -1;
    GOVERN_ASSIGN_OR_RETURN(SegmentScan prev, scan(firsts[firsts.size() - 2], &prev_fd));
    prev_guard.fd = prev_fd;
    bool consistent = prev.tail == TailKind::kClean && prev.first_seq + prev.count == last.first_seq;
    if (last.count > 0) {
      // The last segment holds a record, so the one before it was synced whole before that record
      // was written.
      if (!consistent) {
        return DataLoss("wal: sealed segment " + PathOf(prev.first_seq) + " is damaged: " +
                        (prev.reason.empty()
                             ? "ends at sequence " + std::to_string(prev.first_seq + prev.count - 1) +
                                   " but the next segment starts at " + std::to_string(last.first_seq)
                             : prev.reason + " at offset " + std::to_string(prev.valid_end)));
      }
    } else if (!consistent) {
      // A crash during rotation: the new segment exists (with no whole record) but the old one's last
      // group was not synced. Nothing past the old one's tear was acknowledged; cut the old one and
      // drop the new one.
      log::Warn(kComponent, "dropping empty segment after an interrupted rotation",
                {{"segment", PathOf(last.first_seq)}, {"previous_ends_at", prev.first_seq + prev.count - 1}});
      GOVERN_RETURN_IF_ERROR(fs->Unlink(PathOf(last.first_seq)));
      GOVERN_RETURN_IF_ERROR(fs->SyncDir(dir));
      firsts.pop_back();
      act.fd = prev_fd;
      act.first = prev.first_seq;
      act_scan = prev;
    }
  }

  if (act_scan.tail != TailKind::kClean) {
    log::Warn(kComponent, "cutting torn or corrupt tail",
              {{"segment", PathOf(act.first)},
               {"offset", act_scan.valid_end},
               {"kind", TailName(act_scan.tail)},
               {"reason", act_scan.reason},
               {"last_sequence", act.first + act_scan.count - 1}});
  }
  // Always cut to the valid end: it also zeroes anything the scan could not see as a record.
  GOVERN_ASSIGN_OR_RETURN(uint64_t size, fs->FileSize(act.fd));
  if (size != act_scan.valid_end || act_scan.tail != TailKind::kClean) {
    bool has_garbage = act_scan.tail != TailKind::kClean;
    if (has_garbage || !opt.preallocate) {
      GOVERN_RETURN_IF_ERROR(fs->Truncate(act.fd, act_scan.valid_end));
    }
  }
  act.end = act_scan.valid_end;
  if (opt.preallocate) {
    act.preallocated = fs->Preallocate(act.fd, std::max(opt.segment_size, act.end)).ok();
  }
  GOVERN_RETURN_IF_ERROR(fs->Fdatasync(act.fd).WithContext("wal: sync after recovery"));

  (act.fd == last_guard.fd ? last_guard.fd : prev_guard.fd) = -1;  // handed over
  active = act;
  seg_firsts = firsts;
  first_seq = firsts.front();
  next_seq = act.first + act_scan.count;
  durable = next_seq - 1;
  written = next_seq - 1;
  return OkStatus();
}

Status Log::Impl::LoadCursors() {
  GOVERN_ASSIGN_OR_RETURN(auto names, fs->ListDir(CursorDir()));
  for (const std::string& name : names) {
    std::string path = CursorDir() + "/" + name;
    if (name.ends_with(".tmp")) {
      (void)fs->Unlink(path);
      continue;
    }
    if (!name.ends_with(".cursor")) continue;
    GOVERN_ASSIGN_OR_RETURN(int fd, fs->Open(path, O_RDONLY));
    Result<std::string> data = ReadWholeFile(fs, fd);
    fs->Close(fd);
    if (!data.ok()) return data.status();
    Result<CursorFile> c = DecodeCursor(*data);
    if (!c.ok()) return c.status().WithContext("wal: " + path);
    if (c->name + ".cursor" != name) return DataLoss("wal: " + path + ": names another cursor");
    cursors[c->name] = c->next_seq;
  }
  return OkStatus();
}

Status Log::Impl::WriteCursorFile(std::string_view name, uint64_t next) {
  std::string path = CursorPath(name);
  std::string tmp = path + ".tmp";
  std::string data = EncodeCursor(name, next);
  GOVERN_ASSIGN_OR_RETURN(int fd, fs->Open(tmp, O_WRONLY | O_CREAT | O_TRUNC));
  Status st = fs->PwriteAll(fd, data.data(), data.size(), 0);
  if (st.ok()) st = fs->Fdatasync(fd);
  fs->Close(fd);
  if (st.ok()) st = fs->Rename(tmp, path);
  if (st.ok()) st = fs->SyncDir(CursorDir());
  if (!st.ok()) {
    (void)fs->Unlink(tmp);
    return st.WithContext("wal: write cursor " + std::string(name));
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------------------------------
// Append path

Result<Log::Impl::Ticket> Log::Impl::Enqueue(std::span<const std::string_view> records, Durability durability,
                                             Callback* done) {
  if (records.empty()) return InvalidArgument("wal: empty batch");
  size_t total = 0;
  uint32_t one_crc = 0;
  std::vector<uint32_t> crcs;
  if (records.size() > 1) crcs.resize(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].size() > opt.max_record_size) {
      return InvalidArgument("wal: record of " + std::to_string(records[i].size()) +
                             " bytes is over the limit of " + std::to_string(opt.max_record_size));
    }
    total += kRecordHeaderSize + records[i].size();
    // Checksum before taking the lock; the sequence is folded in afterwards.
    uint32_t c = storage::Crc32c(records[i].data(), records[i].size());
    if (records.size() > 1) {
      crcs[i] = c;
    } else {
      one_crc = c;
    }
  }

  std::unique_lock lk(mu);
  for (;;) {
    if (!poison.ok()) return poison;
    if (stop) return Unavailable("wal: the log is closing");
    if (pending.empty() || pending.bytes.size() + total <= opt.max_pending_bytes) break;
    if (done != nullptr) return Unavailable("wal: append backlog is full; retry later");
    ++space_waiters;
    space_cv.wait(lk);
    --space_waiters;
  }
  bool was_empty = pending.empty();
  if (was_empty) {
    pending.first_seq = next_seq;
    pending.oldest = SteadyClock::now();
  }
  Ticket t;
  t.gen = pending_gen;
  t.epoch = epoch;
  t.first_seq = next_seq;
  for (size_t i = 0; i < records.size(); ++i) {
    char header[kRecordHeaderSize];
    uint32_t len = static_cast<uint32_t>(records[i].size());
    EncodeRecordHeader(header, records.size() > 1 ? crcs[i] : one_crc, len, next_seq++);
    pending.bytes.append(header, sizeof(header));
    pending.bytes.append(records[i]);
  }
  pending.last_seq = next_seq - 1;
  t.last_seq = next_seq - 1;
  if (done != nullptr) pending.callbacks.push_back({t.first_seq, std::move(*done)});
  // Written here when nothing else is queued and the sync thread sleeps: it owns no file state then
  // (it needs mu to wake), and it takes the record over as written but unsynced when it does.
  if (opt.appender_writes && durability == Durability::kBuffered && was_empty && sync_idle &&
      active.fd >= 0 && (active.preallocated || !opt.preallocate) &&
      active.end + pending.bytes.size() <= opt.segment_size) {
    if (fs->PwriteAll(active.fd, pending.bytes.data(), pending.bytes.size(), active.end).ok()) {
      active.end += pending.bytes.size();
      active.dirty = true;
      if (inl_first == 0) {
        inl_first = pending.first_seq;
        inl_first_gen = pending_gen;
        inl_oldest = pending.oldest;
      }
      inl_last = pending.last_seq;
      inl_last_gen = pending_gen;
      for (Completion& c : pending.callbacks) inl_callbacks.push_back(std::move(c));
      ++pending_gen;
      pending.Reset();
      written.store(t.last_seq, std::memory_order_seq_cst);
      stat_writes.fetch_add(1, std::memory_order_relaxed);
      // A sleeping sync thread with a deadline syncs these by it (the deadline is the oldest unsynced
      // record's); one with none must be woken once to start the interval.
      bool wake_sync = sync_untimed;
      if (wake_sync) sync_idle = false;
      lk.unlock();
      if (wake_sync) work_cv.notify_one();
      if (written_waiters.load(std::memory_order_seq_cst) > 0) {
        written_wake.fetch_add(1, std::memory_order_seq_cst);
        FutexWakeAll(&written_wake);
      }
      return t;
    }
    // Bytes of it may be in the file past active.end: the sync thread writes the same group there again
    // (over them), or cuts the file back to active.end if that fails too.
    sync_idle = false;
    lk.unlock();
    work_cv.notify_one();
    return t;
  }
  bool urgent = durability == Durability::kSync;
  pending.urgent = pending.urgent || urgent;
  // While the sync thread holds buffered records back for company (write_hold) its timer wakes it.
  bool notify = sync_idle && (urgent || (was_empty && !write_hold));
  if (gather_target != 0 && pending.last_seq - pending.first_seq + 1 >= gather_target) {
    gather_target = 0;
    notify = true;
  }
  if (notify) sync_idle = false;  // one wake-up is enough; the thread re-checks everything
  lk.unlock();
  if (notify) work_cv.notify_one();
  return t;
}

Status Log::Impl::WaitDurable(const Ticket& t) {
  for (;;) {
    std::atomic<uint32_t>& word = wake[t.gen & 1];
    uint32_t w = word.load(std::memory_order_acquire);
    uint64_t e = epoch_now.load(std::memory_order_acquire);
    if (e == t.epoch) {
      uint64_t d = durable.load(std::memory_order_acquire);
      // Re-read the epoch: a durable value from a later epoch could belong to reused sequences.
      if (d >= t.last_seq && epoch_now.load(std::memory_order_acquire) == t.epoch) return OkStatus();
    } else {
      std::lock_guard lk(mu);
      const auto& [end, st] = epoch_end[t.epoch];
      return end >= t.last_seq ? OkStatus() : st;
    }
    FutexWait(&word, w);
  }
}

Status Log::Impl::WaitWritten(const Ticket& t) {
  written_waiters.fetch_add(1, std::memory_order_seq_cst);
  Status result;
  for (;;) {
    uint32_t w = written_wake.load(std::memory_order_seq_cst);
    uint64_t e = epoch_now.load(std::memory_order_seq_cst);
    if (e == t.epoch) {
      uint64_t wr = written.load(std::memory_order_seq_cst);
      // Re-read the epoch: a written value from a later epoch could belong to reused sequences.
      if (wr >= t.last_seq && epoch_now.load(std::memory_order_seq_cst) == t.epoch) break;
    } else {
      std::lock_guard lk(mu);
      const auto& [end, st] = epoch_end[t.epoch];
      if (end < t.last_seq) result = st;
      break;
    }
    FutexWait(&written_wake, w);
  }
  written_waiters.fetch_sub(1, std::memory_order_seq_cst);
  return result;
}

void Log::Impl::SyncLoop() {
  Group inflight;
  // Written to the active segment but not yet fdatasync'd (owned by this thread): records
  // [u_first, u_last] of groups [u_first_gen, u_last_gen]; u_first == 0 when none.
  uint64_t u_first = 0, u_last = 0, u_first_gen = 0, u_last_gen = 0;
  SteadyClock::time_point u_oldest;  // when the oldest of them was queued
  std::vector<Completion> u_callbacks;
  std::vector<Completion> failed_queued;
  SteadyClock::time_point last_buffered_write;  // start of the last write not followed by a sync
  uint64_t last_count = 0;                      // records the last sync made durable
  SteadyClock::duration last_write{};           // how long its write + fdatasync took
  const auto max_gather = std::chrono::microseconds(1000);
  // Takes over the records appenders wrote themselves (appender_writes) as written but unsynced; they
  // follow every record this thread wrote (an appender writes only when nothing is queued). Under mu.
  auto take_appender_writes = [&] {
    if (inl_first == 0) return;
    if (u_first == 0) {
      u_first = inl_first;
      u_first_gen = inl_first_gen;
      u_oldest = inl_oldest;
    }
    u_last = inl_last;
    u_last_gen = inl_last_gen;
    for (Completion& c : inl_callbacks) u_callbacks.push_back(std::move(c));
    inl_callbacks.clear();
    inl_first = 0;
  };
  std::unique_lock lk(mu);
  for (;;) {
    // Wait for work: anything queued is written at once (buffered records at most once per
    // kBufferedWriteGap); what is written is synced once the oldest of it has waited buffered_interval,
    // or when a kSync record, a Flush or the close asks.
    for (;;) {
      take_appender_writes();
      if (!pending.empty()) {
        if (pending.urgent || stop || sync_requested) break;
        auto write_at =
            last_buffered_write + std::min<SteadyClock::duration>(kBufferedWriteGap, opt.buffered_interval);
        auto now = SteadyClock::now();
        if (now >= write_at) break;
        if (u_first != 0) {
          auto due = u_oldest + opt.buffered_interval;
          if (now >= due) break;
          write_at = std::min(write_at, due);
        }
        sync_idle = true;
        write_hold = true;
        work_cv.wait_until(lk, write_at);
        write_hold = false;
        sync_idle = false;
        continue;
      }
      if (u_first != 0) {
        if (sync_requested || stop) break;
        auto due = u_oldest + opt.buffered_interval;
        if (SteadyClock::now() >= due) break;
        sync_idle = true;
        work_cv.wait_until(lk, due);
        sync_idle = false;
        continue;
      }
      sync_requested = false;  // nothing written is unsynced
      if (stop) return;
      sync_idle = true;
      sync_untimed = true;
      work_cv.wait(lk);
      sync_untimed = false;
      sync_idle = false;
    }
    // Gather: the appenders the last group woke come back within moments. Taking the first of them
    // alone would split them into cohorts that alternate small syncs; waiting (at most half the last
    // sync's time, at most 1 ms) until half of them are back keeps groups large.
    if (!stop && pending.urgent && last_count >= 4) {
      uint64_t want = last_count / 2;
      auto count = [&] { return pending.last_seq - pending.first_seq + 1; };
      if (count() < want) {
        auto limit = std::min<SteadyClock::duration>(last_write / 2, max_gather);
        gather_target = want;
        work_cv.wait_until(lk, SteadyClock::now() + limit, [&] { return stop || count() >= want; });
        gather_target = 0;
      }
    }
    const bool write = !pending.empty();
    uint64_t gen = pending_gen - 1;  // the last group written
    if (write) {
      std::swap(pending, inflight);
      gen = pending_gen++;
      if (space_waiters > 0) space_cv.notify_all();
    }
    const bool forced = sync_requested || stop;
    sync_requested = false;
    Status st = poison;
    lk.unlock();

    bool fatal = false;
    bool rotated = false;
    bool sync = true;
    auto write_start = SteadyClock::now();
    if (st.ok() && write) {
      auto oldest = u_first != 0 ? u_oldest : inflight.oldest;
      sync = forced || inflight.urgent || write_start >= oldest + opt.buffered_interval;
      st = WriteGroup(inflight, sync, &fatal, &rotated);
    } else if (st.ok()) {
      st = fs->Fdatasync(active.fd);
      if (st.ok()) {
        active.dirty = false;
      } else {
        fatal = true;
        st = st.WithContext("wal: append");
      }
    }
    if (!st.ok() && !fatal && u_first != 0) {
      // The failed group is cut off, but the records written before it are whole in the file: sync
      // them now, so their appends complete before the failure ends this epoch.
      Status s2 = fs->Fdatasync(active.fd);
      if (s2.ok()) {
        active.dirty = false;
      } else {
        fatal = true;
        st = s2.WithContext("wal: sync before failing a group (" + st.message() + ")");
      }
    }
    if (st.ok() && write) {
      if (u_first == 0) {
        u_first = inflight.first_seq;
        u_first_gen = gen;
        u_oldest = inflight.oldest;
        std::swap(u_callbacks, inflight.callbacks);  // inflight's vector (empty) keeps a capacity
      } else {
        for (Completion& c : inflight.callbacks) u_callbacks.push_back(std::move(c));
      }
      u_last = inflight.last_seq;
      u_last_gen = gen;
    }
    if (sync && st.ok()) last_write = SteadyClock::now() - write_start;
    if (!sync && st.ok()) last_buffered_write = write_start;

    // What this round settles: [u_first, u_last] is now durable (ok), or failed with st.
    bool settle = u_first != 0 && (st.ok() ? sync : true);
    bool u_ok = settle && (st.ok() || !fatal);
    lk.lock();
    if (st.ok() && write) written.store(inflight.last_seq, std::memory_order_seq_cst);
    if (u_ok) {
      durable.store(u_last, std::memory_order_seq_cst);
      stat_groups.fetch_add(1, std::memory_order_relaxed);
      stat_records.fetch_add(u_last - u_first + 1, std::memory_order_relaxed);
      last_count = u_last - u_first + 1;
    }
    if (st.ok() && write) stat_writes.fetch_add(1, std::memory_order_relaxed);
    if (!st.ok()) {
      if (fatal && poison.ok()) {
        poison = FailedPrecondition("wal: log stopped after a failed sync (" + st.message() +
                                    "); the page cache state is unknown, reopen the log");
        log::Error(kComponent, "sync failed; log refuses appends until reopened", {{"error", st.ToString()}});
      }
      last_count = 0;
      // Everything queued behind the failure had sequences after it; fail it too and hand the
      // sequences back, so they stay dense.
      written.store(durable.load(), std::memory_order_seq_cst);
      epoch_end.emplace_back(durable.load(), st);
      ++epoch;
      epoch_now.store(epoch, std::memory_order_seq_cst);
      next_seq = durable.load() + 1;
      failed_queued = std::move(pending.callbacks);
      pending.Reset();
      if (space_waiters > 0) space_cv.notify_all();
    }
    lk.unlock();

    // Wake the blocking appenders of the groups settled: group g sleeps on wake[g % 2]. A failure also
    // fails the queued group, whose waiters sleep on the other word.
    if (settle || !st.ok()) {
      uint64_t first_gen = settle ? u_first_gen : gen;
      uint64_t last_gen = settle ? u_last_gen : gen;
      if (!st.ok() && write) last_gen = std::max(last_gen, gen);
      int words = (!st.ok() || last_gen > first_gen) ? 2 : 1;
      for (int k = 0; k < words; ++k) {
        std::atomic<uint32_t>& word = wake[(first_gen + static_cast<uint64_t>(k)) & 1];
        word.fetch_add(1, std::memory_order_seq_cst);
        FutexWakeAll(&word);
      }
      if (u_ok && tail_waiters.load(std::memory_order_seq_cst) > 0) {
        std::lock_guard tl(tail_mu);
        tail_cv.notify_all();
      }
    }
    if ((write || !st.ok()) && written_waiters.load(std::memory_order_seq_cst) > 0) {
      written_wake.fetch_add(1, std::memory_order_seq_cst);
      FutexWakeAll(&written_wake);
    }
    if (settle) {
      for (Completion& c : u_callbacks) {
        if (u_ok) {
          c.done(c.first_seq);
        } else {
          c.done(st);
        }
      }
      u_callbacks.clear();
      u_first = 0;
    }
    if (!st.ok() && write) {
      for (Completion& c : inflight.callbacks) c.done(st);  // the failed group (never joined u_)
    }
    for (Completion& c : failed_queued) c.done(st);
    failed_queued.clear();
    inflight.Reset();
    if (rotated) {
      Result<size_t> r = ApplyRetentionFor(this, /*try_only=*/true);
      if (!r.ok()) log::Warn(kComponent, "retention failed", {{"error", r.status().ToString()}});
    }
    lk.lock();
  }
}

// Writes one group, and syncs it when `sync` (a segment it fills is synced either way, before anything
// is written to the next). All or nothing: on error every byte of the group is cut back off, so no
// record of it is acknowledged (fatal is set when even that cannot be guaranteed). Records written
// before the group stay whole in the file.
Status Log::Impl::WriteGroup(Group& g, bool sync, bool* fatal, bool* rotated) {
  const std::string& b = g.bytes;
  const size_t n = b.size();
  struct Piece {
    size_t seg;  // 0: active, i: created[i - 1]
    size_t off;
    size_t len;
    uint64_t file_off;
  };
  std::vector<Segment> created;
  Piece pieces[4];
  std::vector<Piece> more_pieces;  // only when a group spans many small segments
  size_t npieces = 0;
  auto add_piece = [&](Piece p) {
    if (npieces < 4) {
      pieces[npieces] = p;
    } else {
      more_pieces.push_back(p);
    }
    ++npieces;
  };
  auto piece = [&](size_t i) -> Piece& { return i < 4 ? pieces[i] : more_pieces[i - 4]; };
  auto seg_of = [&](size_t i) -> Segment& { return i == 0 ? active : created[i - 1]; };
  auto drop_created = [&]() {
    for (Segment& s : created) {
      fs->Close(s.fd);
      (void)fs->Unlink(PathOf(s.first));
    }
  };

  // Plan: which records go to which segment. A segment takes records until the next one would pass
  // segment_size; it always takes at least one, so a huge record gets a segment of its own.
  size_t off = 0;
  uint64_t seq = g.first_seq;
  size_t cur = 0;
  uint64_t cur_end = active.end;
  while (off < n) {
    size_t start = off;
    if (cur_end + (n - off) <= opt.segment_size) {
      off = n;
    } else {
      while (off < n) {
        size_t len = kRecordHeaderSize + GetU32(b.data() + off + 4);
        if (cur_end > kSegmentHeaderSize && cur_end + len > opt.segment_size) break;
        cur_end += len;
        off += len;
        ++seq;
      }
      cur_end -= off - start;  // re-added below
    }
    if (off > start) {
      add_piece({cur, start, off - start, cur_end});
      cur_end += off - start;
    }
    if (off < n) {
      Result<Segment> s = CreateSegment(seq);
      if (!s.ok()) {
        drop_created();
        return s.status();
      }
      created.push_back(*s);
      cur = created.size();
      cur_end = kSegmentHeaderSize;
    }
  }

  // Write each piece; sync a segment before writing to the next, so a sealed segment is whole on disk
  // before any record after it can be. That includes earlier groups written to the active segment
  // but not yet synced, when this group starts in a new segment.
  if (npieces > 0 && piece(0).seg != 0 && active.dirty) {
    Status st = fs->Fdatasync(active.fd);
    if (!st.ok()) {
      *fatal = true;
      drop_created();
      return st.WithContext("wal: append");
    }
    active.dirty = false;
  }
  for (size_t i = 0; i < npieces; ++i) {
    Piece& p = piece(i);
    Segment& s = seg_of(p.seg);
    if (!s.preallocated && opt.preallocate) {
      s.preallocated = fs->Preallocate(s.fd, std::max(opt.segment_size, p.file_off + p.len)).ok();
    }
    Status st = fs->PwriteAll(s.fd, b.data() + p.off, p.len, p.file_off);
    if (!st.ok()) {
      // Cut back to the last good offset: a partial record must never sit before the next good one.
      drop_created();
      Status t = fs->Truncate(active.fd, active.end);
      active.preallocated = false;
      active.dirty = false;  // synced just below, or the log is poisoned
      // The cut must be durable too: earlier pieces of this group may already be synced in a sealed
      // segment, and records refused here must not come back after a crash (their sequences are
      // handed out again).
      if (t.ok()) t = fs->Fdatasync(active.fd);
      if (!t.ok()) {
        *fatal = true;
        return t.WithContext("wal: cannot cut back a failed write (" + st.message() + ")");
      }
      return st.WithContext("wal: append");
    }
    bool last_in_segment = i + 1 == npieces || piece(i + 1).seg != p.seg;
    if (last_in_segment && (sync || i + 1 < npieces)) {
      st = fs->Fdatasync(s.fd);
      if (!st.ok()) {
        *fatal = true;
        drop_created();
        return st.WithContext("wal: append");
      }
      s.dirty = false;
    } else {
      s.dirty = true;
    }
  }

  // Commit the plan.
  for (size_t i = 0; i < npieces; ++i) seg_of(piece(i).seg).end = piece(i).file_off + piece(i).len;
  if (!created.empty()) {
    fs->Close(active.fd);
    for (size_t i = 0; i + 1 < created.size(); ++i) fs->Close(created[i].fd);
    active = created.back();
    std::lock_guard sl(seg_mu);
    for (const Segment& s : created) seg_firsts.push_back(s.first);
    *rotated = true;
  }
  return OkStatus();
}

uint64_t Log::Impl::WaitTail(uint64_t seq, std::chrono::milliseconds wait) {
  tail_waiters.fetch_add(1, std::memory_order_seq_cst);
  {
    std::unique_lock lk(tail_mu);
    tail_cv.wait_for(lk, wait, [&] {
      return durable.load(std::memory_order_seq_cst) >= seq || closing.load(std::memory_order_relaxed);
    });
  }
  tail_waiters.fetch_sub(1, std::memory_order_seq_cst);
  return durable.load(std::memory_order_acquire);
}

// ---------------------------------------------------------------------------------------------------
// Log

Log::Log(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Log>> Log::Open(const std::string& dir, Options options) {
  if (options.segment_size < kSegmentHeaderSize + kRecordHeaderSize) {
    return InvalidArgument("wal: segment_size too small");
  }
  if (options.max_record_size > kMaxRecordSize) {
    return InvalidArgument("wal: max_record_size over " + std::to_string(kMaxRecordSize));
  }
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->opt = options;
  impl->fs = options.fs != nullptr ? options.fs : PosixFs();
  if (Status st = impl->Recover(); !st.ok()) {
    impl->fs->Close(impl->lock_fd);
    return st;
  }
  Impl* p = impl.get();
  p->sync_thread = std::thread([p] {
    NameThisThread("wal-sync");
    p->SyncLoop();
  });
  return std::unique_ptr<Log>(new Log(std::move(impl)));
}

Log::~Log() {
  {
    std::lock_guard lk(impl_->mu);
    impl_->stop = true;
  }
  impl_->work_cv.notify_all();
  impl_->sync_thread.join();
  impl_->closing = true;
  {
    std::lock_guard tl(impl_->tail_mu);
    impl_->tail_cv.notify_all();
  }
  impl_->fs->Close(impl_->active.fd);
  impl_->fs->Close(impl_->lock_fd);
}

Result<uint64_t> Log::Append(std::string_view data) { return Append(data, impl_->opt.default_durability); }

Result<uint64_t> Log::Append(std::string_view data, Durability durability) {
  GOVERN_ASSIGN_OR_RETURN(Impl::Ticket t, impl_->Enqueue(std::span(&data, 1), durability, nullptr));
  GOVERN_RETURN_IF_ERROR(impl_->WaitDurable(t));
  return t.first_seq;
}

Result<uint64_t> Log::AppendBatch(std::span<const std::string_view> records) {
  return AppendBatch(records, impl_->opt.default_durability);
}

Result<uint64_t> Log::AppendBatch(std::span<const std::string_view> records, Durability durability) {
  GOVERN_ASSIGN_OR_RETURN(Impl::Ticket t, impl_->Enqueue(records, durability, nullptr));
  GOVERN_RETURN_IF_ERROR(impl_->WaitDurable(t));
  return t.first_seq;
}

void Log::AppendAsync(std::string_view data, Callback done) {
  AppendBatchAsync(std::span(&data, 1), std::move(done), impl_->opt.default_durability);
}

void Log::AppendAsync(std::string_view data, Callback done, Durability durability) {
  AppendBatchAsync(std::span(&data, 1), std::move(done), durability);
}

void Log::AppendBatchAsync(std::span<const std::string_view> records, Callback done, Durability durability) {
  Result<Impl::Ticket> t = impl_->Enqueue(records, durability, &done);
  if (!t.ok()) done(t.status());  // `done` was not moved: Enqueue moves it only on success
}

Status Log::Flush() {
  Impl::Ticket t;
  {
    std::unique_lock lk(impl_->mu);
    if (!impl_->poison.ok()) return impl_->poison;
    t.epoch = impl_->epoch;
    // The last record queued is in the pending group, or (none pending) in the group last written or
    // being written.
    t.gen = impl_->pending.empty() ? impl_->pending_gen - 1 : impl_->pending_gen;
    t.last_seq = impl_->next_seq - 1;
    t.first_seq = t.last_seq;
    bool wake = false;
    if (impl_->pending.empty()) {
      // Nothing queued: the last group may be written but waiting for its sync; ask for it now.
      if (impl_->durable.load() < t.last_seq) {
        impl_->sync_requested = true;
        wake = true;
      }
    } else {
      impl_->pending.urgent = true;
      wake = true;
    }
    if (wake && impl_->sync_idle) {
      impl_->sync_idle = false;
      lk.unlock();
      impl_->work_cv.notify_one();
    }
  }
  if (t.last_seq == 0) return OkStatus();
  return impl_->WaitDurable(t);
}

Status Log::WaitWritten() {
  Impl::Ticket t;
  {
    std::lock_guard lk(impl_->mu);
    if (!impl_->poison.ok()) return impl_->poison;
    t.epoch = impl_->epoch;
    t.gen = impl_->pending_gen;
    t.last_seq = impl_->next_seq - 1;
    t.first_seq = t.last_seq;
  }
  if (t.last_seq == 0) return OkStatus();
  return impl_->WaitWritten(t);
}

uint64_t Log::FirstSequence() const { return impl_->first_seq.load(); }
uint64_t Log::DurableSequence() const { return impl_->durable.load(); }
uint64_t Log::WrittenSequence() const { return impl_->written.load(); }

Status Log::Health() const {
  std::lock_guard lk(impl_->mu);
  return impl_->poison;
}

Result<std::unique_ptr<Reader>> Log::NewReader(uint64_t from) {
  if (from == 0) return InvalidArgument("wal: sequences start at 1");
  if (from < FirstSequence()) {
    return OutOfRange("wal: sequence " + std::to_string(from) + " was deleted by retention; the oldest is " +
                      std::to_string(FirstSequence()));
  }
  return std::unique_ptr<Reader>(new Reader(impl_.get(), from));
}

Status Log::RegisterCursor(std::string_view name, uint64_t start) {
  if (!ValidCursorName(name)) return InvalidArgument("wal: bad cursor name (1-64 of [A-Za-z0-9_.-])");
  std::lock_guard lk(impl_->cur_mu);
  if (impl_->cursors.find(name) != impl_->cursors.end()) return OkStatus();
  if (start == 0) start = FirstSequence();
  if (start < FirstSequence()) return OutOfRange("wal: cursor start before the oldest record kept");
  // A cursor past the end would let retention delete records nobody has read.
  if (start > DurableSequence() + 1) return OutOfRange("wal: cursor start after the newest durable record");
  GOVERN_RETURN_IF_ERROR(impl_->WriteCursorFile(name, start));
  impl_->cursors.emplace(std::string(name), start);
  return OkStatus();
}

Status Log::CommitCursor(std::string_view name, uint64_t next_seq) {
  {
    std::lock_guard lk(impl_->cur_mu);
    auto it = impl_->cursors.find(name);
    if (it == impl_->cursors.end()) return NotFound("wal: no cursor named " + std::string(name));
    if (next_seq < FirstSequence() || next_seq > DurableSequence() + 1) {
      return OutOfRange("wal: cursor position " + std::to_string(next_seq) + " outside [" +
                        std::to_string(FirstSequence()) + ", " + std::to_string(DurableSequence() + 1) + "]");
    }
    if (it->second == next_seq) return OkStatus();
    GOVERN_RETURN_IF_ERROR(impl_->WriteCursorFile(name, next_seq));
    it->second = next_seq;
  }
  return ApplyRetention().status();
}

Status Log::UnregisterCursor(std::string_view name) {
  std::lock_guard lk(impl_->cur_mu);
  auto it = impl_->cursors.find(name);
  if (it == impl_->cursors.end()) return NotFound("wal: no cursor named " + std::string(name));
  GOVERN_RETURN_IF_ERROR(impl_->fs->Unlink(impl_->CursorPath(name)));
  GOVERN_RETURN_IF_ERROR(impl_->fs->SyncDir(impl_->CursorDir()));
  impl_->cursors.erase(it);
  return OkStatus();
}

Result<uint64_t> Log::CursorPosition(std::string_view name) const {
  std::lock_guard lk(impl_->cur_mu);
  auto it = impl_->cursors.find(name);
  if (it == impl_->cursors.end()) return NotFound("wal: no cursor named " + std::string(name));
  return it->second;
}

std::map<std::string, uint64_t> Log::Cursors() const {
  std::lock_guard lk(impl_->cur_mu);
  return {impl_->cursors.begin(), impl_->cursors.end()};
}

Result<std::unique_ptr<Reader>> Log::NewCursorReader(std::string_view name) {
  GOVERN_ASSIGN_OR_RETURN(uint64_t at, CursorPosition(name));
  return NewReader(at);
}

Result<size_t> ApplyRetentionFor(Log::Impl* impl, bool try_only) {
  std::unique_lock lk(impl->cur_mu, std::defer_lock);
  if (try_only) {
    if (!lk.try_lock()) return size_t{0};
  } else {
    lk.lock();
  }
  if (impl->cursors.empty()) return size_t{0};
  uint64_t min = UINT64_MAX;
  for (const auto& [name, next] : impl->cursors) min = std::min(min, next);
  std::vector<uint64_t> victims;
  {
    std::lock_guard sl(impl->seg_mu);
    auto& f = impl->seg_firsts;
    size_t k = 0;
    // Segment k is sealed (it has a successor) and its last record is f[k + 1] - 1.
    while (k + 1 < f.size() && f[k + 1] <= min) ++k;
    victims.assign(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(k));
    f.erase(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(k));
    impl->first_seq = f.front();
  }
  for (uint64_t first : victims) {
    GOVERN_RETURN_IF_ERROR(impl->fs->Unlink(impl->PathOf(first)));
    log::Info(kComponent, "retention deleted segment", {{"segment", impl->PathOf(first)}});
  }
  if (!victims.empty()) GOVERN_RETURN_IF_ERROR(impl->fs->SyncDir(impl->dir));
  return victims.size();
}

Result<size_t> Log::ApplyRetention() { return ApplyRetentionFor(impl_.get(), false); }

Log::Stats Log::GetStats() const {
  Stats s;
  s.groups = impl_->stat_groups.load();
  s.writes = impl_->stat_writes.load();
  s.records = impl_->stat_records.load();
  std::lock_guard sl(impl_->seg_mu);
  s.segments = impl_->seg_firsts.size();
  return s;
}

// ---------------------------------------------------------------------------------------------------
// Reader

Reader::Reader(Log::Impl* log, uint64_t from) : log_(log), next_(from), pos_seq_(from) {}

Reader::~Reader() {
  if (fd_ >= 0) log_->fs->Close(fd_);
}

Status Reader::OpenSegment() {
  uint64_t first;
  {
    std::lock_guard sl(log_->seg_mu);
    const auto& f = log_->seg_firsts;
    if (pos_seq_ < f.front()) {
      return OutOfRange("wal: sequence " + std::to_string(pos_seq_) + " was deleted by retention");
    }
    first = *(std::upper_bound(f.begin(), f.end(), pos_seq_) - 1);
  }
  std::string path = log_->PathOf(first);
  Result<int> fd = log_->fs->Open(path, O_RDONLY);
  if (!fd.ok()) {
    if (fd.status().code() == Code::kNotFound) {
      return OutOfRange("wal: segment " + path + " was deleted by retention");
    }
    return fd.status();
  }
  char h[kSegmentHeaderSize];
  Result<size_t> got = log_->fs->Pread(*fd, h, sizeof(h), 0);
  Result<uint64_t> hf =
      got.ok() ? DecodeSegmentHeader(std::string_view(h, *got)) : Result<uint64_t>(got.status());
  if (!hf.ok() || *hf != first) {
    log_->fs->Close(*fd);
    return hf.ok() ? DataLoss("wal: " + path + ": header names another sequence")
                   : hf.status().WithContext("wal: " + path);
  }
  fd_ = *fd;
  seg_first_ = first;
  pos_seq_ = first;
  file_off_ = kSegmentHeaderSize;
  buf_.clear();
  buf_off_ = file_off_;
  buf_durable_ = 0;
  at_eof_ = false;
  return OkStatus();
}

Status Reader::Fill(size_t need) {
  buf_off_ = file_off_;
  buf_durable_ = log_->durable.load(std::memory_order_acquire);
  size_t want = std::max(need, kReadChunk);
  buf_.resize(want);
  GOVERN_ASSIGN_OR_RETURN(size_t got, log_->fs->Pread(fd_, buf_.data(), want, file_off_));
  buf_.resize(got);
  at_eof_ = got < want;
  return OkStatus();
}

Result<std::optional<Record>> Reader::Next(std::chrono::milliseconds wait) {
  uint64_t durable = log_->durable.load(std::memory_order_acquire);
  if (next_ > durable) {
    if (wait.count() > 0) durable = log_->WaitTail(next_, wait);
    if (next_ > durable) return std::optional<Record>();
  }
  if (fd_ < 0) GOVERN_RETURN_IF_ERROR(OpenSegment());
  for (;;) {
    bool in_buf = file_off_ >= buf_off_ && file_off_ <= buf_off_ + buf_.size();
    std::string_view avail;
    if (in_buf) avail = std::string_view(buf_).substr(file_off_ - buf_off_);
    // Bytes read before the record was durable may be stale: re-read them.
    if (!in_buf || pos_seq_ > buf_durable_ || (avail.size() < kRecordHeaderSize && !at_eof_)) {
      GOVERN_RETURN_IF_ERROR(Fill(kRecordHeaderSize));
      continue;
    }
    Decoded d = DecodeRecord(avail, pos_seq_);
    switch (d.state) {
      case DecodeState::kRecord: {
        file_off_ += d.size;
        uint64_t s = pos_seq_++;
        if (s < next_) continue;  // skipping to the starting sequence
        ++next_;
        return std::optional<Record>(Record{s, d.payload});
      }
      case DecodeState::kNeedMore:
        if (!at_eof_) {
          GOVERN_RETURN_IF_ERROR(Fill(std::max(d.size, kRecordHeaderSize)));
          continue;
        }
        break;
      case DecodeState::kZero:
        if (avail.size() >= kRecordHeaderSize || at_eof_) {
          // This segment ends here, and record pos_seq_ is durable: it starts the next segment.
          uint64_t want = pos_seq_;
          log_->fs->Close(fd_);
          fd_ = -1;
          GOVERN_RETURN_IF_ERROR(OpenSegment());
          if (seg_first_ != want) {
            return DataLoss("wal: durable record " + std::to_string(want) + " is missing: segment " +
                            log_->PathOf(seg_first_) + " ends before it");
          }
          continue;
        }
        break;
      default:
        break;
    }
    return DataLoss("wal: durable record " + std::to_string(pos_seq_) + " in " + log_->PathOf(seg_first_) +
                    " at offset " + std::to_string(file_off_) + ": " + std::string(DecodeStateName(d.state)));
  }
}

}  // namespace govern::wal
