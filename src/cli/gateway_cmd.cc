// `govern gateway keys ...`: gateway API keys (gvg_) from the keys service.
#include "cli/gateway_cmd.h"

#include <CLI/CLI.hpp>

#include "services/gateway/schema.h"
#include "services/gateway/service_keys.h"

namespace govern::cli {

GatewayCommand::GatewayCommand(CLI::App& app) {
  gateway_ = app.add_subcommand("gateway", "Model gateway: API keys from the keys service");
  gateway_->require_subcommand(1);
  keys_.emplace(
      *gateway_,
      ServiceKeysCommand::Options{
          .service = gateway::kSchemaService,
          .migrations = gateway::Migrations,
          .table = &gateway::GatewayKeyTable(),
          .keys_help = "Gateway API keys (gvg_): one organisation each, stored hashed, revocable at once",
          .org_help = "Organisation the key calls models as",
          .scope = "invoke",  // what the gateway accepts (service_keys.h)
          .revoke_help = "Revoke a key: running gateways refuse it within gateway.keys.reload_interval",
          .key_id_help = "The key's id (the 12 characters after gvg_)",
          .revoke_org_help = "The organisation the key must belong to",
          .kind = "gateway",
          .created_note = "; running gateways accept it within gateway.keys.reload_interval",
          .refusal = "running gateways refuse",
          .ttl_key = "gateway.keys.reload_interval"});
}

bool GatewayCommand::parsed() const { return gateway_->parsed(); }

int GatewayCommand::Run(const config::Config& cfg) {
  if (keys_->parsed()) return keys_->Run(cfg);
  return 2;
}

}  // namespace govern::cli
