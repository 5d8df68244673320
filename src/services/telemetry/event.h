// Event: the one representation every telemetry intake format decodes into (OTLP/protobuf, OTLP/JSON,
// Govern NDJSON), plus the deterministic event id that makes a retried batch be stored once.
//
// An Event is a plain value (copyable, no shared state); the functions here are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace govern::telemetry {

// One attribute. `value_json` is the value rendered as compact JSON text ("\"GET\"", "200", "true",
// "[1,2]", "{\"k\":\"v\"}", "null"): one string type keeps Event flat and is exactly what storage
// writes into its attributes column. OTLP-specific renderings: int64 -> JSON number (exact decimal);
// double NaN/Infinity/-Infinity -> the JSON strings "NaN"/"Infinity"/"-Infinity"; bytes -> base64 string;
// an AnyValue with no value -> null.
struct Attribute {
  std::string key;
  std::string value_json;
  friend bool operator==(const Attribute&, const Attribute&) = default;
};

enum class BodyKind : uint8_t {
  kNone = 0,    // no body
  kString = 1,  // `body` is the text itself (not JSON-quoted)
  kJson = 2,    // `body` is compact JSON text (an OTLP non-string AnyValue, an NDJSON object body)
};

struct Event {
  std::string id;   // sender-given, or empty until AssignMissingIds()
  std::string org;  // always the organisation of the ingest key (decoders set it)
  // Event time. OTLP: time_unix_nano, or observed_time_unix_nano when that is 0 (as the OTLP data
  // model says). 0 = unknown: the intake fills in its receive time *after* ids are assigned, so a
  // retried batch still gets the same ids.
  int64_t time_unix_nanos = 0;
  int64_t observed_unix_nanos = 0;  // OTLP observed_time_unix_nano; 0 for NDJSON
  std::string type;                 // NDJSON "type"; OTLP LogRecord.event_name, or "log" when empty
  std::string severity_text;
  int32_t severity_number = 0;  // OTLP SeverityNumber (0 unspecified, 1..24 TRACE..FATAL4)
  BodyKind body_kind = BodyKind::kNone;
  std::string body;
  std::vector<Attribute> attributes;           // the record's own attributes, in sender order
  std::vector<Attribute> resource_attributes;  // OTLP Resource attributes (service.name included)
  std::string service_name;                    // resource attribute service.name when a string
  std::string scope_name, scope_version;       // OTLP InstrumentationScope
  std::string trace_id_hex, span_id_hex;       // lower-case hex (32 / 16 chars) or empty
  uint32_t flags = 0;                          // OTLP LogRecord.flags (W3C trace flags in low byte)
  uint32_t dropped_attributes_count = 0;

  friend bool operator==(const Event&, const Event&) = default;
};

// What a decoder returns. Wire-level errors (malformed bytes, invalid UTF-8, bad JSON) reject the
// whole request instead; `rejected` counts individual OTLP log records that were well-formed on the
// wire but unusable (e.g. a trace_id that is not 16 bytes), for an OTLP partial-success reply
// (ExportLogsPartialSuccess.rejected_log_records / error_message). NDJSON never rejects partially.
struct DecodedBatch {
  std::vector<Event> events;
  int64_t rejected = 0;
  std::string rejected_message;  // the first rejection's reason (with its field path), empty if none
};

// Finishes an OTLP log record, the same for both encodings: sets observed_unix_nanos, time_unix_nanos
// (the observed time when the record's own time is 0) and type ("log" when no event name), and when
// either time does not fit signed 64-bit nanoseconds, sets *rejected (if still empty) to the field
// named `time_field` or `observed_field` with the reason.
void FinishOtlpRecord(uint64_t time, uint64_t observed, std::string_view time_field,
                      std::string_view observed_field, Event* e, std::string* rejected);

// Severity number for a severity name, case-insensitive: "trace".."fatal" (1, 5, 9, 13, 17, 21),
// "warning"/"err"/"critical" aliases, and the OTLP enum names "SEVERITY_NUMBER_INFO2" etc. 0 if unknown.
int32_t SeverityNumberFromName(std::string_view name);

// Deterministic event id: lower-case hex SHA-256 (64 chars) over the canonical encoding below.
//
// Canonical encoding (version 1): the ASCII tag "govern.event.v1", then each of these as an 8-byte
// little-endian length followed by its bytes, in this order: org, type, severity_text, body,
// trace_id_hex, span_id_hex, service_name, scope_name, scope_version; then time_unix_nanos,
// observed_unix_nanos, severity_number, body_kind, flags, dropped_attributes_count and `ordinal` as
// 8-byte little-endian integers; then the attribute count and each attribute's key and value_json
// (length-prefixed), then the same for resource_attributes. `id` itself is excluded. Length prefixes
// make the encoding unambiguous (no two different events encode the same).
//
// Why content plus `ordinal` rather than a hash of the request body plus the record index: a retry
// must give the same ids even when the client re-encodes the batch (key order in JSON, protobuf field
// order) or when the same record arrives in a re-formed batch; content does that. Two identical records
// inside one batch must still differ, so `ordinal` is how many identical records came before this one
// in the same batch (0 for the first). The cost: the same record sent twice in two different batches
// (same org, nanosecond time, body, attributes, trace ids) is stored once. For OTLP that is the
// duplicate-retry case the spec warns about; a sender who really wants both gives explicit ids.
std::string EventId(std::string_view org, const Event& event, uint64_t ordinal);

// Gives every event with an empty id EventId(event.org, event, ordinal), ordinal counting identical
// events (same canonical content) earlier in `events`. Events with sender ids are left alone.
void AssignMissingIds(std::vector<Event>& events);

}  // namespace govern::telemetry

namespace govern::telemetry {

// Why `event` cannot be stored, or empty when it can: PostgreSQL text and jsonb hold no NUL character,
// so a raw NUL byte in any string, or a "\u0000" escape in JSON text (attribute values, a JSON body),
// is refused at intake (with the field named) rather than stalling ingest on it later.
std::string UnstorableReason(const Event& event);

}  // namespace govern::telemetry
