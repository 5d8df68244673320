// Crash test for the offsets file: a forked child commits offsets with many commits in flight and
// reports each one on a pipe only after its callback said it is durable; the parent SIGKILLs the child
// after a random number of reports (compaction runs often, so kills land in it too), then reopens the
// store and checks that every acknowledged commit is there (or a later one for the same partition).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <random>
#include <semaphore>
#include <sstream>
#include <string>

#include "streams/groups/offset_store.h"
#include "streams/groups/test_util.h"

namespace govern::streams::groups {
namespace {

constexpr int kPartitions = 8;

OffsetStoreOptions SmallCompaction() {
  OffsetStoreOptions o;
  o.compact_min_bytes = 8192;
  o.compact_ratio = 2.0;
  return o;
}

[[noreturn]] void RunChild(const std::string& dir, int out_fd, int64_t base) {
  auto s = OffsetStore::Open(dir, SmallCompaction());
  if (!s.ok()) ::_exit(2);
  std::counting_semaphore<64> in_flight(64);
  for (int64_t seq = base;; ++seq) {
    in_flight.acquire();
    std::string group = seq % 2 ? "g1" : "g0";
    int32_t p = static_cast<int32_t>((seq / 2) % kPartitions);
    OffsetValue v;
    v.offset = seq;
    v.metadata = "m" + std::to_string(seq);
    (*s)->Commit(group, {{{"topic", p}, v}}, [&, group, p, seq](Status st) {
      if (!st.ok()) ::_exit(3);
      char line[96];
      int n =
          std::snprintf(line, sizeof(line), "%s %d %lld\n", group.c_str(), p, static_cast<long long>(seq));
      if (::write(out_fd, line, static_cast<size_t>(n)) != n) ::_exit(4);
      in_flight.release();
    });
  }
}

TEST(OffsetCrash, AcknowledgedCommitsSurviveSigkill) {
  testing::TempDir dir;
  std::mt19937 rng(12345);
  std::map<std::pair<std::string, int32_t>, int64_t> acked;  // highest acknowledged offset per partition
  const int iterations = 20;
  size_t total_acks = 0;
  for (int it = 0; it < iterations; ++it) {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      RunChild(dir.path(), fds[1], int64_t{it + 1} * 1'000'000'000);
    }
    ::close(fds[1]);
    size_t kill_after = std::uniform_int_distribution<size_t>(1, 400)(rng);
    std::string text;
    size_t lines = 0;
    bool killed = false;
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(fds[0], buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // EOF: the child is gone (and everything it wrote has been read)
      text.append(buf, static_cast<size_t>(n));
      for (ssize_t i = 0; i < n; ++i) lines += buf[i] == '\n';
      if (!killed && lines >= kill_after) {
        ::kill(pid, SIGKILL);
        killed = true;
      }
    }
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;

    std::istringstream in(text);
    std::string group;
    int32_t p;
    long long seq;
    while (in >> group >> p >> seq) {
      auto& a = acked[{group, p}];
      a = std::max<int64_t>(a, seq);
      ++total_acks;
    }

    auto s = OffsetStore::Open(dir.path(), SmallCompaction());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    for (const auto& [key, offset] : acked) {
      auto v = (*s)->Get(key.first, {"topic", key.second});
      ASSERT_TRUE(v.has_value()) << key.first << "/" << key.second << " lost in iteration " << it;
      EXPECT_GE(v->offset, offset) << key.first << "/" << key.second << " went back in iteration " << it;
      EXPECT_EQ(v->metadata, "m" + std::to_string(v->offset));
    }
  }
  EXPECT_GE(total_acks, static_cast<size_t>(iterations));
  std::printf("%zu acknowledged commits checked over %d kills\n", total_acks, iterations);
}

}  // namespace
}  // namespace govern::streams::groups
