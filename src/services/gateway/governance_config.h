// The gateway service's governance from its configuration (gateway.auth.*, gateway.policy.*,
// gateway.budget.*) and the routes file's "budgets": what `govern serve gateway` hands the proxy.
// Not thread-safe: the service's Start and Stop call it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "config/config.h"
#include "db/pool.h"
#include "services/gateway/governance.h"

namespace govern::gateway {

// Declares the keys (in the gateway service's DeclareConfig).
void DeclareGovernanceConfig(config::Schema& schema);

struct GovernanceRuntime {
  std::unique_ptr<db::Pool> own_pool;       // StartGovernanceFromFlags' budget database (outlives the sync)
  std::shared_ptr<Governance> governance;   // null when nothing is configured (the proxy then has none)
  std::unique_ptr<BudgetSync> budget_sync;  // running when budgets are configured
  void Stop();                              // stops the sync (releasing the leases)
};

// `db`: the service's pool (needed only for budgets; budgets without it are an error).
Result<GovernanceRuntime> StartGovernance(const config::Config& c, const std::string& data_dir,
                                          std::string_view routes_json, db::Pool* db);

// For gateway_proxy (tests, benches): the same keys given as `--set key=value` pairs, and budgets
// reconciled through `budget_db` (a conninfo; the gateway's migrations are applied; empty: no budgets).
Result<GovernanceRuntime> StartGovernanceFromFlags(
    const std::vector<std::pair<std::string, std::string>>& sets, std::string_view routes_json,
    const std::string& budget_db);

}  // namespace govern::gateway
