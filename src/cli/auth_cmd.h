// `govern auth ...`: the auth service's directory from the command line (same database as `govern
// serve`, migrations applied first, so it works before the service ever ran).
//
//   govern auth admin-token [--name N]                       prints a token for the admin API, once
//   govern auth org create ORG [--name N]
//   govern auth org list
//   govern auth user create --org O --email E [--name N] [--password-stdin]
//   govern auth user list --org O
//   govern auth user disable --org O USER_ID
//   govern auth group create --org O NAME
//   govern auth group add --org O --group G USER_ID
//   govern auth client create --org O --kind agent|app [--name N] [--public] [--scope S]... [--redirect-uri
//   U]...
//                                                            prints the client id and (confidential) secret,
//                                                            once
//   govern auth client list --org O
//   govern auth factor list --org O USER_ID                  the user's factors and the removal record
//   govern auth factor remove --org O --kind password|totp|passkey [--id CREDENTIAL_ID] [--force]
//                             [--reason R] USER_ID           removes one (services/auth/factors.h rules)
//
// Output is JSON, one object per command. Exit codes: 0 ok, 1 refused or failed, 2 bad usage.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace CLI {
class App;
}  // namespace CLI

namespace govern::cli {

class AuthCommand {
 public:
  explicit AuthCommand(CLI::App& app);
  bool parsed() const;
  int Run(const config::Config& cfg);

 private:
  CLI::App* auth_ = nullptr;
  CLI::App* admin_token_ = nullptr;
  CLI::App* org_create_ = nullptr;
  CLI::App* org_list_ = nullptr;
  CLI::App* user_create_ = nullptr;
  CLI::App* user_list_ = nullptr;
  CLI::App* user_disable_ = nullptr;
  CLI::App* group_create_ = nullptr;
  CLI::App* group_add_ = nullptr;
  CLI::App* client_create_ = nullptr;
  CLI::App* client_list_ = nullptr;
  CLI::App* factor_list_ = nullptr;
  CLI::App* factor_remove_ = nullptr;
  std::string org_, name_, email_, group_, kind_ = "agent", arg_;
  std::vector<std::string> scopes_, redirects_;
  bool password_stdin_ = false;
  bool public_ = false;
  std::string factor_id_, reason_;
  bool force_ = false;
};

}  // namespace govern::cli
