// The gateway's PostgreSQL schema (its migrations, service name "gateway"). Used only in the background
// (budget reconciliation, budget.h): no request waits on it.
//
// Tables:
//   gateway_budgets        one row per budget and period: the limit (from configuration, rewritten on
//                          every sync), what replicas have claimed as leases (never more than the limit,
//                          except spend that ran past a lease), and what they reported spent
//   gateway_budget_leases  one row per budget, period and live replica: what it holds and has spent,
//                          renewed on every sync; a row older than the lease TTL is taken back
//   gateway_api_keys       gateway API keys of the keys service (service_keys.h: services/keys' shape),
//                          read in the background every gateway.keys.reload_interval
#pragma once

#include <vector>

#include "db/migrator.h"

namespace govern::gateway {

inline constexpr const char* kSchemaService = "gateway";

std::vector<db::Migration> Migrations();

}  // namespace govern::gateway
