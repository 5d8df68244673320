// Syncer: pipelined group-commit rounds. A waiter is released only by a sync that started after its
// write, callbacks run in request order, and a failure is never hidden by an overlapping sync.
#include "streams/syncer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace govern::streams {
namespace {

std::shared_ptr<SyncFile> TempFile(std::string* path) {
  char tmpl[] = "/tmp/streams_syncer_XXXXXX";
  int fd = ::mkstemp(tmpl);
  *path = tmpl;
  return std::make_shared<SyncFile>(fd);
}

ino_t Inode(int fd) {
  struct stat st;
  return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

// A sync_fn whose calls block until the test releases them one by one; it records the descriptor each
// call got and whether each one has returned.
class GatedSync {
 public:
  int operator()(int fd) {
    std::unique_lock<std::mutex> lock(mu_);
    const size_t n = fds_.size();
    fds_.push_back(fd);
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_.size() > n && released_[n] != 0; });
    returned_++;
    cv_.notify_all();
    return released_[n] > 0 ? 0 : (errno = EIO, -1);
  }
  // Waits (bounded, so a broken pipeline fails instead of hanging) until `n` calls have started.
  bool WaitStarted(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return fds_.size() >= n; });
  }
  bool WaitReturned(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return returned_ >= n; });
  }
  void Release(size_t call, bool ok = true) {
    std::lock_guard<std::mutex> lock(mu_);
    if (released_.size() <= call) released_.resize(call + 1, 0);
    released_[call] = ok ? 1 : -1;
    cv_.notify_all();
  }
  int fd(size_t call) {
    std::lock_guard<std::mutex> lock(mu_);
    return fds_.at(call);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> fds_;
  std::vector<int> released_;  // per call: 0 blocked, 1 return ok, -1 fail
  int returned_ = 0;
};

// Records callbacks and lets the test wait for one.
struct Done {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<std::string, Status>> calls;
  std::function<void(Status)> Callback(std::string name) {
    return [this, name](Status s) {
      std::lock_guard<std::mutex> lock(mu);
      calls.emplace_back(name, s);
      cv.notify_all();
    };
  }
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return calls.size() >= n; });
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return calls.size();
  }
};

// The core ordering: B writes while A's round is syncing. A's sync returning releases A only: B waits
// for a sync that began after its write. With depth 2 B's round starts at once (pipelined), on its own
// description of the file; with depth 1 only after A's round ended.
class SyncerOrdering : public ::testing::TestWithParam<int> {};

TEST_P(SyncerOrdering, WaiterIsNotReleasedByASyncThatBeganBeforeItsWrite) {
  const int depth = GetParam();
  std::string path;
  auto file = TempFile(&path);
  GatedSync gate;
  Done done;
  {
    Syncer syncer(1, std::ref(gate), depth);
    ASSERT_EQ(::pwrite(file->fd(), "a", 1, 0), 1);
    syncer.Request(file, done.Callback("A"));
    ASSERT_TRUE(gate.WaitStarted(1));  // A's sync is in flight
    ASSERT_EQ(::pwrite(file->fd(), "b", 1, 1), 1);
    syncer.Request(file, done.Callback("B"));
    if (depth > 1) {
      ASSERT_TRUE(gate.WaitStarted(2)) << "the second round did not start while the first was syncing";
      // Two descriptions of the same file, neither the writer's, and not dups of one another (a dup
      // shares the file offset and, with it, the error state the kernel reports once).
      const int fd1 = gate.fd(0), fd2 = gate.fd(1);
      EXPECT_NE(fd1, fd2);
      EXPECT_NE(fd1, file->fd());
      EXPECT_NE(fd2, file->fd());
      EXPECT_EQ(Inode(fd1), Inode(file->fd()));
      EXPECT_EQ(Inode(fd2), Inode(file->fd()));
      ASSERT_EQ(::lseek(fd1, 1, SEEK_SET), 1);
      EXPECT_EQ(::lseek(fd2, 0, SEEK_CUR), 0);
    }
    gate.Release(0);  // the sync that began before B's write returns
    ASSERT_TRUE(done.WaitFor(1));
    // B's own sync (call 1) starts, if it had not, and stays blocked: nothing can have released B.
    ASSERT_TRUE(gate.WaitStarted(2)) << "B was released without a sync of its own";
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done.calls[0].first, "A");
    EXPECT_TRUE(done.calls[0].second.ok());
    EXPECT_EQ(syncer.overlapped_rounds(), depth > 1 ? 1u : 0u);  // B's round overlapped A's
    // B's sync is held for over a second (past the histograms' last bucket): the longest sync, round and
    // wait are at least that (a lower bound the sleep guarantees), and A's shorter ones do not hide it.
    std::this_thread::sleep_for(std::chrono::milliseconds(1050));
    gate.Release(1);
    ASSERT_TRUE(done.WaitFor(2));
    const Syncer::Stats st = syncer.stats();
    EXPECT_EQ(st.requests, 2u);
    EXPECT_EQ(st.syncs, 2u);
    EXPECT_EQ(st.rounds, 2u);
    EXPECT_GE(st.wait_p99_ms, st.wait_p50_ms);
    EXPECT_GE(st.sync_max_ms, 1050);
    EXPECT_GE(st.round_max_ms, 1050);
    EXPECT_GE(st.wait_max_ms, 1050);
    EXPECT_GE(st.wait_max_ms, st.wait_p99_ms);
  }
  EXPECT_EQ(done.calls[1].first, "B");
  EXPECT_TRUE(done.calls[1].second.ok());
  ::unlink(path.c_str());
}

// Rounds complete in start order: a later round whose sync returns first waits for the earlier one, and
// a null request still runs after every earlier request's callback.
TEST(SyncerPipeline, CallbacksRunInRequestOrder) {
  std::string path;
  auto file = TempFile(&path);
  GatedSync gate;
  Done done;
  {
    Syncer syncer(1, std::ref(gate), 2);
    syncer.Request(file, done.Callback("A"));
    ASSERT_TRUE(gate.WaitStarted(1));
    syncer.Request(file, done.Callback("B"));
    ASSERT_TRUE(gate.WaitStarted(2));
    gate.Release(1);  // B's sync returns first
    ASSERT_TRUE(gate.WaitReturned(1));
    EXPECT_EQ(done.size(), 0u) << "B completed before A";
    syncer.Request(nullptr, done.Callback("N"));
    gate.Release(0);
    ASSERT_TRUE(done.WaitFor(3));
  }
  ASSERT_EQ(done.calls.size(), 3u);
  EXPECT_EQ(done.calls[0].first, "A");
  EXPECT_EQ(done.calls[1].first, "B");
  EXPECT_EQ(done.calls[2].first, "N");
  ::unlink(path.c_str());
}

// A failed sync fails its round and every later round covering the file, even one whose own sync
// returned 0 while the failing one was still in flight (the kernel may report a writeback error once).
TEST(SyncerPipeline, FailureIsNotHiddenByAnOverlappingSync) {
  std::string path;
  auto file = TempFile(&path);
  GatedSync gate;
  Done done;
  {
    Syncer syncer(1, std::ref(gate), 2);
    syncer.Request(file, done.Callback("A"));
    ASSERT_TRUE(gate.WaitStarted(1));
    syncer.Request(file, done.Callback("B"));
    ASSERT_TRUE(gate.WaitStarted(2));
    gate.Release(1, /*ok=*/true);
    gate.Release(0, /*ok=*/false);
    ASSERT_TRUE(done.WaitFor(2));
    gate.Release(2, true);  // a later round's sync "succeeds" too
    syncer.Request(file, done.Callback("C"));
    ASSERT_TRUE(done.WaitFor(3));
  }
  ASSERT_EQ(done.calls.size(), 3u);
  for (auto& [name, status] : done.calls) EXPECT_FALSE(status.ok()) << name;
  EXPECT_TRUE(file->failed());
  ::unlink(path.c_str());
}

int OpenDescriptors() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) n += e.exists() ? 1 : 0;
  return n;
}

// The Syncer's own descriptions of a file live while the file is written; once it is sealed they are
// closed after the next round over it (a broker with many sealed segments would hold them otherwise).
TEST(SyncerPipeline, SealedFileDescriptionsAreClosed) {
  std::string path;
  auto file = TempFile(&path);
  const int base = OpenDescriptors();
  Done done;
  {
    Syncer syncer(1, nullptr, 2);
    syncer.Request(file, done.Callback("A"));
    ASSERT_TRUE(done.WaitFor(1));
    EXPECT_GT(OpenDescriptors(), base);  // the first slot's description of the file
    file->Seal();
    syncer.Request(file, done.Callback("B"));
    ASSERT_TRUE(done.WaitFor(2));
  }
  EXPECT_EQ(OpenDescriptors(), base);
  EXPECT_TRUE(done.calls[0].second.ok());
  EXPECT_TRUE(done.calls[1].second.ok());
  ::unlink(path.c_str());
}

// Many writers over a few files with real concurrency: each sync notes, when it starts, how many writes
// of its file had completed, and makes that many durable when it returns. Every callback must find its
// own write durable: a callback released by a sync that began before its write would not.
TEST_P(SyncerOrdering, EveryWaiterIsCoveredByASyncStartedAfterItsWrite) {
  constexpr int kFiles = 3, kWriters = 8, kWrites = 400;
  std::vector<std::string> paths(kFiles);
  std::vector<std::shared_ptr<SyncFile>> files;
  for (auto& p : paths) files.push_back(TempFile(&p));
  std::mutex mu;
  std::map<ino_t, int64_t> written, durable;
  std::atomic<int> violations{0}, errors{0}, completed{0};
  auto sync_fn = [&](int fd) {
    const ino_t ino = Inode(fd);
    int64_t started;
    {
      std::lock_guard<std::mutex> l(mu);
      started = written[ino];
    }
    std::this_thread::sleep_for(std::chrono::microseconds(std::rand() % 300));
    std::lock_guard<std::mutex> l(mu);
    durable[ino] = std::max(durable[ino], started);
    return 0;
  };
  {
    Syncer syncer(2, sync_fn, GetParam());
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; w++)
      writers.emplace_back([&, w] {
        for (int i = 0; i < kWrites; i++) {
          auto& f = files[(w + i) % kFiles];
          const ino_t ino = Inode(f->fd());
          int64_t mine;
          {
            std::lock_guard<std::mutex> l(mu);
            mine = ++written[ino];  // this write has completed
          }
          syncer.Request(f, [&, ino, mine](Status s) {
            if (!s.ok()) errors++;
            std::lock_guard<std::mutex> l(mu);
            if (durable[ino] < mine) violations++;
            completed++;
          });
        }
      });
    for (auto& t : writers) t.join();
  }
  EXPECT_EQ(completed.load(), kWriters * kWrites);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(violations.load(), 0);
  for (auto& p : paths) ::unlink(p.c_str());
}

INSTANTIATE_TEST_SUITE_P(Depths, SyncerOrdering, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace govern::streams
