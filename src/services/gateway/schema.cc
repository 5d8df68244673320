#include "services/gateway/schema.h"

#include "services/gateway/service_keys.h"

namespace govern::gateway {

std::vector<db::Migration> Migrations() {
  return {
      {1, "gateway budgets and spend leases", R"sql(
CREATE TABLE gateway_budgets (
  budget_id      text NOT NULL,
  period         text NOT NULL,
  limit_micros   bigint NOT NULL,
  claimed_micros bigint NOT NULL DEFAULT 0,
  spent_micros   bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (budget_id, period)
);
CREATE TABLE gateway_budget_leases (
  budget_id    text NOT NULL,
  period       text NOT NULL,
  replica      text NOT NULL,
  held_micros  bigint NOT NULL,
  spent_micros bigint NOT NULL,
  renewed_at   timestamptz NOT NULL,
  PRIMARY KEY (budget_id, period, replica),
  FOREIGN KEY (budget_id, period) REFERENCES gateway_budgets ON DELETE CASCADE
);
)sql"},
      GatewayKeysMigration(2),  // gateway API keys from the keys service (service_keys.h)
  };
}

}  // namespace govern::gateway
