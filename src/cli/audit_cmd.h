// `govern audit ...`: API keys, export, offline and in-database verification, checkpoints, retention.
//
//   govern audit keys create --org ORG [--scope append|read] [--name N]   prints the key, once
//   govern audit keys list [--org ORG]
//   govern audit keys revoke KEY_ID
//   govern audit export --org ORG [--from-db | --url URL --key gva_...] [--out FILE]   (stdout by default)
//   govern audit verify FILE --key PUB [--checkpoints DIR]   offline; PUB is the verifier key or a file
//   govern audit verify --org ORG                           straight from PostgreSQL, against the
//                                                           checkpoints there and in audit.checkpoint_dir
//   govern audit checkpoint --org ORG                       sign the current head now
//   govern audit retention --org ORG --keep 90d|forever|default [--apply]
//
// verify exits 0 when everything checks, 1 naming the first bad entry, 2 for bad usage. The database
// commands use the same database as `govern serve` (database.url or the private cluster under data_dir)
// and apply the audit migrations first.
#pragma once

#include <optional>
#include <string>

#include "cli/service_keys_cmd.h"
#include "config/config.h"

namespace CLI {
class App;
}  // namespace CLI

namespace govern::cli {

class AuditCommand {
 public:
  explicit AuditCommand(CLI::App& app);
  bool parsed() const;
  // Runs it; returns the exit code.
  int Run(const config::Config& cfg);

 private:
  int Export(const config::Config& cfg);
  int Verify(const config::Config& cfg);
  int Checkpoint(const config::Config& cfg);
  int Retention(const config::Config& cfg);

  CLI::App* audit_ = nullptr;
  std::optional<ServiceKeysCommand> keys_;
  CLI::App* export_ = nullptr;
  CLI::App* verify_ = nullptr;
  CLI::App* checkpoint_ = nullptr;
  CLI::App* retention_ = nullptr;
  std::string org_;
  std::string url_;
  std::string key_;
  std::string out_;
  std::string file_;
  std::string checkpoints_;
  std::string keep_;
  bool from_db_ = false;
  bool apply_ = false;
};

}  // namespace govern::cli
