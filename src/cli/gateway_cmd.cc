// `govern gateway keys ...`: gateway API keys (gvg_) from the keys service.
#include "cli/gateway_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/database.h"
#include "db/migrator.h"
#include "services/gateway/schema.h"
#include "services/gateway/service_keys.h"
#include "services/keys/keys.h"

namespace govern::cli {
namespace {

int Fail(const Status& s) {
  std::fprintf(stderr, "govern: %s\n", s.message().c_str());
  return 1;
}

// Keys are made with this scope: what the gateway accepts (service_keys.h).
constexpr const char* kScope = "invoke";

// A connection to the database `govern serve` uses, with the gateway tables in place.
class KeyStore : public ServiceDatabase {
 public:
  Status Open(const config::Config& cfg) {
    return ServiceDatabase::Open(cfg, gateway::kSchemaService, gateway::Migrations());
  }
};

}  // namespace

GatewayCommand::GatewayCommand(CLI::App& app) {
  gateway_ = app.add_subcommand("gateway", "Model gateway: API keys from the keys service");
  gateway_->require_subcommand(1);
  CLI::App* keys = gateway_->add_subcommand(
      "keys", "Gateway API keys (gvg_): one organisation each, stored hashed, revocable at once");
  keys->require_subcommand(1);
  keys_create_ = keys->add_subcommand("create", "Create a key and print it (the only time it is shown)");
  keys_create_->add_option("--org", org_, "Organisation the key calls models as")->required();
  keys_create_->add_option("--name", name_, "A note saying what the key is for");
  keys_list_ = keys->add_subcommand("list", "List keys (ids, organisations; never secrets)");
  keys_list_->add_option("--org", org_, "Only this organisation's keys");
  keys_revoke_ = keys->add_subcommand(
      "revoke", "Revoke a key: running gateways refuse it within gateway.keys.reload_interval");
  keys_revoke_->add_option("--org", org_, "The organisation the key must belong to");
  keys_revoke_->add_option("key_id", key_id_, "The key's id (the 12 characters after gvg_)")->required();
}

bool GatewayCommand::parsed() const { return gateway_->parsed(); }

int GatewayCommand::Run(const config::Config& cfg) {
  if (keys_create_->parsed()) return KeysCreate(cfg);
  if (keys_list_->parsed()) return KeysList(cfg);
  if (keys_revoke_->parsed()) return KeysRevoke(cfg);
  return 2;
}

int GatewayCommand::KeysCreate(const config::Config& cfg) {
  // Refuse a bad name before starting a database for it.
  if (Status s = service_keys::ValidateOrg(org_); !s.ok()) {
    std::fprintf(stderr, "govern: %s\n", s.message().c_str());
    return 2;
  }
  KeyStore store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  const service_keys::KeyTable& table = gateway::GatewayKeyTable();
  auto key = service_keys::CreateKey(store.conn(), table, org_, kScope, name_);
  if (!key.ok()) return Fail(key.status());
  std::printf("%s\n", key->c_str());
  std::fflush(stdout);
  std::fprintf(stderr,
               "created gateway key %s for organisation %s; it is shown only this once (only its hash is "
               "stored); running gateways accept it within gateway.keys.reload_interval\n",
               std::string(service_keys::ParseKey(table, *key)->key_id).c_str(), org_.c_str());
  return 0;
}

int GatewayCommand::KeysList(const config::Config& cfg) {
  KeyStore store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  auto keys = service_keys::ListKeys(store.conn(), gateway::GatewayKeyTable(), org_);
  if (!keys.ok()) return Fail(keys.status());
  std::printf("%-12s  %-20s  %-6s  %-20s  %-20s  %s\n", "KEY_ID", "ORG", "SCOPE", "CREATED", "REVOKED",
              "NAME");
  for (const auto& k : *keys) {
    std::printf("%-12s  %-20s  %-6s  %-20s  %-20s  %s\n", k.key_id.c_str(), k.org.c_str(), k.scope.c_str(),
                k.created_at.c_str(), k.revoked_at.value_or("-").c_str(), k.name.c_str());
  }
  return 0;
}

int GatewayCommand::KeysRevoke(const config::Config& cfg) {
  KeyStore store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  const service_keys::KeyTable& table = gateway::GatewayKeyTable();
  if (!org_.empty()) {
    // --org: only a key of that organisation (a mistyped id must not revoke another's key).
    auto keys = service_keys::ListKeys(store.conn(), table, org_);
    if (!keys.ok()) return Fail(keys.status());
    bool found = false;
    for (const auto& k : *keys) found = found || k.key_id == key_id_;
    if (!found) return Fail(NotFound("organisation " + org_ + " has no gateway key " + key_id_));
  }
  if (Status s = service_keys::RevokeKey(store.conn(), table, key_id_); !s.ok()) return Fail(s);
  std::printf("revoked %s (running gateways refuse it within gateway.keys.reload_interval, %lld ms)\n",
              key_id_.c_str(),
              static_cast<long long>(cfg.GetDuration("gateway.keys.reload_interval").count()));
  return 0;
}

}  // namespace govern::cli
