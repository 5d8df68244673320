// `govern telemetry ...`: API keys (create, list, revoke) and a look into the write-ahead log.
//
//   govern telemetry keys create --org ORG [--scope ingest|query] [--name N]   prints the key, once
//   govern telemetry keys list [--org ORG]
//   govern telemetry keys revoke KEY_ID
//   govern telemetry wal inspect [--from SEQ] [--limit N] [--events]
//   govern telemetry ingest status|replay --from SEQ|skip --seq SEQ [--cursor NAME]
//   govern telemetry export --org ORG --hour 2026-11-30T14 --out FILE.parquet
//   govern telemetry dlp-policy get|set FILE|delete --org ORG
//
// The keys commands use the same database as `govern serve` (database.url or the private cluster under
// data_dir) and apply the telemetry migrations first, so they work before the service ever ran.
// `wal inspect` needs no database; it and `ingest` take the WAL's lock, so they refuse (exit 1) while
// the service runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/service_keys_cmd.h"
#include "config/config.h"

namespace CLI {
class App;
}  // namespace CLI

namespace govern::cli {

class TelemetryCommand {
 public:
  // Adds the subcommands to `app`.
  explicit TelemetryCommand(CLI::App& app);
  // The command line asked for `govern telemetry ...`.
  bool parsed() const;
  // Runs it; returns the exit code (0 ok, 1 a runtime failure, 2 bad usage).
  int Run(const config::Config& cfg);

 private:
  int WalInspect(const config::Config& cfg);
  int Ingest(const config::Config& cfg);
  int Export(const config::Config& cfg);
  int DlpPolicy(const config::Config& cfg);

  CLI::App* telemetry_ = nullptr;
  std::optional<ServiceKeysCommand> keys_;
  CLI::App* wal_inspect_ = nullptr;
  CLI::App* ingest_status_ = nullptr;
  CLI::App* ingest_replay_ = nullptr;
  CLI::App* ingest_skip_ = nullptr;
  CLI::App* export_ = nullptr;
  CLI::App* dlp_get_ = nullptr;
  CLI::App* dlp_set_ = nullptr;
  CLI::App* dlp_delete_ = nullptr;
  std::string cursor_;
  std::string hour_;
  std::string out_;
  std::string file_;
  std::string org_;
  uint64_t from_ = 1;
  uint64_t limit_ = 0;
  bool events_ = false;
};

}  // namespace govern::cli
