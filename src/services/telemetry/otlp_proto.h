// Decoder for OTLP/HTTP logs in the binary protobuf encoding (application/x-protobuf): an
// opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest body into Events.
//
// A hand-written wire decoder (no libprotobuf): varint, fixed64, fixed32 and length-delimited fields;
// unknown fields of every valid wire type are skipped; groups (wire types 3/4) and wire types 6/7 are
// rejected, as is a known field sent with the wrong wire type. Every length is checked against the
// bytes that remain, AnyValue nesting is bounded, and string fields must be valid UTF-8 (proto3).
// Errors are InvalidArgument naming the field path and the byte offset in the body, e.g.
// "resource_logs[0].scope_logs[0].log_records[2].attributes[1].value.string_value: invalid UTF-8
// (at byte 181)". Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "services/telemetry/event.h"

namespace govern::telemetry {

struct OtlpLimits {
  int max_value_depth = 32;       // nested AnyValue arrays/kvlists inside one body or attribute
  int64_t max_records = 1000000;  // log records in one request (the 20 MiB body limit comes first)
};

// Decodes an ExportLogsServiceRequest. Every event gets `org`; ids stay empty (AssignMissingIds).
// Records whose trace_id is not 0/16 bytes, span_id not 0/8 bytes, or time does not fit int64
// nanoseconds are left out and counted in DecodedBatch::rejected (OTLP partial success).
Result<DecodedBatch> DecodeOtlpLogsProto(std::string_view body, std::string_view org,
                                         const OtlpLimits& limits = {});

}  // namespace govern::telemetry
