// Helper for wal_crash_test: appends to a log from many threads until it is killed, and reports each
// acknowledged record ("<seq> <hash>\n") on fd 3 only after the append returned (or its callback ran),
// and each buffered record it saw written ("w <hash>\n") only after Log::WaitWritten returned, before
// its sync: a process crash must not lose either.
// Usage: wal_crash_child DIR ITERATION THREADS SEGMENT_SIZE
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "storage/wal.h"
#include "storage/wal_crash_payload.h"

using govern::wal::Durability;
using govern::wal::Log;

namespace {

void Written(const std::string& payload) {
  char line[64];
  int n = std::snprintf(line, sizeof(line), "w %016llx\n",
                        static_cast<unsigned long long>(govern::wal::testing::PayloadHash(payload)));
  if (::write(3, line, static_cast<size_t>(n)) != n) std::_Exit(3);
}

void Ack(uint64_t seq, const std::string& payload) {
  char line[64];
  int n = std::snprintf(line, sizeof(line), "%llu %016llx\n", static_cast<unsigned long long>(seq),
                        static_cast<unsigned long long>(govern::wal::testing::PayloadHash(payload)));
  // One write per line: lines from different threads never interleave on a pipe.
  if (::write(3, line, static_cast<size_t>(n)) != n) std::_Exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: wal_crash_child DIR ITERATION THREADS SEGMENT_SIZE\n");
    return 2;
  }
  std::string dir = argv[1];
  int iteration = std::atoi(argv[2]);
  int threads = std::atoi(argv[3]);
  govern::wal::Options opt;
  opt.segment_size = std::strtoull(argv[4], nullptr, 10);
  opt.buffered_interval = std::chrono::milliseconds(2);
  auto log = Log::Open(dir, opt);
  if (!log.ok()) {
    std::fprintf(stderr, "open: %s\n", log.status().ToString().c_str());
    return 1;
  }
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(iteration) * 1000 + static_cast<uint64_t>(t));
      for (uint64_t i = 0;; ++i) {
        // 0,1: blocking sync; 2: batch of 3; 3: async, alternating buffered; 4: buffered async, written
        int kind = t % 5;
        if (kind == 4) {
          // A few buffered records, reported once written; their callbacks come after their sync.
          std::vector<std::string> b;
          for (int k = 0; k < 4; ++k) {
            b.push_back(
                govern::wal::testing::MakePayload(iteration, t, i * 4 + static_cast<uint64_t>(k), rng));
            (*log)->AppendAsync(
                b.back(),
                [](govern::Result<uint64_t> r) {
                  if (!r.ok()) std::_Exit(7);
                },
                Durability::kBuffered);
          }
          if (!(*log)->WaitWritten().ok()) std::_Exit(8);
          for (const std::string& p : b) Written(p);
        } else if (kind == 2) {
          std::vector<std::string> b;
          for (int k = 0; k < 3; ++k)
            b.push_back(govern::wal::testing::MakePayload(iteration, t, i * 3 + k, rng));
          std::vector<std::string_view> v(b.begin(), b.end());
          auto first = (*log)->AppendBatch(v);
          if (!first.ok()) std::_Exit(4);
          for (size_t k = 0; k < b.size(); ++k) Ack(*first + k, b[k]);
        } else if (kind == 3) {
          auto p = std::make_shared<std::string>(govern::wal::testing::MakePayload(iteration, t, i, rng));
          auto done = std::make_shared<std::atomic<bool>>(false);
          (*log)->AppendAsync(
              *p,
              [p, done](govern::Result<uint64_t> r) {
                if (!r.ok()) std::_Exit(5);
                Ack(*r, *p);
                done->store(true);
                done->notify_one();
              },
              i % 2 == 0 ? Durability::kBuffered : Durability::kSync);
          done->wait(false);
        } else {
          std::string p = govern::wal::testing::MakePayload(iteration, t, i, rng);
          auto seq = (*log)->Append(p);
          if (!seq.ok()) std::_Exit(6);
          Ack(*seq, p);
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  return 0;
}
