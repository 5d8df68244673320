// `govern policy-server keys create|list|revoke`: ServiceKeysCommand on the policy server's keys.
#include "cli/policy_server_cmd.h"

#include <CLI/CLI.hpp>

#include "services/policy/api_keys.h"
#include "services/policy/schema.h"

namespace govern::cli {

PolicyServerCommand::PolicyServerCommand(CLI::App& app) {
  root_ = app.add_subcommand("policy-server", "The policy bundle server (`govern serve policy`): API keys");
  root_->require_subcommand(1);
  keys_.emplace(*root_,
                ServiceKeysCommand::Options{
                    .service = "policy",
                    .migrations = policy_service::Migrations,
                    .table = &policy_service::PolicyKeys(),
                    .keys_help = "API keys: one organisation and one scope each, stored hashed",
                    .org_help = "Organisation the key publishes or fetches for",
                    .scope_help = "publish (change the policy set) or fetch (read bundles: sidecars)",
                    .scope_required = true,
                    .revoke_help = "Revoke a key; running servers refuse it within policy.server.key_cache_ttl",
                    .key_id_help = "The key's id (the 12 characters after gvp_)",
                    .scope_width = 7,
                    .error_prefix = "govern: policy-server: ",
                    .says_hashed = false,
                    .refusal = "running servers refuse",
                    .ttl_key = "policy.server.key_cache_ttl"});
}

bool PolicyServerCommand::parsed() const { return root_->parsed(); }

int PolicyServerCommand::Run(const config::Config& cfg) {
  if (keys_->parsed()) return keys_->Run(cfg);
  return 2;
}

}  // namespace govern::cli
