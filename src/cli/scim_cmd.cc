// `govern scim ...`: the SCIM service's bearer keys and directory.
#include "cli/scim_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "base/file.h"
#include "cli/database.h"
#include "db/migrator.h"
#include "db/pool.h"
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
  keys_.emplace(*scim_,
                ServiceKeysCommand::Options{
                    .service = "scim",
                    .migrations = scim_service::Migrations,
                    .table = &scim_service::ScimKeyTable(),
                    .command = "key",
                    .alias = "keys",
                    .keys_help = "SCIM bearer keys (gvs_): one organisation each, stored hashed; the key "
                                 "decides the organisation",
                    .org_help = "Organisation the identity provider provisions into",
                    .scope = "sync",
                    .name_help = "A note saying what the key is for (okta, entra, ...)",
                    .revoke_help = "Revoke a key (by its id, from `govern scim key list`)",
                    .key_id_help = "The key's id",
                    .list_scope = false,
                    .kind = "SCIM",
                    .refusal = "the running scim service refuses"});
  entities_ = scim_->add_subcommand(
      "entities",
      "Print an organisation's directory as Cedar entities (JSON): users with the groups they are in as "
      "parents, groups with the groups containing them, so `principal in Group::\"eng\"` follows nesting");
  entities_->add_option("--org", org_, "Organisation")->required();
  entities_->add_option("--out", out_, "Write to this file (durably) instead of standard output");
}

bool ScimCommand::parsed() const { return scim_->parsed(); }

int ScimCommand::Run(const config::Config& cfg) {
  if (keys_->parsed()) return keys_->Run(cfg);
  if (entities_->parsed()) return Entities(cfg);
  return 2;
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
