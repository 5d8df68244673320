// Microbenchmarks for the audit core: what an append costs in C++ (canonicalize details, seal, extend
// the compact range), offline verification (with and without parsing export lines), proofs and
// checkpoints. Run: build/release/src/audit/audit_benchmark
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "audit/checkpoint.h"
#include "audit/entry.h"
#include "audit/export.h"
#include "audit/merkle.h"

namespace govern::audit {
namespace {

// About what a policy decision or an admin action carries.
constexpr std::string_view kDetails =
    R"({"request":{"ip":"10.1.2.3","method":"POST","path":"/v1/policies/main/publish","bytes":18211},)"
    R"("policy":{"bundle":"main","version":1842,"revision":"9f1c2e7"},"reason":"scheduled publish",)"
    R"("labels":["prod","eu-west-1"],"dry_run":false})";

Entry MakeEntry(uint64_t seq, const std::string& details) {
  Entry e;
  e.org = "acme-industries";
  e.seq = seq;
  e.time_us = 1798096547000000 + static_cast<int64_t>(seq) * 137;
  e.actor = "user:alice@example.com";
  e.action = seq % 4 ? "policy.publish" : "token.issue";
  e.target = "bundle/main/" + std::to_string(seq % 1000);
  e.outcome = "ok";
  e.details = details;
  e.idempotency_key = "0193a1b2-7c3d-7000-8000-" + std::to_string(100000000000 + seq);
  return e;
}

std::vector<Entry> MakeChain(uint64_t n) {
  const std::string details = CanonicalizeDetails(kDetails, kDefaultMaxDetailsBytes).value();
  std::vector<Entry> out;
  out.reserve(n);
  Hash prev = kGenesisHash;
  for (uint64_t i = 1; i <= n; ++i) {
    out.push_back(MakeEntry(i, details));
    Seal(out.back(), prev);
    prev = out.back().entry_hash;
  }
  return out;
}

void BM_CanonicalizeDetails(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(CanonicalizeDetails(kDetails, kDefaultMaxDetailsBytes));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_CanonicalizeDetails);

// What the service does per append: canonicalize the details, check the fields, seal, extend the
// compact range.
void BM_AppendPath(benchmark::State& state) {
  const std::string details = CanonicalizeDetails(kDetails, kDefaultMaxDetailsBytes).value();
  Entry e = MakeEntry(1, details);
  CompactRange range;
  Hash prev = kGenesisHash;
  uint64_t seq = 0;
  for (auto _ : state) {
    e.details = CanonicalizeDetails(kDetails, kDefaultMaxDetailsBytes).value();
    e.seq = ++seq;
    benchmark::DoNotOptimize(ValidateEntryFieldsExceptDetails(e));
    range.Append(Seal(e, prev));
    prev = e.entry_hash;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_AppendPath);

void BM_Seal(benchmark::State& state) {
  Entry e = MakeEntry(1, CanonicalizeDetails(kDetails, kDefaultMaxDetailsBytes).value());
  for (auto _ : state) benchmark::DoNotOptimize(Seal(e, kGenesisHash));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_Seal);

// Verifier::Add on entries already in memory (as from PostgreSQL), details re-checked.
void BM_VerifyEntries(benchmark::State& state) {
  static const std::vector<Entry> chain = MakeChain(100000);
  const std::vector<VerifierKey> keys;
  for (auto _ : state) {
    VerifierOptions o;
    o.org = "acme-industries";
    auto v = Verifier::Create(o, keys).value();
    for (const Entry& e : chain) benchmark::DoNotOptimize(v.Add(e));
    if (!v.Finish().ok()) state.SkipWithError("chain does not verify");
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * chain.size()));
}
BENCHMARK(BM_VerifyEntries)->Unit(benchmark::kMillisecond);

// VerifyExportFile on a 100,000-entry export with a checkpoint every 1,000 entries: parsing included.
void BM_VerifyExportFile(benchmark::State& state) {
  const uint64_t n = 100000;
  auto chain = MakeChain(n);
  auto key = crypto::Ed25519PrivateKey::Generate().value();
  std::vector<VerifierKey> keys;
  keys.push_back(VerifierKeyFor("govern.bench/audit", key).value());
  const std::string path = "/tmp/audit_benchmark_" + std::to_string(::getpid()) + ".ndjson";
  {
    std::ofstream out(path);
    ExportWriter w(out);
    ExportHeader h;
    h.org = "acme-industries";
    (void)w.WriteHeader(h);
    CompactRange range;
    std::vector<std::string> notes;
    for (const Entry& e : chain) {
      (void)w.WriteEntry(e);
      range.Append(LeafHash(CanonicalEntry(e)));
      if (e.seq % 1000 == 0) {
        Checkpoint c{CheckpointOrigin(e.org), e.seq, range.Root(), e.entry_hash, e.time_us};
        notes.push_back(SignCheckpoint(c, "govern.bench/audit", key).value());
      }
    }
    for (const auto& note : notes) (void)w.WriteCheckpoint(note);
    (void)w.Finish();
  }
  for (auto _ : state) {
    auto r = VerifyExportFile(path, keys);
    if (!r.ok() || !r->ok() || r->checkpoints_matched != n / 1000)
      state.SkipWithError("export does not verify");
  }
  std::remove(path.c_str());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK(BM_VerifyExportFile)->Unit(benchmark::kMillisecond);

// A stored-subtree source over 2^20 leaves with stride 4, as the service keeps it (all nodes known).
struct ProofFixture {
  static constexpr uint64_t kN = 1 << 20;
  std::vector<Hash> leaves;
  std::map<NodeId, Hash> stored;
  ProofFixture() {
    for (uint64_t i = 0; i < kN; ++i) {
      const Hash h = LeafHash(std::to_string(i));
      leaves.push_back(h);
      stored[{i, 0}] = h;
    }
    // Build every level bottom-up, keep those the service stores.
    std::vector<Hash> level = leaves;
    for (uint32_t k = 1; level.size() > 1; ++k) {
      std::vector<Hash> up;
      for (size_t i = 0; i + 1 < level.size(); i += 2) up.push_back(NodeHash(level[i], level[i + 1]));
      if (k % kDefaultStride == 0) {
        for (size_t i = 0; i < up.size(); ++i) stored[{static_cast<uint64_t>(i) << k, k}] = up[i];
      }
      level = std::move(up);
    }
  }
  StoredNodeSource Source() const {
    return StoredNodeSource(kDefaultStride, [this](std::span<const NodeId> ids) -> Result<std::vector<Hash>> {
      std::vector<Hash> out;
      for (const NodeId& id : ids) out.push_back(stored.at(id));
      return out;
    });
  }
};
const ProofFixture& Fixture() {
  static const ProofFixture f;
  return f;
}

void BM_InclusionProofStored(benchmark::State& state) {
  const auto& f = Fixture();
  uint64_t i = 0;
  size_t rows = 0;
  for (auto _ : state) {
    auto source = f.Source();
    const uint64_t index = (i++ * 7919) % (ProofFixture::kN - 1);
    auto ids = InclusionProofNodes(index, ProofFixture::kN - 1, kDefaultStride).value();
    rows += ids.size();
    for (const NodeId& id : ids) source.Add(id, f.stored.at(id));
    benchmark::DoNotOptimize(InclusionProof(source, index, ProofFixture::kN - 1));
  }
  state.counters["rows_per_proof"] = static_cast<double>(rows) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_InclusionProofStored);

void BM_VerifyInclusion(benchmark::State& state) {
  const auto& f = Fixture();
  auto source = f.Source();
  const uint64_t n = ProofFixture::kN - 1, index = 123457;
  auto proof = InclusionProof(source, index, n).value();
  const Hash root = source.Subtree(0, n).value();
  for (auto _ : state) benchmark::DoNotOptimize(VerifyInclusion(f.leaves[index], index, n, proof, root));
}
BENCHMARK(BM_VerifyInclusion);

void BM_ConsistencyProofAndVerify(benchmark::State& state) {
  const auto& f = Fixture();
  auto source = f.Source();
  const uint64_t m = 700001, n = ProofFixture::kN - 3;
  const Hash old_root = source.Subtree(0, m).value(), new_root = source.Subtree(0, n).value();
  for (auto _ : state) {
    auto proof = ConsistencyProof(source, m, n).value();
    benchmark::DoNotOptimize(VerifyConsistency(m, n, old_root, new_root, proof));
  }
}
BENCHMARK(BM_ConsistencyProofAndVerify);

void BM_SignCheckpoint(benchmark::State& state) {
  auto key = crypto::Ed25519PrivateKey::Generate().value();
  Checkpoint c{CheckpointOrigin("acme"), 123456, LeafHash("r"), LeafHash("h"), 1798096547000000};
  for (auto _ : state) benchmark::DoNotOptimize(SignCheckpoint(c, "govern.bench/audit", key));
}
BENCHMARK(BM_SignCheckpoint);

void BM_OpenCheckpoint(benchmark::State& state) {
  auto key = crypto::Ed25519PrivateKey::Generate().value();
  std::vector<VerifierKey> keys;
  keys.push_back(VerifierKeyFor("govern.bench/audit", key).value());
  Checkpoint c{CheckpointOrigin("acme"), 123456, LeafHash("r"), LeafHash("h"), 1798096547000000};
  const std::string note = SignCheckpoint(c, "govern.bench/audit", key).value();
  for (auto _ : state) benchmark::DoNotOptimize(OpenCheckpoint(note, keys));
}
BENCHMARK(BM_OpenCheckpoint);

}  // namespace
}  // namespace govern::audit

BENCHMARK_MAIN();
