// Kafka wire primitives: a bounds-checked big-endian Reader over one request frame and a Writer that
// builds a response. Both the classic encodings (int16-length strings, int32-length arrays) and the
// flexible ones (unsigned varint "compact" lengths, tagged-field sections) are here.
//
// A Reader never reads past its end: the first short read marks it failed, and every later read returns
// zero values, so a decoder reads a whole structure and checks ok() once. Not thread-safe (a value).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace govern::streams {

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  bool ok() const { return ok_; }
  size_t remaining() const { return ok_ ? data_.size() - pos_ : 0; }
  size_t position() const { return pos_; }
  void Fail() { ok_ = false; }

  int8_t Int8();
  int16_t Int16();
  int32_t Int32();
  int64_t Int64();
  bool Bool() { return Int8() != 0; }
  uint32_t UVarint();
  int32_t Varint();   // zigzag
  int64_t Varlong();  // zigzag
  std::string_view Bytes(size_t n);

  // Classic encodings. Nullable variants give nullopt for length -1.
  std::string_view String();
  std::optional<std::string_view> NullableString();
  std::optional<std::string_view> NullableBytes();
  // An int32 array count; -1 (null) gives -1. A count that cannot fit in the bytes left (each element
  // needs at least `min_element_size` bytes) fails the reader, so a hostile count allocates nothing.
  int32_t ArrayCount(size_t min_element_size = 1);

  // Flexible encodings.
  std::optional<std::string_view> CompactNullableString();
  std::string_view CompactString();
  int32_t CompactArrayCount(size_t min_element_size = 1);  // -1 for null
  void SkipTaggedFields();

 private:
  bool Need(size_t n);
  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

class Writer {
 public:
  void Int8(int8_t v) { out_.push_back(static_cast<char>(v)); }
  void Int16(int16_t v);
  void Int32(int32_t v);
  void Int64(int64_t v);
  void Bool(bool v) { Int8(v ? 1 : 0); }
  void UVarint(uint32_t v);
  void Raw(std::string_view b) { out_.append(b); }
  void String(std::string_view s);
  void NullableString(std::optional<std::string_view> s);
  void NullableBytes(std::optional<std::string_view> b);
  void ArrayCount(int32_t n) { Int32(n); }
  void CompactString(std::string_view s);
  void CompactArrayCount(int32_t n) { UVarint(static_cast<uint32_t>(n + 1)); }
  void EmptyTaggedFields() { UVarint(0); }

  // Overwrites 4 bytes at `pos` (a size prefix reserved earlier).
  void PatchInt32(size_t pos, int32_t v);
  size_t size() const { return out_.size(); }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

// Big-endian loads and stores for fixed layouts such as the record batch header.
inline uint16_t LoadBe16(const char* p) {
  auto u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>(u[0] << 8 | u[1]);
}
inline uint32_t LoadBe32(const char* p) {
  auto u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{u[0]} << 24 | uint32_t{u[1]} << 16 | uint32_t{u[2]} << 8 | u[3];
}
inline uint64_t LoadBe64(const char* p) { return uint64_t{LoadBe32(p)} << 32 | LoadBe32(p + 4); }
inline void StoreBe32(char* p, uint32_t v) {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}
inline void StoreBe64(char* p, uint64_t v) {
  StoreBe32(p, static_cast<uint32_t>(v >> 32));
  StoreBe32(p + 4, static_cast<uint32_t>(v));
}

}  // namespace govern::streams
