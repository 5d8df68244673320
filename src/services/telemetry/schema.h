// The telemetry service's PostgreSQL schema (its migrations) and the names every part shares.
//
// Tables (docs/telemetry.md explains each choice):
//   telemetry_ingest_keys    API keys (scope "ingest" to send, "query" to read), stored as SHA-256 of
//                            the secret; one organisation each
//   telemetry_events         recent events, range-partitioned by time_ns into one partition per UTC
//                            day (telemetry_events_pYYYYMMDD, created by ingest on demand); primary
//                            key (org, time_ns, id): at most one copy of an event, and the index the
//                            queries walk in either direction
//   telemetry_ingest_cursor  the next WAL sequence ingest reads, committed with the rows it covers
//   telemetry_archive_files  the manifest: one row per Parquet file of one organisation and hour
//   telemetry_dlp_policies   each organisation's DLP policy for query results (dlp_policies.h)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/connection.h"
#include "db/copy_encoder.h"
#include "db/migrator.h"
#include "services/telemetry/event.h"

namespace govern::telemetry {

std::vector<db::Migration> Migrations();

inline constexpr int64_t kNanosPerSecond = 1'000'000'000;
inline constexpr int64_t kNanosPerHour = 3600 * kNanosPerSecond;
inline constexpr int64_t kNanosPerDay = 24 * kNanosPerHour;

// Columns of telemetry_events, in table order (COPY and SELECT use this order).
inline constexpr const char* kEventColumns =
    "org, time_ns, id, observed_ns, received_ns, type, severity_text, severity_number, body_kind, "
    "body, attributes, resource_attributes, service_name, scope_name, scope_version, trace_id, "
    "span_id, flags, dropped_attributes";
inline constexpr int kEventColumnCount = 19;

// The partition holding `time_ns`: its name and [from, to) bounds (UTC days; floor division, so
// times before 1970 work too).
struct Partition {
  std::string name;     // "telemetry_events_p20261130"
  int64_t from_ns = 0;  // INT64_MIN for the first day (the DDL says MINVALUE)
  int64_t to_ns = 0;    // INT64_MAX for the last day (the DDL says MAXVALUE)
};
Partition PartitionFor(int64_t time_ns);
// CREATE TABLE IF NOT EXISTS for `p` (saturated ends become MINVALUE / MAXVALUE).
std::string PartitionDdl(const Partition& p);

// `attrs` as the JSON object stored in the attributes columns: {"key": value_json, ...} in order (an
// empty value_json is written as null). Replaces *out.
void AttributesObjectJson(const std::vector<Attribute>& attrs, std::string* out);

// One row of telemetry_events in kEventColumns order, each value in its column's binary COPY type.
// `attrs` and `res` are scratch buffers (reused across rows so the steady state allocates nothing).
void AppendEventRow(db::CopyIn& copy, const Event& e, int64_t received_ns, std::string* attrs,
                    std::string* res);
// The same fields into a row already started (`row` = encoder.Row(kEventColumnCount)).
void AppendEventFields(db::CopyEncoder& row, const Event& e, int64_t received_ns, std::string* attrs,
                       std::string* res);

}  // namespace govern::telemetry
