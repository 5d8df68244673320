// `govern policy-server keys create|list|revoke`.
#include "cli/policy_server_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/database.h"
#include "db/connection.h"
#include "db/migrator.h"
#include "services/policy/api_keys.h"
#include "services/policy/schema.h"

namespace govern::cli {
namespace {

int Fail(const Status& s) {
  std::fprintf(stderr, "govern: policy-server: %s\n", s.message().c_str());
  return 1;
}

// A connection to the database `govern serve policy` uses, with its tables in place.
class PolicyDb : public ServiceDatabase {
 public:
  Status Open(const config::Config& cfg) { return ServiceDatabase::Open(cfg, "policy", policy_service::Migrations()); }
};

}  // namespace

PolicyServerCommand::PolicyServerCommand(CLI::App& app) {
  root_ = app.add_subcommand("policy-server", "The policy bundle server (`govern serve policy`): API keys");
  root_->require_subcommand(1);
  CLI::App* keys =
      root_->add_subcommand("keys", "API keys: one organisation and one scope each, stored hashed");
  keys->require_subcommand(1);
  create_ = keys->add_subcommand("create", "Create a key and print it (the only time it is shown)");
  create_->add_option("--org", org_, "Organisation the key publishes or fetches for")->required();
  create_->add_option("--scope", scope_, "publish (change the policy set) or fetch (read bundles: sidecars)")
      ->required()
      ->check(CLI::IsMember({"publish", "fetch"}));
  create_->add_option("--name", name_, "A note saying what the key is for");
  list_ = keys->add_subcommand("list", "List keys (ids, organisations, scopes; never secrets)");
  list_->add_option("--org", org_, "Only this organisation's keys");
  revoke_ = keys->add_subcommand(
      "revoke", "Revoke a key; running servers refuse it within policy.server.key_cache_ttl");
  revoke_->add_option("key_id", key_id_, "The key's id (the 12 characters after gvp_)")->required();
}

bool PolicyServerCommand::parsed() const { return root_->parsed(); }

int PolicyServerCommand::Run(const config::Config& cfg) {
  PolicyDb store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  if (create_->parsed()) {
    auto key = service_keys::CreateKey(store.conn(), policy_service::PolicyKeys(), org_, scope_, name_);
    if (!key.ok()) return Fail(key.status());
    std::printf("%s\n", key->c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "created %s key %s for organisation %s; it is shown only this once\n",
                 scope_.c_str(), key->substr(4, 12).c_str(), org_.c_str());
    return 0;
  }
  if (list_->parsed()) {
    auto keys = service_keys::ListKeys(store.conn(), policy_service::PolicyKeys(), org_);
    if (!keys.ok()) return Fail(keys.status());
    std::printf("%-12s  %-20s  %-7s  %-20s  %-20s  %s\n", "KEY_ID", "ORG", "SCOPE", "CREATED", "REVOKED",
                "NAME");
    for (const auto& k : *keys) {
      std::printf("%-12s  %-20s  %-7s  %-20s  %-20s  %s\n", k.key_id.c_str(), k.org.c_str(), k.scope.c_str(),
                  k.created_at.c_str(), k.revoked_at.value_or("-").c_str(), k.name.c_str());
    }
    return 0;
  }
  if (revoke_->parsed()) {
    if (Status s = service_keys::RevokeKey(store.conn(), policy_service::PolicyKeys(), key_id_); !s.ok())
      return Fail(s);
    std::printf("revoked %s (running servers refuse it within policy.server.key_cache_ttl, %lld ms)\n",
                key_id_.c_str(),
                static_cast<long long>(cfg.GetDuration("policy.server.key_cache_ttl").count()));
    return 0;
  }
  return 2;
}

}  // namespace govern::cli
