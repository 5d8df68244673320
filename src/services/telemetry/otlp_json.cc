// OTLP/JSON logs decoder on simdjson's DOM (see otlp_json.h).
#include "services/telemetry/otlp_json.h"

#include <simdjson.h>

#include <charconv>
#include <limits>
#include <string>
#include <vector>

#include "crypto/encoding.h"
#include "services/telemetry/json_text.h"

namespace govern::telemetry {
namespace {

using internal::In;
using internal::Reason;
using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

bool Is(std::string_view key, std::string_view camel, std::string_view snake) {
  return key == camel || key == snake;
}

std::string_view TypeName(element_type t) {
  switch (t) {
    case element_type::ARRAY:
      return "an array";
    case element_type::OBJECT:
      return "an object";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE:
      return "a number";
    case element_type::STRING:
      return "a string";
    case element_type::BOOL:
      return "a boolean";
    default:
      return "null";
  }
}

Status WrongType(const element& v, std::string_view expected) {
  return Reason("expected " + std::string(expected) + ", got " + std::string(TypeName(v.type())));
}

Status GetObject(const element& v, object* out) {
  if (v.get_object().get(*out) != simdjson::SUCCESS) return WrongType(v, "an object");
  return OkStatus();
}
Status GetArray(const element& v, array* out) {
  if (v.get_array().get(*out) != simdjson::SUCCESS) return WrongType(v, "an array");
  return OkStatus();
}
Status GetString(const element& v, std::string_view* out) {
  if (v.get_string().get(*out) != simdjson::SUCCESS) return WrongType(v, "a string");
  return OkStatus();
}

// A 64-bit integer as a decimal string or a JSON number (the proto3 JSON mapping allows both).
template <typename Int>
Status GetInt(const element& v, Int* out) {
  switch (v.type()) {
    case element_type::INT64: {
      const int64_t x = v.get_int64().value_unsafe();
      if constexpr (std::is_unsigned_v<Int>) {
        if (x < 0) return Reason("negative value " + std::to_string(x));
      }
      if (x < static_cast<int64_t>(std::numeric_limits<Int>::min()) ||
          (x > 0 && static_cast<uint64_t>(x) > static_cast<uint64_t>(std::numeric_limits<Int>::max()))) {
        return Reason("value " + std::to_string(x) + " out of range");
      }
      *out = static_cast<Int>(x);
      return OkStatus();
    }
    case element_type::UINT64: {
      const uint64_t x = v.get_uint64().value_unsafe();
      if (x > static_cast<uint64_t>(std::numeric_limits<Int>::max())) {
        return Reason("value " + std::to_string(x) + " out of range");
      }
      *out = static_cast<Int>(x);
      return OkStatus();
    }
    case element_type::STRING: {
      std::string_view s = v.get_string().value_unsafe();
      Int x{};
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
      if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
        return Reason("\"" + std::string(s.substr(0, 32)) + "\" is not a decimal integer in range");
      }
      *out = x;
      return OkStatus();
    }
    default:
      return WrongType(v, "an integer (number or decimal string)");
  }
}

struct Context {
  const OtlpLimits& limits;
};

Status AnyValue(const Context& cx, const element& v, int depth, std::string* out, bool* is_string);

// KeyValue {"key": ..., "value": AnyValue}.
Status KeyValue(const Context& cx, const element& v, int depth, std::string* key, std::string* json) {
  object obj;
  GOVERN_RETURN_IF_ERROR(GetObject(v, &obj));
  key->clear();
  json->assign("null");
  for (auto [k, val] : obj) {
    if (val.is_null()) continue;
    if (k == "key") {
      std::string_view s;
      Status st = GetString(val, &s);
      if (!st.ok()) return In(st, ".key");
      key->assign(s);
    } else if (k == "value") {
      Status st = AnyValue(cx, val, depth, json, nullptr);
      if (!st.ok()) return In(st, ".value");
    }
  }
  return OkStatus();
}

// AnyValue {"stringValue"|"boolValue"|"intValue"|"doubleValue"|"arrayValue"|"kvlistValue"|"bytesValue"}.
// Renders exactly as the protobuf decoder does (json_text.h conventions).
Status AnyValue(const Context& cx, const element& v, int depth, std::string* out, bool* is_string) {
  if (depth > cx.limits.max_value_depth) {
    return Reason("values nested deeper than " + std::to_string(cx.limits.max_value_depth));
  }
  object obj;
  GOVERN_RETURN_IF_ERROR(GetObject(v, &obj));
  out->assign("null");
  if (is_string) *is_string = false;
  for (auto [k, val] : obj) {
    if (val.is_null()) continue;
    if (Is(k, "stringValue", "string_value")) {
      std::string_view s;
      Status st = GetString(val, &s);
      if (!st.ok()) return In(st, ".stringValue");
      out->clear();
      if (is_string) {
        out->assign(s);
        *is_string = true;
      } else {
        internal::AppendJsonString(*out, s);
      }
      continue;
    }
    const bool known = Is(k, "boolValue", "bool_value") || Is(k, "intValue", "int_value") ||
                       Is(k, "doubleValue", "double_value") || Is(k, "arrayValue", "array_value") ||
                       Is(k, "kvlistValue", "kvlist_value") || Is(k, "bytesValue", "bytes_value");
    if (!known) continue;  // unknown keys are ignored and must not touch the value chosen so far
    if (is_string) *is_string = false;
    if (Is(k, "boolValue", "bool_value")) {
      bool b = false;
      if (val.get_bool().get(b) != simdjson::SUCCESS) return In(WrongType(val, "a boolean"), ".boolValue");
      out->assign(b ? "true" : "false");
    } else if (Is(k, "intValue", "int_value")) {
      int64_t x = 0;
      Status st = GetInt(val, &x);
      if (!st.ok()) return In(st, ".intValue");
      out->assign(std::to_string(x));
    } else if (Is(k, "doubleValue", "double_value")) {
      double d = 0;
      std::string_view s;
      if (val.get_double().get(d) == simdjson::SUCCESS) {
      } else if (val.get_string().get(s) == simdjson::SUCCESS &&
                 (s == "NaN" || s == "Infinity" || s == "-Infinity")) {
        d = s == "NaN" ? std::numeric_limits<double>::quiet_NaN()
                       : (s[0] == '-' ? -1 : 1) * std::numeric_limits<double>::infinity();
      } else {
        return In(WrongType(val, "a number"), ".doubleValue");
      }
      out->clear();
      internal::AppendJsonDouble(*out, d);
    } else if (Is(k, "arrayValue", "array_value") || Is(k, "kvlistValue", "kvlist_value")) {
      const bool kv = k[0] == 'k';
      const std::string_view name = kv ? ".kvlistValue" : ".arrayValue";
      object inner;
      Status st = GetObject(val, &inner);
      if (!st.ok()) return In(st, name);
      std::string json(kv ? "{" : "[");
      std::string key, item;
      for (auto [ik, ival] : inner) {
        if (ik != "values" || ival.is_null()) continue;
        array items;
        st = GetArray(ival, &items);
        if (!st.ok()) return In(st, std::string(name) + ".values");
        size_t i = 0;
        for (element e : items) {
          st = kv ? KeyValue(cx, e, depth + 1, &key, &item) : AnyValue(cx, e, depth + 1, &item, nullptr);
          if (!st.ok()) return In(st, std::string(name) + ".values", i);
          if (json.size() > 1) json.push_back(',');
          if (kv) {
            internal::AppendJsonString(json, key);
            json.push_back(':');
          }
          json.append(item);
          ++i;
        }
      }
      json.push_back(kv ? '}' : ']');
      *out = std::move(json);
    } else if (Is(k, "bytesValue", "bytes_value")) {
      std::string_view s;
      Status st = GetString(val, &s);
      if (!st.ok()) return In(st, ".bytesValue");
      auto bytes = crypto::Base64Decode(s);
      if (!bytes.ok()) return In(Reason("not base64"), ".bytesValue");
      out->clear();
      internal::AppendJsonString(*out, crypto::Base64Encode(*bytes));
    }
  }
  return OkStatus();
}

Status Attributes(const Context& cx, const element& v, std::vector<Attribute>* attrs) {
  array items;
  GOVERN_RETURN_IF_ERROR(GetArray(v, &items));
  size_t i = 0;
  for (element e : items) {
    Attribute a;
    Status st = KeyValue(cx, e, 1, &a.key, &a.value_json);
    if (!st.ok()) return In(st, "", i);
    attrs->push_back(std::move(a));
    ++i;
  }
  return OkStatus();
}

// Hex trace/span id of `bytes` bytes. Not hex or the wrong length rejects the record only.
Status HexId(const element& v, size_t bytes, std::string* out, std::string* rejected, std::string_view name) {
  std::string_view s;
  Status st = GetString(v, &s);
  if (!st.ok()) return In(st, name);
  bool hex = s.size() == 2 * bytes;
  for (char c : s) hex = hex && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'));
  if (!s.empty() && !hex && rejected->empty()) {
    *rejected = std::string(name) + ": expected " + std::to_string(2 * bytes) +
                " hex characters (OTLP/JSON ids are hex, not base64)";
  }
  out->clear();
  for (char c : s) out->push_back(c >= 'A' && c <= 'F' ? static_cast<char>(c - 'A' + 'a') : c);
  return OkStatus();
}

Status LogRecord(const Context& cx, const element& v, Event* e, std::string* rejected) {
  object obj;
  GOVERN_RETURN_IF_ERROR(GetObject(v, &obj));
  uint64_t time = 0, observed = 0;
  for (auto [k, val] : obj) {
    if (val.is_null()) continue;
    Status st;
    std::string_view s;
    if (Is(k, "timeUnixNano", "time_unix_nano")) {
      st = In(GetInt(val, &time), ".timeUnixNano");
    } else if (Is(k, "observedTimeUnixNano", "observed_time_unix_nano")) {
      st = In(GetInt(val, &observed), ".observedTimeUnixNano");
    } else if (Is(k, "severityNumber", "severity_number")) {
      if (val.get_string().get(s) == simdjson::SUCCESS) {
        e->severity_number = SeverityNumberFromName(s);
        if (e->severity_number == 0 && s != "SEVERITY_NUMBER_UNSPECIFIED") {
          st = In(Reason("unknown severity \"" + std::string(s.substr(0, 40)) + "\""), ".severityNumber");
        }
      } else {
        st = In(GetInt(val, &e->severity_number), ".severityNumber");
      }
    } else if (Is(k, "severityText", "severity_text")) {
      st = In(GetString(val, &s), ".severityText");
      e->severity_text.assign(s);
    } else if (k == "body") {
      bool is_string = false;
      st = In(AnyValue(cx, val, 1, &e->body, &is_string), ".body");
      e->body_kind = is_string ? BodyKind::kString : BodyKind::kJson;
    } else if (k == "attributes") {
      st = In(Attributes(cx, val, &e->attributes), ".attributes");
    } else if (Is(k, "droppedAttributesCount", "dropped_attributes_count")) {
      st = In(GetInt(val, &e->dropped_attributes_count), ".droppedAttributesCount");
    } else if (k == "flags") {
      st = In(GetInt(val, &e->flags), ".flags");
    } else if (Is(k, "traceId", "trace_id")) {
      st = HexId(val, 16, &e->trace_id_hex, rejected, ".traceId");
    } else if (Is(k, "spanId", "span_id")) {
      st = HexId(val, 8, &e->span_id_hex, rejected, ".spanId");
    } else if (Is(k, "eventName", "event_name")) {
      st = In(GetString(val, &s), ".eventName");
      e->type.assign(s);
    }
    if (!st.ok()) return st;
  }
  FinishOtlpRecord(time, observed, ".timeUnixNano", ".observedTimeUnixNano", e, rejected);
  return OkStatus();
}

struct Batch {
  DecodedBatch out;
  int64_t records = 0;
};

// Rejections are reported with the path of the first rejected record.
void Reject(Batch* b, std::string path) {
  if (b->out.rejected++ == 0) b->out.rejected_message = std::move(path);
}

Status ScopeLogs(const Context& cx, const element& v, const Event& resource_proto, Batch* b,
                 const std::string& path) {
  object obj;
  GOVERN_RETURN_IF_ERROR(GetObject(v, &obj));
  Event proto = resource_proto;
  element records;
  bool have_records = false;
  for (auto [k, val] : obj) {
    if (val.is_null()) continue;
    if (k == "scope") {
      object scope;
      Status st = GetObject(val, &scope);
      if (!st.ok()) return In(st, ".scope");
      for (auto [sk, sv] : scope) {
        if (sv.is_null()) continue;
        std::string_view s;
        if (sk == "name" || sk == "version") {
          st = GetString(sv, &s);
          if (!st.ok()) return In(st, std::string(".scope.") + std::string(sk));
          (sk == "name" ? proto.scope_name : proto.scope_version).assign(s);
        } else if (sk == "attributes") {
          std::vector<Attribute> ignored;  // validated, not kept (as in the protobuf decoder)
          st = Attributes(cx, sv, &ignored);
          if (!st.ok()) return In(st, ".scope.attributes");
        }
      }
    } else if (Is(k, "logRecords", "log_records")) {
      records = val;
      have_records = true;
    }
  }
  if (!have_records) return OkStatus();
  array items;
  Status st = GetArray(records, &items);
  if (!st.ok()) return In(st, ".logRecords");
  size_t i = 0;
  for (element r : items) {
    if (++b->records > cx.limits.max_records) {
      return Reason("more than " + std::to_string(cx.limits.max_records) + " log records");
    }
    Event e = proto;
    std::string rejected;
    st = LogRecord(cx, r, &e, &rejected);
    if (!st.ok()) return In(st, ".logRecords", i);
    if (!rejected.empty()) {
      Reject(b, path + ".logRecords[" + std::to_string(i) + "]" + rejected);
    } else {
      b->out.events.push_back(std::move(e));
    }
    ++i;
  }
  return OkStatus();
}

Status ResourceLogs(const Context& cx, const element& v, std::string_view org, Batch* b,
                    const std::string& path) {
  object obj;
  GOVERN_RETURN_IF_ERROR(GetObject(v, &obj));
  Event proto;
  proto.org.assign(org);
  element scopes;
  bool have_scopes = false;
  for (auto [k, val] : obj) {
    if (val.is_null()) continue;
    if (k == "resource") {
      object res;
      Status st = GetObject(val, &res);
      if (!st.ok()) return In(st, ".resource");
      for (auto [rk, rv] : res) {
        if (rk != "attributes" || rv.is_null()) continue;
        st = Attributes(cx, rv, &proto.resource_attributes);
        if (!st.ok()) return In(st, ".resource.attributes");
      }
    } else if (Is(k, "scopeLogs", "scope_logs")) {
      scopes = val;
      have_scopes = true;
    }
  }
  proto.service_name = internal::ServiceName(proto.resource_attributes);

  if (!have_scopes) return OkStatus();
  array items;
  Status st = GetArray(scopes, &items);
  if (!st.ok()) return In(st, ".scopeLogs");
  size_t i = 0;
  for (element s : items) {
    st = ScopeLogs(cx, s, proto, b, path + ".scopeLogs[" + std::to_string(i) + "]");
    if (!st.ok()) return In(st, ".scopeLogs", i);
    ++i;
  }
  return OkStatus();
}

}  // namespace

Result<DecodedBatch> DecodeOtlpLogsJson(std::string_view body, std::string_view org,
                                        const OtlpLimits& limits) {
  // Checked here, not by simdjson: an empty view may have a null data pointer, which simdjson would
  // hand to memcpy (undefined behaviour even for zero bytes; UBSan caught it on an empty fuzz input).
  if (body.empty()) return InvalidArgument("invalid JSON: empty body");
  simdjson::dom::parser parser;
  element root;
  if (auto err = parser.parse(body.data(), body.size()).get(root); err != simdjson::SUCCESS) {
    return InvalidArgument(std::string("invalid JSON: ") + simdjson::error_message(err));
  }
  const Context cx{limits};
  Batch b;
  object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) {
    return InvalidArgument("ExportLogsServiceRequest: expected a JSON object");
  }
  for (auto [k, val] : obj) {
    if (!Is(k, "resourceLogs", "resource_logs") || val.is_null()) continue;
    array items;
    if (val.get_array().get(items) != simdjson::SUCCESS) {
      return InvalidArgument("resourceLogs: expected an array");
    }
    size_t i = 0;
    for (element r : items) {
      const std::string path = "resourceLogs[" + std::to_string(i) + "]";
      Status st = ResourceLogs(cx, r, org, &b, path);
      if (!st.ok()) return InvalidArgument(In(st, "resourceLogs", i).message());
      ++i;
    }
  }
  return std::move(b.out);
}

}  // namespace govern::telemetry
