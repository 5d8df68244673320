// Costs of the bundle path: Build, Verify (gzip'd and plain) of a policy-sized bundle, and reading the
// loaded bundle from a BundleSlot (the per-thread Reader, and Load()).
#include <benchmark/benchmark.h>

#include <string>

#include "bundle/bundle.h"
#include "bundle/slot.h"

namespace govern::bundle {
namespace {

SigningKey BenchKey() {
  std::vector<uint8_t> seed(32, 5);
  return std::move(*SigningKey::FromSeed(seed));
}

// About what an organisation's policy bundle holds: 15 policies, a few hundred entities, limits.
BuildInput PolicySized(bool gzip) {
  BuildInput in;
  in.kind = "policy";
  in.org = "acme";
  in.version = 1;
  in.created = 1795833000;
  std::string policies;
  for (int i = 0; i < 15; ++i) {
    policies += "@id(\"p" + std::to_string(i) + "\")\npermit(principal in Team::\"t" + std::to_string(i) +
                "\", action == Action::\"call_tool\", resource == Tool::\"tool" + std::to_string(i) +
                "\") when { context.amount < 100 };\n";
  }
  std::string entities = "[";
  for (int i = 0; i < 300; ++i) {
    entities += (i ? "," : "") + std::string("{\"uid\":{\"type\":\"Agent\",\"id\":\"agent") +
                std::to_string(i) + "\"},\"attrs\":{},\"parents\":[{\"type\":\"Team\",\"id\":\"t" +
                std::to_string(i % 15) + "\"}]}";
  }
  entities += "]";
  in.files["policies.cedar"] = policies;
  in.files["entities.json"] = entities;
  in.files["limits.json"] = "{\"agents\": {\"default\": {\"calls_per_minute\": 60}}}";
  in.gzip = gzip;
  return in;
}

void BM_Build(benchmark::State& state) {
  SigningKey key = BenchKey();
  BuildInput in = PolicySized(state.range(0) != 0);
  for (auto _ : state) benchmark::DoNotOptimize(Build(in, {&key}));
}
BENCHMARK(BM_Build)->Arg(0)->Arg(1);

void BM_Verify(benchmark::State& state) {
  SigningKey key = BenchKey();
  TrustStore trust;
  (void)trust.Add(*key.Public());
  std::string archive = *Build(PolicySized(state.range(0) != 0), {&key});
  state.SetLabel(std::to_string(archive.size()) + " bytes");
  for (auto _ : state) {
    Verdict v = Verify(archive, trust);
    if (!v.ok()) state.SkipWithError(v.ToString().c_str());
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_Verify)->Arg(0)->Arg(1);

struct Compiled {
  uint64_t version;
};

BundleSlot<Compiled>& LoadedSlot() {
  static BundleSlot<Compiled>* slot = [] {
    SigningKey key = BenchKey();
    TrustStore trust;
    (void)trust.Add(*key.Public());
    auto* s =
        new BundleSlot<Compiled>(std::move(trust), VerifyOptions{},
                                 [](const Bundle& b) -> Result<Compiled> { return Compiled{b.version()}; });
    (void)s->Offer(*Build(PolicySized(true), {&key}));
    return s;
  }();
  return *slot;
}

void BM_ReaderGet(benchmark::State& state) {
  BundleSlot<Compiled>::Reader reader(LoadedSlot());
  for (auto _ : state) benchmark::DoNotOptimize(reader.Get()->value.version);
}
BENCHMARK(BM_ReaderGet)->ThreadRange(1, 2);

void BM_SlotLoad(benchmark::State& state) {
  auto& slot = LoadedSlot();
  for (auto _ : state) benchmark::DoNotOptimize(slot.Load()->value.version);
}
BENCHMARK(BM_SlotLoad)->ThreadRange(1, 2);

}  // namespace
}  // namespace govern::bundle

BENCHMARK_MAIN();
