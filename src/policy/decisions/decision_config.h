// Configuration keys of the decision log and its shipper (policy.decisions.*), for the service that
// records decisions to declare, and the options read back from a loaded Config.
//
// Pure functions: thread-safe.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "config/config.h"
#include "policy/decisions/decision_log.h"
#include "policy/decisions/shipper.h"

namespace govern::policy {

// Declares policy.decisions.{dir, mode, sync_interval, context, max_pending, max_block,
// max_record_bytes, segment_size, max_retained} and policy.decisions.ship.{endpoint, key,
// batch_events, batch_bytes, max_backoff}.
void DeclareDecisionLogConfig(config::Schema& schema);

// What a shipper to telemetry intake ships, for the help of its keys.
struct ShippedItems {
  std::string what;        // "decisions": "to ship decisions to ...", "Most decisions per intake request"
  std::string event_type;  // the events they become: "policy.decision"
  std::string id_note;     // after "... events", e.g. " (id from the request id)"
  std::string when_off;    // after "Empty: " (no endpoint): "decisions stay local."
};

// Declares <prefix>.{endpoint, batch_events, batch_bytes, max_backoff}, the keys every shipper to
// telemetry intake takes (policy.decisions.ship, gateway.ship); the ingest key is the caller's.
void DeclareShipperConfig(config::Schema& schema, const std::string& prefix, const ShippedItems& items);
// Reads those keys into `options` (endpoint, batch_events, batch_bytes, max_backoff).
void ShipperOptionsFromKeys(const config::Config& config, const std::string& prefix, ShipperOptions& options);

// The decision log's options; an empty policy.decisions.dir means <data_dir>/policy/decisions.
DecisionLogOptions DecisionLogOptionsFromConfig(const config::Config& config, const std::string& data_dir);

// The shipper's options, or nullopt when policy.decisions.ship.endpoint is empty (no shipping).
// InvalidArgument when an endpoint is set without a key.
Result<std::optional<ShipperOptions>> ShipperOptionsFromConfig(const config::Config& config);

}  // namespace govern::policy
