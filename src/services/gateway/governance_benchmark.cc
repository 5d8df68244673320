// What governance adds to a request on the server's event loop, alone: a cached Govern token check, a
// Cedar decision from a bundle, a budget admission and settlement, and the three together (Admit as the
// proxy calls it). Run: scripts/build release gateway_governance_benchmark.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>

#include "bundle/bundle.h"
#include "bundle/keys.h"
#include "services/gateway/governance.h"
#include "tokens/jose.h"

namespace govern::gateway {
namespace {

constexpr const char* kPolicies = R"(
@id("agents-use-gpt")
permit(principal is Gateway::Agent, action == Gateway::Action::"invoke", resource == Gateway::Model::"gpt-stub");
@id("keys-use-all")
permit(principal is Gateway::Key, action == Gateway::Action::"invoke", resource);
@id("users-small-prompts")
permit(principal is Gateway::User, action == Gateway::Action::"invoke", resource) when { context.estimated_tokens < 1000 };
@id("no-claude-for-globex")
forbid(principal, action, resource == Gateway::Model::"claude-stub") when { context.organisation == "globex" };
)";

struct Setup {
  tokens::SigningKey key = *tokens::SigningKey::Hs256("k1", std::vector<uint8_t>(32, 7));
  std::string token;
  Governance gov;

  Setup() {
    tokens::Claims c;
    c.iss = "https://auth.test";
    c.sub = c.client_id = "cli_1";
    c.aud = {"govern"};
    c.org = "acme";
    c.iat = std::time(nullptr);
    c.exp = c.iat + 3600;
    token = *tokens::SignCompact(key, tokens::ClaimsToJson(c), "at+jwt");
    auto keys = std::make_shared<const tokens::KeySet>(std::vector<tokens::VerifyKey>{key.verify_key()});
    gov.tokens =
        std::move(*TokenAuth::Create({.issuer = "https://auth.test", .local_keys = keys, .pull = false}));

    std::string dir = "/tmp/gw_gov_bench_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    auto signer = *bundle::SigningKey::FromSeed(std::vector<uint8_t>(32, 3));
    std::ofstream(dir + "/trust.pub") << signer.Public()->Text();
    bundle::BuildInput in;
    in.kind = "policy";
    in.org = "acme";
    in.version = 1;
    in.files["policies.cedar"] = kPolicies;
    in.files["entities.json"] = "[]";
    std::ofstream(dir + "/bundle.tar.gz", std::ios::binary) << *bundle::Build(in, {&signer});
    gov.policy = std::move(*PolicyGate::Create({.bundle_file = dir + "/bundle.tar.gz",
                                                .trust_files = {dir + "/trust.pub"},
                                                .org = "acme",
                                                .reload_interval = {}}));
    std::filesystem::remove_all(dir);

    auto budgets = *ParseBudgets(R"({"budgets": [
        {"id": "acme", "scope": "org", "org": "acme", "limit": 1000000},
        {"id": "team", "scope": "team", "members": ["Agent:cli_1", "gvg_x"], "limit": 1000000},
        {"id": "other", "scope": "org", "org": "globex", "limit": 1}]})");
    gov.budgets = std::make_unique<BudgetBook>(std::move(budgets), BudgetOptions{.replica = "bench"});
    gov.budgets->GrantForBenchmark("acme", int64_t{1} << 60);
    gov.budgets->GrantForBenchmark("team", int64_t{1} << 60);
  }
};

Setup& S() {
  static Setup s;
  return s;
}

void BM_TokenCheckCached(benchmark::State& state) {
  Setup& s = S();
  for (auto _ : state) benchmark::DoNotOptimize(AuthenticateToken(s.gov, s.token));
}
BENCHMARK(BM_TokenCheckCached);

void BM_PolicyDecide(benchmark::State& state) {
  Setup& s = S();
  PolicyQuery q{.principal_type = "Agent",
                .principal_id = "cli_1",
                .org = "acme",
                .model = "gpt-stub",
                .format = "openai",
                .estimated_tokens = 300};
  for (auto _ : state) benchmark::DoNotOptimize(s.gov.policy->Decide(q));
}
BENCHMARK(BM_PolicyDecide);

void BM_BudgetAdmitSettle(benchmark::State& state) {
  Setup& s = S();
  BudgetSubject who{.org = "acme", .principal = "Agent:cli_1"};
  for (auto _ : state) {
    auto t = s.gov.budgets->Admit(who);
    s.gov.budgets->Settle(*t, 0.0001);
  }
}
BENCHMARK(BM_BudgetAdmitSettle);

// Token, policy and two budgets, as the proxy runs them for one request.
void BM_GovernanceWholeRequest(benchmark::State& state) {
  Setup& s = S();
  for (auto _ : state) {
    auto caller = AuthenticateToken(s.gov, s.token);
    Admission a = Admit(s.gov, *caller, WireFormat::kOpenAI, "gpt-stub", false, 1300);
    Settle(s.gov, a, 0.0001);
    benchmark::DoNotOptimize(a);
  }
}
BENCHMARK(BM_GovernanceWholeRequest);

}  // namespace
}  // namespace govern::gateway

BENCHMARK_MAIN();
