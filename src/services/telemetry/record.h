// WAL record format of the telemetry intake: one accepted request (a batch of Events) is one WAL
// record, so a batch is acknowledged, recovered and ingested as a unit.
//
// Layout (version 1), all integers unsigned LEB128 varints unless said otherwise:
//   byte 0x01 (version) | received_unix_nanos | event count | events...
// and each event:
//   strings (varint length + bytes): id, org, type, severity_text, body, service_name, scope_name,
//     scope_version, trace_id_hex, span_id_hex
//   time_unix_nanos, observed_unix_nanos (int64 zigzag-encoded), severity_number (int32 zigzag),
//   body_kind (one byte), flags, dropped_attributes_count,
//   attribute count, then key and value_json of each (strings), then the same for resource attributes.
// The WAL's own CRC protects the bytes; DecodeRecord still checks every length and value against the
// record's end and refuses anything malformed (a fuzz target proves it never crashes).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "services/telemetry/event.h"

namespace govern::telemetry {

inline constexpr uint8_t kRecordVersion = 1;

struct RecordBatch {
  int64_t received_unix_nanos = 0;  // when intake accepted the batch (for send-to-stored latency)
  std::vector<Event> events;
};

// Appends the encoding of `events` to `out`.
void EncodeRecord(std::span<const Event> events, int64_t received_unix_nanos, std::string* out);
// The encoded size of one event (so intake can split a batch into records under the WAL's limit).
size_t EncodedEventSize(const Event& event);

// Decodes a record written by EncodeRecord. DataLoss for malformed or truncated bytes or an unknown
// version, naming the offset.
Result<RecordBatch> DecodeRecord(std::string_view data);

}  // namespace govern::telemetry
