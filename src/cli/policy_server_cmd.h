// `govern policy-server ...`: the bundle server's API keys.
//
//   govern policy-server keys create --org ORG --scope publish|fetch [--name N]   prints the key, once
//   govern policy-server keys list [--org ORG]
//   govern policy-server keys revoke KEY_ID
//
// The commands use the same database as `govern serve policy` (database.url or the private cluster under
// data_dir) and apply the policy server's migrations first, so they work before the service ever ran.
// A revoked key is refused from the next request on (the server asks PostgreSQL per request).
#pragma once

#include <string>

#include "config/config.h"

namespace CLI {
class App;
}  // namespace CLI

namespace govern::cli {

class PolicyServerCommand {
 public:
  explicit PolicyServerCommand(CLI::App& app);
  bool parsed() const;
  // Returns the exit code (0 ok, 1 a runtime failure, 2 bad usage).
  int Run(const config::Config& cfg);

 private:
  CLI::App* root_ = nullptr;
  CLI::App* create_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* revoke_ = nullptr;
  std::string org_;
  std::string scope_;
  std::string name_;
  std::string key_id_;
};

}  // namespace govern::cli
