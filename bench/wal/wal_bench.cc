// The `wal` benchmark suite: 550-byte records appended with group commit from 1, 16 and 256 threads
// (records/s, append latency median and p99), buffered mode, async appends and batches, each beside
// the raw limit measured in the same run in the same directory: a loop of pwrite + fdatasync with one
// record per sync, and the same loop with 256 records per sync.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "report.h"
#include "storage/wal.h"
#include "storage/wal_format.h"

namespace {

using govern::bench::LatencyRecorder;
using govern::bench::Report;
using govern::bench::Row;
using govern::wal::Durability;
using govern::wal::Log;
using SteadyClock = std::chrono::steady_clock;

constexpr size_t kRecord = 550;
constexpr double kTarget = 500000;  // records/s, BENCHMARKS.md (telemetry: write-ahead log)

struct Config {
  std::string dir;
  std::chrono::milliseconds duration{5000};
};

// Keeps one CPU busy while it lives. On this VM an idle vCPU is halted and takes a timer tick (~4 ms)
// to notice that an fdatasync finished; a busy one notices at once. The *_busy_cpu rows run with one,
// to show the disk's own limit apart from that wake-up cost (a loaded server has no idle CPU either).
class Spinner {
 public:
  explicit Spinner(bool on) {
    if (on)
      thread_ = std::thread([this] {
        while (!stop_.load(std::memory_order_relaxed)) __builtin_ia32_pause();
      });
  }
  ~Spinner() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

int64_t Nanos(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

std::string RecordBytes(uint64_t i) {
  std::string s(kRecord, '\0');
  for (size_t k = 0; k < kRecord; ++k) s[k] = static_cast<char>('a' + (i * 31 + k) % 26);
  return s;
}

// One row's measurements, summed over its time slices.
struct Result {
  double secs = 0;
  double cpu_secs = 0;  // user + system time of the whole process while the row ran
  uint64_t groups = 0;  // fdatasync calls
  uint64_t records = 0;
  LatencyRecorder lat;

  double per_s() const { return secs > 0 ? static_cast<double>(records) / secs : 0; }
  double median_us() { return static_cast<double>(lat.Percentile(50)) / 1e3; }
  double p99_us() { return static_cast<double>(lat.Percentile(99)) / 1e3; }
  double per_sync() const { return groups ? static_cast<double>(records) / static_cast<double>(groups) : 0; }
};

double CpuSeconds() {
  rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

// The raw limit: the same framed bytes the log would write, with pwrite + fdatasync into fallocated
// 64 MiB files (as the log's segments are), `per_sync` records per fdatasync.
void RawLoop(const Config& cfg, int per_sync, Result* acc) {
  double cpu0 = CpuSeconds();
  std::filesystem::remove_all(cfg.dir);
  std::filesystem::create_directories(cfg.dir);
  const uint64_t file_size = 64ull << 20;
  std::string one = RecordBytes(1);
  std::string frame(govern::wal::kRecordHeaderSize, '\0');
  frame += one;
  std::string buf;
  for (int i = 0; i < per_sync; ++i) buf += frame;
  int fd = -1;
  uint64_t off = file_size;
  int file_no = 0;
  uint64_t records = 0;
  LatencyRecorder& lat = acc->lat;
  auto start = SteadyClock::now();
  auto end = start + cfg.duration;
  for (;;) {
    auto t0 = SteadyClock::now();
    if (t0 >= end) break;
    if (off + buf.size() > file_size) {
      if (fd >= 0) ::close(fd);
      std::string path = cfg.dir + "/raw-" + std::to_string(file_no++);
      fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0 || ::fallocate(fd, 0, 0, static_cast<off_t>(file_size)) != 0) {
        std::perror("raw loop: open/fallocate");
        std::exit(1);
      }
      ::fdatasync(fd);
      off = govern::wal::kSegmentHeaderSize;
    }
    if (::pwrite(fd, buf.data(), buf.size(), static_cast<off_t>(off)) != static_cast<ssize_t>(buf.size()) ||
        ::fdatasync(fd) != 0) {
      std::perror("raw loop: pwrite/fdatasync");
      std::exit(1);
    }
    off += buf.size();
    records += static_cast<uint64_t>(per_sync);
    lat.Record(Nanos(t0, SteadyClock::now()));
  }
  acc->secs += static_cast<double>(Nanos(start, SteadyClock::now())) / 1e9;
  acc->cpu_secs += CpuSeconds() - cpu0;
  acc->records += records;
  acc->groups += records / static_cast<uint64_t>(per_sync);
  if (fd >= 0) ::close(fd);
  std::filesystem::remove_all(cfg.dir);
}

enum class Mode { kBlocking, kBatch64, kAsync };

// `threads` appenders for cfg.duration. kBlocking: Append per record. kBatch64: AppendBatch of 64.
// kAsync: one thread keeps `window` AppendAsync calls in flight (latency from call to callback).
void LogLoop(const Config& cfg, int threads, Mode mode, Durability durability, int window, Result* acc) {
  std::filesystem::remove_all(cfg.dir);
  govern::wal::Options opt;
  opt.default_durability = durability;
  auto log = Log::Open(cfg.dir, opt);
  if (!log.ok()) {
    std::fprintf(stderr, "open: %s\n", log.status().ToString().c_str());
    std::exit(1);
  }
  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  std::vector<LatencyRecorder> lats(static_cast<size_t>(threads));
  std::vector<uint64_t> counts(static_cast<size_t>(threads), 0);
  // Async state lives here, not on a worker's stack: a callback may still be finishing (on the log's
  // sync thread) after its worker saw the window drain; the log's destructor waits for it.
  struct AsyncState {
    std::atomic<int> in_flight{0};
    std::atomic<uint64_t> completed{0};
    std::mutex lat_mu;
  };
  AsyncState async;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::string rec = RecordBytes(static_cast<uint64_t>(t));
      LatencyRecorder& lat = lats[static_cast<size_t>(t)];
      uint64_t& count = counts[static_cast<size_t>(t)];
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
      if (mode == Mode::kBlocking) {
        while (!stop.load(std::memory_order_relaxed)) {
          auto t0 = SteadyClock::now();
          auto r = (*log)->Append(rec);
          if (!r.ok()) {
            std::fprintf(stderr, "append: %s\n", r.status().ToString().c_str());
            std::exit(1);
          }
          lat.Record(Nanos(t0, SteadyClock::now()));
          ++count;
        }
      } else if (mode == Mode::kBatch64) {
        std::vector<std::string_view> batch(64, rec);
        while (!stop.load(std::memory_order_relaxed)) {
          auto t0 = SteadyClock::now();
          auto r = (*log)->AppendBatch(batch);
          if (!r.ok()) std::exit(1);
          lat.Record(Nanos(t0, SteadyClock::now()));
          count += batch.size();
        }
      } else {
        // A bounded window of appends in flight, as an event loop serving many requests would hold.
        auto& in_flight = async.in_flight;
        auto& completed = async.completed;
        auto& lat_mu = async.lat_mu;
        while (!stop.load(std::memory_order_relaxed)) {
          int cur = in_flight.load(std::memory_order_acquire);
          if (cur >= window) {
            in_flight.wait(cur, std::memory_order_acquire);
            continue;
          }
          in_flight.fetch_add(1, std::memory_order_acq_rel);
          auto t0 = SteadyClock::now();
          (*log)->AppendAsync(rec, [&, t0](govern::Result<uint64_t> r) {
            if (!r.ok()) std::exit(1);
            {
              std::lock_guard lk(lat_mu);
              lat.Record(Nanos(t0, SteadyClock::now()));
            }
            completed.fetch_add(1, std::memory_order_relaxed);
            in_flight.fetch_sub(1, std::memory_order_acq_rel);
            in_flight.notify_one();
          });
        }
        while (in_flight.load() > 0) {
          int cur = in_flight.load();
          if (cur > 0) in_flight.wait(cur);
        }
        count = completed.load();
      }
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  auto start = SteadyClock::now();
  double cpu0 = CpuSeconds();
  auto stats0 = (*log)->GetStats();
  std::this_thread::sleep_for(cfg.duration);
  stop = true;
  auto stats1 = (*log)->GetStats();
  acc->secs += static_cast<double>(Nanos(start, SteadyClock::now())) / 1e9;
  acc->cpu_secs += CpuSeconds() - cpu0;
  for (auto& w : workers) w.join();
  // Throughput: records made durable during the measured interval (the log's own count).
  acc->records += stats1.records - stats0.records;
  acc->groups += stats1.groups - stats0.groups;
  for (auto& l : lats) acc->lat.Merge(l);
  log->reset();
  std::filesystem::remove_all(cfg.dir);
}

void Print(const std::string& name, Result& r) {
  std::fprintf(
      stderr,
      "  %-34s %10.0f records/s  median %8.1f us  p99 %8.1f us  %8.1f records/sync  %.2f cores busy\n",
      name.c_str(), r.per_s(), r.median_us(), r.p99_us(), r.per_sync(),
      r.secs > 0 ? r.cpu_secs / r.secs : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  govern::bench::Args args = govern::bench::ParseArgs(argc, argv);
  govern::log::Configure(govern::log::Level::kWarn, govern::log::Format::kText);
  Config cfg;
  std::string only;
  cfg.dir = "wal-bench-data";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--dir") == 0) cfg.dir = argv[i + 1];
    if (std::strcmp(argv[i], "--only") == 0) only = argv[i + 1];  // one row, for profiling
  }
  cfg.dir += "/run";
  // The disk is shared and noisy: every row runs in short slices, round-robin with the others, so the
  // raw limit and the log see the same conditions over the run.
  const int rounds = args.quick ? 2 : 6;
  cfg.duration = std::chrono::milliseconds(args.quick ? 600 : 1000);

  struct Case {
    std::string metric;
    int threads;  // 0: a raw loop
    Mode mode;
    Durability durability;
    int param;  // raw: records per sync; async: window
    bool has_target;
    int peer;           // index of the raw row this one is compared with, -1 for none
    bool busy = false;  // run beside a Spinner
    Result r;
  };
  std::vector<Case> cases = {
      {"raw_fdatasync_1_per_sync", 0, Mode::kBlocking, Durability::kSync, 1, false, -1, false, {}},
      {"raw_fdatasync_256_per_sync", 0, Mode::kBlocking, Durability::kSync, 256, false, -1, false, {}},
      {"append_1", 1, Mode::kBlocking, Durability::kSync, 0, false, 0, false, {}},
      {"append_16", 16, Mode::kBlocking, Durability::kSync, 0, true, 1, false, {}},
      {"append_256", 256, Mode::kBlocking, Durability::kSync, 0, true, 1, false, {}},
      {"append_buffered_256", 256, Mode::kBlocking, Durability::kBuffered, 0, true, 1, false, {}},
      {"append_async_window_4096", 1, Mode::kAsync, Durability::kSync, 4096, true, 1, false, {}},
      {"append_async_buffered_window_4096", 1, Mode::kAsync, Durability::kBuffered, 4096, true, 1, false, {}},
      {"append_batch64_16", 16, Mode::kBatch64, Durability::kSync, 0, true, 1, false, {}},
      {"raw_fdatasync_1_per_sync_busy_cpu", 0, Mode::kBlocking, Durability::kSync, 1, false, -1, true, {}},
      {"raw_fdatasync_256_per_sync_busy_cpu",
       0,
       Mode::kBlocking,
       Durability::kSync,
       256,
       false,
       -1,
       true,
       {}},
      {"append_1_busy_cpu", 1, Mode::kBlocking, Durability::kSync, 0, false, 9, true, {}},
      {"append_16_busy_cpu", 16, Mode::kBlocking, Durability::kSync, 0, true, 10, true, {}},
      {"append_256_busy_cpu", 256, Mode::kBlocking, Durability::kSync, 0, true, 10, true, {}},
      {"append_async_window_4096_busy_cpu", 1, Mode::kAsync, Durability::kSync, 4096, true, 10, true, {}},
  };
  std::fprintf(stderr, "wal bench: %zu-byte records, %d rounds of %lld ms per row, in %s\n", kRecord, rounds,
               static_cast<long long>(cfg.duration.count()), cfg.dir.c_str());
  for (int round = 0; round < rounds; ++round) {
    for (Case& c : cases) {
      if (!only.empty() && c.metric != only) continue;
      Spinner spinner(c.busy);
      if (c.threads == 0) {
        RawLoop(cfg, c.param, &c.r);
      } else {
        LogLoop(cfg, c.threads, c.mode, c.durability, c.param, &c.r);
      }
    }
    std::fprintf(stderr, "  round %d of %d done\n", round + 1, rounds);
  }
  if (!only.empty()) {
    std::erase_if(cases, [&](const Case& c) { return c.metric != only; });
    for (Case& c : cases) c.peer = -1;
  }
  for (Case& c : cases) Print(c.metric, c.r);

  Report report("wal", args.quick);
  auto peer_name = [](const Case& p) {
    return "pwrite+fdatasync loop, " + std::to_string(p.param) + (p.param == 1 ? " record" : " records") +
           " per sync";
  };
  for (Case& c : cases) {
    Case* peer = c.peer >= 0 ? &cases[static_cast<size_t>(c.peer)] : nullptr;
    char buf[120];
    std::snprintf(buf, sizeof(buf), "%.1f records per fdatasync; %.2f cores busy", c.r.per_sync(),
                  c.r.secs > 0 ? c.r.cpu_secs / c.r.secs : 0.0);
    std::string note = buf;
    if (peer != nullptr) {
      std::snprintf(buf, sizeof(buf), "; %.2fx the peer", c.r.per_s() / peer->r.per_s());
      note += buf;
    }
    report.Add(Row{c.metric + "_records_per_s", c.r.per_s(), "records/s",
                   c.has_target ? std::optional<double>(kTarget) : std::nullopt, "higher",
                   peer ? peer_name(*peer) : "", peer ? std::optional<double>(peer->r.per_s()) : std::nullopt,
                   note});
    const char* what = c.threads == 0             ? "per pwrite+fdatasync"
                       : c.mode == Mode::kBatch64 ? "per 64-record batch, call to durable"
                                                  : "per append, call to durable";
    bool lat_peer = peer != nullptr && c.mode != Mode::kBatch64;
    report.Add(Row{c.metric + "_latency_median_us", c.r.median_us(), "us", std::nullopt, "lower",
                   lat_peer ? peer_name(*peer) : "",
                   lat_peer ? std::optional<double>(peer->r.median_us()) : std::nullopt, what});
    report.Add(Row{c.metric + "_latency_p99_us", c.r.p99_us(), "us", std::nullopt, "lower",
                   lat_peer ? peer_name(*peer) : "",
                   lat_peer ? std::optional<double>(peer->r.p99_us()) : std::nullopt, what});
  }
  std::filesystem::remove_all(cfg.dir);
  return report.Finish(args.results_dir) ? 0 : 1;
}
