// `govern <service> keys create|list|revoke`: a service's API keys from the command line.
#include "cli/service_keys_cmd.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <utility>

#include "cli/database.h"
#include "db/migrator.h"
#include "services/keys/keys.h"

namespace govern::cli {

ServiceKeysCommand::ServiceKeysCommand(CLI::App& parent, Options options) : options_(std::move(options)) {
  scope_ = options_.scope;
  CLI::App* keys = parent.add_subcommand(options_.command, options_.keys_help);
  if (!options_.alias.empty()) keys->alias(options_.alias);
  keys->require_subcommand(1);
  create_ = keys->add_subcommand("create", "Create a key and print it (the only time it is shown)");
  create_->add_option("--org", org_, options_.org_help)->required();
  if (!options_.scope_help.empty()) {
    CLI::Option* scope = create_->add_option("--scope", scope_, options_.scope_help);
    if (options_.scope_required) scope->required();
    scope->check(CLI::IsMember(options_.table->scopes));
  }
  create_->add_option("--name", name_, options_.name_help);
  list_ = keys->add_subcommand("list", options_.scope_help.empty()
                                           ? "List keys (ids, organisations; never secrets)"
                                           : "List keys (ids, organisations, scopes; never secrets)");
  list_->add_option("--org", org_, "Only this organisation's keys");
  revoke_ = keys->add_subcommand("revoke", options_.revoke_help);
  if (!options_.revoke_org_help.empty()) revoke_->add_option("--org", org_, options_.revoke_org_help);
  revoke_->add_option("key_id", key_id_, options_.key_id_help)->required();
}

bool ServiceKeysCommand::parsed() const { return create_->parsed() || list_->parsed() || revoke_->parsed(); }

int ServiceKeysCommand::Run(const config::Config& cfg) {
  if (create_->parsed()) return Create(cfg);
  if (list_->parsed()) return List(cfg);
  if (revoke_->parsed()) return Revoke(cfg);
  return 2;
}

int ServiceKeysCommand::Create(const config::Config& cfg) {
  const service_keys::KeyTable& table = *options_.table;
  // Refuse a bad name before starting a database for it.
  if (Status s = service_keys::ValidateOrg(org_); !s.ok()) return Fail(s, 2);
  if (Status s = table.CheckScope(scope_); !s.ok()) return Fail(s);
  ServiceDatabase store;
  if (Status s = store.Open(cfg, options_.service, options_.migrations()); !s.ok()) return Fail(s);
  auto key = service_keys::CreateKey(store.conn(), table, org_, scope_, name_);
  if (!key.ok()) return Fail(key.status());
  std::printf("%s\n", key->c_str());
  std::fflush(stdout);
  std::fprintf(stderr,
               "created %s key %s for organisation %s; it is shown only this once%s%s\n",
               options_.kind.empty() ? scope_.c_str() : options_.kind.c_str(),
               std::string(service_keys::ParseKey(table, *key)->key_id).c_str(), org_.c_str(),
               options_.says_hashed ? " (only its hash is stored)" : "", options_.created_note.c_str());
  return 0;
}

int ServiceKeysCommand::List(const config::Config& cfg) {
  ServiceDatabase store;
  if (Status s = store.Open(cfg, options_.service, options_.migrations()); !s.ok()) return Fail(s);
  auto keys = service_keys::ListKeys(store.conn(), *options_.table, org_);
  if (!keys.ok()) return Fail(keys.status());
  // KEY_ID  ORG  [SCOPE]  CREATED  REVOKED  NAME, each but the last padded.
  auto row = [&](const std::string& id, const std::string& org, const std::string& scope,
                 const std::string& created, const std::string& revoked, const std::string& name) {
    std::printf("%-12s  %-20s  ", id.c_str(), org.c_str());
    if (options_.list_scope) std::printf("%-*s  ", options_.scope_width, scope.c_str());
    std::printf("%-20s  %-20s  %s\n", created.c_str(), revoked.c_str(), name.c_str());
  };
  row("KEY_ID", "ORG", "SCOPE", "CREATED", "REVOKED", "NAME");
  for (const auto& k : *keys) row(k.key_id, k.org, k.scope, k.created_at, k.revoked_at.value_or("-"), k.name);
  return 0;
}

int ServiceKeysCommand::Revoke(const config::Config& cfg) {
  const service_keys::KeyTable& table = *options_.table;
  ServiceDatabase store;
  if (Status s = store.Open(cfg, options_.service, options_.migrations()); !s.ok()) return Fail(s);
  if (!org_.empty()) {
    // --org: only a key of that organisation (a mistyped id must not revoke another's key).
    auto keys = service_keys::ListKeys(store.conn(), table, org_);
    if (!keys.ok()) return Fail(keys.status());
    bool found = false;
    for (const auto& k : *keys) found = found || k.key_id == key_id_;
    if (!found)
      return Fail(NotFound("organisation " + org_ + " has no " + options_.kind + " key " + key_id_));
  }
  if (Status s = service_keys::RevokeKey(store.conn(), table, key_id_); !s.ok()) return Fail(s);
  if (options_.ttl_key.empty()) {
    // The services verify these keys through a KeyCache with its default TTL.
    auto ttl = std::chrono::duration_cast<std::chrono::seconds>(service_keys::KeyCacheOptions{}.ttl);
    std::printf("revoked %s (%s it within %lld s)\n", key_id_.c_str(), options_.refusal.c_str(),
                static_cast<long long>(ttl.count()));
  } else {
    std::printf("revoked %s (%s it within %s, %lld ms)\n", key_id_.c_str(), options_.refusal.c_str(),
                options_.ttl_key.c_str(), static_cast<long long>(cfg.GetDuration(options_.ttl_key).count()));
  }
  return 0;
}

int ServiceKeysCommand::Fail(const Status& s, int code) const {
  std::fprintf(stderr, "%s%s\n", options_.error_prefix.c_str(), s.message().c_str());
  return code;
}

}  // namespace govern::cli
