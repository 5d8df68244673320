// The Thrift compact protocol encoder and the bounds-checked decoder.
#include "storage/parquet/thrift.h"

#include <cstring>

namespace govern::parquet::thrift {

namespace {

int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

}  // namespace

// ---- Encoder

void Encoder::Varint(uint64_t v) {
  while (v >= 0x80) {
    out_->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_->push_back(static_cast<char>(v));
}

void Encoder::FieldHeader(int16_t id, WireType type) {
  int16_t& last = last_id_.back();
  int delta = id - last;
  if (delta > 0 && delta <= 15) {
    out_->push_back(static_cast<char>((delta << 4) | static_cast<int>(type)));
  } else {
    out_->push_back(static_cast<char>(type));
    Varint(ZigZag(id));
  }
  last = id;
}

void Encoder::EndStruct() {
  out_->push_back(0);
  last_id_.pop_back();
}

void Encoder::FieldI32(int16_t id, int32_t v) {
  FieldHeader(id, WireType::kI32);
  Varint(ZigZag(v));
}

void Encoder::FieldI64(int16_t id, int64_t v) {
  FieldHeader(id, WireType::kI64);
  Varint(ZigZag(v));
}

void Encoder::FieldBool(int16_t id, bool v) {
  FieldHeader(id, v ? WireType::kBoolTrue : WireType::kBoolFalse);
}

void Encoder::FieldBinary(int16_t id, std::string_view v) {
  FieldHeader(id, WireType::kBinary);
  ListBinary(v);
}

void Encoder::FieldStruct(int16_t id) {
  FieldHeader(id, WireType::kStruct);
  BeginStruct();
}

void Encoder::FieldList(int16_t id, WireType element, size_t size) {
  FieldHeader(id, WireType::kList);
  if (size < 15) {
    out_->push_back(static_cast<char>((size << 4) | static_cast<int>(element)));
  } else {
    out_->push_back(static_cast<char>(0xf0 | static_cast<int>(element)));
    Varint(size);
  }
}

void Encoder::ListBinary(std::string_view v) {
  Varint(v.size());
  out_->append(v);
}

// ---- Decoder

Status Decoder::Corrupt(std::string_view what) { return DataLoss("parquet metadata: " + std::string(what)); }

Status Decoder::Byte(uint8_t* b) {
  if (p_ >= end_) return Corrupt("truncated");
  *b = *p_++;
  return OkStatus();
}

Status Decoder::Varint(uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t b = 0;
    GOVERN_RETURN_IF_ERROR(Byte(&b));
    result |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *v = result;
      return OkStatus();
    }
  }
  return Corrupt("varint longer than 10 bytes");
}

Status Decoder::FieldHeader(int16_t* last, int16_t* id, WireType* type) {
  uint8_t b = 0;
  GOVERN_RETURN_IF_ERROR(Byte(&b));
  uint8_t t = b & 0x0f;
  if (t > static_cast<uint8_t>(WireType::kStruct)) return Corrupt("unknown wire type");
  *type = static_cast<WireType>(t);
  if (*type == WireType::kStop) return OkStatus();
  int delta = b >> 4;
  if (delta != 0) {
    *id = static_cast<int16_t>(*last + delta);
  } else {
    uint64_t raw = 0;
    GOVERN_RETURN_IF_ERROR(Varint(&raw));
    int64_t full = UnZigZag(raw);
    if (full < INT16_MIN || full > INT16_MAX) return Corrupt("field id out of range");
    *id = static_cast<int16_t>(full);
  }
  *last = *id;
  return OkStatus();
}

Status Decoder::ReadI32(WireType type, int32_t* v) {
  // Enums and i32 share the wire type; a writer may also use a narrower integer.
  if (type != WireType::kI32 && type != WireType::kI16 && type != WireType::kByte) {
    return Corrupt("expected an i32 field");
  }
  if (type == WireType::kByte) {
    uint8_t b = 0;
    GOVERN_RETURN_IF_ERROR(Byte(&b));
    *v = static_cast<int8_t>(b);
    return OkStatus();
  }
  uint64_t raw = 0;
  GOVERN_RETURN_IF_ERROR(Varint(&raw));
  int64_t full = UnZigZag(raw);
  if (full < INT32_MIN || full > INT32_MAX) return Corrupt("i32 out of range");
  *v = static_cast<int32_t>(full);
  return OkStatus();
}

Status Decoder::ReadI64(WireType type, int64_t* v) {
  if (type != WireType::kI64 && type != WireType::kI32 && type != WireType::kI16) {
    return Corrupt("expected an i64 field");
  }
  uint64_t raw = 0;
  GOVERN_RETURN_IF_ERROR(Varint(&raw));
  *v = UnZigZag(raw);
  return OkStatus();
}

Status Decoder::ReadBool(WireType type, bool* v) {
  if (type == WireType::kBoolTrue) {
    *v = true;
  } else if (type == WireType::kBoolFalse) {
    *v = false;
  } else {
    return Corrupt("expected a bool field");
  }
  return OkStatus();
}

Status Decoder::ReadListBinary(std::string* v) {
  uint64_t len = 0;
  GOVERN_RETURN_IF_ERROR(Varint(&len));
  if (len > static_cast<uint64_t>(end_ - p_)) return Corrupt("binary longer than the bytes left");
  v->assign(reinterpret_cast<const char*>(p_), len);
  p_ += len;
  return OkStatus();
}

Status Decoder::ReadBinary(WireType type, std::string* v) {
  if (type != WireType::kBinary) return Corrupt("expected a binary field");
  return ReadListBinary(v);
}

Status Decoder::ReadListI32(int32_t* v) { return ReadI32(WireType::kI32, v); }

Status Decoder::CheckStruct(WireType type) const {
  if (type != WireType::kStruct) return Corrupt("expected a struct field");
  return OkStatus();
}

Status Decoder::ReadList(WireType type, WireType* element, size_t* size) {
  if (type != WireType::kList && type != WireType::kSet) return Corrupt("expected a list field");
  uint8_t b = 0;
  GOVERN_RETURN_IF_ERROR(Byte(&b));
  uint8_t t = b & 0x0f;
  if (t > static_cast<uint8_t>(WireType::kStruct) || t == 0) return Corrupt("bad list element type");
  *element = static_cast<WireType>(t);
  uint64_t n = b >> 4;
  if (n == 15) GOVERN_RETURN_IF_ERROR(Varint(&n));
  // Every element takes at least one byte, so a list cannot be longer than the bytes left.
  if (n > static_cast<uint64_t>(end_ - p_)) return Corrupt("list longer than the bytes left");
  *size = static_cast<size_t>(n);
  return OkStatus();
}

Status Decoder::Skip(WireType type) { return SkipDepth(type); }

// Inside lists and maps a bool is a whole byte rather than part of a field header.
Status Decoder::SkipElement(WireType type) {
  if (type == WireType::kBoolTrue || type == WireType::kBoolFalse) {
    uint8_t b = 0;
    return Byte(&b);
  }
  return SkipDepth(type);
}

Status Decoder::SkipDepth(WireType type) {
  if (depth_ > kMaxDepth) return Corrupt("values nested too deeply");
  uint64_t ignored = 0;
  uint8_t b = 0;
  switch (type) {
    case WireType::kStop:
      return Corrupt("unexpected stop");
    case WireType::kBoolTrue:
    case WireType::kBoolFalse:
      return OkStatus();
    case WireType::kByte:
      return Byte(&b);
    case WireType::kI16:
    case WireType::kI32:
    case WireType::kI64:
      return Varint(&ignored);
    case WireType::kDouble:
      if (end_ - p_ < 8) return Corrupt("truncated double");
      p_ += 8;
      return OkStatus();
    case WireType::kBinary: {
      uint64_t len = 0;
      GOVERN_RETURN_IF_ERROR(Varint(&len));
      if (len > static_cast<uint64_t>(end_ - p_)) return Corrupt("binary longer than the bytes left");
      p_ += len;
      return OkStatus();
    }
    case WireType::kList:
    case WireType::kSet: {
      WireType element = WireType::kStop;
      size_t n = 0;
      GOVERN_RETURN_IF_ERROR(ReadList(type, &element, &n));
      ++depth_;
      for (size_t i = 0; i < n; ++i) GOVERN_RETURN_IF_ERROR(SkipElement(element));
      --depth_;
      return OkStatus();
    }
    case WireType::kMap: {
      uint64_t n = 0;
      GOVERN_RETURN_IF_ERROR(Varint(&n));
      if (n == 0) return OkStatus();
      if (n > static_cast<uint64_t>(end_ - p_)) return Corrupt("map longer than the bytes left");
      GOVERN_RETURN_IF_ERROR(Byte(&b));
      auto key = static_cast<WireType>(b >> 4);
      auto value = static_cast<WireType>(b & 0x0f);
      if ((b >> 4) > 12 || (b & 0x0f) > 12 || key == WireType::kStop || value == WireType::kStop) {
        return Corrupt("bad map types");
      }
      ++depth_;
      for (uint64_t i = 0; i < n; ++i) {
        GOVERN_RETURN_IF_ERROR(SkipElement(key));
        GOVERN_RETURN_IF_ERROR(SkipElement(value));
      }
      --depth_;
      return OkStatus();
    }
    case WireType::kStruct:
      return ReadStruct([this](int16_t, WireType t) { return SkipDepth(t); });
  }
  return Corrupt("unknown wire type");
}

}  // namespace govern::parquet::thrift
