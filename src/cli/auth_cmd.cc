// `govern auth ...`: organisations, users, groups, clients and admin tokens from the command line.
#include "cli/auth_cmd.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/database.h"
#include "crypto/password.h"
#include "db/connection.h"
#include "db/migrator.h"
#include "services/auth/factors.h"
#include "services/auth/schema.h"
#include "services/auth/store.h"

namespace govern::cli {
namespace {

using json = nlohmann::json;
namespace auth = govern::auth_service;

int Fail(const Status& s) {
  std::fprintf(stderr, "govern: %s\n", s.message().c_str());
  return 1;
}

int Print(const json& j) {
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}

json UserJson(const auth::User& u) {
  return {{"user_id", u.user_id},
          {"org", u.org},
          {"email", u.email},
          {"subject", u.subject},
          {"display_name", u.display_name},
          {"disabled", u.disabled},
          {"has_password", !u.password_hash.empty()}};
}

json ClientJson(const auth::Client& c) {
  return {{"client_id", c.client_id},
          {"org", c.org},
          {"name", c.name},
          {"kind", c.kind == auth::ClientKind::kAgent ? "agent" : "app"},
          {"confidential", c.confidential},
          {"scopes", c.scopes},
          {"redirect_uris", c.redirect_uris},
          {"disabled", c.disabled}};
}

// The database `govern serve` uses, with the auth tables in place.
class Store : public ServiceDatabase {
 public:
  Status Open(const config::Config& cfg) { return ServiceDatabase::Open(cfg, "auth", auth::Migrations()); }
};

}  // namespace

AuthCommand::AuthCommand(CLI::App& app) {
  auth_ = app.add_subcommand("auth",
                             "Sign-in and tokens: organisations, users, groups, OAuth clients, admin tokens");
  auth_->require_subcommand(1);
  admin_token_ =
      auth_->add_subcommand("admin-token", "Create a token for the auth admin API and print it (once)");
  admin_token_->add_option("--name", name_, "A note saying who holds it");

  CLI::App* org = auth_->add_subcommand("org", "Organisations");
  org->require_subcommand(1);
  org_create_ = org->add_subcommand("create", "Create an organisation");
  org_create_->add_option("org", org_, "Its id: 1-63 of a-z, 0-9, '_', '-'")->required();
  org_create_->add_option("--name", name_, "Display name");
  org_list_ = org->add_subcommand("list", "List organisations");

  CLI::App* user = auth_->add_subcommand("user", "Users");
  user->require_subcommand(1);
  user_create_ = user->add_subcommand("create", "Create a user");
  user_create_->add_option("--org", org_, "Organisation")->required();
  user_create_->add_option("--email", email_, "Email (the sign-in name)")->required();
  user_create_->add_option("--name", name_, "Display name");
  user_create_->add_flag("--password-stdin", password_stdin_, "Read a password from the first line of stdin");
  user_list_ = user->add_subcommand("list", "List an organisation's users");
  user_list_->add_option("--org", org_, "Organisation")->required();
  user_disable_ = user->add_subcommand("disable", "Disable a user (sign-in and refresh refused)");
  user_disable_->add_option("--org", org_, "Organisation")->required();
  user_disable_->add_option("user_id", arg_, "usr_...")->required();

  CLI::App* group = auth_->add_subcommand("group", "Groups");
  group->require_subcommand(1);
  group_create_ = group->add_subcommand("create", "Create a group");
  group_create_->add_option("--org", org_, "Organisation")->required();
  group_create_->add_option("name", name_, "Group name")->required();
  group_add_ = group->add_subcommand("add", "Add a user to a group");
  group_add_->add_option("--org", org_, "Organisation")->required();
  group_add_->add_option("--group", group_, "Group name")->required();
  group_add_->add_option("user_id", arg_, "usr_...")->required();

  CLI::App* client = auth_->add_subcommand("client", "OAuth clients: agents (client credentials) and apps");
  client->require_subcommand(1);
  client_create_ = client->add_subcommand("create", "Create a client and print its id and secret (once)");
  client_create_->add_option("--org", org_, "Organisation")->required();
  client_create_->add_option("--kind", kind_, "agent (service account) or app (user-facing)")
      ->check(CLI::IsMember({"agent", "app"}));
  client_create_->add_option("--name", name_, "Display name");
  client_create_->add_flag("--public", public_, "An app without a secret (PKCE only: browser or native app)");
  client_create_->add_option("--scope", scopes_, "A scope it may ask for (repeatable)");
  client_create_->add_option("--redirect-uri", redirects_, "An exact redirect URI (repeatable; apps)");
  client_list_ = client->add_subcommand("list", "List an organisation's clients (never secrets)");
  client_list_->add_option("--org", org_, "Organisation")->required();

  CLI::App* factor = auth_->add_subcommand("factor", "A user's sign-in factors (password, TOTP, passkeys)");
  factor->require_subcommand(1);
  factor_list_ = factor->add_subcommand("list", "List a user's factors and the record of removals");
  factor_list_->add_option("--org", org_, "Organisation")->required();
  factor_list_->add_option("user_id", arg_, "usr_...")->required();
  factor_remove_ = factor->add_subcommand(
      "remove", "Remove a factor; ends the user's sessions and revokes their refresh tokens");
  factor_remove_->add_option("--org", org_, "Organisation")->required();
  factor_remove_->add_option("--kind", kind_, "password, totp or passkey")
      ->required()
      ->check(CLI::IsMember({"password", "totp", "passkey"}));
  factor_remove_->add_option("--id", factor_id_, "The passkey's credential id (base64url, from factor list)");
  factor_remove_->add_flag("--force", force_, "Allow removing the user's last way to sign in");
  factor_remove_->add_option("--reason", reason_, "Why (kept in the record)");
  factor_remove_->add_option("user_id", arg_, "usr_...")->required();
}

bool AuthCommand::parsed() const { return auth_->parsed(); }

int AuthCommand::Run(const config::Config& cfg) {
  Store store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  db::Connection& c = store.conn();
  if (admin_token_->parsed()) {
    auto t = auth::CreateAdminToken(c, name_);
    if (!t.ok()) return Fail(t.status());
    return Print({{"admin_token", *t}});
  }
  if (org_create_->parsed()) {
    if (Status s = auth::CreateOrg(c, org_, name_); !s.ok()) return Fail(s);
    return Print({{"org", org_}, {"name", name_}});
  }
  if (org_list_->parsed()) {
    auto orgs = auth::ListOrgs(c);
    if (!orgs.ok()) return Fail(orgs.status());
    json out = json::array();
    for (const auto& o : *orgs) out.push_back({{"org", o.org}, {"name", o.name}});
    return Print({{"orgs", out}});
  }
  if (user_create_->parsed()) {
    std::string hash;
    if (password_stdin_) {
      std::string password;
      std::getline(std::cin, password);
      if (password.size() < 8 || password.size() > 1024)
        return Fail(InvalidArgument("password must be 8-1024 bytes"));
      crypto::Argon2Params p;
      p.memory_kib = static_cast<uint32_t>(cfg.GetBytes("auth.argon2.memory") / 1024);
      p.passes = static_cast<uint32_t>(cfg.GetInt("auth.argon2.passes"));
      p.lanes = static_cast<uint32_t>(cfg.GetInt("auth.argon2.lanes"));
      auto h = crypto::HashPassword(password, p);
      if (!h.ok()) return Fail(h.status());
      hash = *h;
    }
    auto u = auth::CreateUser(c, org_, email_, name_, hash);
    if (!u.ok()) return Fail(u.status());
    return Print(UserJson(*u));
  }
  if (user_list_->parsed()) {
    auto users = auth::ListUsers(c, org_);
    if (!users.ok()) return Fail(users.status());
    json out = json::array();
    for (const auto& u : *users) out.push_back(UserJson(u));
    return Print({{"users", out}});
  }
  if (user_disable_->parsed()) {
    auto u = auth::GetUser(c, arg_);
    if (!u.ok() || u->org != org_) return Fail(NotFound("no user " + arg_ + " in " + org_));
    if (Status s = auth::SetUserDisabled(c, arg_, true); !s.ok()) return Fail(s);
    return Print({{"user_id", arg_}, {"disabled", true}});
  }
  if (group_create_->parsed()) {
    if (Status s = auth::CreateGroup(c, org_, name_); !s.ok()) return Fail(s);
    return Print({{"org", org_}, {"group", name_}});
  }
  if (group_add_->parsed()) {
    if (Status s = auth::AddMember(c, org_, group_, arg_); !s.ok()) return Fail(s);
    return Print({{"org", org_}, {"group", group_}, {"user_id", arg_}});
  }
  if (client_create_->parsed()) {
    auth::ClientKind kind = kind_ == "app" ? auth::ClientKind::kApp : auth::ClientKind::kAgent;
    auto made = auth::CreateClient(c, org_, name_, kind, !public_, scopes_, redirects_);
    if (!made.ok()) return Fail(made.status());
    json out = ClientJson(made->client);
    if (!made->secret.empty()) out["client_secret"] = made->secret;
    return Print(out);
  }
  if (client_list_->parsed()) {
    auto clients = auth::ListClients(c, org_);
    if (!clients.ok()) return Fail(clients.status());
    json out = json::array();
    for (const auto& cl : *clients) out.push_back(ClientJson(cl));
    return Print({{"clients", out}});
  }
  if (factor_list_->parsed() || factor_remove_->parsed()) {
    auto u = auth::GetUser(c, arg_);
    if (!u.ok() || u->org != org_) return Fail(NotFound("no user " + arg_ + " in " + org_));
    if (factor_list_->parsed()) {
      auto factors = auth::ListFactors(c, arg_);
      if (!factors.ok()) return Fail(factors.status());
      auto events = auth::ListFactorEvents(c, arg_, 50);
      if (!events.ok()) return Fail(events.status());
      json fs = json::array(), es = json::array();
      for (const auto& f : *factors) {
        json j = {{"kind", auth::FactorKindName(f.kind)}};
        if (!f.id.empty()) j["id"] = f.id;
        if (f.kind == auth::FactorKind::kTotp) j["confirmed"] = f.confirmed;
        if (f.kind == auth::FactorKind::kPasskey) j["created_at"] = f.created_at;
        fs.push_back(j);
      }
      for (const auto& e : *events) {
        es.push_back({{"seq", e.seq},
                      {"at", e.at},
                      {"factor", e.factor},
                      {"id", e.factor_id},
                      {"actor", e.actor},
                      {"forced", e.forced},
                      {"reason", e.reason}});
      }
      return Print({{"user_id", arg_}, {"factors", fs}, {"events", es}});
    }
    auto kind = auth::ParseRemovableFactorKind(kind_);
    if (!kind.ok()) return Fail(kind.status());
    if ((*kind == auth::FactorKind::kPasskey) != !factor_id_.empty())
      return Fail(InvalidArgument("--id names a passkey, and only a passkey"));
    const char* login = std::getenv("USER");
    std::string actor = "cli:" + (login != nullptr && *login != '\0' ? std::string(login)
                                                                     : "uid " + std::to_string(getuid()));
    int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    auto lifetime =
        std::chrono::duration_cast<std::chrono::seconds>(cfg.GetDuration("auth.access_token_lifetime"));
    auto removed = auth::RemoveFactor(c, {arg_, *kind, factor_id_, force_, actor, reason_}, now,
                                      now + lifetime.count() + 60);
    if (!removed.ok()) {
      if (removed.status().code() == Code::kFailedPrecondition)
        std::fprintf(stderr, "govern: %s (--force)\n", removed.status().message().c_str());
      else
        Fail(removed.status());
      return 1;
    }
    return Print({{"user_id", arg_},
                  {"removed", kind_},
                  {"id", factor_id_},
                  {"forced", removed->was_last},
                  {"sessions_ended", removed->sessions_ended},
                  {"refresh_families_revoked", removed->refresh_families_revoked},
                  {"event", removed->event}});
  }
  return 2;
}

}  // namespace govern::cli
