// Per-request cost of the broker's security layer, in process (no network, no disk), so the rows isolate
// what security adds to a produce request:
//  - Authorize: the ACL checks one produce request makes (one topic, Write) with 50 rules, open (no
//    Authorizer) vs with rules.
//  - OAuthBearer: SASL authentication of a Govern access token, the first time (parse + ES256/HS256
//    verify) and cached (the Checker's verified-token cache: what a reconnecting client pays).
//  - ScreenBlock: DLP screening in block mode of a 10-record request of 1 KiB values, clean (the
//    common case: the whole batch is scanned) and with a finding; zstd-compressed too.
//  - ScreenFlag: flag mode with a finding in every record, uncompressed and zstd (decompress, rewrite,
//    recompress, CRC).
#include <benchmark/benchmark.h>

#include <random>

#include "dlp/rule_set.h"
#include "storage/crc32c.h"
#include "streams/batch.h"
#include "streams/security.h"
#include "streams/wire.h"
#include "tokens/checker.h"
#include "tokens/issuer.h"

namespace govern::streams {
namespace {

std::shared_ptr<const Authorizer> Rules() {
  std::string text;
  for (int i = 0; i < 50; i++)
    text += "allow User:u" + std::to_string(i) + " write topic:t" + std::to_string(i) + "\n";
  text += "allow User:bench write topic:orders-*\n";
  return *Authorizer::Parse(text);
}

void BM_AuthorizeOpen(benchmark::State& state) {
  Security sec({});
  Session s;
  for (auto _ : state)
    benchmark::DoNotOptimize(sec.Allowed(s, AclOp::kWrite, ResourceType::kTopic, "orders-1"));
}
BENCHMARK(BM_AuthorizeOpen);

void BM_AuthorizeAcl50(benchmark::State& state) {
  Security sec({.authorizer = Rules()});
  Session s;
  for (auto _ : state)
    benchmark::DoNotOptimize(sec.Allowed(s, AclOp::kWrite, ResourceType::kTopic, "orders-1"));
}
BENCHMARK(BM_AuthorizeAcl50);

// The whole per-request gate of an authenticated connection, as the broker runs it for one produce
// request: Admit (session end, revocation version) then the topic's Write check. Open: no security at
// all; JWT: a session authenticated with an ES256 OAUTHBEARER token, 51 ACL rules.
void BM_RequestGateOpen(benchmark::State& state) {
  Security sec({});
  Session s;
  for (auto _ : state) {
    benchmark::DoNotOptimize(sec.Admit(s, 0));
    benchmark::DoNotOptimize(sec.Allowed(s, AclOp::kWrite, ResourceType::kTopic, "orders-1"));
  }
}
BENCHMARK(BM_RequestGateOpen);

void BM_RequestGateJwtAcl50(benchmark::State& state) {
  int64_t now = Clock::Real().UnixMicros() / 1'000'000;
  auto ring = std::make_shared<tokens::KeyRing>(*tokens::KeyRing::Create(tokens::Alg::kES256, {}, now - 60));
  tokens::Issuer issuer(tokens::IssuerOptions{"iss"}, ring, nullptr);
  auto checker = std::make_shared<tokens::Checker>(tokens::CheckerOptions{"iss"},
                                                   std::make_shared<tokens::KeySet>(ring->VerifyKeysAt(now)));
  auto auth = std::make_shared<Authenticator>(AuthenticatorOptions{}, nullptr, checker);
  Security sec({.require_sasl = true, .authenticator = auth, .authorizer = Rules()});
  Session s;
  tokens::Claims c;
  c.sub = "bench";
  c.aud = {"govern:streams"};
  Writer hs;
  hs.String("OAUTHBEARER");
  (void)sec.SaslHandshake(s, 1, hs.str());
  Writer w;
  w.NullableBytes(
      "n,,\x01"
      "auth=Bearer " +
      *issuer.IssueAccess(c, std::chrono::seconds(600)) + "\x01\x01");
  (void)sec.SaslAuthenticate(s, 1, w.str());
  if (!s.authenticated()) state.SkipWithError("not authenticated");
  for (auto _ : state) {
    benchmark::DoNotOptimize(sec.Admit(s, 0));
    benchmark::DoNotOptimize(sec.Allowed(s, AclOp::kWrite, ResourceType::kTopic, "orders-1"));
  }
}
BENCHMARK(BM_RequestGateJwtAcl50);

void OAuth(benchmark::State& state, tokens::Alg alg, bool cached) {
  int64_t now = Clock::Real().UnixMicros() / 1'000'000;
  auto ring = std::make_shared<tokens::KeyRing>(*tokens::KeyRing::Create(alg, {}, now - 60));
  tokens::Issuer issuer(tokens::IssuerOptions{"iss"}, ring, nullptr);
  auto checker = std::make_shared<tokens::Checker>(tokens::CheckerOptions{"iss"},
                                                   std::make_shared<tokens::KeySet>(ring->VerifyKeysAt(now)));
  Authenticator auth({}, nullptr, checker);
  std::vector<std::string> msgs;
  for (int i = 0; i < (cached ? 1 : 2000); i++) {
    tokens::Claims c;
    c.sub = "user-" + std::to_string(i);
    c.aud = {"govern:streams"};
    msgs.push_back(
        "n,,\x01"
        "auth=Bearer " +
        *issuer.IssueAccess(c, std::chrono::seconds(600)) + "\x01\x01");
  }
  size_t i = 0;
  for (auto _ : state) {
    if (!cached && i == msgs.size()) {
      state.PauseTiming();
      checker->SetKeys(std::make_shared<tokens::KeySet>(ring->VerifyKeysAt(now)));  // empties the cache
      i = 0;
      state.ResumeTiming();
    }
    auto r = auth.Authenticate("OAUTHBEARER", msgs[cached ? 0 : i++]);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
  }
}
void BM_OAuthBearerFirstES256(benchmark::State& s) { OAuth(s, tokens::Alg::kES256, false); }
void BM_OAuthBearerFirstHS256(benchmark::State& s) { OAuth(s, tokens::Alg::kHS256, false); }
void BM_OAuthBearerCached(benchmark::State& s) { OAuth(s, tokens::Alg::kES256, true); }
BENCHMARK(BM_OAuthBearerFirstES256);
BENCHMARK(BM_OAuthBearerFirstHS256);
BENCHMARK(BM_OAuthBearerCached);

std::string Batch(bool finding, bool every, int codec) {
  std::mt19937 rng(7);
  std::vector<std::string> values;
  for (int i = 0; i < 10; i++) {
    std::string v(1024, 'x');
    for (char& c : v) c = "abcdefghijklmnopqrstuvwxyz     .,"[rng() % 33];
    if (finding && (every || i == 9)) v.replace(500, 20, "mail ann@example.com");
    values.push_back(v);
  }
  std::string b = BuildBatch(values, 1000);
  if (codec == 0) return b;
  std::string out;
  (void)CompressRecords(codec, std::string_view(b).substr(kBatchHeaderSize), &out);
  std::string c = b.substr(0, kBatchHeaderSize) + out;
  c[22] = static_cast<char>((c[22] & ~7) | codec);
  StoreBe32(c.data() + kBatchLengthOffset, static_cast<uint32_t>(c.size() - kBatchLogOverhead));
  StoreBe32(c.data() + 17, storage::Crc32c(c.data() + kBatchCrcStart, c.size() - kBatchCrcStart));
  return c;
}

void Screen(benchmark::State& state, ScreenMode mode, bool finding, bool every, int codec) {
  Screener s({.default_mode = mode}, *dlp::RuleSet::Compile({}));
  std::string b = Batch(finding, every, codec);
  for (auto _ : state) {
    auto v = s.Screen(b, mode);
    if (!v.ok()) state.SkipWithError(v.status().ToString().c_str());
    benchmark::DoNotOptimize(v);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 10 * 1024);
}
void BM_ScreenBlockClean(benchmark::State& s) { Screen(s, ScreenMode::kBlock, false, false, 0); }
void BM_ScreenBlockFinding(benchmark::State& s) { Screen(s, ScreenMode::kBlock, true, false, 0); }
void BM_ScreenBlockCleanZstd(benchmark::State& s) { Screen(s, ScreenMode::kBlock, false, false, 4); }
void BM_ScreenFlagEvery(benchmark::State& s) { Screen(s, ScreenMode::kFlag, true, true, 0); }
void BM_ScreenFlagEveryZstd(benchmark::State& s) { Screen(s, ScreenMode::kFlag, true, true, 4); }
BENCHMARK(BM_ScreenBlockClean);
BENCHMARK(BM_ScreenBlockFinding);
BENCHMARK(BM_ScreenBlockCleanZstd);
BENCHMARK(BM_ScreenFlagEvery);
BENCHMARK(BM_ScreenFlagEveryZstd);

}  // namespace
}  // namespace govern::streams

BENCHMARK_MAIN();
