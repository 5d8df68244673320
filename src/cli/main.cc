// The govern binary: every service in one executable. Parses the command line, loads configuration,
// and hands over to the command that was asked for.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/log.h"
#include "cli/auth_cmd.h"
#include "cli/bundle_cmd.h"
#include "cli/keys.h"
#include "cli/policy_cmd.h"
#include "cli/policy_server_cmd.h"
#include "cli/run.h"
#include "cli/audit_cmd.h"
#include "cli/streams_cmd.h"
#include "cli/gateway_cmd.h"
#include "cli/scim_cmd.h"
#include "cli/telemetry_cmd.h"
#include "config/config.h"

#ifndef GOVERN_VERSION
#define GOVERN_VERSION "0.0.0"
#endif

namespace govern::cli {
namespace {

struct GlobalFlags {
  std::string config_file;
  std::vector<std::string> sets;
  std::string data_dir;
  std::string log_level;
  std::string log_format;
};

Result<config::Config> LoadConfig(const config::Schema& schema, const GlobalFlags& g) {
  config::LoadOptions o;
  if (!g.config_file.empty()) {
    o.file = g.config_file;
    o.file_required = true;
  } else if (const char* env = std::getenv("GOVERN_CONFIG"); env && *env) {
    o.file = env;
    o.file_required = true;
  } else {
    o.file = "govern.toml";  // used when present in the working directory
  }
  for (auto& [k, v] : config::ProcessEnv()) {
    if (k != "GOVERN_CONFIG") o.env.emplace_back(k, v);
  }
  for (const std::string& s : g.sets) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("--set " + s + ": expected key=value");
    }
    o.flags.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  if (!g.data_dir.empty()) o.flags.emplace_back("data_dir", g.data_dir);
  if (!g.log_level.empty()) o.flags.emplace_back("log.level", g.log_level);
  if (!g.log_format.empty()) o.flags.emplace_back("log.format", g.log_format);
  return config::Config::Load(schema, o);
}

void ApplyLogging(const config::Config& cfg) {
  log::Level level = log::Level::kInfo;
  log::Format format = log::Format::kText;
  log::ParseLevel(cfg.GetString("log.level"), &level);
  log::ParseFormat(cfg.GetString("log.format"), &format);
  log::Configure(level, format, 2);
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{"govern: governs AI agents and the infrastructure they run on.\n"
               "One binary holds every service; PostgreSQL is the only other service it needs.\n"
               "Exit codes: 0 ok, 1 a runtime failure, 2 a bad command line or configuration.",
               "govern"};
  app.require_subcommand(1);
  app.fallthrough();
  app.set_version_flag("--version", GOVERN_VERSION);

  GlobalFlags g;
  app.add_option("-c,--config", g.config_file,
                 "TOML configuration file (default: $GOVERN_CONFIG, else ./govern.toml when present)");
  app.add_option("--set", g.sets, "Set a configuration key, e.g. --set log.level=debug (repeatable)");
  app.add_option("--data-dir", g.data_dir, "Same as --set data_dir=DIR");
  app.add_option("--log-level", g.log_level, "Same as --set log.level=LEVEL");
  app.add_option("--log-format", g.log_format, "Same as --set log.format=text|json");

  app.add_subcommand("version", "Print the version and exit");

  CLI::App* up = app.add_subcommand(
      "up", "Run every service on this machine, with a private PostgreSQL under <data_dir>/postgres "
            "unless database.url is set; prints where each service listens");

  std::vector<std::string> serve_names;
  CLI::App* serve = app.add_subcommand("serve", "Run the named services (see `govern services`)");
  serve->add_option("service", serve_names, "Service names")->required();

  app.add_subcommand("services", "List the services this binary holds");

  CLI::App* cfg_cmd = app.add_subcommand("config", "Inspect configuration");
  cfg_cmd->require_subcommand(1);
  cfg_cmd->add_subcommand("check", "Load and validate the configuration; exit 2 with the reason if bad");
  cfg_cmd->add_subcommand("show", "Print every key, its value and where it came from (secrets masked)");
  cfg_cmd->add_subcommand("docs", "Print the Markdown reference of every key (docs/configuration.md)");

  TelemetryCommand telemetry(app);
  StreamsCommand streams(app);
  AuditCommand audit(app);
  ScimCommand scim(app);
  GatewayCommand gateway(app);
  AuthCommand auth(app);
  PolicyServerCommand policy_server(app);
  std::unique_ptr<PolicyCommand> policy = AddPolicyCommands(app);

  AddPolicyBundleCommands(*policy->app());  // keygen, sign, inspect, verify: they run inside the parse

  CLI11_PARSE(app, argc, argv);

  if (app.got_subcommand("version")) {
    std::printf("govern %s\n", GOVERN_VERSION);
    return 0;
  }
  if (policy->parsed()) return policy->Run();  // needs no configuration

  config::Schema schema;
  DeclareCoreKeys(schema);
  DeclareServiceKeys(schema);

  if (app.got_subcommand("services")) {
    PrintServices();
    return 0;
  }
  if (cfg_cmd->parsed() && cfg_cmd->got_subcommand("docs")) {
    std::fputs(schema.Markdown().c_str(), stdout);
    return 0;
  }

  auto cfg = LoadConfig(schema, g);
  if (!cfg.ok()) {
    std::fprintf(stderr, "govern: configuration: %s\n", cfg.status().message().c_str());
    return 2;
  }
  ApplyLogging(*cfg);
  for (const std::string& name : cfg->unknown_env()) {
    log::Warn("config", "ignoring environment variable that names no configuration key", {{"name", name}});
  }

  if (cfg_cmd->parsed()) {
    if (cfg_cmd->got_subcommand("show")) std::fputs(cfg->Describe().c_str(), stdout);
    else std::puts("configuration ok");
    return 0;
  }
  if (telemetry.parsed()) return telemetry.Run(*cfg);
  if (streams.parsed()) return streams.Run(*cfg);
  if (audit.parsed()) return audit.Run(*cfg);
  if (scim.parsed()) return scim.Run(*cfg);
  if (gateway.parsed()) return gateway.Run(*cfg);
  if (auth.parsed()) return auth.Run(*cfg);
  if (policy_server.parsed()) return policy_server.Run(*cfg);
  if (up->parsed()) return RunServices(*cfg, {}, /*all=*/true);
  if (serve->parsed()) return RunServices(*cfg, serve_names, /*all=*/false);
  return 0;
}

}  // namespace govern::cli

int main(int argc, char** argv) { return govern::cli::Main(argc, argv); }
