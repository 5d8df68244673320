// Auth token benchmark (one core, no database): check an access token (cached and cold, per signature
// algorithm), issue an access + refresh pair (storage excluded), one Argon2id password hash, and beside
// them in the same run the raw limits from `openssl speed` (HMAC-SHA256, Ed25519, ECDSA P-256, RSA-2048).
// bench/auth/run pins the process (and the openssl child it starts) to one core with taskset.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include "crypto/password.h"
#include "report.h"
#include "tokens/checker.h"
#include "tokens/issuer.h"

namespace {

using govern::bench::LatencyRecorder;
using govern::bench::Report;
using govern::bench::Row;
using namespace govern::tokens;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

constexpr std::string_view kIss = "https://auth.govern.example";
constexpr std::string_view kAud = "govern:telemetry";

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct Measured {
  double us_per_op = 0;  // CPU time per operation, timers off
  double p50_us = 0, p99_us = 0;
  double per_s() const { return 1e6 / us_per_op; }
};

// Runs op(i) n times for the mean (thread CPU time, no per-op timers), then again with a timer around
// each call for the percentiles.
template <typename Op>
Measured Measure(size_t n, Op op) {
  for (size_t i = 0; i < std::min<size_t>(n, 1000); ++i) op(i);  // warm up
  Measured m;
  double start = ThreadCpuSeconds();
  for (size_t i = 0; i < n; ++i) op(i);
  m.us_per_op = (ThreadCpuSeconds() - start) * 1e6 / static_cast<double>(n);
  LatencyRecorder rec;
  for (size_t i = 0; i < n; ++i) {
    auto t0 = SteadyClock::now();
    op(i);
    rec.Record(std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - t0).count());
  }
  m.p50_us = static_cast<double>(rec.Percentile(50)) / 1000.0;
  m.p99_us = static_cast<double>(rec.Percentile(99)) / 1000.0;
  return m;
}

std::string Fmt(const char* f, double a, double b) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

// A realistic access token: a user of an organisation, three scopes, a client, a session.
Claims SampleClaims(size_t i) {
  Claims c;
  c.sub = "usr_01J9Z3K4QX8M2V7" + std::to_string(i);
  c.org = "org_01J9Z3F0B2C4D6E8";
  c.aud = {std::string(kAud)};
  c.scope = {"events:write", "events:read", "policy:decide"};
  c.client_id = "cli_console";
  return c;
}

void Die(const govern::Status& s, const char* what) {
  std::fprintf(stderr, "auth_bench: %s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

template <typename T>
T Must(govern::Result<T> r, const char* what) {
  if (!r.ok()) Die(r.status(), what);
  return std::move(r).value();
}

struct Suite {
  explicit Suite(Alg alg)
      : ring(std::make_shared<KeyRing>(Must(KeyRing::Create(alg, RotationPolicy{}, Now()), "ring"))),
        issuer(IssuerOptions{std::string(kIss)}, ring, ring) {}
  static int64_t Now() { return govern::Clock::Real().UnixMicros() / 1'000'000; }
  std::shared_ptr<const KeySet> Keys() const { return std::make_shared<KeySet>(ring->VerifyKeysAt(Now())); }
  std::vector<std::string> Tokens(size_t n) const {
    std::vector<std::string> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i)
      out.push_back(Must(issuer.IssueAccess(SampleClaims(i), seconds(3600)), "issue"));
    return out;
  }
  std::shared_ptr<KeyRing> ring;
  Issuer issuer;
};

// A check that is cached: a working set of tokens seen before.
Measured CheckCached(const Suite& s, size_t n) {
  auto tokens = s.Tokens(1000);
  Checker checker(CheckerOptions{std::string(kIss)}, s.Keys());
  for (const auto& t : tokens) Must(checker.Check(t, kAud), "check");
  return Measure(n, [&](size_t i) {
    if (!checker.Check(tokens[i % tokens.size()], kAud).ok()) std::abort();
  });
}

// A first sight of each token: parse, signature, claims, cache insert.
Measured CheckCold(const Suite& s, size_t n) {
  auto tokens = s.Tokens(n);
  CheckerOptions o{std::string(kIss)};
  o.cache_entries = 4 * n + 16;
  // Measure runs the op 2n (+ warm-up) times; a fresh checker per pass keeps every check cold.
  auto checker = std::make_unique<Checker>(o, s.Keys());
  size_t calls = 0;
  const size_t warm = std::min<size_t>(n, 1000);
  return Measure(n, [&](size_t i) {
    ++calls;
    if (calls == warm + 1 || calls == warm + n + 1) checker = std::make_unique<Checker>(o, s.Keys());
    if (!checker->Check(tokens[i], kAud).ok()) std::abort();
  });
}

Measured IssuePair(const Suite& s, size_t n) {
  Claims base = SampleClaims(7);
  return Measure(n, [&](size_t) {
    auto p = s.issuer.IssuePair(base, seconds(300));
    if (!p.ok()) std::abort();
  });
}

// `openssl speed` peers, machine-readable (-mr). Returns ops/s.
struct OpensslPeers {
  double hmac_256b_per_s = 0, sha256_256b_per_s = 0;
  double ed25519_sign = 0, ed25519_verify = 0, p256_sign = 0, p256_verify = 0, rsa_sign = 0, rsa_verify = 0;
};

std::string RunCommand(const std::string& cmd) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  pclose(f);
  return out;
}

OpensslPeers MeasureOpenssl(int secs) {
  OpensslPeers p;
  const std::string s = std::to_string(secs);
  // +F:<n>:hmac(sha256):<16 B>:<64 B>:<256 B>:... bytes per second.
  auto column = [](const std::string& out, const std::string& tag, int col) -> double {
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(tag, 0) != 0) continue;
      std::vector<std::string> parts;
      std::stringstream ls(line);
      std::string part;
      while (std::getline(ls, part, ':')) parts.push_back(part);
      if (static_cast<int>(parts.size()) > col) return std::atof(parts[static_cast<size_t>(col)].c_str());
    }
    return 0;
  };
  std::string hmac = RunCommand("openssl speed -mr -seconds " + s + " -hmac sha256 2>/dev/null");
  p.hmac_256b_per_s = column(hmac, "+F:", 5) / 256.0;
  std::string sha = RunCommand("openssl speed -mr -seconds " + s + " -evp sha256 2>/dev/null");
  p.sha256_256b_per_s = column(sha, "+F:", 5) / 256.0;
  std::string ed = RunCommand("openssl speed -mr -seconds " + s + " ed25519 2>/dev/null");
  p.ed25519_sign = column(ed, "+F6:", 4);  // +F6:0:253:Ed25519:<sign/s>:<verify/s>
  p.ed25519_verify = column(ed, "+F6:", 5);
  std::string ec = RunCommand("openssl speed -mr -seconds " + s + " ecdsap256 2>/dev/null");
  p.p256_sign = column(ec, "+F4:", 3);  // +F4:3:256:<sign/s>:<verify/s>
  p.p256_verify = column(ec, "+F4:", 4);
  std::string rsa = RunCommand("openssl speed -mr -seconds " + s + " rsa2048 2>/dev/null");
  p.rsa_sign = column(rsa, "+F2:", 3);  // +F2:2:2048:<sign/s>:<verify/s>
  p.rsa_verify = column(rsa, "+F2:", 4);
  return p;
}

double UsOf(double per_s) { return per_s > 0 ? 1e6 / per_s : 0; }

}  // namespace

int main(int argc, char** argv) {
  auto args = govern::bench::ParseArgs(argc, argv);
  const bool quick = args.quick;
  Report report("auth", quick);
  const size_t n_fast = quick ? 200'000 : 2'000'000;
  const size_t n_cold_mac = quick ? 20'000 : 200'000;
  const size_t n_cold_sig = quick ? 500 : 4'000;

  Suite hs(Alg::kHS256), ed(Alg::kEdDSA), es(Alg::kES256), rs(Alg::kRS256);
  const std::string sample = hs.Tokens(1)[0];
  std::printf("sample access token: %zu bytes (HS256), %zu bytes (EdDSA)\n", sample.size(),
              ed.Tokens(1)[0].size());

  OpensslPeers peers = MeasureOpenssl(quick ? 1 : 3);
  const std::string speed = "openssl speed";

  Measured hit = CheckCached(hs, n_fast);
  report.Add(Row{
      .metric = "check_access_token_us",
      .value = hit.us_per_op,
      .unit = "us",
      .target = 7.6,
      .better = "lower",
      .peer = speed + " hmac(sha256) 256 B",
      .peer_value = UsOf(peers.hmac_256b_per_s),
      .note = Fmt("cached (working set 1,000 tokens), p50 %.2f us, p99 %.2f us", hit.p50_us, hit.p99_us)});
  report.Add(Row{.metric = "check_access_token_per_s",
                 .value = hit.per_s(),
                 .unit = "checks/s",
                 .target = 132000,
                 .better = "higher",
                 .peer = speed + " hmac(sha256) 256 B",
                 .peer_value = peers.hmac_256b_per_s,
                 .note = "cached, one core"});

  Measured cold = CheckCold(hs, n_cold_mac);
  report.Add(Row{
      .metric = "check_cold_hs256_us",
      .value = cold.us_per_op,
      .unit = "us",
      .target = 7.6,
      .better = "lower",
      .peer = speed + " hmac(sha256) 256 B",
      .peer_value = UsOf(peers.hmac_256b_per_s),
      .note = Fmt("first sight: parse + MAC + claims, p50 %.2f us, p99 %.2f us", cold.p50_us, cold.p99_us)});
  report.Add(Row{.metric = "check_cold_hs256_per_s",
                 .value = cold.per_s(),
                 .unit = "checks/s",
                 .target = 132000,
                 .better = "higher",
                 .peer = speed + " hmac(sha256) 256 B",
                 .peer_value = peers.hmac_256b_per_s});

  Measured ed_hit = CheckCached(ed, n_fast);
  report.Add(Row{
      .metric = "check_cached_eddsa_us",
      .value = ed_hit.us_per_op,
      .unit = "us",
      .target = 7.6,
      .better = "lower",
      .peer = speed + " sha256 256 B",
      .peer_value = UsOf(peers.sha256_256b_per_s),
      .note = Fmt("public-key token seen before, p50 %.2f us, p99 %.2f us", ed_hit.p50_us, ed_hit.p99_us)});
  for (auto [suite, name, peer_name, peer] :
       {std::tuple{&ed, "eddsa", "ed25519 verify", peers.ed25519_verify},
        std::tuple{&es, "es256", "ecdsap256 verify", peers.p256_verify},
        std::tuple{&rs, "rs256", "rsa2048 verify", peers.rsa_verify}}) {
    Measured m = CheckCold(*suite, n_cold_sig);
    report.Add(
        Row{.metric = std::string("check_cold_") + name + "_us",
            .value = m.us_per_op,
            .unit = "us",
            .target = 7.6,
            .better = "lower",
            .peer = speed + " " + peer_name,
            .peer_value = UsOf(peer),
            .note = Fmt("first sight of a public-key token, p50 %.1f us, p99 %.1f us", m.p50_us, m.p99_us)});
  }

  Measured pair = IssuePair(hs, n_fast / 2);
  report.Add(
      Row{.metric = "issue_pair_us",
          .value = pair.us_per_op,
          .unit = "us",
          .target = 3.8,
          .better = "lower",
          .peer = speed + " hmac(sha256) 256 B",
          .peer_value = UsOf(peers.hmac_256b_per_s),
          .note = Fmt("HS256 access + gvr_ refresh (random, family, SHA-256), p50 %.2f us, p99 %.2f us",
                      pair.p50_us, pair.p99_us)});
  report.Add(Row{.metric = "issue_pair_per_s",
                 .value = pair.per_s(),
                 .unit = "pairs/s",
                 .target = 264000,
                 .better = "higher",
                 .peer = speed + " hmac(sha256) 256 B",
                 .peer_value = peers.hmac_256b_per_s});
  Measured ed_pair = IssuePair(ed, n_cold_sig);
  report.Add(
      Row{.metric = "issue_pair_eddsa_us",
          .value = ed_pair.us_per_op,
          .unit = "us",
          .target = 3.8,
          .better = "lower",
          .peer = speed + " ed25519 sign",
          .peer_value = UsOf(peers.ed25519_sign),
          .note = "the same pair with an Ed25519-signed access token: why Govern's own format is a MAC"});

  // One password hash at the recommended parameters (RFC 9106 second recommendation scaled down per the
  // OWASP password storage cheat sheet: Argon2id, 19 MiB, 2 passes, 1 lane).
  govern::crypto::Argon2Params params;
  const int hashes = quick ? 3 : 10;
  double start = ThreadCpuSeconds();
  for (int i = 0; i < hashes; ++i) {
    if (!govern::crypto::HashPassword("correct horse battery staple", params).ok()) std::abort();
  }
  double argon_ms = (ThreadCpuSeconds() - start) * 1000.0 / hashes;
  report.Add(Row{.metric = "argon2id_hash_ms",
                 .value = argon_ms,
                 .unit = "ms",
                 .better = "lower",
                 .note = "m=19456 KiB, t=2, p=1 (OWASP minimum for Argon2id); slow on purpose"});

  return report.Finish(args.results_dir) ? 0 : 1;
}
