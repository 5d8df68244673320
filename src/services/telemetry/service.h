// The telemetry service (`govern serve telemetry`): OTLP/HTTP and NDJSON intake into a write-ahead
// log, with API keys in PostgreSQL. Ingest (WAL to PostgreSQL), compaction (to Parquet) and the query
// API attach to it at the hook points marked "HOOK(...)" in service.cc.
//
// Configuration keys (all under "telemetry."): listen, wal_dir, max_batch_bytes, max_batch_events,
// max_ingest_lag, key_cache_ttl; docs/telemetry.md describes each.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "config/config.h"
#include "services/service.h"

namespace govern::telemetry {

std::unique_ptr<services::Service> NewTelemetryService();

// The write-ahead log directory: telemetry.wal_dir, or <data_dir>/telemetry/wal when it is empty. A
// relative telemetry.wal_dir is taken relative to the working directory. Shared with
// `govern telemetry wal inspect` so both always look at the same place.
std::string WalDir(const config::Config& cfg, std::string_view data_dir);

}  // namespace govern::telemetry
