// OTLP logs protobuf wire decoder (see otlp_proto.h). Field numbers follow
// opentelemetry-proto logs/v1/logs.proto, common/v1/common.proto and resource/v1/resource.proto.
// Error paths: see internal::In in json_text.h; protobuf leaves add "(at byte N)".
#include "services/telemetry/otlp_proto.h"

#include <simdjson.h>

#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "crypto/encoding.h"
#include "services/telemetry/json_text.h"

namespace govern::telemetry {
namespace {

enum Wire : int { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

using internal::In;

Status Leaf(std::string_view reason, size_t offset) {
  return internal::Reason(std::string(reason) + " (at byte " + std::to_string(offset) + ")");
}

struct Field {
  uint32_t number = 0;
  int wire = 0;
  uint64_t value = 0;      // varint, fixed64 or fixed32 payload
  std::string_view bytes;  // length-delimited payload
  size_t offset = 0;       // absolute offset of the payload in the request body
};

// Walks the fields of one message. `base` is the absolute offset of `buf` in the request body.
class Reader {
 public:
  Reader(std::string_view buf, size_t base) : buf_(buf), base_(base) {}
  bool done() const { return pos_ >= buf_.size(); }

  // Reads the next field (tag and payload, whatever its wire type). Unknown fields need nothing more.
  Status Next(Field* f) {
    const size_t tag_at = base_ + pos_;
    uint64_t tag = 0;
    GOVERN_RETURN_IF_ERROR(Varint(&tag));
    if (tag >> 3 == 0 || tag >> 3 > 0x1fffffff) {
      return Leaf("invalid field number " + std::to_string(tag >> 3), tag_at);
    }
    f->number = static_cast<uint32_t>(tag >> 3);
    f->wire = static_cast<int>(tag & 7);
    f->offset = base_ + pos_;
    switch (f->wire) {
      case kVarint:
        return Varint(&f->value);
      case kFixed64:
        return Fixed(8, &f->value);
      case kFixed32:
        return Fixed(4, &f->value);
      case kLen: {
        uint64_t len = 0;
        GOVERN_RETURN_IF_ERROR(Varint(&len));
        if (len > buf_.size() - pos_) {
          return Leaf("field " + std::to_string(f->number) + " length " + std::to_string(len) +
                          " runs past the end of its message (" + std::to_string(buf_.size() - pos_) +
                          " bytes left)",
                      f->offset);
        }
        f->offset = base_ + pos_;
        f->bytes = buf_.substr(pos_, len);
        pos_ += len;
        return OkStatus();
      }
      case 3:
      case 4:
        return Leaf("field " + std::to_string(f->number) + " uses a group (wire type " +
                        std::to_string(f->wire) + "), not supported",
                    tag_at);
      default:
        return Leaf(
            "field " + std::to_string(f->number) + " has invalid wire type " + std::to_string(f->wire),
            tag_at);
    }
  }

 private:
  Status Varint(uint64_t* out) {
    const size_t start = base_ + pos_;
    uint64_t v = 0;
    for (int i = 0; i < 10; ++i) {
      if (pos_ >= buf_.size()) return Leaf("truncated varint", start);
      const auto b = static_cast<uint8_t>(buf_[pos_++]);
      if (i == 9 && b > 1) return Leaf("varint overflows 64 bits", start);
      v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) {
        *out = v;
        return OkStatus();
      }
    }
    return Leaf("varint longer than 10 bytes", start);
  }
  Status Fixed(size_t n, uint64_t* out) {
    if (buf_.size() - pos_ < n) {
      return Leaf("truncated fixed" + std::to_string(n * 8) + " (" + std::to_string(buf_.size() - pos_) +
                      " bytes left)",
                  base_ + pos_);
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(buf_[pos_ + i])) << (8 * i);
    pos_ += n;
    *out = v;
    return OkStatus();
  }

  std::string_view buf_;
  size_t base_;
  size_t pos_ = 0;
};

const char* WireName(int wire) {
  switch (wire) {
    case kVarint:
      return "varint";
    case kFixed64:
      return "fixed64";
    case kLen:
      return "length-delimited";
    default:
      return "fixed32";
  }
}

// A known field must come with its declared wire type.
Status Expect(const Field& f, int wire, std::string_view name) {
  if (f.wire == wire) return OkStatus();
  return In(Leaf(std::string("wire type ") + WireName(f.wire) + ", expected " + WireName(wire), f.offset),
            name);
}

Status String(const Field& f, std::string_view name, std::string_view* out) {
  GOVERN_RETURN_IF_ERROR(Expect(f, kLen, name));
  if (!simdjson::validate_utf8(f.bytes.data(), f.bytes.size())) {
    return In(Leaf("invalid UTF-8", f.offset), name);
  }
  *out = f.bytes;
  return OkStatus();
}

struct ProtoContext {
  const OtlpLimits& limits;
};

Status KeyValueJson(const ProtoContext& cx, const Field& f, int depth, std::string* key, std::string* json);

// One AnyValue. Top level (body): a string value is returned raw with *is_string; everything else is
// compact JSON in *out. Nested values always render JSON (is_string == nullptr). The oneof is
// last-one-wins, as protobuf merges it; every member seen is still validated.
Status AnyValue(const ProtoContext& cx, std::string_view buf, size_t base, int depth, std::string* out,
                bool* is_string) {
  if (depth > cx.limits.max_value_depth) {
    return Leaf("values nested deeper than " + std::to_string(cx.limits.max_value_depth), base);
  }
  out->clear();
  out->append("null");
  if (is_string) *is_string = false;
  Reader r(buf, base);
  Field f;
  while (!r.done()) {
    GOVERN_RETURN_IF_ERROR(r.Next(&f));
    switch (f.number) {
      case 1: {
        std::string_view s;
        GOVERN_RETURN_IF_ERROR(String(f, ".string_value", &s));
        out->clear();
        if (is_string) {
          out->assign(s);
          *is_string = true;
        } else {
          internal::AppendJsonString(*out, s);
        }
        break;
      }
      case 2:
        GOVERN_RETURN_IF_ERROR(Expect(f, kVarint, ".bool_value"));
        out->assign(f.value != 0 ? "true" : "false");
        if (is_string) *is_string = false;
        break;
      case 3:
        GOVERN_RETURN_IF_ERROR(Expect(f, kVarint, ".int_value"));
        out->assign(std::to_string(static_cast<int64_t>(f.value)));
        if (is_string) *is_string = false;
        break;
      case 4:
        GOVERN_RETURN_IF_ERROR(Expect(f, kFixed64, ".double_value"));
        out->clear();
        internal::AppendJsonDouble(*out, std::bit_cast<double>(f.value));
        if (is_string) *is_string = false;
        break;
      case 5: {  // ArrayValue { repeated AnyValue values = 1; }
        GOVERN_RETURN_IF_ERROR(Expect(f, kLen, ".array_value"));
        std::string json = "[";
        std::string item;
        Reader ar(f.bytes, f.offset);
        Field af;
        size_t i = 0;
        while (!ar.done()) {
          Status s = ar.Next(&af);
          if (!s.ok()) return In(s, ".array_value");
          if (af.number != 1) continue;
          s = Expect(af, kLen, "values");
          if (s.ok()) s = AnyValue(cx, af.bytes, af.offset, depth + 1, &item, nullptr);
          if (!s.ok()) return In(s, ".array_value.values", i);
          if (i++ > 0) json.push_back(',');
          json.append(item);
        }
        json.push_back(']');
        *out = std::move(json);
        if (is_string) *is_string = false;
        break;
      }
      case 6: {  // KeyValueList { repeated KeyValue values = 1; }
        GOVERN_RETURN_IF_ERROR(Expect(f, kLen, ".kvlist_value"));
        std::string json = "{";
        std::string key, value;
        Reader kr(f.bytes, f.offset);
        Field kf;
        size_t i = 0;
        while (!kr.done()) {
          Status s = kr.Next(&kf);
          if (!s.ok()) return In(s, ".kvlist_value");
          if (kf.number != 1) continue;
          s = KeyValueJson(cx, kf, depth + 1, &key, &value);
          if (!s.ok()) return In(s, ".kvlist_value.values", i);
          if (i++ > 0) json.push_back(',');
          internal::AppendJsonString(json, key);
          json.push_back(':');
          json.append(value);
        }
        json.push_back('}');
        *out = std::move(json);
        if (is_string) *is_string = false;
        break;
      }
      case 7: {
        GOVERN_RETURN_IF_ERROR(Expect(f, kLen, ".bytes_value"));
        out->clear();
        internal::AppendJsonString(
            *out, crypto::Base64Encode(
                      std::span(reinterpret_cast<const uint8_t*>(f.bytes.data()), f.bytes.size())));
        if (is_string) *is_string = false;
        break;
      }
      default:
        break;  // unknown: skipped
    }
  }
  return OkStatus();
}

// KeyValue { string key = 1; AnyValue value = 2; } from a length-delimited field.
Status KeyValueJson(const ProtoContext& cx, const Field& outer, int depth, std::string* key,
                    std::string* json) {
  GOVERN_RETURN_IF_ERROR(Expect(outer, kLen, ""));
  key->clear();
  json->assign("null");
  Reader r(outer.bytes, outer.offset);
  Field f;
  while (!r.done()) {
    GOVERN_RETURN_IF_ERROR(r.Next(&f));
    if (f.number == 1) {
      std::string_view k;
      GOVERN_RETURN_IF_ERROR(String(f, ".key", &k));
      key->assign(k);
    } else if (f.number == 2) {
      GOVERN_RETURN_IF_ERROR(Expect(f, kLen, ".value"));
      Status s = AnyValue(cx, f.bytes, f.offset, depth, json, nullptr);
      if (!s.ok()) return In(s, ".value");
    }
  }
  return OkStatus();
}

Status AppendAttribute(const ProtoContext& cx, const Field& f, std::string_view name, size_t index,
                       std::vector<Attribute>* attrs) {
  Attribute a;
  Status s = KeyValueJson(cx, f, 1, &a.key, &a.value_json);
  if (!s.ok()) return In(s, name, index);
  attrs->push_back(std::move(a));
  return OkStatus();
}

// Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
Status Resource(const ProtoContext& cx, const Field& outer, Event* proto) {
  Reader r(outer.bytes, outer.offset);
  Field f;
  size_t n = proto->resource_attributes.size();  // a repeated resource field merges
  while (!r.done()) {
    GOVERN_RETURN_IF_ERROR(r.Next(&f));
    if (f.number == 1) {
      GOVERN_RETURN_IF_ERROR(AppendAttribute(cx, f, ".attributes", n++, &proto->resource_attributes));
    } else if (f.number == 2) {
      GOVERN_RETURN_IF_ERROR(Expect(f, kVarint, ".dropped_attributes_count"));
    }
  }
  proto->service_name = internal::ServiceName(proto->resource_attributes);

  return OkStatus();
}

// InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3;
// uint32 dropped_attributes_count = 4; }. Scope attributes are validated but not kept.
Status Scope(const ProtoContext& cx, const Field& outer, Event* proto) {
  Reader r(outer.bytes, outer.offset);
  Field f;
  std::vector<Attribute> ignored;
  size_t n = 0;
  while (!r.done()) {
    GOVERN_RETURN_IF_ERROR(r.Next(&f));
    std::string_view s;
    switch (f.number) {
      case 1:
        GOVERN_RETURN_IF_ERROR(String(f, ".name", &s));
        proto->scope_name.assign(s);
        break;
      case 2:
        GOVERN_RETURN_IF_ERROR(String(f, ".version", &s));
        proto->scope_version.assign(s);
        break;
      case 3:
        GOVERN_RETURN_IF_ERROR(AppendAttribute(cx, f, ".attributes", n++, &ignored));
        ignored.clear();
        break;
      case 4:
        GOVERN_RETURN_IF_ERROR(Expect(f, kVarint, ".dropped_attributes_count"));
        break;
      default:
        break;
    }
  }
  return OkStatus();
}

// LogRecord. A wire error returns an error; a record that is well-formed but unusable sets *rejected.
Status LogRecord(const ProtoContext& cx, const Field& outer, Event* e, std::string* rejected) {
  Reader r(outer.bytes, outer.offset);
  Field f;
  uint64_t time = 0, observed = 0;
  size_t n = 0;
  while (!r.done()) {
    GOVERN_RETURN_IF_ERROR(r.Next(&f));
    std::string_view s;
    switch (f.number) {
      case 1:
        GOVERN_RETURN_IF_ERROR(Expect(f, kFixed64, ".time_unix_nano"));
        time = f.value;
        break;
      case 2:
        GOVERN_RETURN_IF_ERROR(Expect(f, kVarint, ".severity_number"));
        e->severity_number = static_cast<int32_t>(static_cast<uint32_t>(f.value));  // int32 truncation
        break;
      case 3:
        GOVERN_RETURN_IF_ERROR(String(f, ".severity_text", &s));
        e->severity_text.assign(s);
        break;
      case 5: {
        GOVERN_RETURN_IF_ERROR(Expect(f, kLen, ".body"));
        bool is_string = false;
        Status st = AnyValue(cx, f.bytes, f.offset, 1, &e->body, &is_string);
        if (!st.ok()) return In(st, ".body");
        e->body_kind = is_string ? BodyKind::kString : BodyKind::kJson;
        break;
      }
      case 6:
        GOVERN_RETURN_IF_ERROR(AppendAttribute(cx, f, ".attributes", n++, &e->attributes));
        break;
      case 7:
        GOVERN_RETURN_IF_ERROR(Expect(f, kVarint, ".dropped_attributes_count"));
        e->dropped_attributes_count = static_cast<uint32_t>(f.value);
        break;
      case 8:
        GOVERN_RETURN_IF_ERROR(Expect(f, kFixed32, ".flags"));
        e->flags = static_cast<uint32_t>(f.value);
        break;
      case 9:
        GOVERN_RETURN_IF_ERROR(Expect(f, kLen, ".trace_id"));
        if (f.bytes.size() != 16 && !f.bytes.empty() && rejected->empty()) {
          *rejected = ".trace_id: " + std::to_string(f.bytes.size()) + " bytes, expected 16";
        }
        e->trace_id_hex = internal::LowerHex(f.bytes);
        break;
      case 10:
        GOVERN_RETURN_IF_ERROR(Expect(f, kLen, ".span_id"));
        if (f.bytes.size() != 8 && !f.bytes.empty() && rejected->empty()) {
          *rejected = ".span_id: " + std::to_string(f.bytes.size()) + " bytes, expected 8";
        }
        e->span_id_hex = internal::LowerHex(f.bytes);
        break;
      case 11:
        GOVERN_RETURN_IF_ERROR(Expect(f, kFixed64, ".observed_time_unix_nano"));
        observed = f.value;
        break;
      case 12:
        GOVERN_RETURN_IF_ERROR(String(f, ".event_name", &s));
        e->type.assign(s);
        break;
      default:
        break;
    }
  }
  FinishOtlpRecord(time, observed, ".time_unix_nano", ".observed_time_unix_nano", e, rejected);
  return OkStatus();
}

struct ProtoBatch {
  DecodedBatch out;
  int64_t records = 0;
};

// ScopeLogs { InstrumentationScope scope = 1; repeated LogRecord log_records = 2; string schema_url = 3; }
// The scope may follow the records on the wire, so records are collected first and decoded after.
Status ScopeLogs(const ProtoContext& cx, const Field& outer, const Event& resource_proto, ProtoBatch* b) {
  Event proto = resource_proto;
  std::vector<Field> records;
  Reader r(outer.bytes, outer.offset);
  Field f;
  while (!r.done()) {
    GOVERN_RETURN_IF_ERROR(r.Next(&f));
    std::string_view s;
    if (f.number == 1) {
      GOVERN_RETURN_IF_ERROR(Expect(f, kLen, ".scope"));
      Status st = Scope(cx, f, &proto);
      if (!st.ok()) return In(st, ".scope");
    } else if (f.number == 2) {
      GOVERN_RETURN_IF_ERROR(Expect(f, kLen, ".log_records"));
      records.push_back(f);
    } else if (f.number == 3) {
      GOVERN_RETURN_IF_ERROR(String(f, ".schema_url", &s));
    }
  }
  for (size_t i = 0; i < records.size(); ++i) {
    if (++b->records > cx.limits.max_records) {
      return Leaf("more than " + std::to_string(cx.limits.max_records) + " log records", records[i].offset);
    }
    Event e = proto;
    std::string rejected;
    Status st = LogRecord(cx, records[i], &e, &rejected);
    if (!st.ok()) return In(st, ".log_records", i);
    if (!rejected.empty()) {
      if (b->out.rejected++ == 0) {
        b->out.rejected_message = ".log_records[" + std::to_string(i) + "]" + rejected;
      }
      continue;
    }
    b->out.events.push_back(std::move(e));
  }
  return OkStatus();
}

// ResourceLogs { Resource resource = 1; repeated ScopeLogs scope_logs = 2; string schema_url = 3; }
Status ResourceLogs(const ProtoContext& cx, const Field& outer, std::string_view org, ProtoBatch* b) {
  Event proto;
  proto.org.assign(org);
  std::vector<Field> scopes;
  Reader r(outer.bytes, outer.offset);
  Field f;
  while (!r.done()) {
    GOVERN_RETURN_IF_ERROR(r.Next(&f));
    std::string_view s;
    if (f.number == 1) {
      GOVERN_RETURN_IF_ERROR(Expect(f, kLen, ".resource"));
      Status st = Resource(cx, f, &proto);
      if (!st.ok()) return In(st, ".resource");
    } else if (f.number == 2) {
      GOVERN_RETURN_IF_ERROR(Expect(f, kLen, ".scope_logs"));
      scopes.push_back(f);
    } else if (f.number == 3) {
      GOVERN_RETURN_IF_ERROR(String(f, ".schema_url", &s));
    }
  }
  for (size_t i = 0; i < scopes.size(); ++i) {
    const int64_t before = b->out.rejected;
    Status st = ScopeLogs(cx, scopes[i], proto, b);
    if (!st.ok()) return In(st, ".scope_logs", i);
    if (before == 0 && b->out.rejected > 0 && b->out.rejected_message[0] == '.') {
      b->out.rejected_message = ".scope_logs[" + std::to_string(i) + "]" + b->out.rejected_message;
    }
  }
  return OkStatus();
}

}  // namespace

Result<DecodedBatch> DecodeOtlpLogsProto(std::string_view body, std::string_view org,
                                         const OtlpLimits& limits) {
  const ProtoContext cx{limits};
  ProtoBatch b;
  Reader r(body, 0);
  Field f;
  size_t i = 0;
  while (!r.done()) {
    Status st = r.Next(&f);
    if (!st.ok()) return InvalidArgument("ExportLogsServiceRequest" + st.message());
    if (f.number != 1) continue;
    const int64_t before = b.out.rejected;
    st = Expect(f, kLen, "");
    if (st.ok()) st = ResourceLogs(cx, f, org, &b);
    if (!st.ok()) {
      Status full = In(st, "resource_logs", i);
      return InvalidArgument(full.message());
    }
    if (before == 0 && b.out.rejected > 0) {
      b.out.rejected_message = "resource_logs[" + std::to_string(i) + "]" + b.out.rejected_message;
    }
    ++i;
  }
  return std::move(b.out);
}

}  // namespace govern::telemetry
