// The `wal` benchmark suite: 550-byte records appended with group commit from 1, 16 and 256 threads
// (records/s, append latency median and p99), buffered mode, async appends and batches, each beside
// the raw limit measured in the same run in the same directory: a loop of pwrite + fdatasync with one
// record per sync, and the same loop with 256 records per sync.
#include <fcntl.h>
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

int64_t Nanos(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

std::string RecordBytes(uint64_t i) {
  std::string s(kRecord, '\0');
  for (size_t k = 0; k < kRecord; ++k) s[k] = static_cast<char>('a' + (i * 31 + k) % 26);
  return s;
}

struct Result {
  double per_s = 0;
  double median_us = 0;
  double p99_us = 0;
  uint64_t groups = 0;
  uint64_t records = 0;
};

// The raw limit: the same framed bytes the log would write, with pwrite + fdatasync into fallocated
// 64 MiB files (as the log's segments are), `per_sync` records per fdatasync.
Result RawLoop(const Config& cfg, int per_sync) {
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
  LatencyRecorder lat;
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
  double secs = static_cast<double>(Nanos(start, SteadyClock::now())) / 1e9;
  if (fd >= 0) ::close(fd);
  std::filesystem::remove_all(cfg.dir);
  Result r;
  r.per_s = static_cast<double>(records) / secs;
  r.median_us = static_cast<double>(lat.Percentile(50)) / 1e3;
  r.p99_us = static_cast<double>(lat.Percentile(99)) / 1e3;
  r.groups = lat.count();
  r.records = records;
  return r;
}

enum class Mode { kBlocking, kBatch64, kAsync };

// `threads` appenders for cfg.duration. kBlocking: Append per record. kBatch64: AppendBatch of 64.
// kAsync: one thread keeps `window` AppendAsync calls in flight (latency from call to callback).
Result LogLoop(const Config& cfg, int threads, Mode mode, Durability durability, int window = 0) {
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
  auto stats0 = (*log)->GetStats();
  std::this_thread::sleep_for(cfg.duration);
  stop = true;
  auto stats1 = (*log)->GetStats();
  double secs = static_cast<double>(Nanos(start, SteadyClock::now())) / 1e9;
  for (auto& w : workers) w.join();
  Result r;
  // Throughput: records made durable during the measured interval (the log's own count).
  r.records = stats1.records - stats0.records;
  r.groups = stats1.groups - stats0.groups;
  r.per_s = static_cast<double>(r.records) / secs;
  LatencyRecorder all;
  for (auto& l : lats) all.Merge(l);
  r.median_us = static_cast<double>(all.Percentile(50)) / 1e3;
  r.p99_us = static_cast<double>(all.Percentile(99)) / 1e3;
  log->reset();
  std::filesystem::remove_all(cfg.dir);
  return r;
}

void Print(const char* name, const Result& r) {
  std::fprintf(stderr,
               "  %-34s %12.0f records/s  median %9.1f us  p99 %9.1f us  (%" PRIu64
               " syncs, %.1f records/sync)\n",
               name, r.per_s, r.median_us, r.p99_us, r.groups,
               r.groups ? static_cast<double>(r.records) / static_cast<double>(r.groups) : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  govern::bench::Args args = govern::bench::ParseArgs(argc, argv);
  govern::log::Configure(govern::log::Level::kWarn, govern::log::Format::kText);
  Config cfg;
  cfg.dir = "wal-bench-data";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--dir") == 0) cfg.dir = argv[i + 1];
  }
  cfg.dir += "/run";
  cfg.duration = std::chrono::milliseconds(args.quick ? 1500 : 5000);
  Report report("wal", args.quick);

  std::fprintf(stderr, "wal bench: %zu-byte records, %lld ms per row, in %s\n", kRecord,
               static_cast<long long>(cfg.duration.count()), cfg.dir.c_str());
  Result raw1 = RawLoop(cfg, 1);
  Print("raw pwrite+fdatasync, 1/sync", raw1);
  Result raw256 = RawLoop(cfg, 256);
  Print("raw pwrite+fdatasync, 256/sync", raw256);
  const std::string raw1_name = "pwrite+fdatasync loop, 1 record per sync";
  const std::string raw256_name = "pwrite+fdatasync loop, 256 records per sync (raw limit)";

  report.Add(Row{"raw_fdatasync_1_per_sync_records_per_s", raw1.per_s, "records/s", std::nullopt, "higher",
                 "", std::nullopt, "the raw limit for one synchronous appender"});
  report.Add(Row{"raw_fdatasync_256_per_sync_records_per_s", raw256.per_s, "records/s", std::nullopt,
                 "higher", "", std::nullopt, "the raw limit with batching"});

  struct Case {
    const char* metric;
    int threads;
    Mode mode;
    Durability durability;
    int window;
    bool has_target;
    bool vs_batched;
  };
  const Case cases[] = {
      {"append_1", 1, Mode::kBlocking, Durability::kSync, 0, false, false},
      {"append_16", 16, Mode::kBlocking, Durability::kSync, 0, true, true},
      {"append_256", 256, Mode::kBlocking, Durability::kSync, 0, true, true},
      {"append_buffered_256", 256, Mode::kBlocking, Durability::kBuffered, 0, true, true},
      {"append_async_window_4096", 1, Mode::kAsync, Durability::kSync, 4096, true, true},
      {"append_batch64_16", 16, Mode::kBatch64, Durability::kSync, 0, true, true},
  };
  for (const Case& c : cases) {
    Result r = LogLoop(cfg, c.threads, c.mode, c.durability, c.window);
    Print(c.metric, r);
    const Result& peer = c.vs_batched ? raw256 : raw1;
    const std::string& peer_name = c.vs_batched ? raw256_name : raw1_name;
    char note[160];
    std::snprintf(note, sizeof(note), "%.1f records per fdatasync; %.2fx the peer",
                  r.groups ? static_cast<double>(r.records) / static_cast<double>(r.groups) : 0.0,
                  peer.per_s > 0 ? r.per_s / peer.per_s : 0.0);
    report.Add(Row{std::string(c.metric) + "_records_per_s", r.per_s, "records/s",
                   c.has_target ? std::optional<double>(kTarget) : std::nullopt, "higher", peer_name,
                   peer.per_s, note});
    const char* lat_unit_note =
        c.mode == Mode::kBatch64 ? "per 64-record batch" : "per append, call to durable";
    report.Add(Row{std::string(c.metric) + "_latency_median_us", r.median_us, "us", std::nullopt, "lower",
                   c.vs_batched ? "" : "fdatasync loop, 1 record per sync",
                   c.vs_batched ? std::nullopt : std::optional<double>(raw1.median_us), lat_unit_note});
    report.Add(Row{std::string(c.metric) + "_latency_p99_us", r.p99_us, "us", std::nullopt, "lower",
                   c.vs_batched ? "" : "fdatasync loop, 1 record per sync",
                   c.vs_batched ? std::nullopt : std::optional<double>(raw1.p99_us), lat_unit_note});
  }
  std::filesystem::remove_all(cfg.dir);
  return report.Finish(args.results_dir) ? 0 : 1;
}
