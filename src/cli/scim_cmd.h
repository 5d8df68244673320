// `govern scim ...`: the bearer keys (gvs_) identity providers provision with.
//
//   govern scim key create --org ORG [--name N]   prints the key, once (only its hash is stored)
//   govern scim key list [--org ORG]
//   govern scim key revoke KEY_ID                  the running service refuses it within seconds
//   govern scim entities --org ORG [--out FILE]    the directory as Cedar entities (JSON), for
//                                                  `govern policy` requests and bundles
//
// The commands use the same database as `govern serve` (database.url or the private cluster under
// data_dir) and apply the scim migrations first. `keys` is accepted for `key`, as the other services
// spell it.
#pragma once

#include <optional>
#include <string>

#include "cli/service_keys_cmd.h"
#include "config/config.h"

namespace CLI {
class App;
}  // namespace CLI

namespace govern::cli {

class ScimCommand {
 public:
  explicit ScimCommand(CLI::App& app);
  bool parsed() const;
  // Runs it; returns the exit code.
  int Run(const config::Config& cfg);

 private:
  int Entities(const config::Config& cfg);

  CLI::App* scim_ = nullptr;
  std::optional<ServiceKeysCommand> keys_;
  CLI::App* entities_ = nullptr;
  std::string out_;
  std::string org_;
};

}  // namespace govern::cli
