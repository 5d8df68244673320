// The Thrift compact protocol, only as much of it as Parquet's metadata needs: structs with delta-encoded
// field ids, zigzag varint integers, binary/string, lists, bools, nested structs; maps and sets are only
// skipped. The Encoder appends to a string. The Decoder reads hostile bytes: every length is checked
// against the bytes left, nesting is limited, and no allocation is larger than the input.
// Neither class is thread-safe; both are cheap, short-lived values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::parquet::thrift {

// Wire types of the compact protocol (the low nibble of a field header).
enum class WireType : uint8_t {
  kStop = 0,
  kBoolTrue = 1,
  kBoolFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

// Writes one message. Call BeginStruct/EndStruct around every struct (the outermost one too); fields
// must be written in increasing id order within a struct, as the delta encoding prefers.
class Encoder {
 public:
  explicit Encoder(std::string* out) : out_(out) {}

  void BeginStruct() { last_id_.push_back(0); }
  void EndStruct();  // writes the stop byte

  void FieldI32(int16_t id, int32_t v);
  void FieldI64(int16_t id, int64_t v);
  void FieldBool(int16_t id, bool v);
  void FieldBinary(int16_t id, std::string_view v);
  // Opens a nested struct field; close it with EndStruct().
  void FieldStruct(int16_t id);
  // Opens a list field; then write `size` elements with the List* calls (or BeginStruct/EndStruct).
  void FieldList(int16_t id, WireType element, size_t size);

  void ListI32(int32_t v) { Varint(ZigZag(v)); }
  void ListBinary(std::string_view v);

 private:
  static uint64_t ZigZag(int64_t v) {
    return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  }
  void FieldHeader(int16_t id, WireType type);
  void Varint(uint64_t v);

  std::string* out_;
  std::vector<int16_t> last_id_;
};

// Reads one message from a byte range it does not own.
class Decoder {
 public:
  static constexpr int kMaxDepth = 32;

  Decoder(const uint8_t* data, size_t size) : p_(data), end_(data + size), begin_(data) {}

  // Calls `on_field(id, type)` for each field of the struct at the current position; the callback must
  // consume the value (Read* or Skip) or return an error. Stops at the struct's stop byte.
  template <typename F>
  Status ReadStruct(F&& on_field) {
    if (++depth_ > kMaxDepth) return Corrupt("structs nested too deeply");
    int16_t last = 0;
    while (true) {
      int16_t id = 0;
      WireType type = WireType::kStop;
      GOVERN_RETURN_IF_ERROR(FieldHeader(&last, &id, &type));
      if (type == WireType::kStop) break;
      GOVERN_RETURN_IF_ERROR(on_field(id, type));
    }
    --depth_;
    return OkStatus();
  }

  // Value readers; `type` is the wire type the field header announced, checked against the reader.
  Status ReadI32(WireType type, int32_t* v);
  Status ReadI64(WireType type, int64_t* v);
  Status ReadBool(WireType type, bool* v);  // a field's bool lives in its header
  Status ReadBinary(WireType type, std::string* v);
  // A list header; `*size` is at most the bytes left, so callers may reserve it.
  Status ReadList(WireType type, WireType* element, size_t* size);
  // Elements of a list.
  Status ReadListI32(int32_t* v);
  Status ReadListBinary(std::string* v);
  Status CheckStruct(WireType type) const;
  // Skips one value of any wire type.
  Status Skip(WireType type);

  size_t position() const { return static_cast<size_t>(p_ - begin_); }

  static Status Corrupt(std::string_view what);

 private:
  Status FieldHeader(int16_t* last, int16_t* id, WireType* type);
  Status Varint(uint64_t* v);
  Status Byte(uint8_t* b);
  Status SkipDepth(WireType type);
  Status SkipElement(WireType type);

  const uint8_t* p_;
  const uint8_t* end_;
  const uint8_t* begin_;
  int depth_ = 0;
};

}  // namespace govern::parquet::thrift
