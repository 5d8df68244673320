// Decoder for OTLP/HTTP logs in the JSON encoding (application/json): an ExportLogsServiceRequest as
// the OTLP specification maps it to JSON, into Events.
//
// Accepted as the spec says: lowerCamelCase keys and the original snake_case names; 64-bit integers as
// decimal strings or JSON numbers; traceId/spanId as hex strings (OTLP/JSON differs from proto3 JSON:
// not base64); severityNumber as an integer or its enum name ("SEVERITY_NUMBER_INFO"); bytesValue as
// base64; null as absent; unknown keys ignored. A value of the wrong JSON type (e.g. a boolean
// timeUnixNano) rejects the request with InvalidArgument naming its path
// ("resourceLogs[0].scopeLogs[0].logRecords[1].timeUnixNano: ..."). Events decode to exactly what
// DecodeOtlpLogsProto gives for the same message, so both encodings get the same event ids.
// Pure function: thread-safe.
#pragma once

#include <string_view>

#include "base/status.h"
#include "services/telemetry/event.h"
#include "services/telemetry/otlp_proto.h"

namespace govern::telemetry {

// Record-level rejections (partial success) are the same as for the protobuf encoding, plus a
// traceId/spanId that is not hex.
Result<DecodedBatch> DecodeOtlpLogsJson(std::string_view body, std::string_view org,
                                        const OtlpLimits& limits = {});

}  // namespace govern::telemetry
