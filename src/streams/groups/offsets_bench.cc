// Load generator for the offsets file: C committers, each committing one partition's offset and waiting
// for the durable acknowledgement before the next (as a consumer with synchronous commits does).
// Prints commits/s, fdatasync rounds, and latency percentiles.
// Usage: streams_groups_offsets_bench [dir] [committers=64] [seconds=3]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "streams/groups/offset_store.h"

using namespace govern::streams::groups;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "/tmp/streams-groups-bench";
  int committers = argc > 2 ? std::atoi(argv[2]) : 64;
  int seconds = argc > 3 ? std::atoi(argv[3]) : 3;
  std::filesystem::remove_all(dir);
  auto store = OffsetStore::Open(dir);
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    return 1;
  }
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> lat(committers);
  std::vector<std::thread> threads;
  auto start = Clock::now();
  for (int t = 0; t < committers; ++t) {
    threads.emplace_back([&, t] {
      std::mutex mu;
      std::condition_variable cv;
      for (int64_t i = 0; !stop; ++i) {
        bool done = false;
        auto t0 = Clock::now();
        OffsetValue v;
        v.offset = i;
        v.metadata = "consumer-metadata";
        (*store)->Commit("group-" + std::to_string(t % 8), {{{"topic", t}, v}}, [&](govern::Status s) {
          if (!s.ok()) std::abort();
          std::lock_guard l(mu);
          done = true;
          cv.notify_one();
        });
        std::unique_lock l(mu);
        cv.wait(l, [&] { return done; });
        lat[t].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  for (auto& th : threads) th.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) { return all.empty() ? 0.0 : all[static_cast<size_t>(p * (all.size() - 1))]; };
  auto st = (*store)->GetStats();
  std::printf("committers=%d commits=%zu commits/s=%.0f syncs=%llu commits/sync=%.1f p50=%.2fms p99=%.2fms "
              "compactions=%llu\n",
              committers, all.size(), all.size() / elapsed, static_cast<unsigned long long>(st.syncs),
              st.syncs ? static_cast<double>(st.frames) / st.syncs : 0.0, pct(0.5), pct(0.99),
              static_cast<unsigned long long>(st.compactions));
  std::filesystem::remove_all(dir);
  return 0;
}
