// DLP benchmark: redaction throughput per core on generated text, the cost per ~550-byte query row, and
// beside them the "one regex after another" approach the design rules out (one vectorscan database per
// pattern scanned in turn, and std::regex) on the same text in the same run.
#include <hs.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "dlp/detectors.h"
#include "dlp/rule_set.h"
#include "generator.h"
#include "report.h"

namespace {

using Clock = std::chrono::steady_clock;
using govern::bench::Report;
using govern::bench::Row;
using govern::bench::dlp::TextGenerator;
using govern::dlp::Policy;
using govern::dlp::RuleSet;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// CPU time of the calling thread: "per core" figures divide by it, so time this thread spent waiting for
// a core on a shared, busy machine does not count against it.
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct Corpus {
  std::vector<std::string> lines;
  size_t bytes = 0;
};

Corpus Lines(uint64_t seed, double share, size_t bytes) {
  TextGenerator g(seed, share);
  Corpus c;
  while (c.bytes < bytes) {
    c.lines.push_back(g.Line());
    c.bytes += c.lines.back().size();
  }
  return c;
}

// Runs `pass` (one pass over the corpus) until at least `min_seconds` have passed; returns MB/s.
template <typename Pass>
double MegabytesPerSecond(const Corpus& c, double min_seconds, Pass pass) {
  pass();  // warm up: scratch pools, caches
  size_t passes = 0;
  double start = ThreadCpuSeconds();
  double elapsed = 0;
  do {
    pass();
    ++passes;
    elapsed = ThreadCpuSeconds() - start;
  } while (elapsed < min_seconds);
  return static_cast<double>(c.bytes * passes) / elapsed / 1e6;
}

size_t RedactAll(const RuleSet& rs, const Corpus& c) {
  std::string out;
  size_t found = 0;
  for (const auto& line : c.lines) found += rs.Redact(line, &out).total();
  return found;
}

// The peer: every built-in pattern in its own database, scanned one after another (raw matches only,
// no validation, so the peer does strictly less work than the real path).
class SequentialHs {
 public:
  SequentialHs() {
    for (const auto& p : govern::dlp::internal::BuiltinPatterns()) {
      hs_database_t* db = nullptr;
      hs_compile_error_t* err = nullptr;
      if (hs_compile(p.expression, HS_FLAG_SOM_LEFTMOST, HS_MODE_BLOCK, nullptr, &db, &err) != HS_SUCCESS) {
        hs_free_compile_error(err);
        continue;
      }
      hs_alloc_scratch(db, &scratch_);
      dbs_.push_back(db);
    }
  }
  ~SequentialHs() {
    for (auto* db : dbs_) hs_free_database(db);
    hs_free_scratch(scratch_);
  }
  size_t Scan(const std::string& text) {
    size_t n = 0;
    for (auto* db : dbs_) {
      hs_scan(
          db, text.data(), static_cast<unsigned>(text.size()), 0, scratch_,
          [](unsigned, unsigned long long, unsigned long long, unsigned, void* ctx) {
            ++*static_cast<size_t*>(ctx);
            return 0;
          },
          &n);
    }
    return n;
  }
  size_t patterns() const { return dbs_.size(); }

 private:
  std::vector<hs_database_t*> dbs_;
  hs_scratch_t* scratch_ = nullptr;
};

std::vector<std::regex> StdRegexes() {
  std::vector<std::regex> out;
  for (const auto& p : govern::dlp::internal::BuiltinPatterns()) {
    std::string e = p.expression;
    auto flags = std::regex::ECMAScript | std::regex::optimize;
    if (e.rfind("(?i)", 0) == 0) {
      e = e.substr(4);
      flags |= std::regex::icase;
    }
    try {
      out.emplace_back(e, flags);
    } catch (const std::regex_error&) {
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  auto args = govern::bench::ParseArgs(argc, argv);
  const bool quick = args.quick;
  const size_t corpus_bytes = quick ? (2u << 20) : (8u << 20);
  const double min_seconds = quick ? 0.5 : 2.0;
  Report report("dlp", quick);

  auto compiled = RuleSet::Compile(Policy{});
  if (!compiled.ok()) {
    std::fprintf(stderr, "compile: %s\n", compiled.status().ToString().c_str());
    return 1;
  }
  const RuleSet& rs = **compiled;

  Corpus clean = Lines(1, 0.0, corpus_bytes);
  Corpus real = Lines(2, 0.03, corpus_bytes);
  size_t clean_found = RedactAll(rs, clean);
  size_t real_found = RedactAll(rs, real);
  std::printf("corpus: %zu clean lines (%zu findings), %zu realistic lines (%zu findings), %.1f MB each\n",
              clean.lines.size(), clean_found, real.lines.size(), real_found,
              static_cast<double>(corpus_bytes) / 1e6);

  SequentialHs sequential;
  auto regexes = StdRegexes();
  double seq_clean = MegabytesPerSecond(clean, min_seconds, [&] {
    for (const auto& l : clean.lines) sequential.Scan(l);
  });
  double seq_real = MegabytesPerSecond(real, min_seconds, [&] {
    for (const auto& l : real.lines) sequential.Scan(l);
  });
  // std::regex is slow enough that a sample of the realistic lines suffices.
  Corpus sample;
  for (const auto& l : real.lines) {
    if (sample.bytes > (quick ? 32u << 10 : 128u << 10)) break;
    sample.lines.push_back(l);
    sample.bytes += l.size();
  }
  double regex_real = MegabytesPerSecond(sample, min_seconds, [&] {
    for (const auto& l : sample.lines) {
      for (const auto& re : regexes) {
        for (std::sregex_iterator it(l.begin(), l.end(), re), end; it != end; ++it) {
        }
      }
    }
  });

  double clean_mbs = MegabytesPerSecond(clean, min_seconds, [&] { RedactAll(rs, clean); });
  double real_mbs = MegabytesPerSecond(real, min_seconds, [&] { RedactAll(rs, real); });
  char note[256];
  std::snprintf(note, sizeof note,
                "Redact per line (avg %zu B), 1 thread, bytes per CPU-second; peer: %zu hs databases in "
                "turn, raw matches only",
                real.bytes / real.lines.size(), sequential.patterns());
  report.Add(Row{.metric = "redact_clean_text_mb_per_s",
                 .value = clean_mbs,
                 .unit = "MB/s",
                 .peer = "one hs db per pattern",
                 .peer_value = seq_clean,
                 .note = "no findings (look-alikes only); " + std::string(note)});
  report.Add(Row{.metric = "redact_realistic_text_mb_per_s",
                 .value = real_mbs,
                 .unit = "MB/s",
                 .peer = "one hs db per pattern",
                 .peer_value = seq_real,
                 .note = "3% of lines sensitive; " + std::string(note)});
  report.Add(Row{.metric = "redact_realistic_vs_std_regex_mb_per_s",
                 .value = real_mbs,
                 .unit = "MB/s",
                 .peer = "std::regex, patterns in turn",
                 .peer_value = regex_real,
                 .note = std::to_string(regexes.size()) + " patterns, search only, on a " +
                         std::to_string(sample.bytes >> 10) + " KiB sample"});

  // Whole buffers: one 1 MiB text (a telemetry export, a long completion).
  {
    std::string big;
    for (const auto& l : real.lines) {
      if (big.size() > (1u << 20)) break;
      big += l;
      big.push_back('\n');
    }
    Corpus one{{big}, big.size()};
    double mbs = MegabytesPerSecond(one, min_seconds, [&] {
      std::string out;
      rs.Redact(big, &out);
    });
    report.Add(Row{.metric = "redact_1mib_buffer_mb_per_s",
                   .value = mbs,
                   .unit = "MB/s",
                   .note = "realistic text, one call"});
  }

  // Two threads sharing one RuleSet (the machine has 2 cores): throughput per thread, by CPU time, shows
  // whether sharing (the scratch pool) costs anything.
  {
    std::atomic<bool> go{false};
    std::vector<double> per_thread(2, 0.0);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load()) {
        }
        double start = ThreadCpuSeconds();
        size_t done = 0;
        while (ThreadCpuSeconds() - start < min_seconds) {
          RedactAll(rs, real);
          done += real.bytes;
        }
        per_thread[t] = static_cast<double>(done) / (ThreadCpuSeconds() - start) / 1e6;
      });
    }
    auto start = Clock::now();
    go = true;
    for (auto& th : threads) th.join();
    char n[160];
    std::snprintf(n, sizeof n,
                  "one shared RuleSet, 2 threads: %.0f and %.0f MB/s per CPU-second; %.1f s wall",
                  per_thread[0], per_thread[1], Seconds(start, Clock::now()));
    report.Add(Row{.metric = "redact_realistic_mb_per_s_per_thread_2_threads",
                   .value = (per_thread[0] + per_thread[1]) / 2,
                   .unit = "MB/s",
                   .note = n});
  }

  // Query rows: ~550-byte telemetry events, each redacted as JSON (every string value) and as text.
  {
    TextGenerator g(3, 0.03);
    std::vector<std::string> events(quick ? 5000 : 20000);
    size_t total = 0;
    for (auto& e : events) {
      e = g.Event();
      total += e.size();
    }
    std::string out;
    for (const auto& e : events) (void)rs.RedactJson(e, &out);  // warm up
    for (int mode = 0; mode < 2; ++mode) {
      govern::bench::LatencyRecorder lat;
      size_t changed = 0;
      double cpu_start = ThreadCpuSeconds();
      int rounds = quick ? 2 : 5;
      for (int r = 0; r < rounds; ++r) {
        for (const auto& e : events) {
          auto t0 = Clock::now();
          bool c = mode == 0 ? rs.RedactJson(e, &out).value().changed : rs.Redact(e, &out).changed;
          lat.Record(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
          changed += c ? 1 : 0;
        }
      }
      double secs = ThreadCpuSeconds() - cpu_start;
      double rows = static_cast<double>(events.size() * static_cast<size_t>(rounds));
      std::string what = mode == 0 ? "json" : "text";
      char n[200];
      std::snprintf(n, sizeof n,
                    "avg %zu B/event, %.1f%% of rows changed; median (wall); p99 %.2f us; %.0f rows/s per "
                    "core (CPU time)",
                    total / events.size(), 100.0 * static_cast<double>(changed) / rows,
                    static_cast<double>(lat.Percentile(99)) / 1e3, rows / secs);
      report.Add(Row{.metric = "query_row_redact_" + what + "_us",
                     .value = static_cast<double>(lat.Percentile(50)) / 1e3,
                     .unit = "us",
                     .better = "lower",
                     .note = n});
    }
  }

  // Short attribute values, one call each (telemetry redacts every string of a result row): the fixed cost
  // of a call (a scratch from the pool, one hs_scan) when there is almost nothing to read.
  {
    TextGenerator g(4, 0.0);
    std::vector<std::string> values;
    const char* const kValues[] = {"gpt-4o-mini",          "eu-west-1", "miss",
                                   "/v1/chat/completions", "200",       "user_4821"};
    for (size_t i = 0; i < 6000; ++i) values.push_back(kValues[i % 6]);
    std::string out;
    size_t calls = 0;
    double start = ThreadCpuSeconds();
    do {
      for (const auto& v : values) rs.Redact(v, &out);
      calls += values.size();
    } while (ThreadCpuSeconds() - start < min_seconds / 2);
    double ns = (ThreadCpuSeconds() - start) / static_cast<double>(calls) * 1e9;
    report.Add(Row{.metric = "redact_short_value_ns",
                   .value = ns,
                   .unit = "ns",
                   .better = "lower",
                   .note = "3-20 byte attribute values, no findings, CPU time per call"});
  }

  // Streams-style screening: a request of 10 records of 1 KiB, scanned (block mode needs findings only).
  {
    std::vector<std::string> records;
    std::string rec;
    for (const auto& l : real.lines) {
      rec += l;
      rec.push_back('\n');
      if (rec.size() >= 1024) {
        records.push_back(rec.substr(0, 1024));
        rec.clear();
      }
    }
    govern::bench::LatencyRecorder lat;
    std::vector<govern::dlp::Finding> findings;
    size_t requests = records.size() / 10;
    for (size_t r = 0; r < requests; ++r) {
      auto t0 = Clock::now();
      for (size_t k = 0; k < 10; ++k) rs.Scan(records[r * 10 + k], &findings);
      lat.Record(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
    }
    char n[160];
    std::snprintf(n, sizeof n,
                  "median of %zu requests; p99 %.1f us; streams target is for the whole screening path",
                  requests, static_cast<double>(lat.Percentile(99)) / 1e3);
    report.Add(Row{.metric = "screen_10x1kib_records_us",
                   .value = static_cast<double>(lat.Percentile(50)) / 1e3,
                   .unit = "us",
                   .target = 112,
                   .better = "lower",
                   .note = n});
  }
  return report.Finish(args.results_dir) ? 0 : 1;
}
