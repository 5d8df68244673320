// `govern gateway keys ...`: gateway API keys from the keys service (services/gateway/service_keys.h,
// docs/gateway.md "Gateway API keys from the keys service").
//
//   govern gateway keys create --org ORG [--name N]   prints the key (gvg_...), once
//   govern gateway keys list [--org ORG]
//   govern gateway keys revoke [--org ORG] KEY_ID
//
// They use the same database as `govern serve` (database.url or the private cluster under data_dir) and
// apply the gateway migrations first, so they work before the gateway ever ran. A running gateway picks
// a change up within gateway.keys.reload_interval.
#pragma once

#include <optional>

#include "cli/service_keys_cmd.h"
#include "config/config.h"

namespace CLI {
class App;
}  // namespace CLI

namespace govern::cli {

class GatewayCommand {
 public:
  // Adds the subcommands to `app`.
  explicit GatewayCommand(CLI::App& app);
  // The command line asked for `govern gateway ...`.
  bool parsed() const;
  // Runs it; returns the exit code (0 ok, 1 a runtime failure, 2 bad usage).
  int Run(const config::Config& cfg);

 private:
  CLI::App* gateway_ = nullptr;
  std::optional<ServiceKeysCommand> keys_;
};

}  // namespace govern::cli
