// wal::Log and wal::Reader on real files: append and read back, concurrency, async callbacks, buffered
// mode, rotation, tailing readers, cursors, retention, and faults injected through wal::Fs.
#include "storage/wal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "storage/wal_format.h"
#include "storage/wal_test_util.h"

namespace govern::wal {
namespace {

using testing::SegmentFiles;
using testing::TempDir;
using namespace std::chrono_literals;

std::string Payload(uint64_t i, size_t size = 40) {
  std::string s = "record-" + std::to_string(i) + "-";
  while (s.size() < size) s.push_back(static_cast<char>('a' + (i + s.size()) % 26));
  return s;
}

std::unique_ptr<Log> OpenOrDie(const std::string& dir, Options opt = {}) {
  auto log = Log::Open(dir, opt);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(*log) : nullptr;
}

// Reads every record from `from` to the durable end.
std::vector<std::pair<uint64_t, std::string>> ReadAll(Log& log, uint64_t from = 1) {
  std::vector<std::pair<uint64_t, std::string>> out;
  auto reader = log.NewReader(from);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return out;
  for (;;) {
    auto r = (*reader)->Next();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok() || !r->has_value()) break;
    out.emplace_back((*r)->seq, std::string((*r)->data));
  }
  return out;
}

TEST(Wal, AppendReadBackAndReopen) {
  TempDir dir;
  {
    auto log = OpenOrDie(dir.path());
    for (uint64_t i = 1; i <= 500; ++i) {
      auto seq = log->Append(Payload(i, i % 97));
      ASSERT_TRUE(seq.ok()) << seq.status().ToString();
      EXPECT_EQ(*seq, i);
    }
    EXPECT_EQ(log->DurableSequence(), 500u);
    auto all = ReadAll(*log);
    ASSERT_EQ(all.size(), 500u);
    for (uint64_t i = 1; i <= 500; ++i) EXPECT_EQ(all[i - 1], std::make_pair(i, Payload(i, i % 97)));
  }
  auto log = OpenOrDie(dir.path());
  EXPECT_EQ(log->DurableSequence(), 500u);
  auto all = ReadAll(*log, 250);
  ASSERT_EQ(all.size(), 251u);
  EXPECT_EQ(all.front().first, 250u);
  auto seq = log->Append("after reopen");
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ(*seq, 501u);
}

TEST(Wal, OneOpenLogPerDirectory) {
  TempDir dir;
  auto log = OpenOrDie(dir.path());
  auto second = Log::Open(dir.path());
  EXPECT_EQ(second.status().code(), Code::kFailedPrecondition) << second.status().ToString();
  log.reset();
  EXPECT_TRUE(Log::Open(dir.path()).ok());
}

TEST(Wal, EmptyRecordAndTooLargeRecord) {
  TempDir dir;
  Options opt;
  opt.max_record_size = 1000;
  auto log = OpenOrDie(dir.path(), opt);
  auto empty = log->Append("");
  ASSERT_TRUE(empty.ok());
  auto big = log->Append(std::string(1001, 'x'));
  EXPECT_EQ(big.status().code(), Code::kInvalidArgument);
  auto next = log->Append("x");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, 2u);  // the refused record took no sequence
  auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].second, "");
}

TEST(Wal, ConcurrentAppendersGetDistinctDenseSequences) {
  TempDir dir;
  auto log = OpenOrDie(dir.path());
  constexpr int kThreads = 16, kPer = 300;
  std::vector<std::vector<std::pair<uint64_t, std::string>>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPer; ++i) {
        std::string p = "t" + std::to_string(t) + "-" + std::to_string(i);
        auto seq = log->Append(p);
        ASSERT_TRUE(seq.ok()) << seq.status().ToString();
        got[t].emplace_back(*seq, p);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::map<uint64_t, std::string> expect;
  for (auto& v : got) {
    uint64_t prev = 0;
    for (auto& [seq, p] : v) {
      EXPECT_GT(seq, prev);  // one thread's appends keep their order
      prev = seq;
      EXPECT_TRUE(expect.emplace(seq, p).second) << "sequence given twice: " << seq;
    }
  }
  ASSERT_EQ(expect.size(), size_t{kThreads * kPer});
  EXPECT_EQ(expect.begin()->first, 1u);
  EXPECT_EQ(expect.rbegin()->first, uint64_t{kThreads * kPer});
  auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), expect.size());
  for (auto& [seq, p] : all) EXPECT_EQ(expect[seq], p);
  Log::Stats stats = log->GetStats();
  EXPECT_EQ(stats.records, uint64_t{kThreads * kPer});
  EXPECT_LE(stats.groups, stats.records);
}

TEST(Wal, BatchAppendGetsConsecutiveSequences) {
  TempDir dir;
  auto log = OpenOrDie(dir.path());
  ASSERT_TRUE(log->Append("first").ok());
  std::vector<std::string> data = {"a", "bb", "ccc", "dddd"};
  std::vector<std::string_view> views(data.begin(), data.end());
  auto first = log->AppendBatch(views);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 2u);
  EXPECT_EQ(log->DurableSequence(), 5u);
  auto all = ReadAll(*log, 2);
  ASSERT_EQ(all.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(all[i].second, data[i]);
  EXPECT_EQ(log->AppendBatch({}).status().code(), Code::kInvalidArgument);
}

// Waits for n callbacks and checks each ran after its record was durable.
struct CallbackSink {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint64_t> seqs;
  int errors = 0;
  bool durable_at_callback = true;

  Log::Callback Make(Log* log) {
    return [this, log](Result<uint64_t> r) {
      std::lock_guard lk(mu);
      if (r.ok()) {
        seqs.push_back(*r);
        if (log->DurableSequence() < *r) durable_at_callback = false;
      } else {
        ++errors;
      }
      cv.notify_all();
    };
  }
  void WaitFor(size_t n) {
    std::unique_lock lk(mu);
    ASSERT_TRUE(cv.wait_for(lk, 60s, [&] { return seqs.size() + static_cast<size_t>(errors) >= n; }));
  }
};

TEST(Wal, AsyncCallbacksRunOnceAfterSync) {
  TempDir dir;
  CallbackSink sink;  // declared first: it must outlive the log, whose sync thread calls into it
  auto log = OpenOrDie(dir.path());
  constexpr int kN = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kN / 4; ++i)
        log->AppendAsync(Payload(static_cast<uint64_t>(t * 10000 + i)), sink.Make(log.get()));
    });
  }
  for (auto& th : threads) th.join();
  sink.WaitFor(kN);
  std::lock_guard lk(sink.mu);
  EXPECT_EQ(sink.errors, 0);
  EXPECT_TRUE(sink.durable_at_callback);
  std::set<uint64_t> unique(sink.seqs.begin(), sink.seqs.end());
  EXPECT_EQ(unique.size(), size_t{kN});
  EXPECT_EQ(*unique.rbegin(), uint64_t{kN});
}

TEST(Wal, AsyncBatchAndErrorsOnCallerThread) {
  TempDir dir;
  Options opt;
  opt.max_record_size = 10;
  CallbackSink sink;  // declared first: it must outlive the log, whose sync thread calls into it
  auto log = OpenOrDie(dir.path(), opt);
  std::vector<std::string_view> batch = {"1", "2", "3"};
  log->AppendBatchAsync(batch, sink.Make(log.get()), Durability::kSync);
  sink.WaitFor(1);
  EXPECT_EQ(sink.seqs, std::vector<uint64_t>{1});
  // An immediate error still reaches the callback, exactly once.
  Status seen;
  int calls = 0;
  log->AppendAsync(std::string(11, 'x'), [&](Result<uint64_t> r) {
    seen = r.status();
    ++calls;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen.code(), Code::kInvalidArgument);
}

TEST(Wal, BufferedModeCompletesOnlyWhenDurable) {
  TempDir dir;
  Options opt;
  opt.buffered_interval = 20ms;
  opt.default_durability = Durability::kBuffered;
  CallbackSink sink;  // declared first: it must outlive the log, whose sync thread calls into it
  auto log = OpenOrDie(dir.path(), opt);
  for (int i = 0; i < 100; ++i) log->AppendAsync(Payload(static_cast<uint64_t>(i)), sink.Make(log.get()));
  sink.WaitFor(100);
  {
    std::lock_guard lk(sink.mu);
    EXPECT_EQ(sink.errors, 0);
    EXPECT_TRUE(sink.durable_at_callback);
  }
  // Blocking buffered appends from several threads share syncs and still return durable sequences.
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        auto seq = log->Append("buffered");
        if (!seq.ok() || log->DurableSequence() < *seq) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  // A sync append does not wait for the buffered interval, and takes buffered ones along.
  log->AppendAsync("buffered-before-sync", sink.Make(log.get()), Durability::kBuffered);
  auto s = log->Append("sync", Durability::kSync);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(log->DurableSequence(), *s);
  EXPECT_TRUE(log->Flush().ok());
  sink.WaitFor(101);
  EXPECT_EQ(ReadAll(*log).size(), 262u);
}

TEST(Wal, RotationNamesSegmentsByFirstSequenceAndReadsAcross) {
  TempDir dir;
  Options opt;
  opt.segment_size = 4096;
  std::vector<uint64_t> firsts;
  {
    auto log = OpenOrDie(dir.path(), opt);
    for (uint64_t i = 1; i <= 300; ++i) ASSERT_TRUE(log->Append(Payload(i, 100)).ok());
    // A batch larger than a segment splits across several new segments in one group.
    std::vector<std::string> big(100, std::string(300, 'b'));
    std::vector<std::string_view> views(big.begin(), big.end());
    ASSERT_TRUE(log->AppendBatch(views).ok());
    // A record larger than a segment gets a segment of its own.
    ASSERT_TRUE(log->Append(std::string(10000, 'h')).ok());
    ASSERT_TRUE(log->Append("after the huge one").ok());
    EXPECT_GT(log->GetStats().segments, 10u);
    auto all = ReadAll(*log);
    ASSERT_EQ(all.size(), 402u);
    for (uint64_t i = 1; i <= 402; ++i) ASSERT_EQ(all[i - 1].first, i);
    EXPECT_EQ(all[400].second.size(), 10000u);
  }
  auto files = SegmentFiles(dir.path());
  ASSERT_GT(files.size(), 10u);
  EXPECT_EQ(files.front(), SegmentFileName(1));
  for (const std::string& f : files) {
    uint64_t first = 0;
    ASSERT_TRUE(ParseSegmentFileName(f, &first));
    std::string bytes = testing::ReadFileOrDie(dir.path() + "/" + f);
    auto scan = ScanSegment(bytes);
    ASSERT_TRUE(scan.ok());
    EXPECT_EQ(scan->first_seq, first);
    EXPECT_EQ(scan->tail, TailKind::kClean) << f << ": " << scan->reason;
    EXPECT_GT(scan->count, 0u) << f;
  }
  auto log = OpenOrDie(dir.path(), opt);
  EXPECT_EQ(log->DurableSequence(), 402u);
  auto from_middle = ReadAll(*log, 123);
  ASSERT_EQ(from_middle.size(), 280u);
  EXPECT_EQ(from_middle.front(), std::make_pair(uint64_t{123}, Payload(123, 100)));
}

TEST(Wal, TailingReaderWaitsForNewRecords) {
  TempDir dir;
  Options opt;
  opt.segment_size = 2048;  // the tail crosses segments while the reader follows
  auto log = OpenOrDie(dir.path(), opt);
  ASSERT_TRUE(log->Append("one").ok());
  auto reader = log->NewReader(1);
  ASSERT_TRUE(reader.ok());
  auto r = (*reader)->Next();
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->data, "one");
  r = (*reader)->Next();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());  // nothing new, no wait
  constexpr uint64_t kMore = 200;
  std::thread writer([&] {
    for (uint64_t i = 2; i <= kMore + 1; ++i) ASSERT_TRUE(log->Append(Payload(i, 60)).ok());
  });
  for (uint64_t i = 2; i <= kMore + 1; ++i) {
    auto n = (*reader)->Next(30s);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_TRUE(n->has_value()) << "no record " << i;
    EXPECT_EQ((*n)->seq, i);
    EXPECT_EQ((*n)->data, Payload(i, 60));
  }
  writer.join();
  r = (*reader)->Next(1ms);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  // A reader opened at a future sequence waits for it.
  auto future = log->NewReader(kMore + 2);
  ASSERT_TRUE(future.ok());
  ASSERT_TRUE(log->Append("future").ok());
  auto f = (*future)->Next(30s);
  ASSERT_TRUE(f.ok() && f->has_value());
  EXPECT_EQ((*f)->data, "future");
}

TEST(Wal, CursorsAreDurableAndValidated) {
  TempDir dir;
  {
    auto log = OpenOrDie(dir.path());
    for (int i = 1; i <= 10; ++i) ASSERT_TRUE(log->Append(Payload(static_cast<uint64_t>(i))).ok());
    ASSERT_TRUE(log->RegisterCursor("indexer").ok());
    EXPECT_EQ(*log->CursorPosition("indexer"), 1u);
    ASSERT_TRUE(log->CommitCursor("indexer", 7).ok());
    ASSERT_TRUE(log->RegisterCursor("indexer").ok());  // already there: keeps its position
    EXPECT_EQ(*log->CursorPosition("indexer"), 7u);
    EXPECT_EQ(log->RegisterCursor("../evil").code(), Code::kInvalidArgument);
    EXPECT_EQ(log->RegisterCursor("").code(), Code::kInvalidArgument);
    EXPECT_EQ(log->CommitCursor("indexer", 12).code(), Code::kOutOfRange);  // past the durable end + 1
    EXPECT_TRUE(log->CommitCursor("indexer", 11).ok());
    EXPECT_TRUE(log->CommitCursor("indexer", 7).ok());
    EXPECT_EQ(log->CommitCursor("nobody", 1).code(), Code::kNotFound);
    ASSERT_TRUE(log->RegisterCursor("gone", 3).ok());
    ASSERT_TRUE(log->UnregisterCursor("gone").ok());
  }
  auto log = OpenOrDie(dir.path());
  EXPECT_EQ(log->Cursors(), (std::map<std::string, uint64_t>{{"indexer", 7}}));
  auto reader = log->NewCursorReader("indexer");
  ASSERT_TRUE(reader.ok());
  auto r = (*reader)->Next();
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->seq, 7u);
  EXPECT_EQ((*r)->data, Payload(7));
}

TEST(Wal, RetentionWaitsForEveryCursor) {
  TempDir dir;
  Options opt;
  opt.segment_size = 1024;
  auto log = OpenOrDie(dir.path(), opt);
  for (uint64_t i = 1; i <= 100; ++i) ASSERT_TRUE(log->Append(Payload(i, 100)).ok());
  size_t segments = SegmentFiles(dir.path()).size();
  ASSERT_GT(segments, 5u);
  // No cursor: nothing is deleted.
  EXPECT_EQ(*log->ApplyRetention(), 0u);
  ASSERT_TRUE(log->RegisterCursor("fast").ok());
  ASSERT_TRUE(log->RegisterCursor("external").ok());  // e.g. a consumer keeping its cursor in PostgreSQL
  ASSERT_TRUE(log->CommitCursor("fast", 101).ok());
  EXPECT_EQ(SegmentFiles(dir.path()).size(), segments);  // "external" still at 1
  ASSERT_TRUE(log->CommitCursor("external", 50).ok());
  auto files = SegmentFiles(dir.path());
  ASSERT_LT(files.size(), segments);
  // The oldest kept segment holds record 50 or starts right after; nothing before 50 is needed.
  uint64_t first = 0;
  ASSERT_TRUE(ParseSegmentFileName(files.front(), &first));
  EXPECT_LE(first, 50u);
  EXPECT_EQ(log->FirstSequence(), first);
  EXPECT_GT(first, 1u);
  EXPECT_EQ(log->NewReader(1).status().code(), Code::kOutOfRange);
  auto all = ReadAll(*log, 50);
  ASSERT_EQ(all.size(), 51u);
  EXPECT_EQ(all.front().first, 50u);
  // Everyone at the end: only the active segment (and no sealed one) remains.
  ASSERT_TRUE(log->CommitCursor("external", 101).ok());
  EXPECT_EQ(SegmentFiles(dir.path()).size(), 1u);
  log.reset();
  log = OpenOrDie(dir.path(), opt);
  EXPECT_EQ(log->DurableSequence(), 100u);
  EXPECT_EQ(*log->Append("next"), 101u);
}

// A file system whose faults a test switches on.
class FaultFs : public Fs {
 public:
  std::atomic<bool> fail_sync{false};
  std::atomic<int> enospc_writes{0};  // this many pwrites write half, then fail with ENOSPC
  std::atomic<bool> no_preallocate{false};

  Status Fdatasync(int fd) override {
    if (fail_sync) return ErrnoStatus(EIO, "fdatasync");
    return Fs::Fdatasync(fd);
  }
  Status PwriteAll(int fd, const void* data, size_t n, uint64_t off) override {
    if (enospc_writes.load() > 0) {
      --enospc_writes;
      (void)Fs::PwriteAll(fd, data, n / 2, off);  // a torn write, as a full disk leaves it
      return ErrnoStatus(ENOSPC, "pwrite");
    }
    return Fs::PwriteAll(fd, data, n, off);
  }
  Status Preallocate(int fd, uint64_t size) override {
    if (no_preallocate) return ErrnoStatus(ENOSPC, "fallocate");
    return Fs::Preallocate(fd, size);
  }
};

// A file system whose fdatasync can be held at a gate, so a test can look at the log while a group is
// written but not yet synced.
class GatedSyncFs : public Fs {
 public:
  Status Fdatasync(int fd) override {
    std::unique_lock lk(mu_);
    ++blocked_;
    cv_.notify_all();
    cv_.wait(lk, [&] { return open_; });
    --blocked_;
    lk.unlock();
    return Fs::Fdatasync(fd);
  }
  void Hold() {
    std::lock_guard lk(mu_);
    open_ = false;
  }
  void Release() {
    std::lock_guard lk(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // False if no fdatasync arrived within a minute (the log did not sync at all).
  bool WaitUntilBlocked() {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, std::chrono::seconds(60), [&] { return blocked_ > 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int blocked_ = 0;
  bool open_ = true;
};

TEST(Wal, NothingIsVisibleOrAcknowledgedBeforeItsSync) {
  TempDir dir;
  GatedSyncFs fs;
  Options opt;
  opt.fs = &fs;
  auto log = OpenOrDie(dir.path(), opt);
  ASSERT_TRUE(log->Append("before").ok());
  auto reader = log->NewReader(2);
  ASSERT_TRUE(reader.ok());

  fs.Hold();
  Result<uint64_t> blocking = Unavailable("not run");
  std::thread appender([&] { blocking = log->Append("written, not yet synced"); });
  ASSERT_TRUE(fs.WaitUntilBlocked());  // the group is in the file; its fdatasync is held
  std::atomic<bool> async_done{false};
  log->AppendAsync("queued behind it", [&](Result<uint64_t> r) {
    EXPECT_TRUE(r.ok());
    async_done = true;
  });
  EXPECT_EQ(log->DurableSequence(), 1u);
  auto none = (*reader)->Next(std::chrono::milliseconds(50));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value()) << "a reader saw a record before it was durable";
  EXPECT_FALSE(async_done.load()) << "a callback ran before its sync";

  fs.Release();
  appender.join();
  ASSERT_TRUE(blocking.ok());
  EXPECT_EQ(*blocking, 2u);
  auto r = (*reader)->Next(30s);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->data, "written, not yet synced");
  ASSERT_TRUE(log->Flush().ok());
  EXPECT_EQ(log->DurableSequence(), 3u);
  // Flush() returns once the record is durable; its callback runs just after, on the sync thread.
  for (int i = 0; i < 30000 && !async_done.load(); ++i) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(async_done.load());
}

TEST(Wal, FullBacklogFailsAsyncAtOnceAndBlocksSyncCallers) {
  TempDir dir;
  GatedSyncFs fs;
  Options opt;
  opt.fs = &fs;
  opt.max_pending_bytes = 4096;
  CallbackSink sink;  // declared first: it must outlive the log, whose sync thread calls into it
  auto log = OpenOrDie(dir.path(), opt);
  fs.Hold();
  log->AppendAsync("in flight", sink.Make(log.get()));
  ASSERT_TRUE(fs.WaitUntilBlocked());
  // The group in flight is held; the queue behind it fills up to max_pending_bytes.
  int accepted = 0;
  Status refused;
  for (int i = 0; i < 100 && refused.ok(); ++i) {
    Status st;
    bool called = false;
    log->AppendAsync(std::string(500, 'q'), [&, i](Result<uint64_t> r) {
      if (!r.ok()) {
        st = r.status();
        called = true;
      } else {
        sink.Make(log.get())(r);
      }
      (void)i;
    });
    if (called) {
      refused = st;
    } else {
      ++accepted;
    }
  }
  EXPECT_EQ(refused.code(), Code::kUnavailable) << refused.ToString();
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, 10);
  // A blocking caller waits for room instead of failing.
  std::atomic<bool> blocked_done{false};
  std::thread blocking([&] {
    EXPECT_TRUE(log->Append(std::string(3000, 'b')).ok());
    blocked_done = true;
  });
  fs.Release();
  blocking.join();
  EXPECT_TRUE(blocked_done.load());
  sink.WaitFor(static_cast<size_t>(accepted) + 1);
  std::lock_guard lk(sink.mu);
  EXPECT_EQ(sink.errors, 0);
}

TEST(Wal, FailedWriteIsCutBackAndAppendsRecover) {
  TempDir dir;
  FaultFs fs;
  Options opt;
  opt.fs = &fs;
  auto log = OpenOrDie(dir.path(), opt);
  ASSERT_TRUE(log->Append("kept-1").ok());
  fs.enospc_writes = 1;
  auto failed = log->Append("lost-write");
  EXPECT_EQ(failed.status().code(), Code::kResourceExhausted) << failed.status().ToString();
  EXPECT_TRUE(log->Health().ok());  // a failed write is not fatal
  auto again = log->Append("kept-2");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, 2u);  // the failed record's sequence is reused: sequences stay dense
  auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].second, "kept-2");
  log.reset();
  log = OpenOrDie(dir.path());
  all = ReadAll(*log);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].second, "kept-1");
  EXPECT_EQ(all[1].second, "kept-2");
}

TEST(Wal, FailedSyncPoisonsTheLogUntilReopened) {
  TempDir dir;
  FaultFs fs;
  Options opt;
  opt.fs = &fs;
  auto log = OpenOrDie(dir.path(), opt);
  ASSERT_TRUE(log->Append("acknowledged").ok());
  fs.fail_sync = true;
  auto r = log->Append("unknown fate");
  EXPECT_FALSE(r.ok());
  fs.fail_sync = false;
  // The disk works again, but the log refuses: it cannot know what the failed sync lost.
  auto after = log->Append("refused");
  EXPECT_EQ(after.status().code(), Code::kFailedPrecondition) << after.status().ToString();
  EXPECT_EQ(log->Health().code(), Code::kFailedPrecondition);
  Status async_status;
  log->AppendAsync("refused too", [&](Result<uint64_t> res) { async_status = res.status(); });
  EXPECT_EQ(async_status.code(), Code::kFailedPrecondition);
  log.reset();
  log = OpenOrDie(dir.path());
  auto all = ReadAll(*log);
  ASSERT_GE(all.size(), 1u);  // the unacknowledged record may or may not have reached the disk
  EXPECT_EQ(all[0].second, "acknowledged");
  auto seq = log->Append("works after reopen");
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ(*seq, all.size() + 1);
}

// Counts the log's writes and syncs.
class CountingFs : public Fs {
 public:
  std::atomic<int> syncs{0};
  std::atomic<int> writes{0};
  Status Fdatasync(int fd) override {
    ++syncs;
    return Fs::Fdatasync(fd);
  }
  Status PwriteAll(int fd, const void* data, size_t n, uint64_t off) override {
    ++writes;
    return Fs::PwriteAll(fd, data, n, off);
  }
};

// The records a segment file holds (what a process crash leaves: the page cache's view).
uint64_t RecordsInFile(const std::string& path) {
  auto scan = ScanSegment(testing::ReadFileOrDie(path));
  EXPECT_TRUE(scan.ok()) << scan.status().ToString();
  return scan.ok() ? scan->count : 0;
}

TEST(Wal, BufferedRecordsAreWrittenAtOnceAndSyncedLater) {
  TempDir dir;
  CountingFs fs;
  Options opt;
  opt.fs = &fs;
  opt.buffered_interval = std::chrono::hours(1);  // no sync falls due during the test
  CallbackSink sink;  // declared first: it must outlive the log, whose sync thread calls into it
  auto log = OpenOrDie(dir.path(), opt);
  auto reader = log->NewReader(1);
  ASSERT_TRUE(reader.ok());
  const int syncs_at_open = fs.syncs.load();
  for (uint64_t i = 1; i <= 50; ++i)
    log->AppendAsync(Payload(i), sink.Make(log.get()), Durability::kBuffered);
  ASSERT_TRUE(log->WaitWritten().ok());
  // Written: in the file (a process crash keeps them), but not synced, not acknowledged, not readable.
  EXPECT_EQ(log->WrittenSequence(), 50u);
  EXPECT_EQ(log->DurableSequence(), 0u);
  EXPECT_EQ(RecordsInFile(dir.path() + "/" + SegmentFileName(1)), 50u);
  EXPECT_EQ(fs.syncs.load(), syncs_at_open);
  {
    std::lock_guard lk(sink.mu);
    EXPECT_TRUE(sink.seqs.empty()) << "a callback ran before its sync";
  }
  auto none = (*reader)->Next(std::chrono::milliseconds(20));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value()) << "a reader saw a written record before it was durable";
  EXPECT_EQ(log->GetStats().groups, 0u);
  EXPECT_GE(log->GetStats().writes, 1u);

  // Flush syncs them all with one fdatasync.
  ASSERT_TRUE(log->Flush().ok());
  EXPECT_EQ(log->DurableSequence(), 50u);
  EXPECT_EQ(fs.syncs.load(), syncs_at_open + 1);
  sink.WaitFor(50);
  {
    std::lock_guard lk(sink.mu);
    EXPECT_EQ(sink.errors, 0);
    EXPECT_TRUE(sink.durable_at_callback);
  }
  for (uint64_t i = 1; i <= 50; ++i) {
    auto r = (*reader)->Next();
    ASSERT_TRUE(r.ok() && r->has_value()) << i;
    EXPECT_EQ((*r)->data, Payload(i));
  }
  // A sync append takes the written buffered ones along in its own fdatasync.
  for (uint64_t i = 51; i <= 60; ++i)
    log->AppendAsync(Payload(i), sink.Make(log.get()), Durability::kBuffered);
  ASSERT_TRUE(log->WaitWritten().ok());
  auto s = log->Append("sync", Durability::kSync);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, 61u);
  EXPECT_EQ(log->DurableSequence(), 61u);
  EXPECT_EQ(fs.syncs.load(), syncs_at_open + 2);
  sink.WaitFor(60);
  EXPECT_EQ(log->GetStats().records, 61u);
}

TEST(Wal, WrittenBufferedRecordsSurviveAProcessCrash) {
  // The directory copied while the log is open is what a process crash leaves: the page cache's view.
  // Segments are small so that buffered groups rotate (a filled segment is synced before the next).
  TempDir tmp;
  const std::string dir = tmp.path() + "/wal", copy = tmp.path() + "/after-crash";
  Options opt;
  opt.segment_size = 4096;
  opt.buffered_interval = std::chrono::hours(1);
  opt.default_durability = Durability::kBuffered;
  CallbackSink sink;  // declared first: it must outlive the log, whose sync thread calls into it
  auto log = OpenOrDie(dir, opt);
  for (uint64_t i = 1; i <= 300; ++i) {
    log->AppendAsync(Payload(i, 100), sink.Make(log.get()));
    if (i % 7 == 0) {
      ASSERT_TRUE(log->WaitWritten().ok());  // many groups, not one
    }
  }
  ASSERT_TRUE(log->WaitWritten().ok());
  EXPECT_EQ(log->WrittenSequence(), 300u);
  EXPECT_LT(log->DurableSequence(), 300u);  // the last segment's records wait for their interval
  std::filesystem::copy(dir, copy, std::filesystem::copy_options::recursive);
  std::filesystem::remove(copy + "/LOCK");
  auto recovered = OpenOrDie(copy, Options{.segment_size = opt.segment_size});
  EXPECT_EQ(recovered->DurableSequence(), 300u);
  auto all = ReadAll(*recovered);
  ASSERT_EQ(all.size(), 300u);
  for (uint64_t i = 1; i <= 300; ++i) ASSERT_EQ(all[i - 1], std::make_pair(i, Payload(i, 100)));
  ASSERT_TRUE(log->Flush().ok());
  sink.WaitFor(300);
}

TEST(Wal, BufferedLoadGetsOneSyncPerInterval) {
  TempDir dir;
  CountingFs fs;
  Options opt;
  opt.fs = &fs;
  opt.buffered_interval = 20ms;
  opt.default_durability = Durability::kBuffered;
  CallbackSink sink;  // declared first: it must outlive the log, whose sync thread calls into it
  auto start = std::chrono::steady_clock::now();
  auto log = OpenOrDie(dir.path(), opt);
  const int syncs_at_open = fs.syncs.load();
  const int writes_at_open = fs.writes.load();
  size_t n = 0;
  // Steady load: a record every 200 us for about half a second.
  while (std::chrono::steady_clock::now() - start < 500ms) {
    log->AppendAsync(Payload(++n), sink.Make(log.get()));
    std::this_thread::sleep_for(200us);
  }
  log.reset();  // the close syncs the rest
  auto elapsed = std::chrono::steady_clock::now() - start;
  sink.WaitFor(n);
  std::lock_guard lk(sink.mu);
  EXPECT_EQ(sink.errors, 0);
  EXPECT_TRUE(sink.durable_at_callback);
  const int syncs = fs.syncs.load() - syncs_at_open, writes = fs.writes.load() - writes_at_open;
  // At most one fdatasync per interval, whatever the number of records (plus the one at close); a
  // slow machine only makes fewer. Each record was written on its own or with the few queued beside
  // it, long before its sync.
  const auto intervals = elapsed / opt.buffered_interval;
  EXPECT_GE(syncs, 1);
  EXPECT_LE(syncs, intervals + 2) << "over " << std::chrono::duration<double>(elapsed).count() << " s";
  EXPECT_GT(writes, syncs);
}

TEST(Wal, FailedBufferedWriteFailsItsCallbacksAndKeepsWhatWasWrittenBefore) {
  TempDir dir;
  FaultFs fs;
  Options opt;
  opt.fs = &fs;
  opt.buffered_interval = std::chrono::hours(1);
  CallbackSink before, failed;  // declared first: they must outlive the log
  auto log = OpenOrDie(dir.path(), opt);
  for (uint64_t i = 1; i <= 5; ++i)
    log->AppendAsync(Payload(i), before.Make(log.get()), Durability::kBuffered);
  ASSERT_TRUE(log->WaitWritten().ok());
  ASSERT_EQ(log->DurableSequence(), 0u);
  fs.enospc_writes = 1;  // the next group's write tears and fails for space
  std::vector<std::string> lost = {Payload(100), Payload(101), Payload(102)};
  std::vector<std::string_view> lost_views(lost.begin(), lost.end());
  log->AppendBatchAsync(lost_views, failed.Make(log.get()), Durability::kBuffered);
  failed.WaitFor(1);
  {
    std::lock_guard lk(failed.mu);
    EXPECT_EQ(failed.errors, 1) << "a failed buffered write must fail its callback";
    EXPECT_TRUE(failed.seqs.empty());
  }
  // The records written before the failed group are whole and now synced: their appends complete.
  before.WaitFor(5);
  {
    std::lock_guard lk(before.mu);
    EXPECT_EQ(before.errors, 0);
    EXPECT_EQ(before.seqs, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  }
  EXPECT_EQ(log->DurableSequence(), 5u);
  EXPECT_EQ(log->WrittenSequence(), 5u);
  EXPECT_TRUE(log->Health().ok());
  // The file was cut back to the failed group's start: the next record takes its sequence and place.
  EXPECT_EQ(RecordsInFile(dir.path() + "/" + SegmentFileName(1)), 5u);
  auto next = log->Append("after the failure", Durability::kSync);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(*next, 6u);
  log.reset();
  log = OpenOrDie(dir.path());
  auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), 6u);
  for (uint64_t i = 1; i <= 5; ++i) EXPECT_EQ(all[i - 1].second, Payload(i));
  EXPECT_EQ(all[5].second, "after the failure");
}

TEST(Wal, FailedSyncFailsWrittenBufferedRecords) {
  TempDir dir;
  FaultFs fs;
  Options opt;
  opt.fs = &fs;
  opt.buffered_interval = std::chrono::hours(1);
  CallbackSink sink;  // declared first: it must outlive the log
  auto log = OpenOrDie(dir.path(), opt);
  for (uint64_t i = 1; i <= 5; ++i) log->AppendAsync(Payload(i), sink.Make(log.get()), Durability::kBuffered);
  ASSERT_TRUE(log->WaitWritten().ok());
  fs.fail_sync = true;
  EXPECT_FALSE(log->Flush().ok());
  sink.WaitFor(5);
  {
    std::lock_guard lk(sink.mu);
    EXPECT_EQ(sink.errors, 5);
  }
  EXPECT_EQ(log->Health().code(), Code::kFailedPrecondition);
  EXPECT_EQ(log->WrittenSequence(), 0u);  // what the kernel kept is unknown now
  EXPECT_EQ(log->WaitWritten().code(), Code::kFailedPrecondition);
}

TEST(Wal, RotationFailureForSpaceIsRetried) {
  TempDir dir;
  FaultFs fs;
  Options opt;
  opt.fs = &fs;
  opt.segment_size = 1024;
  auto log = OpenOrDie(dir.path(), opt);
  uint64_t i = 1;
  while (log->GetStats().segments < 2) ASSERT_TRUE(log->Append(Payload(i++, 100)).ok());
  fs.no_preallocate = true;  // creating the next segment fails for space
  Status st;
  for (int k = 0; k < 20 && st.ok(); ++k) st = log->Append(Payload(i++, 100)).status();
  EXPECT_EQ(st.code(), Code::kResourceExhausted) << st.ToString();
  --i;
  fs.no_preallocate = false;
  auto seq = log->Append(Payload(i, 100));
  ASSERT_TRUE(seq.ok()) << seq.status().ToString();
  EXPECT_EQ(*seq, i);
  auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), i);
  for (uint64_t k = 1; k <= i; ++k) EXPECT_EQ(all[k - 1].second, Payload(k, 100));
}

// A file system that tells the appending (test) thread's writes from the sync thread's, and can fail
// either one's next writes (torn, then ENOSPC).
class AppenderFs : public Fs {
 public:
  const std::thread::id appender = std::this_thread::get_id();
  std::atomic<int> appender_writes{0}, appender_syncs{0};  // made by the appender, successful
  std::atomic<int> fail_appender_writes{0};

  Status PwriteAll(int fd, const void* data, size_t n, uint64_t off) override {
    if (std::this_thread::get_id() != appender) return Fs::PwriteAll(fd, data, n, off);
    if (fail_appender_writes.load() > 0) {
      --fail_appender_writes;
      (void)Fs::PwriteAll(fd, data, n / 2, off);
      return ErrnoStatus(ENOSPC, "pwrite");
    }
    Status st = Fs::PwriteAll(fd, data, n, off);
    if (st.ok()) ++appender_writes;
    return st;
  }
  Status Fdatasync(int fd) override {
    if (std::this_thread::get_id() == appender) ++appender_syncs;
    return Fs::Fdatasync(fd);
  }
};

// Appends one buffered record at a time, with a pause after each so the sync thread is back asleep
// (whether it is decides whether the appender writes); returns how many the appender wrote itself.
int AppendOneByOne(Log& log, AppenderFs& fs, CallbackSink& sink, uint64_t first, uint64_t last,
                   const std::string& segment) {
  int own = 0;
  for (uint64_t i = first; i <= last; ++i) {
    int before = fs.appender_writes.load();
    log.AppendAsync(Payload(i), sink.Make(&log), Durability::kBuffered);
    if (fs.appender_writes.load() > before) {
      ++own;
      // Written before AppendAsync returned: in the file (a process crash keeps it) and counted.
      EXPECT_EQ(log.WrittenSequence(), i);
      if (!segment.empty()) {
        EXPECT_EQ(RecordsInFile(segment), i);
      }
    }
    std::this_thread::sleep_for(1ms);
  }
  return own;
}

TEST(Wal, AppenderWritesBufferedRecordsItselfWhileTheSyncThreadSleeps) {
  TempDir dir;
  AppenderFs fs;
  Options opt;
  opt.fs = &fs;
  opt.appender_writes = true;
  opt.buffered_interval = std::chrono::hours(1);  // no sync falls due during the test
  opt.segment_size = 64 << 10;                    // read whole after each append
  CallbackSink sink;  // declared first: it must outlive the log, whose sync thread calls into it
  auto log = OpenOrDie(dir.path(), opt);
  const int writes_at_open = fs.appender_writes.load(), syncs_at_open = fs.appender_syncs.load();
  const std::string segment = dir.path() + "/" + SegmentFileName(1);
  int own = AppendOneByOne(*log, fs, sink, 1, 20, segment);
  EXPECT_GT(own, 0) << "no record was written by its appender";
  EXPECT_EQ(fs.appender_writes.load() - writes_at_open, own);
  EXPECT_EQ(fs.appender_syncs.load(), syncs_at_open) << "an appender must never sync";
  // Written, not synced: nothing acknowledged yet.
  EXPECT_EQ(log->DurableSequence(), 0u);
  {
    std::lock_guard lk(sink.mu);
    EXPECT_TRUE(sink.seqs.empty()) << "a callback ran before its sync";
  }
  // A sync append is queued for the sync thread, and its fdatasync covers the appender's records too.
  auto s = log->Append("sync", Durability::kSync);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*s, 21u);
  EXPECT_EQ(log->DurableSequence(), 21u);
  sink.WaitFor(20);
  {
    std::lock_guard lk(sink.mu);
    EXPECT_EQ(sink.errors, 0);
    EXPECT_TRUE(sink.durable_at_callback);
    std::vector<uint64_t> seqs = sink.seqs;
    std::sort(seqs.begin(), seqs.end());
    ASSERT_EQ(seqs.size(), 20u);
    for (uint64_t i = 1; i <= 20; ++i) EXPECT_EQ(seqs[i - 1], i);
  }
  // More of them after the sync, then the close syncs them.
  own = AppendOneByOne(*log, fs, sink, 22, 30, segment);
  EXPECT_GT(own, 0);
  log.reset();
  sink.WaitFor(29);
  log = OpenOrDie(dir.path());
  auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), 30u);
  for (uint64_t i = 1; i <= 30; ++i) {
    if (i != 21) {
      EXPECT_EQ(all[i - 1], std::make_pair(i, Payload(i)));
    }
  }
  EXPECT_EQ(all[20].second, "sync");
}

TEST(Wal, AppenderWrittenRecordsAreSyncedWithinTheInterval) {
  // Without a Flush, a sync append or the close: the sync thread, asleep with no deadline when the
  // first of them is written, must be woken to sync them within the interval.
  TempDir dir;
  AppenderFs fs;
  Options opt;
  opt.fs = &fs;
  opt.appender_writes = true;
  opt.buffered_interval = 10ms;
  CallbackSink sink;  // declared first: it must outlive the log
  auto log = OpenOrDie(dir.path(), opt);
  int own = 0;
  for (uint64_t first = 1; first <= 31; first += 10) {
    own += AppendOneByOne(*log, fs, sink, first, first + 9, "");
    sink.WaitFor(first + 9);  // each batch's callbacks come without anything forcing a sync
  }
  EXPECT_GT(own, 0);
  std::lock_guard lk(sink.mu);
  EXPECT_EQ(sink.errors, 0);
  EXPECT_TRUE(sink.durable_at_callback);
}

TEST(Wal, FailedAppenderWriteFallsBackToTheSyncThread) {
  TempDir dir;
  AppenderFs fs;
  Options opt;
  opt.fs = &fs;
  opt.appender_writes = true;
  opt.buffered_interval = std::chrono::hours(1);
  CallbackSink sink;  // declared first: it must outlive the log
  auto log = OpenOrDie(dir.path(), opt);
  // The appender's next write tears and fails: its record goes to the sync thread, which writes it
  // over the torn bytes. Retried until an append hit the failure itself (not only queued records).
  fs.fail_appender_writes = 1;
  uint64_t n = 0;
  while (fs.fail_appender_writes.load() > 0 && n < 1000) {
    ++n;
    AppendOneByOne(*log, fs, sink, n, n, "");
  }
  ASSERT_EQ(fs.fail_appender_writes.load(), 0) << "no append was written by its appender";
  AppendOneByOne(*log, fs, sink, n + 1, n + 5, "");  // and the appender writes again afterwards
  n += 5;
  ASSERT_TRUE(log->Flush().ok());
  EXPECT_EQ(log->DurableSequence(), n);
  EXPECT_TRUE(log->Health().ok());
  sink.WaitFor(n);
  {
    std::lock_guard lk(sink.mu);
    EXPECT_EQ(sink.errors, 0) << "the failed write was not retried by the sync thread";
  }
  log.reset();
  log = OpenOrDie(dir.path());
  auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), n);
  for (uint64_t i = 1; i <= n; ++i) EXPECT_EQ(all[i - 1], std::make_pair(i, Payload(i)));
}

}  // namespace
}  // namespace govern::wal
