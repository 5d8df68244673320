// Decoder for Govern's native event batch (POST /v1/events): newline-delimited JSON, one event per line.
//
//   {"id"?: string, "org"?: string, "time": RFC 3339 string | integer unix nanoseconds,
//    "type": string, "attributes"?: object, "body"?: string | object, "severity"?: string}
//
// - Blank lines (only spaces, tabs, CR) are skipped; a trailing CR on a line is ignored.
// - "id": 1..128 characters of [A-Za-z0-9._:-]; absent means the intake assigns EventId().
// - "org", when given, must equal the ingest key's organisation (events are always stored under the
//   key's organisation; a mismatch is an error, not a silent rewrite).
// - "time": RFC 3339 with "T"/"t"/space, optional fraction (nanoseconds kept, further digits
//   truncated), "Z" or a numeric offset; or an integer. Must be at or after 1970 and before 2262-04-11.
// - "type": 1..256 bytes. "attributes": values kept as compact JSON text. "body": a string is kept as
//   text, an object as compact JSON. "severity": kept as severity_text, mapped to an OTLP severity
//   number where the name is known ("info", "WARN", ...).
// - Unknown keys are an error: this is our own format, and a typo ("tme") should not silently lose data.
//
// One bad line rejects the whole batch with the first error ("line 7: time: ..."): partial acceptance
// would force the sender to work out which lines to resend, and a retry of a fixed batch then
// deduplicates by id anyway. (OTLP's partial success is different: it reports records dropped for
// good, which the client must not retry.) Pure functions: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "services/telemetry/event.h"

namespace govern::telemetry {

struct NdjsonLimits {
  size_t max_events = 10000;         // non-blank lines in one batch
  size_t max_line_bytes = 1u << 20;  // one line, without its newline
  size_t max_depth = 32;             // JSON nesting inside one line
};

Result<DecodedBatch> DecodeNdjson(std::string_view body, std::string_view org,
                                  const NdjsonLimits& limits = {});

// RFC 3339 date-time to unix nanoseconds (see "time" above). Exposed for tests and the query API.
Result<int64_t> ParseRfc3339Nanos(std::string_view text);

}  // namespace govern::telemetry
