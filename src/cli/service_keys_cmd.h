// `govern <service> keys create|list|revoke`: one service's API keys (services/keys/keys.h) from the
// command line, shared by the services that hand keys to organisations (`govern gateway keys`,
// `govern telemetry keys`, `govern audit keys`, `govern policy-server keys`, `govern scim key`).
//
//   govern <service> keys create --org ORG [--scope S] [--name N]   prints the key, once
//   govern <service> keys list [--org ORG]
//   govern <service> keys revoke [--org ORG] KEY_ID
//
// They use the same database as `govern serve` (database.url or the private cluster under data_dir,
// ServiceDatabase) and apply the service's migrations first, so they work before the service ever ran.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace CLI {
class App;
}  // namespace CLI

namespace govern::db {
struct Migration;
}  // namespace govern::db

namespace govern::service_keys {
struct KeyTable;
}  // namespace govern::service_keys

namespace govern::cli {

class ServiceKeysCommand {
 public:
  struct Options {
    // The service's tables: ServiceDatabase::Open(cfg, service, migrations()).
    std::string service;
    std::vector<db::Migration> (*migrations)() = nullptr;
    // Its keys' table (the services return a static one: it outlives the command).
    const service_keys::KeyTable* table = nullptr;

    // The command's name under `govern <service>`, and another name it answers to (empty: none).
    std::string command = "keys";
    std::string alias;

    // --help texts: the `keys` command, `create --org`, `create --scope` (empty: create takes no
    // --scope and every key gets `scope`), `create --name`, `revoke`, its KEY_ID, and `revoke --org`
    // (empty: revoke takes no --org; given, only a key of that organisation is revoked).
    std::string keys_help;
    std::string org_help;
    std::string scope_help;
    std::string scope;  // the default of --scope, or the scope of every key
    bool scope_required = false;  // --scope has no default: create needs it
    std::string name_help = "A note saying what the key is for";
    std::string revoke_help;
    std::string key_id_help;
    std::string revoke_org_help;

    // `list`: whether it shows a SCOPE column, and how wide.
    bool list_scope = true;
    int scope_width = 6;

    // The messages. Errors: "<error_prefix>message". create: "created <kind> key ID for organisation
    // ORG; it is shown only this once (only its hash is stored)<created_note>", the key's scope when
    // `kind` is empty, without the parenthesis unless `says_hashed`. revoke: "revoked ID (<refusal> it
    // within <ttl_key>, N ms)", or within the key cache's default TTL when `ttl_key` (a duration
    // configuration key) is empty.
    std::string error_prefix = "govern: ";
    std::string kind;
    bool says_hashed = true;
    std::string created_note;
    std::string refusal = "running services refuse";
    std::string ttl_key;
  };

  // Adds `keys` and its subcommands to `parent` (the `govern <service>` command).
  ServiceKeysCommand(CLI::App& parent, Options options);
  ServiceKeysCommand(const ServiceKeysCommand&) = delete;
  ServiceKeysCommand& operator=(const ServiceKeysCommand&) = delete;

  // The command line asked for one of the subcommands.
  bool parsed() const;
  // Runs it; returns the exit code (0 ok, 1 a runtime failure, 2 bad usage).
  int Run(const config::Config& cfg);

 private:
  int Create(const config::Config& cfg);
  int List(const config::Config& cfg);
  int Revoke(const config::Config& cfg);
  // Prints "<error_prefix><message>" and returns `code`.
  int Fail(const Status& s, int code = 1) const;

  Options options_;
  CLI::App* create_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* revoke_ = nullptr;
  std::string org_;
  std::string scope_;
  std::string name_;
  std::string key_id_;
};

}  // namespace govern::cli
