// Kafka wire primitives (see wire.h).
#include "streams/wire.h"

namespace govern::streams {

bool Reader::Need(size_t n) {
  if (!ok_ || data_.size() - pos_ < n) {
    ok_ = false;
    return false;
  }
  return true;
}

int8_t Reader::Int8() {
  if (!Need(1)) return 0;
  return static_cast<int8_t>(data_[pos_++]);
}
int16_t Reader::Int16() {
  if (!Need(2)) return 0;
  auto v = static_cast<int16_t>(LoadBe16(data_.data() + pos_));
  pos_ += 2;
  return v;
}
int32_t Reader::Int32() {
  if (!Need(4)) return 0;
  auto v = static_cast<int32_t>(LoadBe32(data_.data() + pos_));
  pos_ += 4;
  return v;
}
int64_t Reader::Int64() {
  if (!Need(8)) return 0;
  auto v = static_cast<int64_t>(LoadBe64(data_.data() + pos_));
  pos_ += 8;
  return v;
}

uint32_t Reader::UVarint() {
  uint32_t v = 0;
  for (int shift = 0; shift < 35; shift += 7) {
    if (!Need(1)) return 0;
    auto b = static_cast<uint8_t>(data_[pos_++]);
    v |= uint32_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return v;
  }
  ok_ = false;
  return 0;
}

int64_t Reader::Varlong() {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (!Need(1)) return 0;
    auto b = static_cast<uint8_t>(data_[pos_++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
  }
  ok_ = false;
  return 0;
}

int32_t Reader::Varint() {
  int64_t v = Varlong();
  if (v < INT32_MIN || v > INT32_MAX) {
    ok_ = false;
    return 0;
  }
  return static_cast<int32_t>(v);
}

std::string_view Reader::Bytes(size_t n) {
  if (!Need(n)) return {};
  auto s = data_.substr(pos_, n);
  pos_ += n;
  return s;
}

std::string_view Reader::String() {
  int16_t n = Int16();
  if (n < 0) {
    ok_ = false;
    return {};
  }
  return Bytes(static_cast<size_t>(n));
}

std::optional<std::string_view> Reader::NullableString() {
  int16_t n = Int16();
  if (!ok_ || n == -1) return std::nullopt;
  if (n < 0) {
    ok_ = false;
    return std::nullopt;
  }
  return Bytes(static_cast<size_t>(n));
}

std::optional<std::string_view> Reader::NullableBytes() {
  int32_t n = Int32();
  if (!ok_ || n == -1) return std::nullopt;
  if (n < 0) {
    ok_ = false;
    return std::nullopt;
  }
  return Bytes(static_cast<size_t>(n));
}

int32_t Reader::ArrayCount(size_t min_element_size) {
  int32_t n = Int32();
  if (!ok_) return 0;
  if (n == -1) return -1;
  if (n < 0 || static_cast<size_t>(n) * min_element_size > remaining()) {
    ok_ = false;
    return 0;
  }
  return n;
}

std::optional<std::string_view> Reader::CompactNullableString() {
  uint32_t n = UVarint();
  if (!ok_ || n == 0) return std::nullopt;
  return Bytes(n - 1);
}

std::string_view Reader::CompactString() {
  uint32_t n = UVarint();
  if (!ok_) return {};
  if (n == 0) {
    ok_ = false;
    return {};
  }
  return Bytes(n - 1);
}

int32_t Reader::CompactArrayCount(size_t min_element_size) {
  uint32_t n = UVarint();
  if (!ok_) return 0;
  if (n == 0) return -1;
  if (size_t{n - 1} * min_element_size > remaining()) {
    ok_ = false;
    return 0;
  }
  return static_cast<int32_t>(n - 1);
}

void Reader::SkipTaggedFields() {
  uint32_t count = UVarint();
  for (uint32_t i = 0; ok_ && i < count; i++) {
    UVarint();  // tag
    Bytes(UVarint());
  }
}

void Writer::Int16(int16_t v) {
  auto u = static_cast<uint16_t>(v);
  out_.push_back(static_cast<char>(u >> 8));
  out_.push_back(static_cast<char>(u));
}
void Writer::Int32(int32_t v) {
  char b[4];
  StoreBe32(b, static_cast<uint32_t>(v));
  out_.append(b, 4);
}
void Writer::Int64(int64_t v) {
  char b[8];
  StoreBe64(b, static_cast<uint64_t>(v));
  out_.append(b, 8);
}
void Writer::UVarint(uint32_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}
void Writer::String(std::string_view s) {
  Int16(static_cast<int16_t>(s.size()));
  out_.append(s);
}
void Writer::NullableString(std::optional<std::string_view> s) {
  if (!s) {
    Int16(-1);
    return;
  }
  String(*s);
}
void Writer::NullableBytes(std::optional<std::string_view> b) {
  if (!b) {
    Int32(-1);
    return;
  }
  Int32(static_cast<int32_t>(b->size()));
  out_.append(*b);
}
void Writer::CompactString(std::string_view s) {
  UVarint(static_cast<uint32_t>(s.size() + 1));
  out_.append(s);
}
void Writer::PatchInt32(size_t pos, int32_t v) { StoreBe32(out_.data() + pos, static_cast<uint32_t>(v)); }

}  // namespace govern::streams
