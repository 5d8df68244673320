// `govern scim ...`: the SCIM service's bearer keys.
#include "cli/scim_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/database.h"
#include "db/connection.h"
#include "db/migrator.h"
#include "base/file.h"
#include "db/pool.h"
#include "services/keys/keys.h"
#include "services/scim/schema.h"
#include "services/scim/store.h"

namespace govern::cli {
namespace {

int Fail(const Status& s) {
  std::fprintf(stderr, "govern: %s\n", s.message().c_str());
  return 1;
}

// A connection to the database `govern serve` uses, with the scim tables in place.
class ScimDatabase : public ServiceDatabase {
 public:
  Status Open(const config::Config& cfg) { return ServiceDatabase::Open(cfg, "scim", scim_service::Migrations()); }
};

}  // namespace

ScimCommand::ScimCommand(CLI::App& app) {
  scim_ = app.add_subcommand("scim", "Directory sync (SCIM 2.0): the bearer keys identity providers use");
  scim_->require_subcommand(1);
  CLI::App* key = scim_->add_subcommand(
      "key",
      "SCIM bearer keys (gvs_): one organisation each, stored hashed; the key decides the organisation");
  key->alias("keys");
  key->require_subcommand(1);
  create_ = key->add_subcommand("create", "Create a key and print it (the only time it is shown)");
  create_->add_option("--org", org_, "Organisation the identity provider provisions into")->required();
  create_->add_option("--name", name_, "A note saying what the key is for (okta, entra, ...)");
  list_ = key->add_subcommand("list", "List keys (ids, organisations; never secrets)");
  list_->add_option("--org", org_, "Only this organisation's keys");
  revoke_ = key->add_subcommand("revoke", "Revoke a key (by its id, from `govern scim key list`)");
  revoke_->add_option("key_id", key_id_, "The key's id")->required();
  entities_ = scim_->add_subcommand(
      "entities",
      "Print an organisation's directory as Cedar entities (JSON): users with the groups they are in as "
      "parents, groups with the groups containing them, so `principal in Group::\"eng\"` follows nesting");
  entities_->add_option("--org", org_, "Organisation")->required();
  entities_->add_option("--out", out_, "Write to this file (durably) instead of standard output");
}

bool ScimCommand::parsed() const { return scim_->parsed(); }

int ScimCommand::Run(const config::Config& cfg) {
  if (create_->parsed()) return KeyCreate(cfg);
  if (list_->parsed()) return KeyList(cfg);
  if (revoke_->parsed()) return KeyRevoke(cfg);
  if (entities_->parsed()) return Entities(cfg);
  return 2;
}

int ScimCommand::KeyCreate(const config::Config& cfg) {
  ScimDatabase store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  const service_keys::KeyTable& table = scim_service::ScimKeyTable();
  auto key = service_keys::CreateKey(store.conn(), table, org_, "sync", name_);
  if (!key.ok()) return Fail(key.status());
  std::printf("%s\n", key->c_str());
  std::fflush(stdout);
  std::fprintf(stderr,
               "created SCIM key %s for organisation %s; it is shown only this once (only its hash is "
               "stored)\n",
               std::string(service_keys::ParseKey(table, *key)->key_id).c_str(), org_.c_str());
  return 0;
}

int ScimCommand::KeyList(const config::Config& cfg) {
  ScimDatabase store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  auto keys = service_keys::ListKeys(store.conn(), scim_service::ScimKeyTable(), org_);
  if (!keys.ok()) return Fail(keys.status());
  std::printf("%-12s  %-20s  %-20s  %-20s  %s\n", "KEY_ID", "ORG", "CREATED", "REVOKED", "NAME");
  for (const auto& k : *keys) {
    std::printf("%-12s  %-20s  %-20s  %-20s  %s\n", k.key_id.c_str(), k.org.c_str(), k.created_at.c_str(),
                k.revoked_at.value_or("-").c_str(), k.name.c_str());
  }
  return 0;
}

int ScimCommand::KeyRevoke(const config::Config& cfg) {
  ScimDatabase store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  if (Status s = service_keys::RevokeKey(store.conn(), scim_service::ScimKeyTable(), key_id_); !s.ok())
    return Fail(s);
  std::printf("revoked %s (the running scim service refuses it within 10 s)\n", key_id_.c_str());
  return 0;
}

int ScimCommand::Entities(const config::Config& cfg) {
  ScimDatabase store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  auto pool = db::Pool::Create({.conninfo = store.conninfo(), .max_size = 1});
  if (!pool.ok()) return Fail(pool.status().WithContext("connect to PostgreSQL"));
  if (Status s = scim_service::PrepareAuthTables(**pool); !s.ok()) return Fail(s);
  nlohmann::json entities;
  scim::Error e = scim_service::Store(pool->get()).PolicyEntities(org_, &entities);
  if (!e.ok()) return Fail(Internal("reading the directory of " + org_ + ": " + e.detail));
  std::string text = entities.dump(2) + "\n";
  if (out_.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  if (Status s = ReplaceFileDurably(out_, text); !s.ok()) return Fail(s);
  std::fprintf(stderr, "wrote %zu entities of %s to %s\n", entities.size(), org_.c_str(), out_.c_str());
  return 0;
}

}  // namespace govern::cli
