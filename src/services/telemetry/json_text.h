// Internal to the telemetry decoders: small JSON-text and hex writers shared by every format.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "services/telemetry/event.h"

namespace govern::telemetry::internal {

// Error paths are built only on the error path: a failing leaf returns ": reason" and each enclosing
// decoder prepends its field name (".body", "[3]"), so the caller reads one dotted path
// ("resource_logs[0].scope_logs[0].log_records[2].body: reason") and success pays for no strings.
// An ok status passes through unchanged.
inline Status In(const Status& s, std::string_view segment) {
  if (s.ok()) return s;
  std::string m(segment);
  const std::string& inner = s.message();
  if (!inner.empty() && inner[0] != '.' && inner[0] != '[' && inner[0] != ':') m.append(": ");
  m.append(inner);
  return InvalidArgument(std::move(m));
}
inline Status In(const Status& s, std::string_view field, size_t index) {
  if (s.ok()) return s;
  return In(s, std::string(field) + "[" + std::to_string(index) + "]");
}
inline Status Reason(std::string_view reason) { return InvalidArgument(": " + std::string(reason)); }

// Appends `s` (valid UTF-8) as a quoted JSON string: escapes '"', '\\' and control characters.
inline void AppendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t run = 0;  // start of the pending unescaped run: copy runs in one append
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default:
        out.append("\\u00");
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

inline std::string LowerHex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

// The resource attribute service.name when its value is a string, unquoted (empty otherwise). Reads
// value_json as AppendJsonString wrote it, so it undoes exactly those escapes.
std::string ServiceName(const std::vector<Attribute>& resource_attributes);

// Appends a double as JSON: shortest round-trip form; NaN and infinities as the strings proto3 JSON uses.
void AppendJsonDouble(std::string& out, double v);

}  // namespace govern::telemetry::internal
