#include "services/telemetry/record.h"

#include <limits>

namespace govern::telemetry {
namespace {

void PutVarint(std::string* out, uint64_t v) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

void PutString(std::string* out, std::string_view s) {
  PutVarint(out, s.size());
  out->append(s);
}
size_t StringSize(std::string_view s) { return VarintSize(s.size()) + s.size(); }

void PutAttributes(std::string* out, const std::vector<Attribute>& attrs) {
  PutVarint(out, attrs.size());
  for (const Attribute& a : attrs) {
    PutString(out, a.key);
    PutString(out, a.value_json);
  }
}
size_t AttributesSize(const std::vector<Attribute>& attrs) {
  size_t n = VarintSize(attrs.size());
  for (const Attribute& a : attrs) n += StringSize(a.key) + StringSize(a.value_json);
  return n;
}

class Cursor {
 public:
  explicit Cursor(std::string_view data) : data_(data) {}

  bool Varint(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return Fail("truncated varint");
      auto b = static_cast<uint8_t>(data_[pos_++]);
      if (shift == 63 && b > 1) return Fail("varint overflows 64 bits");
      result |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *v = result;
        return true;
      }
    }
    return Fail("varint longer than 10 bytes");
  }
  bool String(std::string* s) {
    uint64_t n = 0;
    if (!Varint(&n)) return false;
    if (n > data_.size() - pos_) return Fail("string runs past the end of the record");
    s->assign(data_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool Byte(uint8_t* b) {
    if (pos_ >= data_.size()) return Fail("truncated");
    *b = static_cast<uint8_t>(data_[pos_++]);
    return true;
  }
  // A count of items each taking at least `min_bytes`, checked against what is left.
  bool Count(uint64_t* n, size_t min_bytes) {
    if (!Varint(n)) return false;
    if (*n > (data_.size() - pos_) / min_bytes) return Fail("count larger than the record can hold");
    return true;
  }
  bool Attributes(std::vector<Attribute>* attrs) {
    uint64_t n = 0;
    if (!Count(&n, 2)) return false;
    attrs->resize(n);
    for (Attribute& a : *attrs) {
      if (!String(&a.key) || !String(&a.value_json)) return false;
    }
    return true;
  }
  bool Fail(std::string_view why) {
    if (error_.empty()) error_ = std::string(why) + " at offset " + std::to_string(pos_);
    return false;
  }
  bool AtEnd() const { return pos_ == data_.size(); }
  const std::string& error() const { return error_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

size_t EncodedEventSize(const Event& e) {
  return StringSize(e.id) + StringSize(e.org) + StringSize(e.type) + StringSize(e.severity_text) +
         StringSize(e.body) + StringSize(e.service_name) + StringSize(e.scope_name) +
         StringSize(e.scope_version) + StringSize(e.trace_id_hex) + StringSize(e.span_id_hex) +
         VarintSize(ZigZag(e.time_unix_nanos)) + VarintSize(ZigZag(e.observed_unix_nanos)) +
         VarintSize(ZigZag(e.severity_number)) + 1 + VarintSize(e.flags) +
         VarintSize(e.dropped_attributes_count) + AttributesSize(e.attributes) +
         AttributesSize(e.resource_attributes);
}

void EncodeRecord(std::span<const Event> events, int64_t received_unix_nanos, std::string* out) {
  size_t total = 1 + 10 + 10;
  for (const Event& e : events) total += EncodedEventSize(e);
  out->reserve(out->size() + total);
  out->push_back(static_cast<char>(kRecordVersion));
  PutVarint(out, ZigZag(received_unix_nanos));
  PutVarint(out, events.size());
  for (const Event& e : events) {
    PutString(out, e.id);
    PutString(out, e.org);
    PutString(out, e.type);
    PutString(out, e.severity_text);
    PutString(out, e.body);
    PutString(out, e.service_name);
    PutString(out, e.scope_name);
    PutString(out, e.scope_version);
    PutString(out, e.trace_id_hex);
    PutString(out, e.span_id_hex);
    PutVarint(out, ZigZag(e.time_unix_nanos));
    PutVarint(out, ZigZag(e.observed_unix_nanos));
    PutVarint(out, ZigZag(e.severity_number));
    out->push_back(static_cast<char>(e.body_kind));
    PutVarint(out, e.flags);
    PutVarint(out, e.dropped_attributes_count);
    PutAttributes(out, e.attributes);
    PutAttributes(out, e.resource_attributes);
  }
}

Result<RecordBatch> DecodeRecord(std::string_view data) {
  RecordBatch batch;
  Cursor c(data);
  uint8_t version = 0;
  uint64_t received = 0, count = 0;
  auto fail = [&c] { return DataLoss("telemetry WAL record: " + c.error()); };
  if (!c.Byte(&version)) return fail();
  if (version != kRecordVersion) {
    return DataLoss("telemetry WAL record: unknown version " + std::to_string(version));
  }
  // An event takes at least 10 string lengths, 6 integers and the body kind: 17 bytes.
  if (!c.Varint(&received) || !c.Count(&count, 17)) return fail();
  batch.received_unix_nanos = UnZigZag(received);
  batch.events.resize(count);
  for (Event& e : batch.events) {
    uint64_t t = 0, o = 0, sev = 0, flags = 0, dropped = 0;
    uint8_t kind = 0;
    if (!c.String(&e.id) || !c.String(&e.org) || !c.String(&e.type) || !c.String(&e.severity_text) ||
        !c.String(&e.body) || !c.String(&e.service_name) || !c.String(&e.scope_name) ||
        !c.String(&e.scope_version) || !c.String(&e.trace_id_hex) || !c.String(&e.span_id_hex) ||
        !c.Varint(&t) || !c.Varint(&o) || !c.Varint(&sev) || !c.Byte(&kind) || !c.Varint(&flags) ||
        !c.Varint(&dropped) || !c.Attributes(&e.attributes) || !c.Attributes(&e.resource_attributes)) {
      return fail();
    }
    int64_t severity = UnZigZag(sev);
    if (severity < std::numeric_limits<int32_t>::min() || severity > std::numeric_limits<int32_t>::max()) {
      c.Fail("severity_number out of range");
      return fail();
    }
    if (kind > static_cast<uint8_t>(BodyKind::kJson)) {
      c.Fail("unknown body kind");
      return fail();
    }
    if (flags > std::numeric_limits<uint32_t>::max() || dropped > std::numeric_limits<uint32_t>::max()) {
      c.Fail("flags or dropped_attributes_count out of range");
      return fail();
    }
    e.time_unix_nanos = UnZigZag(t);
    e.observed_unix_nanos = UnZigZag(o);
    e.severity_number = static_cast<int32_t>(severity);
    e.body_kind = static_cast<BodyKind>(kind);
    e.flags = static_cast<uint32_t>(flags);
    e.dropped_attributes_count = static_cast<uint32_t>(dropped);
  }
  if (!c.AtEnd()) {
    c.Fail("bytes after the last event");
    return fail();
  }
  return batch;
}

}  // namespace govern::telemetry
