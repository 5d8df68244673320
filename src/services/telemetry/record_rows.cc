#include "services/telemetry/record_rows.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "services/telemetry/json_text.h"
#include "services/telemetry/record.h"
#include "services/telemetry/schema.h"

namespace govern::telemetry {
namespace {

int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// DecodeRecord's reader over views (record.cc), with the same checks and the same error texts.
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
  bool String(std::string_view* s) {
    uint64_t n = 0;
    if (!Varint(&n)) return false;
    if (n > data_.size() - pos_) return Fail("string runs past the end of the record");
    *s = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool Byte(uint8_t* b) {
    if (pos_ >= data_.size()) return Fail("truncated");
    *b = static_cast<uint8_t>(data_[pos_++]);
    return true;
  }
  bool Count(uint64_t* n, size_t min_bytes) {
    if (!Varint(n)) return false;
    if (*n > (data_.size() - pos_) / min_bytes) return Fail("count larger than the record can hold");
    return true;
  }
  // The count, then the encoded pairs as one view (each key and value checked).
  bool Attributes(uint64_t* count, std::string_view* encoded) {
    if (!Count(count, 2)) return false;
    const size_t start = pos_;
    std::string_view key, value;
    for (uint64_t i = 0; i < *count; ++i) {
      if (!String(&key) || !String(&value)) return false;
    }
    *encoded = data_.substr(start, pos_ - start);
    return true;
  }
  bool Fail(std::string_view why) {
    if (error_.empty()) error_ = std::string(why) + " at offset " + std::to_string(pos_);
    return false;
  }
  bool AtEnd() const { return pos_ == data_.size(); }
  size_t pos() const { return pos_; }
  const std::string& error() const { return error_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  std::string error_;
};

// Reads one already checked string (no error text: CheckRecord vouched for the bytes).
bool ReadString(std::string_view data, size_t* pos, std::string_view* s) {
  uint64_t n = 0;
  int shift = 0;
  for (;;) {
    if (*pos >= data.size() || shift > 63) return false;
    auto b = static_cast<uint8_t>(data[(*pos)++]);
    n |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) break;
    shift += 7;
  }
  if (n > data.size() - *pos) return false;
  *s = data.substr(*pos, n);
  *pos += n;
  return true;
}

// As event.cc's UnstorableReason.
bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }
bool JsonHasNulEscape(std::string_view json) {
  for (size_t i = 0; i + 1 < json.size(); ++i) {
    if (json[i] != '\\') continue;
    if (json[i + 1] == 'u' && json.substr(i + 2, 4) == "0000") return true;
    ++i;
  }
  return false;
}

std::string UnstorableView(const internal::EventView& e) {
  if (e.id.empty()) return "id (empty)";
  const std::pair<std::string_view, std::string_view> fields[] = {
      {"id", e.id},
      {"type", e.type},
      {"severity_text", e.severity_text},
      {"service_name", e.service_name},
      {"scope_name", e.scope_name},
      {"scope_version", e.scope_version},
      {"trace_id", e.trace_id_hex},
      {"span_id", e.span_id_hex},
  };
  for (const auto& [name, value] : fields) {
    if (HasNul(value)) return std::string(name) + ": contains a NUL character, which cannot be stored";
  }
  if (HasNul(e.body) || (e.body_kind == static_cast<uint8_t>(BodyKind::kJson) && JsonHasNulEscape(e.body))) {
    return "body: contains a NUL character, which cannot be stored";
  }
  for (int which = 0; which < 2; ++which) {
    const char* what = which == 0 ? "attributes" : "resource attributes";
    std::string_view encoded = which == 0 ? e.attributes : e.resource_attributes;
    const uint64_t count = which == 0 ? e.attribute_count : e.resource_attribute_count;
    size_t pos = 0;
    std::string_view key, value;
    for (uint64_t i = 0; i < count && ReadString(encoded, &pos, &key) && ReadString(encoded, &pos, &value);
         ++i) {
      if (HasNul(key) || HasNul(value) || JsonHasNulEscape(value)) {
        return std::string(what) + " \"" + (HasNul(key) ? std::string("?") : std::string(key)) +
               "\": contains a NUL character, which cannot be stored";
      }
    }
  }
  return {};
}

int64_t FloorDay(int64_t t) {
  int64_t day = t / kNanosPerDay;
  if (t % kNanosPerDay < 0) --day;
  return day;
}

}  // namespace

Status CheckRecord(std::string_view data, RecordInfo* info) {
  info->received_unix_nanos = 0;
  info->events = 0;
  info->day_times.clear();
  Cursor c(data);
  uint8_t version = 0;
  uint64_t received = 0, count = 0;
  auto fail = [&c] { return DataLoss("telemetry WAL record: " + c.error()); };
  if (!c.Byte(&version)) return fail();
  if (version != kRecordVersion) {
    return DataLoss("telemetry WAL record: unknown version " + std::to_string(version));
  }
  if (!c.Varint(&received) || !c.Count(&count, 17)) return fail();
  std::string unstorable;  // the first event that cannot be stored; reported once the whole record is valid
  int64_t last_day = 0;
  bool have_day = false;
  std::vector<int64_t> days;
  internal::EventView e;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t t = 0, o = 0, sev = 0, flags = 0, dropped = 0;
    uint8_t kind = 0;
    if (!c.String(&e.id) || !c.String(&e.org) || !c.String(&e.type) || !c.String(&e.severity_text) ||
        !c.String(&e.body) || !c.String(&e.service_name) || !c.String(&e.scope_name) ||
        !c.String(&e.scope_version) || !c.String(&e.trace_id_hex) || !c.String(&e.span_id_hex) ||
        !c.Varint(&t) || !c.Varint(&o) || !c.Varint(&sev) || !c.Byte(&kind) || !c.Varint(&flags) ||
        !c.Varint(&dropped) || !c.Attributes(&e.attribute_count, &e.attributes) ||
        !c.Attributes(&e.resource_attribute_count, &e.resource_attributes)) {
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
    e.body_kind = kind;
    if (unstorable.empty()) {
      if (std::string why = UnstorableView(e); !why.empty()) {
        unstorable =
            "event " + std::to_string(i) + " (id \"" + std::string(e.id.substr(0, 64)) + "\"): " + why;
      }
    }
    const int64_t time = UnZigZag(t);
    const int64_t day = FloorDay(time);
    if (!have_day || day != last_day) {
      if (std::find(days.begin(), days.end(), day) == days.end()) {
        days.push_back(day);
        info->day_times.push_back(time);
      }
      last_day = day;
      have_day = true;
    }
  }
  if (!c.AtEnd()) {
    c.Fail("bytes after the last event");
    return fail();
  }
  if (!unstorable.empty()) {
    info->day_times.clear();
    return InvalidArgument(unstorable);
  }
  info->received_unix_nanos = UnZigZag(received);
  info->events = static_cast<size_t>(count);
  return OkStatus();
}

namespace internal {

RecordWalker::RecordWalker(std::string_view data) : data_(data) {
  // Version byte, received time, count (checked by CheckRecord).
  pos_ = 1;
  uint64_t v = 0;
  bool ok = data_.size() > 0;
  for (int field = 0; ok && field < 2; ++field) {
    v = 0;
    int shift = 0;
    for (;;) {
      if (pos_ >= data_.size() || shift > 63) {
        ok = false;
        break;
      }
      auto b = static_cast<uint8_t>(data_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
      shift += 7;
    }
    if (field == 0) received_ = UnZigZag(v);
  }
  left_ = ok ? v : 0;
}

bool RecordWalker::Varint(uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= data_.size()) return false;
    auto b = static_cast<uint8_t>(data_[pos_++]);
    result |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

bool RecordWalker::Pairs(uint64_t* count, std::string_view* encoded) {
  if (!Varint(count)) return false;
  const size_t start = pos_;
  std::string_view s;
  for (uint64_t i = 0; i < 2 * *count; ++i) {
    if (!ReadString(data_, &pos_, &s)) return false;
  }
  *encoded = data_.substr(start, pos_ - start);
  return true;
}

bool RecordWalker::Next(EventView* e) {
  if (left_ == 0) return false;
  --left_;
  uint64_t t = 0, o = 0, sev = 0, flags = 0, dropped = 0;
  if (!ReadString(data_, &pos_, &e->id) || !ReadString(data_, &pos_, &e->org) ||
      !ReadString(data_, &pos_, &e->type) || !ReadString(data_, &pos_, &e->severity_text) ||
      !ReadString(data_, &pos_, &e->body) || !ReadString(data_, &pos_, &e->service_name) ||
      !ReadString(data_, &pos_, &e->scope_name) || !ReadString(data_, &pos_, &e->scope_version) ||
      !ReadString(data_, &pos_, &e->trace_id_hex) || !ReadString(data_, &pos_, &e->span_id_hex) ||
      !Varint(&t) || !Varint(&o) || !Varint(&sev) || pos_ >= data_.size()) {
    left_ = 0;
    return false;
  }
  e->body_kind = static_cast<uint8_t>(data_[pos_++]);
  if (!Varint(&flags) || !Varint(&dropped) || !Pairs(&e->attribute_count, &e->attributes) ||
      !Pairs(&e->resource_attribute_count, &e->resource_attributes)) {
    left_ = 0;
    return false;
  }
  e->time_unix_nanos = UnZigZag(t);
  e->observed_unix_nanos = UnZigZag(o);
  e->severity_number = static_cast<int32_t>(UnZigZag(sev));
  e->flags = static_cast<uint32_t>(flags);
  e->dropped_attributes_count = static_cast<uint32_t>(dropped);
  e->received_unix_nanos = received_;
  return true;
}

void AttributesJson(std::string_view encoded, uint64_t count, std::string* out) {
  out->clear();
  out->push_back('{');
  size_t pos = 0;
  std::string_view key, value;
  for (uint64_t i = 0; i < count && ReadString(encoded, &pos, &key) && ReadString(encoded, &pos, &value);
       ++i) {
    if (i) out->push_back(',');
    AppendJsonString(*out, key);
    out->push_back(':');
    out->append(value.empty() ? std::string_view("null") : value);
  }
  out->push_back('}');
}

void AppendRowFields(db::CopyEncoder& row, const EventView& e, RowScratch* scratch) {
  AttributesJson(e.attributes, e.attribute_count, &scratch->attributes);
  AttributesJson(e.resource_attributes, e.resource_attribute_count, &scratch->resource_attributes);
  // kEventColumns order, each in its column's binary type (as AppendEventRow).
  row.Text(e.org)
      .Int64(e.time_unix_nanos)
      .Text(e.id)
      .Int64(e.observed_unix_nanos)
      .Int64(e.received_unix_nanos)
      .Text(e.type)
      .Text(e.severity_text)
      .Int32(e.severity_number)
      .Int16(static_cast<int16_t>(e.body_kind))
      .Text(e.body)
      .Text(scratch->attributes)
      .Text(scratch->resource_attributes)
      .Text(e.service_name)
      .Text(e.scope_name)
      .Text(e.scope_version)
      .Text(e.trace_id_hex)
      .Text(e.span_id_hex)
      .Int64(e.flags)
      .Int64(e.dropped_attributes_count);
}

}  // namespace internal
}  // namespace govern::telemetry
