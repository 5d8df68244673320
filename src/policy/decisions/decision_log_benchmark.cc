// What recording a decision costs the caller: DecisionLog::Record in buffered mode (the hot path: no
// wait for the disk) and in durable mode (waits for the group fdatasync), from 1 and 4 threads, beside
// its parts (encoding, hashing the context, the bare WAL AppendAsync) so a regression can be placed.
// Real files under $TMPDIR. Run: build/release/src/policy/decisions/decision_log_benchmark
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "crypto/sha256.h"
#include "policy/decisions/decision_log.h"

namespace govern::policy {
namespace {

DecisionRecord Sample() {
  DecisionRecord r;
  r.organisation = "acme";
  r.principal = R"(Agent::"a17")";
  r.action = R"(Action::"call_tool")";
  r.resource = R"(Tool::"web_search")";
  r.decision = RecordedDecision::kAllow;
  r.determining_policies = {"policy4"};
  r.bundle_version = 42;
  r.context_kind = ContextKind::kFull;
  r.context = R"({"args":{"max_results":5,"url":"https://example.com"},"cost_cents":1})";
  return r;
}

std::string TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "govern-decisions-bench-XXXXXX").string();
  return mkdtemp(tmpl.data());
}

// One log shared by a benchmark's threads: opened by the first thread in, closed by the last out.
struct Shared {
  std::mutex mu;
  int users = 0;
  std::string dir;
  std::unique_ptr<DecisionLog> log;

  DecisionLog* Acquire(RecordMode mode, ContextKind context) {
    std::lock_guard lk(mu);
    if (users++ == 0) {
      dir = TempDir();
      auto l = DecisionLog::Open({.dir = dir,
                                  .mode = mode,
                                  .context = context,
                                  .max_pending_bytes = 256u << 20,
                                  .max_block = std::chrono::milliseconds(60000)});
      if (!l.ok()) std::abort();
      log = std::move(*l);
    }
    return log.get();
  }
  void Release() {
    std::lock_guard lk(mu);
    if (--users == 0) {
      log.reset();
      std::filesystem::remove_all(dir);
    }
  }
};

void RunRecord(benchmark::State& state, RecordMode mode, ContextKind context) {
  static Shared shared;
  // Threads start together only after setup: acquire before the loop.
  DecisionLog* log = shared.Acquire(mode, context);
  const DecisionRecord r = Sample();
  int64_t errors = 0;
  for (auto _ : state) {
    auto id = log->Record(r);
    if (!id.ok()) ++errors;
    benchmark::DoNotOptimize(id);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["errors"] = static_cast<double>(errors);
  shared.Release();
}

void BM_RecordBuffered(benchmark::State& state) {
  RunRecord(state, RecordMode::kBuffered, ContextKind::kHash);
}
void BM_RecordBufferedFullContext(benchmark::State& state) {
  RunRecord(state, RecordMode::kBuffered, ContextKind::kFull);
}
void BM_RecordDurable(benchmark::State& state) { RunRecord(state, RecordMode::kDurable, ContextKind::kHash); }

BENCHMARK(BM_RecordBuffered)->Threads(1)->Threads(4)->UseRealTime();
BENCHMARK(BM_RecordBufferedFullContext)->Threads(1)->UseRealTime();
BENCHMARK(BM_RecordDurable)->Threads(1)->Threads(4)->Threads(16)->UseRealTime();

// The parts of a buffered Record.
void BM_Encode(benchmark::State& state) {
  const DecisionRecord r = Sample();
  std::string buf;
  for (auto _ : state) {
    buf.clear();
    EncodeDecision(r, &buf);
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Encode);

void BM_HashContext(benchmark::State& state) {
  const DecisionRecord r = Sample();
  for (auto _ : state) benchmark::DoNotOptimize(crypto::Sha256(r.context));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HashContext);

void BM_IdNext(benchmark::State& state) {
  DecisionIdGenerator gen(12345);
  int64_t t = 1'795'986'592'185'000'000;
  for (auto _ : state) benchmark::DoNotOptimize(gen.Next(++t));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_IdNext);

// The bare WAL call a buffered Record makes (std::function callback, CRC, lock, copy into the group).
void BM_WalAppendAsync(benchmark::State& state) {
  const std::string dir = TempDir();
  {
    wal::Options o;
    o.default_durability = wal::Durability::kBuffered;
    auto log = wal::Log::Open(dir, o);
    if (!log.ok()) std::abort();
    std::string rec;
    EncodeDecision(Sample(), &rec);
    std::atomic<uint64_t> done{0};
    for (auto _ : state) {
      (*log)->AppendAsync(
          rec, [&done](Result<uint64_t>) { done.fetch_add(1, std::memory_order_relaxed); },
          wal::Durability::kBuffered);
    }
    state.SetItemsProcessed(state.iterations());
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_WalAppendAsync)->UseRealTime();

}  // namespace
}  // namespace govern::policy

BENCHMARK_MAIN();
