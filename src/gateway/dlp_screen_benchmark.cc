// Cost of DLP screening per KiB of model output: the stream screener fed in deltas of a given size
// (the text of a typical answer, no finding, and one with a secret per KiB), and the whole-text screen.
// Run: scripts/build release gateway_dlp_benchmark && build/release/src/gateway/gateway_dlp_benchmark
// bytes_per_second is text screened; time per iteration is for 16 KiB of text.
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gateway/dlp_screen.h"

namespace govern::gateway {
namespace {

std::shared_ptr<const DlpProfile> Mask() {
  static auto p = (*ParseDlpConfig(nlohmann::json::parse(R"({"default":{"mode":"mask"}})")))->default_profile;
  return p;
}

// 16 KiB of prose-like answer; with `secrets`, an AWS key id in every KiB.
std::string Answer(bool secrets) {
  const std::string para =
      "To configure the deployment, open the settings file and set the region to the one closest to your "
      "users. Then restart the service and check the logs for errors; version 1.2 added retries. ";
  std::string t;
  while (t.size() < 16 * 1024) {
    t += para;
    if (secrets && (t.size() / 1024) != ((t.size() + para.size()) / 1024)) t += "key AKIAIOSFODNN7EXAMPLE. ";
  }
  t.resize(16 * 1024);
  return t;
}

void BM_StreamScreener(benchmark::State& state) {
  auto p = Mask();
  const std::string text = Answer(state.range(1) != 0);
  const size_t delta = static_cast<size_t>(state.range(0));
  std::string out;
  for (auto _ : state) {
    StreamScreener s(*p);
    out.clear();
    for (size_t i = 0; i < text.size(); i += delta) s.Push(std::string_view(text).substr(i, delta), &out);
    s.Finish(&out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["ns_per_KiB"] =
      benchmark::Counter(static_cast<double>(state.iterations() * 16),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_StreamScreener)
    ->ArgNames({"delta", "secrets"})
    ->Args({4, 0})
    ->Args({16, 0})
    ->Args({64, 0})
    ->Args({4, 1})
    ->Args({16, 1});

// The whole per-event cost with DLP on in the proxy: each OpenAI chunk event parsed, its delta screened,
// the event written again. Deltas of 4 bytes (about one token per event).
void BM_StreamFilterOpenAI(benchmark::State& state) {
  auto p = Mask();
  const std::string text = Answer(false);
  std::vector<SseEvent> in;
  for (size_t i = 0; i < text.size(); i += 4) {
    nlohmann::json c = {
        {"id", "chatcmpl-1"},
        {"object", "chat.completion.chunk"},
        {"created", 1},
        {"model", "gpt-4o"},
        {"choices",
         nlohmann::json::array(
             {{{"index", 0}, {"delta", {{"content", text.substr(i, 4)}}}, {"finish_reason", nullptr}}})}};
    SseEvent e;
    e.data = c.dump();
    in.push_back(std::move(e));
  }
  std::vector<SseEvent> out;
  for (auto _ : state) {
    DlpStreamFilter f(*p, false);
    out.clear();
    for (const auto& e : in) f.Feed(e, &out);
    f.Finish(&out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["ns_per_KiB"] =
      benchmark::Counter(static_cast<double>(state.iterations() * 16),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["ns_per_event"] =
      benchmark::Counter(static_cast<double>(state.iterations() * in.size()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_StreamFilterOpenAI);

void BM_WholeText(benchmark::State& state) {
  auto p = Mask();
  const std::string text = Answer(state.range(0) != 0);
  std::string out;
  for (auto _ : state) {
    DlpReport r;
    ScreenText(*p, text, &out, &r);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["ns_per_KiB"] =
      benchmark::Counter(static_cast<double>(state.iterations() * 16),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_WholeText)->ArgNames({"secrets"})->Arg(0)->Arg(1);

}  // namespace
}  // namespace govern::gateway

BENCHMARK_MAIN();
