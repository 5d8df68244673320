// The block CSPRNG: bytes differ, the buffer drains and refills, and a forked child never repeats the
// parent's buffered bytes.
#include "crypto/random.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <set>
#include <string>
#include <thread>

#include "crypto/encoding.h"

namespace govern::crypto {
namespace {

std::string Draw(size_t n) {
  std::vector<uint8_t> b(n);
  EXPECT_TRUE(RandomBytes(b).ok());
  return HexEncode(b);
}

TEST(Random, DrawsAreDistinctAcrossRefills) {
  std::set<std::string> seen;
  for (int i = 0; i < 2000; ++i) seen.insert(Draw(16));  // crosses several 4 KiB refills
  EXPECT_EQ(seen.size(), 2000u);
  EXPECT_NE(Draw(10000), Draw(10000));  // large draws bypass the buffer
  EXPECT_TRUE(RandomBytes({}).ok());
}

TEST(Random, BufferIsConsumed) {
  Draw(1);
  size_t before = RandomBufferedForTesting();
  Draw(32);
  EXPECT_EQ(RandomBufferedForTesting(), before >= 32 ? before - 32 : 4096 - (32 - before));
}

TEST(Random, ThreadsGetDifferentBytes) {
  std::array<std::string, 4> out;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&out, t] { out[t] = Draw(32); });
  for (auto& t : threads) t.join();
  std::set<std::string> unique(out.begin(), out.end());
  EXPECT_EQ(unique.size(), 4u);
}

TEST(Random, ForkedChildDoesNotRepeatParentBytes) {
  Draw(1);  // the buffer now holds unused bytes that a child would inherit
  ASSERT_GT(RandomBufferedForTesting(), 64u);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    std::string s = Draw(32);
    ssize_t w = write(fds[1], s.data(), s.size());
    _exit(w == static_cast<ssize_t>(s.size()) ? 0 : 1);
  }
  close(fds[1]);
  std::string parent = Draw(32);
  std::string child(64, '\0');
  size_t got = 0;
  while (got < child.size()) {
    ssize_t r = read(fds[0], child.data() + got, child.size() - got);
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(got, child.size());
  EXPECT_NE(parent, child);
}

TEST(Random, SecretOfRequestedSize) {
  auto s = RandomSecret(32);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->size(), 32u);
}

}  // namespace
}  // namespace govern::crypto
