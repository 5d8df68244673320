#include "services/gateway/governance_config.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "base/log.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "services/gateway/schema.h"

namespace govern::gateway {

void DeclareGovernanceConfig(config::Schema& s) {
  using config::Type;
  s.Add({.key = "gateway.auth.issuer",
         .type = Type::kString,
         .default_value = "",
         .help = "Issuer of the Govern access tokens the gateway accepts beside its virtual keys (the auth "
                 "service's auth.issuer); empty: virtual keys only."});
  s.Add({.key = "gateway.auth.trust_url",
         .type = Type::kString,
         .default_value = "",
         .help = "Base URL of the auth service for /.well-known/jwks.json and /oauth/revocations; empty: "
                 "the issuer."});
  s.Add({.key = "gateway.auth.internal_ring_file",
         .type = Type::kString,
         .default_value = "",
         .help = "The auth service's internal key ring file (auth.internal_ring_file), re-read every 5 s, so "
                 "the default HS256 access tokens verify; empty: <data_dir>/auth/internal-ring.json when it "
                 "exists at start, otherwise the pulled JWKS only."});
  s.Add({.key = "gateway.auth.jwks_file",
         .type = Type::kString,
         .default_value = "",
         .help = "A JWKS file of trusted token keys (tests, air-gapped setups), beside the pulled ones."});
  s.Add({.key = "gateway.auth.audience",
         .type = Type::kString,
         .default_value = "govern",
         .help = "The aud a Govern access token must carry to be accepted by the gateway."});
  s.Add({.key = "gateway.policy.bundle_file",
         .type = Type::kString,
         .default_value = "",
         .help = "Signed policy bundle every request is checked against (Cedar: Gateway::Action::\"invoke\" "
                 "on Gateway::Model::\"<model>\"), re-read every gateway.policy.reload_interval; e.g. the "
                 "policy sidecar's <data_dir>/policy-agent/bundle.tar.gz. Empty: no policy check, every "
                 "authenticated request is allowed. Set but not loadable: every request is refused (503)."});
  s.Add({.key = "gateway.policy.trust",
         .type = Type::kStringList,
         .default_value = "",
         .help = "Public key files whose bundle signatures the gateway trusts (govern policy keygen). "
                 "Required with gateway.policy.bundle_file."});
  s.Add(
      {.key = "gateway.policy.org",
       .type = Type::kString,
       .default_value = "",
       .help = "The organisation the policy bundle must be for. Required with gateway.policy.bundle_file."});
  s.Add({.key = "gateway.policy.reload_interval",
         .type = Type::kDuration,
         .default_value = "5s",
         .help = "How often the policy bundle file is re-read (a new version is verified and swapped in; a "
                 "refused one leaves the loaded bundle deciding); 0: read only at start.",
         .min = 0});
  s.Add({.key = "gateway.budget.sync_interval",
         .type = Type::kDuration,
         .default_value = "1s",
         .help = "How often budget spend is reported to PostgreSQL and spend leases renewed or claimed (the "
                 "routes file's \"budgets\"; docs/gateway.md, Budgets).",
         .min = 1});
  // Gateway API keys from the keys service (service_keys.h).
  s.Add({.key = "gateway.keys.enabled",
         .type = Type::kBool,
         .default_value = "false",
         .help = "Accept gateway API keys (gvg_<key_id>_<secret>, table gateway_api_keys, made with the keys "
                 "service) beside the routes file's virtual keys; needs PostgreSQL. Keys are held in memory "
                 "and reloaded every gateway.keys.reload_interval: no database statement per request."});
  s.Add({.key = "gateway.keys.reload_interval",
         .type = Type::kDuration,
         .default_value = "5s",
         .help = "How often the gateway API keys are reloaded: a new or revoked key takes effect within it. "
                 "When the database cannot be reached the loaded keys stay in use.",
         .min = 100});
  s.Add({.key = "gateway.budget.lease_ttl",
         .type = Type::kDuration,
         .default_value = "60s",
         .help = "A replica's spend lease not renewed for this long is taken back by the others; a replica "
                 "stops spending from a lease it could not renew for half of it.",
         .min = 100});
}

namespace {

Result<std::string> ReadAll(const std::string& path, std::string_view key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(std::string(key) + ": cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ReplicaName() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::random_device rd;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", rd());
  return std::string(host) + "-" + std::to_string(::getpid()) + "-" + suffix;
}

}  // namespace

void GovernanceRuntime::Stop() {
  if (governance && governance->service_keys) governance->service_keys->Stop();
  if (budget_sync) budget_sync->Stop();
  budget_sync.reset();
}

Result<GovernanceRuntime> StartGovernance(const config::Config& c, const std::string& data_dir,
                                          std::string_view routes_json, db::Pool* db) {
  GovernanceRuntime rt;
  auto g = std::make_shared<Governance>();
  bool any = false;

  std::string issuer = c.GetString("gateway.auth.issuer");
  std::string jwks_file = c.GetString("gateway.auth.jwks_file");
  if (!issuer.empty()) {
    TokenAuthOptions o;
    o.issuer = issuer;
    o.audience = c.GetString("gateway.auth.audience");
    o.trust_url = c.GetString("gateway.auth.trust_url");
    o.ring_file = c.GetString("gateway.auth.internal_ring_file");
    if (o.ring_file.empty()) {
      std::string beside = data_dir + "/auth/internal-ring.json";
      if (std::error_code ec; std::filesystem::exists(beside, ec)) o.ring_file = beside;
    }
    if (!jwks_file.empty()) {
      GOVERN_ASSIGN_OR_RETURN(std::string text, ReadAll(jwks_file, "gateway.auth.jwks_file"));
      GOVERN_ASSIGN_OR_RETURN(tokens::KeySet ks, tokens::KeySet::FromJwks(text));
      o.local_keys = std::make_shared<const tokens::KeySet>(std::move(ks));
    }
    GOVERN_ASSIGN_OR_RETURN(g->tokens, TokenAuth::Create(std::move(o)));
    any = true;
  } else if (!jwks_file.empty()) {
    return InvalidArgument("gateway.auth.jwks_file needs gateway.auth.issuer");
  }

  std::string bundle_file = c.GetString("gateway.policy.bundle_file");
  if (!bundle_file.empty()) {
    PolicyGateOptions o;
    o.bundle_file = bundle_file;
    o.trust_files = c.GetStringList("gateway.policy.trust");
    o.org = c.GetString("gateway.policy.org");
    o.reload_interval = c.GetDuration("gateway.policy.reload_interval");
    auto gate = PolicyGate::Create(std::move(o));
    if (!gate.ok()) return gate.status().WithContext("gateway.policy");
    g->policy = std::move(*gate);
    any = true;
  }

  GOVERN_ASSIGN_OR_RETURN(std::vector<BudgetConfig> budgets, ParseBudgets(routes_json));
  if (!budgets.empty()) {
    if (db == nullptr)
      return FailedPrecondition("gateway: budgets (the routes file's \"budgets\") need PostgreSQL");
    BudgetOptions o;
    o.replica = ReplicaName();
    o.lease_ttl = c.GetDuration("gateway.budget.lease_ttl");
    auto interval = c.GetDuration("gateway.budget.sync_interval");
    o.claim_ahead = interval * 2;
    g->budgets = std::make_unique<BudgetBook>(std::move(budgets), std::move(o));
    rt.budget_sync = std::make_unique<BudgetSync>(*g->budgets, *db, interval);
    // Not fatal: requests under a budget are refused (503) until a lease is claimed.
    if (Status s = rt.budget_sync->Start(); !s.ok())
      log::Warn("gateway", "budget leases not claimed yet", {{"error", s.ToString()}});
    any = true;
  }
  if (c.GetBool("gateway.keys.enabled")) {  // gateway API keys from the keys service (service_keys.h)
    if (db == nullptr) return FailedPrecondition("gateway: gateway.keys.enabled needs PostgreSQL");
    g->service_keys = std::make_unique<ServiceKeyRing>(db, c.GetDuration("gateway.keys.reload_interval"));
    (void)g->service_keys->Start();  // not fatal: the keys are refused (401) until loaded
    any = true;
  }
  if (any) rt.governance = std::move(g);
  return rt;
}

Result<GovernanceRuntime> StartGovernanceFromFlags(
    const std::vector<std::pair<std::string, std::string>>& sets, std::string_view routes_json,
    const std::string& budget_db) {
  config::Schema schema;
  DeclareGovernanceConfig(schema);
  config::LoadOptions lo;
  lo.flags = sets;
  GOVERN_ASSIGN_OR_RETURN(config::Config cfg, config::Config::Load(schema, lo));
  std::unique_ptr<db::Pool> pool;
  if (!budget_db.empty()) {
    GOVERN_ASSIGN_OR_RETURN(pool, db::Pool::Create({.conninfo = budget_db, .max_size = 2}));
    GOVERN_RETURN_IF_ERROR(db::Migrator(kSchemaService, Migrations()).Apply(*pool).status());
  }
  GOVERN_ASSIGN_OR_RETURN(GovernanceRuntime rt, StartGovernance(cfg, "", routes_json, pool.get()));
  rt.own_pool = std::move(pool);
  return rt;
}

}  // namespace govern::gateway
