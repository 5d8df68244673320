// DecisionLog against real files: both modes, crashes of a real child process, back-pressure, sync
// failures, context modes and retention.
#include "policy/decisions/decision_log.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <thread>

#include "crypto/sha256.h"
#include "policy/decisions/test_util.h"

namespace govern::policy {
namespace {

using testing::GatedFs;
using testing::ReadAll;
using testing::TempDir;

DecisionRecord Decided(int i) {
  DecisionRecord r;
  r.organisation = "acme";
  r.principal = "Agent::\"a" + std::to_string(i % 7) + "\"";
  r.action = "Action::\"call_tool\"";
  r.resource = "Tool::\"t" + std::to_string(i) + "\"";
  r.decision = i % 3 == 0 ? RecordedDecision::kDeny : RecordedDecision::kAllow;
  r.determining_policies = {"policy" + std::to_string(i % 12)};
  r.bundle_version = 3;
  r.context_kind = ContextKind::kFull;
  r.context = "{\"i\":" + std::to_string(i) + "}";
  return r;
}

std::unique_ptr<DecisionLog> OpenOrDie(DecisionLogOptions o) {
  auto log = DecisionLog::Open(std::move(o));
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(*log) : nullptr;
}

bool WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 60000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// Reads ids (16 bytes each) from a pipe until `n` arrived or the writer is gone.
std::vector<DecisionId> ReadIds(int fd, size_t n) {
  std::vector<DecisionId> ids;
  DecisionId id;
  size_t have = 0;
  while (ids.size() < n) {
    const ssize_t got = read(fd, id.bytes.data() + have, 16 - have);
    if (got <= 0) break;
    have += static_cast<size_t>(got);
    if (have == 16) {
      ids.push_back(id);
      have = 0;
    }
  }
  return ids;
}

TEST(DecisionLogTest, StampsIdAndTimeAndKeepsWhatWasDecided) {
  TempDir dir;
  std::vector<DecisionId> ids;
  {
    auto log = OpenOrDie({.dir = dir.path(), .context = ContextKind::kFull});
    for (int i = 0; i < 10; ++i) {
      auto id = log->Record(Decided(i));
      ASSERT_TRUE(id.ok()) << id.status().ToString();
      ids.push_back(*id);
    }
    DecisionRecord own = Decided(10);
    own.id = DecisionIdGenerator(1).Next(5'000'000);
    own.time_ns = 5'000'123;
    auto id = log->Record(own);
    ASSERT_TRUE(id.ok());
    EXPECT_EQ(*id, own.id) << "a record's own id is kept";
    ids.push_back(*id);
  }  // closing syncs what is buffered
  auto all = ReadAll(dir.path());
  ASSERT_EQ(all.size(), 11u);
  std::set<std::string> distinct;
  for (size_t i = 0; i < all.size(); ++i) {
    DecisionRecord want = Decided(static_cast<int>(i));
    EXPECT_EQ(all[i].id, ids[i]);
    distinct.insert(all[i].id.ToString());
    EXPECT_EQ(all[i].principal, want.principal);
    EXPECT_EQ(all[i].resource, want.resource);
    EXPECT_EQ(all[i].decision, want.decision);
    EXPECT_EQ(all[i].determining_policies, want.determining_policies);
    EXPECT_EQ(all[i].context_kind, ContextKind::kFull);
    EXPECT_EQ(all[i].context, want.context);
    if (i < 10) {
      EXPECT_GT(all[i].time_ns, int64_t{1'700'000'000} * 1'000'000'000);
    }
  }
  EXPECT_EQ(all[10].time_ns, 5'000'123);
  EXPECT_EQ(distinct.size(), 11u);
}

TEST(DecisionLogTest, ContextKeptInFullAsHashOrNotAtAll) {
  const DecisionRecord r = Decided(1);
  auto digest = crypto::Sha256(r.context);
  ASSERT_TRUE(digest.ok());
  for (ContextKind mode : {ContextKind::kFull, ContextKind::kHash, ContextKind::kNone}) {
    TempDir dir;
    {
      auto log = OpenOrDie({.dir = dir.path(), .context = mode});
      ASSERT_TRUE(log->Record(r).ok());
    }
    auto all = ReadAll(dir.path());
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].context_kind, mode);
    if (mode == ContextKind::kFull) {
      EXPECT_EQ(all[0].context, r.context);
    }
    if (mode == ContextKind::kHash) {
      EXPECT_EQ(all[0].context, std::string(reinterpret_cast<const char*>(digest->data()), 32));
    }
    if (mode == ContextKind::kNone) {
      EXPECT_EQ(all[0].context, "");
    }
  }
}

TEST(DecisionLogTest, RefusesARecordOverTheLimitAndCountsIt) {
  TempDir dir;
  auto log = OpenOrDie({.dir = dir.path(), .context = ContextKind::kFull, .max_record_bytes = 1024});
  DecisionRecord big = Decided(1);
  big.context = "\"" + std::string(2000, 'x') + "\"";
  auto id = log->Record(big);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(log->GetStats().refused, 1u);
  EXPECT_EQ(log->GetStats().recorded, 0u);
  EXPECT_EQ(log->wal().DurableSequence(), 0u);
}

// Durable mode: a decision whose Record returned is on disk. The child records until it is killed,
// telling the parent each id once Record returned; every id the parent heard of must be there.
TEST(DecisionLogTest, DurableRecordsSurviveSigkill) {
  TempDir dir;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto log = DecisionLog::Open({.dir = dir.path(), .mode = RecordMode::kDurable});
    if (!log.ok()) _exit(2);
    for (int i = 0;; ++i) {
      auto id = (*log)->Record(Decided(i));
      if (!id.ok()) _exit(3);
      if (write(fds[1], id->bytes.data(), 16) != 16) _exit(4);
    }
  }
  close(fds[1]);
  auto acked = ReadIds(fds[0], 300);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  close(fds[0]);
  ASSERT_EQ(acked.size(), 300u) << "the child failed, status " << status;
  ASSERT_TRUE(WIFSIGNALED(status));

  auto all = ReadAll(dir.path());
  ASSERT_GE(all.size(), acked.size());
  for (size_t i = 0; i < acked.size(); ++i) EXPECT_EQ(all[i].id, acked[i]) << i;
}

// Buffered mode: records reach the disk by themselves within the interval (no Flush, no close). The
// child records N, waits until the log says all N are synced, tells the parent, and is killed.
TEST(DecisionLogTest, BufferedRecordsReachTheDiskWithoutAFlush) {
  TempDir dir;
  constexpr int kN = 500;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto log = DecisionLog::Open({.dir = dir.path(), .sync_interval = std::chrono::milliseconds(5)});
    if (!log.ok()) _exit(2);
    for (int i = 0; i < kN; ++i) {
      auto id = (*log)->Record(Decided(i));
      if (!id.ok()) _exit(3);
      if (write(fds[1], id->bytes.data(), 16) != 16) _exit(4);
    }
    while ((*log)->GetStats().synced < kN) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    DecisionId done;  // all zero: "synced"
    if (write(fds[1], done.bytes.data(), 16) != 16) _exit(4);
    pause();
    _exit(0);
  }
  close(fds[1]);
  auto got = ReadIds(fds[0], kN + 1);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  close(fds[0]);
  ASSERT_EQ(got.size(), static_cast<size_t>(kN + 1)) << "child status " << status;
  EXPECT_TRUE(got.back().empty());
  auto all = ReadAll(dir.path());
  ASSERT_EQ(all.size(), static_cast<size_t>(kN));
  for (int i = 0; i < kN; ++i) EXPECT_EQ(all[i].id, got[i]);
}

TEST(DecisionLogTest, BufferedRecordDoesNotWaitForTheSync) {
  TempDir dir;
  GatedFs fs;
  auto log = OpenOrDie({.dir = dir.path(), .sync_interval = std::chrono::milliseconds(1), .fs = &fs});
  fs.Hold();
  ASSERT_TRUE(log->Record(Decided(0)).ok());
  ASSERT_TRUE(fs.WaitUntilBlocked());  // its group is being synced, and the sync is held
  // Further decisions are recorded while that sync is outstanding.
  for (int i = 1; i < 50; ++i) ASSERT_TRUE(log->Record(Decided(i)).ok());
  EXPECT_EQ(log->GetStats().synced, 0u);
  EXPECT_EQ(log->GetStats().recorded, 50u);
  fs.Release();
  ASSERT_TRUE(log->Flush().ok());
  // The counter moves in the WAL's completion callbacks, which may run just after Flush returns.
  EXPECT_TRUE(WaitFor([&] { return log->GetStats().synced == 50; }));
}

TEST(DecisionLogTest, DurableRecordWaitsForTheSync) {
  TempDir dir;
  GatedFs fs;
  auto log = OpenOrDie({.dir = dir.path(), .mode = RecordMode::kDurable, .fs = &fs});
  fs.Hold();
  std::atomic<bool> returned{false};
  std::thread t([&] {
    EXPECT_TRUE(log->Record(Decided(0)).ok());
    returned = true;
  });
  ASSERT_TRUE(fs.WaitUntilBlocked());
  EXPECT_FALSE(returned.load()) << "Record returned while its sync was held";
  fs.Release();
  t.join();
  EXPECT_TRUE(returned.load());
  EXPECT_EQ(log->GetStats().synced, 1u);
  EXPECT_EQ(log->wal().DurableSequence(), 1u);
}

// The disk stops: decisions queue up to max_pending_bytes, then Record waits max_block and fails with
// ResourceExhausted (nothing dropped: every accepted record is synced once the disk moves again).
TEST(DecisionLogTest, BackPressureWhenTheQueueIsFull) {
  TempDir dir;
  GatedFs fs;
  auto log = OpenOrDie({.dir = dir.path(),
                        .sync_interval = std::chrono::milliseconds(1),
                        .max_pending_bytes = 64 * 1024,
                        .max_block = std::chrono::milliseconds(50),
                        .max_record_bytes = 4096,
                        .fs = &fs});
  fs.Hold();
  int accepted = 0;
  Status refused;
  for (int i = 0; i < 100000; ++i) {
    auto id = log->Record(Decided(i));
    if (!id.ok()) {
      refused = id.status();
      break;
    }
    ++accepted;
  }
  ASSERT_FALSE(refused.ok()) << "the queue never filled";
  EXPECT_EQ(refused.code(), Code::kResourceExhausted);
  EXPECT_NE(refused.message().find("not recorded"), std::string::npos) << refused.message();
  auto s = log->GetStats();
  EXPECT_EQ(s.recorded, static_cast<uint64_t>(accepted));
  EXPECT_EQ(s.refused, 1u);
  EXPECT_LE(s.pending_bytes, 64u * 1024);
  EXPECT_GT(accepted, 100);

  // A Record blocked on the full queue goes through when the disk moves again.
  std::thread waiter([&] {
    for (;;) {
      auto id = log->Record(Decided(-1));
      if (id.ok()) return;
      EXPECT_EQ(id.status().code(), Code::kResourceExhausted);
    }
  });
  fs.Release();
  waiter.join();
  ASSERT_TRUE(log->Flush().ok());
  EXPECT_TRUE(WaitFor([&] { return log->GetStats().pending_bytes == 0; }));
  s = log->GetStats();
  EXPECT_EQ(s.synced, s.recorded);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.pending_bytes, 0u);
  log.reset();
  EXPECT_EQ(ReadAll(dir.path()).size(), static_cast<size_t>(accepted + 1));
}

// A buffered record accepted and then lost to a failed sync is counted and reported by the next
// Record; the WAL refuses further appends until reopened (its page cache state is unknown).
TEST(DecisionLogTest, AFailedSyncIsCountedAndReported) {
  TempDir dir;
  GatedFs fs;
  auto log = OpenOrDie({.dir = dir.path(), .sync_interval = std::chrono::milliseconds(1), .fs = &fs});
  ASSERT_TRUE(log->Record(Decided(0)).ok());
  ASSERT_TRUE(log->Flush().ok());
  // Two records accepted while a sync is held, then that sync fails: both are lost.
  fs.Hold();
  ASSERT_TRUE(log->Record(Decided(1)).ok());
  ASSERT_TRUE(fs.WaitUntilBlocked());
  ASSERT_TRUE(log->Record(Decided(2)).ok());
  fs.fail_sync = true;
  fs.Release();
  ASSERT_TRUE(WaitFor([&] { return log->GetStats().failed == 2; }));
  auto next = log->Record(Decided(3));
  ASSERT_FALSE(next.ok());
  EXPECT_NE(next.status().message().find("2 recorded decisions were lost"), std::string::npos)
      << next.status().ToString();
  auto after = log->Record(Decided(4));  // the WAL itself is poisoned now
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), Code::kFailedPrecondition);
  EXPECT_FALSE(log->Health().ok());
  auto s = log->GetStats();
  EXPECT_EQ(s.recorded, 3u);
  EXPECT_EQ(s.synced, 1u);
  EXPECT_EQ(s.failed, 2u);
  EXPECT_EQ(s.refused, 2u);
}

TEST(DecisionLogTest, RetentionBoundWithoutAShipperAndHeldByOne) {
  TempDir dir;
  auto log = OpenOrDie({.dir = dir.path(),
                        .segment_size = 64 * 1024,
                        .max_retained_bytes = 1ull << 40,  // registers the cursor; the thread does nothing
                        .retention_check = std::chrono::milliseconds(3'600'000)});
  for (int i = 0; i < 3000; ++i) ASSERT_TRUE(log->Record(Decided(i)).ok());
  ASSERT_TRUE(log->Flush().ok());
  const auto segments = log->wal().GetStats().segments;
  ASSERT_GE(segments, 4u);
  // A consumer (a shipper) at the start holds everything.
  ASSERT_TRUE(log->wal().RegisterCursor("shipper", 1).ok());
  auto passed = log->EnforceRetention(2 * 64 * 1024);
  ASSERT_TRUE(passed.ok()) << passed.status().ToString();
  EXPECT_EQ(*passed, segments - 2);
  EXPECT_EQ(log->wal().FirstSequence(), 1u);
  EXPECT_EQ(log->wal().GetStats().segments, segments);
  // Once it has shipped everything, the bound applies.
  ASSERT_TRUE(log->wal().CommitCursor("shipper", log->wal().DurableSequence() + 1).ok());
  EXPECT_EQ(log->wal().GetStats().segments, 2u);
  EXPECT_GT(log->wal().FirstSequence(), 1u);
  // Without the bound, the retention cursor goes away (it must not hold the WAL forever).
  log.reset();
  auto again = OpenOrDie({.dir = dir.path(), .segment_size = 64 * 1024});
  EXPECT_EQ(again->wal().Cursors().count("retention"), 0u);
}

}  // namespace
}  // namespace govern::policy
