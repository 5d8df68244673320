// `govern policy-server ...`: the bundle server's API keys.
//
//   govern policy-server keys create --org ORG --scope publish|fetch [--name N]   prints the key, once
//   govern policy-server keys list [--org ORG]
//   govern policy-server keys revoke KEY_ID
//
// The commands use the same database as `govern serve policy` (database.url or the private cluster under
// data_dir) and apply the policy server's migrations first, so they work before the service ever ran.
// A running server refuses a revoked key within policy.server.key_cache_ttl (cli/service_keys_cmd.h).
#pragma once

#include <optional>

#include "cli/service_keys_cmd.h"
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
  std::optional<ServiceKeysCommand> keys_;
};

}  // namespace govern::cli
