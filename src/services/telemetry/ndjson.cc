// NDJSON event batch decoder (see ndjson.h).
#include "services/telemetry/ndjson.h"

#include <simdjson.h>

#include <algorithm>
#include <limits>
#include <string>

#include "base/time_format.h"
#include "services/telemetry/json_text.h"

namespace govern::telemetry {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// Writes a parsed value back as compact JSON. Not simdjson::minify: it prints some doubles with more
// digits than they were sent with (0.000649 became 0.0006489999999999999); here a double gets its
// shortest round-trip form and integers their exact digits, so a stored value reads as it was sent.
void AppendJson(std::string& out, element v) {
  switch (v.type()) {
    case element_type::OBJECT: {
      out.push_back('{');
      bool first = true;
      // A named local: value_unsafe() returns into the temporary result, which a range-for over it
      // would outlive (ASan: stack-use-after-scope).
      const object obj = v.get_object().value_unsafe();
      for (auto [k, item] : obj) {
        if (!first) out.push_back(',');
        first = false;
        internal::AppendJsonString(out, k);
        out.push_back(':');
        AppendJson(out, item);
      }
      out.push_back('}');
      break;
    }
    case element_type::ARRAY: {
      out.push_back('[');
      bool first = true;
      const simdjson::dom::array arr = v.get_array().value_unsafe();
      for (element item : arr) {
        if (!first) out.push_back(',');
        first = false;
        AppendJson(out, item);
      }
      out.push_back(']');
      break;
    }
    case element_type::STRING:
      internal::AppendJsonString(out, v.get_string().value_unsafe());
      break;
    case element_type::INT64:
      out.append(std::to_string(v.get_int64().value_unsafe()));
      break;
    case element_type::UINT64:
      out.append(std::to_string(v.get_uint64().value_unsafe()));
      break;
    case element_type::DOUBLE:
      internal::AppendJsonDouble(out, v.get_double().value_unsafe());
      break;
    case element_type::BOOL:
      out.append(v.get_bool().value_unsafe() ? "true" : "false");
      break;
    case element_type::NULL_VALUE:
      out.append("null");
      break;
  }
}

std::string CompactJson(element v) {
  std::string out;
  AppendJson(out, v);
  return out;
}

bool IdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == ':' || c == '-';
}

Status Bad(std::string_view field, std::string reason) {
  return InvalidArgument(std::string(field) + ": " + reason);
}

Status DecodeLine(const element& root, std::string_view org, Event* e) {
  object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) return InvalidArgument("expected a JSON object");
  e->org.assign(org);
  bool have_time = false;
  for (auto [k, v] : obj) {
    std::string_view s;
    const bool is_string = v.get_string().get(s) == simdjson::SUCCESS;
    if (k == "id") {
      if (!is_string) return Bad(k, "expected a string");
      if (s.empty() || s.size() > 128) return Bad(k, "must be 1 to 128 characters");
      for (char c : s) {
        if (!IdChar(c)) return Bad(k, "may only contain letters, digits and . _ : -");
      }
      e->id.assign(s);
    } else if (k == "org") {
      if (!is_string) return Bad(k, "expected a string");
      if (s != org)
        return Bad(k, "\"" + std::string(s.substr(0, 64)) + "\" is not the ingest key's organisation");
    } else if (k == "time") {
      have_time = true;
      if (is_string) {
        auto t = ParseRfc3339Nanos(s);
        if (!t.ok()) return Bad(k, t.status().message());
        e->time_unix_nanos = *t;
      } else if (v.type() == element_type::INT64 || v.type() == element_type::UINT64) {
        int64_t t = 0;
        if (v.get_int64().get(t) != simdjson::SUCCESS || t < 0) {
          return Bad(k, "integer nanoseconds must be between 0 and 9223372036854775807");
        }
        e->time_unix_nanos = t;
      } else {
        return Bad(k, "expected an RFC 3339 string or integer unix nanoseconds");
      }
    } else if (k == "type") {
      if (!is_string) return Bad(k, "expected a string");
      if (s.empty() || s.size() > 256) return Bad(k, "must be 1 to 256 bytes");
      e->type.assign(s);
    } else if (k == "attributes") {
      object attrs;
      if (v.get_object().get(attrs) != simdjson::SUCCESS) return Bad(k, "expected an object");
      // Reserved once: a repeated "attributes" key (the DOM keeps duplicates) must not reallocate
      // exactly per repeat, which would make a line of many repeats quadratic.
      if (e->attributes.empty()) e->attributes.reserve(attrs.size());
      for (auto [ak, av] : attrs) {
        e->attributes.push_back({std::string(ak), CompactJson(av)});
      }
    } else if (k == "body") {
      if (is_string) {
        e->body_kind = BodyKind::kString;
        e->body.assign(s);
      } else if (v.type() == element_type::OBJECT) {
        e->body_kind = BodyKind::kJson;
        e->body = CompactJson(v);
      } else {
        return Bad(k, "expected a string or an object");
      }
    } else if (k == "severity") {
      if (!is_string) return Bad(k, "expected a string");
      e->severity_text.assign(s);
      e->severity_number = SeverityNumberFromName(s);
    } else {
      std::string quoted;
      internal::AppendJsonString(quoted, k.substr(0, 64));
      return InvalidArgument("unknown field " + quoted +
                             " (allowed: id, org, time, type, attributes, body, severity)");
    }
  }
  if (!have_time) return InvalidArgument("missing \"time\"");
  if (e->type.empty()) return InvalidArgument("missing \"type\"");
  return OkStatus();
}

}  // namespace

Result<int64_t> ParseRfc3339Nanos(std::string_view s) {
  const auto bad = [&](std::string_view why) {
    std::string quoted;
    internal::AppendJsonString(quoted, s.substr(0, 64));
    return InvalidArgument(quoted + " is not an RFC 3339 date-time (" + std::string(why) + ")");
  };
  auto t = ParseRfc3339(s);  // base/time_format.h
  if (!t.ok()) return bad(t.status().message());
  const int64_t secs = t->unix_seconds, frac = t->nanos;
  constexpr int64_t kMaxSecs = std::numeric_limits<int64_t>::max() / 1000000000;
  if (secs < 0) return bad("before 1970");
  if (secs > kMaxSecs || secs * 1000000000 > std::numeric_limits<int64_t>::max() - frac) {
    return bad("after 2262-04-11");
  }
  return secs * 1000000000 + frac;
}

Result<DecodedBatch> DecodeNdjson(std::string_view body, std::string_view org, const NdjsonLimits& limits) {
  DecodedBatch out;
  simdjson::dom::parser parser;
  // max_depth bounds nesting; capacity grows with the longest line (at most max_line_bytes).
  if (parser.allocate(4096, limits.max_depth) != simdjson::SUCCESS) {
    return Internal("cannot allocate the JSON parser");
  }
  // One event per line: room for them all at once instead of moving every event as the vector grows.
  // Lines counted with find (memchr), as the loop below splits them; std::count is a byte loop at -O2.
  size_t lines = 1;
  for (size_t at = body.find('\n'); at != std::string_view::npos && lines <= limits.max_events;
       at = body.find('\n', at + 1)) {
    ++lines;
  }
  // Bounded by the bytes too (no event line is shorter than 16): blank lines reserve nothing much.
  out.events.reserve(std::min({lines, limits.max_events, body.size() / 16 + 1}));
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < body.size()) {
    ++line_no;
    size_t end = body.find('\n', pos);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    // Built only for an error (a string per line cost an allocation per event).
    const auto where = [&] { return "line " + std::to_string(line_no); };
    if (line.size() > limits.max_line_bytes) {
      return InvalidArgument(where() + ": " + std::to_string(line.size()) +
                             " bytes, more than the limit of " + std::to_string(limits.max_line_bytes));
    }
    if (out.events.size() >= limits.max_events) {
      return InvalidArgument(where() + ": batch has more than " + std::to_string(limits.max_events) +
                             " events; split it");
    }
    element root;
    if (auto err = parser.parse(line.data(), line.size()).get(root); err != simdjson::SUCCESS) {
      return InvalidArgument(where() + ": invalid JSON: " + simdjson::error_message(err));
    }
    // Decoded in place: a failed line fails the whole batch, so it never stays.
    Status st = DecodeLine(root, org, &out.events.emplace_back());
    if (!st.ok()) return InvalidArgument(where() + ": " + st.message());
  }
  return out;
}

}  // namespace govern::telemetry
