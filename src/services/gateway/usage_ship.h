// Usage records shipped to telemetry (issue 9): the gateway's usage WAL (proxy.h, UsageRecord) read by
// a policy::WalEventShipper (policy/decisions/shipper.h: durable cursor, retries, quarantine) and sent
// to telemetry intake (POST /v1/events, NDJSON) as `gateway.usage` events, exactly once.
//
// Exactly once: an event's id is derived from the record's request id (UsageEventId) and its time is the
// record's time_ns, both read from the record, so a batch sent again after a lost reply or a crash of
// the gateway (between intake's 200 and the cursor update) carries the same ids and telemetry stores
// each record once. Telemetry files every event under the ingest key's organisation; the organisation
// the request was made for is the attribute "organisation".
//
// Pure functions (thread-safe), apart from NewUsageShipper's shipper (see shipper.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "config/config.h"
#include "policy/decisions/shipper.h"
#include "storage/wal.h"

namespace govern::gateway {

// The telemetry event id of a request's usage: the request id with '_' as '-' ("gwr_0a1b..." ->
// "gwr-0a1b..."), since intake's ids are [A-Za-z0-9._:-]{1,128}; a request id with other characters, or
// longer than 100, becomes "gwr-h" followed by the hex SHA-256 of it. Deterministic.
std::string UsageEventId(std::string_view request_id);

// One WAL record (UsageRecordJson) as an NDJSON event line (no newline):
//   {"id":UsageEventId(request_id),"time":time_ns,"type":"gateway.usage","attributes":{"request_id",
//    "organisation","key_id","model","route","client_format","status","stream","input_tokens",
//    "output_tokens","cached_tokens","cost","latency_ms"[,"error"]}}
// InvalidArgument when the record is not a usage record (it is then quarantined by the shipper).
Status AppendUsageEvent(std::string_view record, size_t max_line_bytes, std::string* line);

// Declares gateway.ship.{endpoint, key_file, batch_events, batch_bytes, interval, max_backoff}.
void DeclareUsageShipConfig(config::Schema& schema);

// The shipper's options from the gateway.ship.* keys (the key read from key_file), or nullopt when
// gateway.ship.endpoint is empty. InvalidArgument when the endpoint is set and the key file is missing,
// unreadable or holds no ingest key.
Result<std::optional<policy::ShipperOptions>> UsageShipOptionsFromConfig(const config::Config& config);

// The same from gateway_proxy's JSON config file: its optional object
//   "ship": {"endpoint", "key_file", "batch_events", "batch_bytes", "interval_ms", "max_backoff_ms"}
Result<std::optional<policy::ShipperOptions>> UsageShipOptionsFromJson(std::string_view config_json);

// A shipper of the usage WAL in `usage_dir` (the directory the WAL was opened in; the quarantine file
// is <usage_dir>/quarantine.ndjson unless options name one), with cursor "telemetry" and event type
// "gateway.usage". Start() it; Stop() it before the WAL closes.
Result<std::unique_ptr<policy::WalEventShipper>> NewUsageShipper(wal::Log* wal, const std::string& usage_dir,
                                                                 policy::ShipperOptions options);

// Shipping switched off: drops the shipper's cursor, so it no longer holds the WAL's retention.
Status ForgetUsageShipper(wal::Log* wal);

}  // namespace govern::gateway
