// Test and benchmark helper: builds protobuf wire bytes by hand, one field at a time, so tests can
// write exactly the bytes they mean (including malformed ones). Not used by the decoders.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace govern::telemetry::protowire {

inline std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
inline std::string Tag(uint32_t field, int wire) { return Varint((uint64_t{field} << 3) | wire); }
inline std::string VarintField(uint32_t field, uint64_t v) { return Tag(field, 0) + Varint(v); }
inline std::string LenField(uint32_t field, std::string_view bytes) {
  return Tag(field, 2) + Varint(bytes.size()) + std::string(bytes);
}
inline std::string Fixed64Field(uint32_t field, uint64_t v) {
  std::string out = Tag(field, 1);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return out;
}
inline std::string Fixed32Field(uint32_t field, uint32_t v) {
  std::string out = Tag(field, 5);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return out;
}
inline std::string DoubleField(uint32_t field, double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  return Fixed64Field(field, bits);
}

// OTLP message shorthands (field numbers from opentelemetry-proto).
inline std::string StringValue(std::string_view s) { return LenField(1, s); }  // AnyValue
inline std::string KeyValue(std::string_view key, std::string_view any_value) {
  return LenField(1, key) + LenField(2, any_value);
}
inline std::string Request(std::string_view resource_logs) { return LenField(1, resource_logs); }
inline std::string ResourceLogs(std::string_view resource, std::string_view scope_logs) {
  return LenField(1, resource) + LenField(2, scope_logs);
}
inline std::string ScopeLogs(std::string_view scope, std::string_view records) {
  return LenField(1, scope) + std::string(records);  // records: concatenated LenField(2, LogRecord)
}
// A whole request with one resource (service.name = service), one scope and these records.
inline std::string OneScopeRequest(std::string_view service, std::string_view records) {
  return Request(ResourceLogs(LenField(1, KeyValue("service.name", StringValue(service))),
                              ScopeLogs(LenField(1, "scope"), records)));
}

}  // namespace govern::telemetry::protowire
