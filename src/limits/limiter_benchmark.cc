// Cost of the hot path: TryAdmit + Release, with and without an organisation, on one and two threads.
// Run: build/release/src/limits/limiter_benchmark
#include <benchmark/benchmark.h>

#include "limits/limiter.h"

namespace govern::limits {
namespace {

Limiter& Shared() {
  static Limiter limiter(Clock::Real());
  return limiter;
}

void BM_AdmitRelease(benchmark::State& state) {
  Limiter& l = Shared();
  const std::string_view org = state.range(0) ? "acme-corporation" : "";
  for (auto _ : state) {
    auto t = l.TryAdmit(net::RequestClass::kNormal, org);
    benchmark::DoNotOptimize(t);
    if (t.admitted) l.Release(t, true);
  }
}
BENCHMARK(BM_AdmitRelease)->Arg(0)->Arg(1)->Threads(1)->Threads(2);

}  // namespace
}  // namespace govern::limits

BENCHMARK_MAIN();
