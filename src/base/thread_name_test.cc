#include "base/thread_name.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

namespace govern {
namespace {

// What the kernel shows for the calling thread (ps -L, top -H and the benchmarks read the same file).
std::string ThisThreadsComm() {
  std::ifstream in("/proc/self/task/" + std::to_string(::syscall(SYS_gettid)) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

TEST(ThreadNameTest, NamesTheCallingThreadOnly) {
  const std::string before = ThisThreadsComm();
  std::string seen;
  std::thread t([&] {
    NameThisThread("tel-ingest");
    seen = ThisThreadsComm();
  });
  t.join();
  EXPECT_EQ(seen, "tel-ingest");
  EXPECT_EQ(ThisThreadsComm(), before);
}

TEST(ThreadNameTest, CutsALongNameAtFifteenBytes) {
  std::string seen;
  std::thread t([&] {
    NameThisThread("a-name-longer-than-fifteen-bytes");
    seen = ThisThreadsComm();
  });
  t.join();
  EXPECT_EQ(seen, "a-name-longer-t");
}

}  // namespace
}  // namespace govern
