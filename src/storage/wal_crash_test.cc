// Crash test: a child process appends from many threads and reports each record only after its append
// completed, and some buffered records as soon as they were written (before their sync); the parent
// SIGKILLs it at random moments, many times, then reopens the log and checks that every acknowledged
// and every written record is present, in order, once, with its content, and that no record is partial.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include "storage/wal.h"
#include "storage/wal_crash_payload.h"
#include "storage/wal_test_util.h"

namespace govern::wal {
namespace {

using Clock = std::chrono::steady_clock;

// Runs the child until `kill_after`, SIGKILLs it, and returns everything it reported.
std::string RunAndKill(const std::string& dir, int iteration, int threads, uint64_t segment_size,
                       std::chrono::milliseconds kill_after) {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  std::string iter = std::to_string(iteration), nthreads = std::to_string(threads),
              seg = std::to_string(segment_size);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 3);  // dup2 clears close-on-exec on the new descriptor
    ::execl(WAL_CRASH_CHILD, WAL_CRASH_CHILD, dir.c_str(), iter.c_str(), nthreads.c_str(), seg.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string acks;
  char buf[65536];
  auto deadline = Clock::now() + kill_after;
  bool killed = false;
  for (;;) {
    int timeout = 0;
    if (!killed) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        ::kill(pid, SIGKILL);
        killed = true;
      } else {
        timeout = static_cast<int>(left);
      }
    } else {
      timeout = 10000;
    }
    pollfd p{fds[0], POLLIN, 0};
    int rc = ::poll(&p, 1, timeout);
    if (rc <= 0) continue;
    ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;  // EOF: the child is gone
    acks.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the child ended by itself (status " << status << ") in iteration " << iteration;
  return acks;
}

TEST(WalCrash, AcknowledgedRecordsSurviveSigkill) {
  testing::TempDir dir;
  const uint64_t segment_size = 256 << 10;  // small, so kills also land around rotations
  const int iterations = 40;
  const auto budget = std::chrono::seconds(90);
  std::mt19937_64 rng(std::random_device{}());
  std::map<uint64_t, uint64_t> acked;  // seq -> payload hash, over every iteration so far
  std::set<uint64_t> written;          // payload hashes of buffered records seen written
  size_t written_total = 0;
  auto start = Clock::now();
  int done = 0;
  uint64_t total_records = 0;
  for (int it = 0; it < iterations; ++it) {
    if (it >= 10 && Clock::now() - start > budget) break;
    int threads = 1 + static_cast<int>(rng() % 24);
    auto kill_after = std::chrono::milliseconds(rng() % 400);
    std::string acks = RunAndKill(dir.path(), it, threads, segment_size, kill_after);
    // Only whole lines count: the child may die in the middle of nothing, as writes are atomic.
    std::istringstream in(acks);
    std::string line;
    while (std::getline(in, line)) {
      unsigned long long seq = 0, hash = 0;
      if (line.starts_with("w ")) {
        ASSERT_EQ(std::sscanf(line.c_str(), "w %llx", &hash), 1) << line;
        written.insert(hash);
        ++written_total;
        continue;
      }
      ASSERT_EQ(std::sscanf(line.c_str(), "%llu %llx", &seq, &hash), 2) << line;
      auto [pos, fresh] = acked.emplace(seq, hash);
      ASSERT_TRUE(fresh || pos->second == hash) << "sequence " << seq << " acknowledged for two records";
    }

    auto log = Log::Open(dir.path(), Options{.segment_size = segment_size});
    ASSERT_TRUE(log.ok()) << "iteration " << it << ": " << log.status().ToString();
    auto reader = (*log)->NewReader(1);
    ASSERT_TRUE(reader.ok());
    std::set<std::string> ids;
    std::set<uint64_t> on_disk;  // payload hashes
    uint64_t expect = 1;
    for (;;) {
      auto r = (*reader)->Next();
      ASSERT_TRUE(r.ok()) << "iteration " << it << ": " << r.status().ToString();
      if (!r->has_value()) break;
      const Record& rec = **r;
      ASSERT_EQ(rec.seq, expect) << "iteration " << it;
      ++expect;
      ASSERT_TRUE(testing::PayloadIntact(rec.data)) << "partial or mixed record at " << rec.seq;
      ASSERT_TRUE(ids.emplace(testing::PayloadId(rec.data)).second)
          << "record stored twice: " << testing::PayloadId(rec.data);
      on_disk.insert(testing::PayloadHash(rec.data));
      auto a = acked.find(rec.seq);
      if (a != acked.end()) {
        ASSERT_EQ(a->second, testing::PayloadHash(rec.data)) << "content of " << rec.seq;
      }
    }
    // Written before the kill (synced or not): in the page cache, so recovered. Once recovered they
    // are synced, so they stay in every later iteration too.
    for (uint64_t h : written) {
      ASSERT_TRUE(on_disk.count(h)) << "iteration " << it << ": a written buffered record was lost";
    }
    uint64_t last = expect - 1;
    ASSERT_EQ(last, (*log)->DurableSequence());
    if (!acked.empty()) {
      ASSERT_GE(last, acked.rbegin()->first) << "iteration " << it << ": acknowledged records lost";
    }
    // Sequences past the durable end were never acknowledged; later runs reuse them.
    acked.erase(acked.upper_bound(last), acked.end());
    total_records = last;
    ++done;
  }
  EXPECT_GE(done, 10);
  EXPECT_GT(written_total, 0u) << "no buffered record was reported written";
  std::printf("crash iterations: %d, records on disk: %llu, acknowledged: %zu, seen written: %zu\n", done,
              static_cast<unsigned long long>(total_records), acked.size(), written_total);
}

}  // namespace
}  // namespace govern::wal
