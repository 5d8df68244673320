// Recursive-descent CBOR decoder with explicit depth, item and length limits (see cbor.h).
#include "webauthn/cbor.h"

#include <limits>

namespace govern::webauthn::cbor {

Value Value::Unsigned(uint64_t v) {
  Value x;
  x.type_ = Type::kUnsigned;
  x.uint_ = v;
  return x;
}
Value Value::NegativeFromRaw(uint64_t n) {
  Value x;
  x.type_ = Type::kNegative;
  x.uint_ = n;
  return x;
}
Value Value::Int(int64_t v) {
  if (v >= 0) return Unsigned(static_cast<uint64_t>(v));
  return NegativeFromRaw(static_cast<uint64_t>(-(v + 1)));
}
Value Value::Bytes(std::vector<uint8_t> b) {
  Value x;
  x.type_ = Type::kBytes;
  x.bytes_ = std::move(b);
  return x;
}
Value Value::Text(std::string s) {
  Value x;
  x.type_ = Type::kText;
  x.text_ = std::move(s);
  return x;
}
Value Value::Array(std::vector<Value> items) {
  Value x;
  x.type_ = Type::kArray;
  x.array_ = std::move(items);
  return x;
}
Value Value::Map(std::vector<std::pair<Value, Value>> entries) {
  Value x;
  x.type_ = Type::kMap;
  x.map_ = std::move(entries);
  return x;
}
Value Value::Bool(bool b) {
  Value x;
  x.type_ = Type::kBool;
  x.uint_ = b ? 1 : 0;
  return x;
}
Value Value::Null() { return Value(); }

std::optional<int64_t> Value::AsInt() const {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (type_ == Type::kUnsigned && uint_ <= kMax) return static_cast<int64_t>(uint_);
  if (type_ == Type::kNegative && uint_ <= kMax) return -static_cast<int64_t>(uint_) - 1;
  return std::nullopt;
}

const Value* Value::Find(int64_t key) const {
  for (const auto& [k, v] : map_) {
    if (k.is_int() && k.AsInt() == key) return &v;
  }
  return nullptr;
}

const Value* Value::Find(std::string_view key) const {
  for (const auto& [k, v] : map_) {
    if (k.type_ == Type::kText && k.text_ == key) return &v;
  }
  return nullptr;
}

bool operator==(const Value& a, const Value& b) {
  return a.type_ == b.type_ && a.uint_ == b.uint_ && a.bytes_ == b.bytes_ && a.text_ == b.text_ &&
         a.array_ == b.array_ && a.map_ == b.map_;
}

namespace {

bool ValidUtf8(std::span<const uint8_t> s) {
  size_t i = 0;
  while (i < s.size()) {
    uint8_t c = s[i];
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (s.size() - i <= n) return false;
    for (size_t k = 1; k <= n; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

class Decoder {
 public:
  Decoder(std::span<const uint8_t> data, const Limits& limits) : data_(data), limits_(limits) {}

  size_t pos() const { return pos_; }

  Result<Value> Item(int depth) {
    if (depth > limits_.max_depth) return Error("nesting deeper than " + std::to_string(limits_.max_depth));
    if (++items_ > limits_.max_items)
      return Error("more than " + std::to_string(limits_.max_items) + " items");
    size_t start = pos_;
    if (pos_ >= data_.size()) return Error("truncated: expected an item");
    uint8_t initial = data_[pos_++];
    uint8_t major = initial >> 5;
    uint8_t info = initial & 0x1F;
    if (major == 7) {
      switch (info) {
        case 20:
          return Value::Bool(false);
        case 21:
          return Value::Bool(true);
        case 22:
          return Value::Null();
        default:
          pos_ = start;
          return Error("unsupported simple value or float (0x" + Hex(initial) + ")");
      }
    }
    if (major == 6) {
      pos_ = start;
      return Error("tags are not supported");
    }
    GOVERN_ASSIGN_OR_RETURN(uint64_t arg, Argument(info, start));
    switch (major) {
      case 0:
        return Value::Unsigned(arg);
      case 1:
        if (arg > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          pos_ = start;
          return Error("negative integer below -2^63");
        }
        return Value::NegativeFromRaw(arg);
      case 2:
      case 3: {
        if (arg > data_.size() - pos_) {
          pos_ = start;
          return Error("string of " + std::to_string(arg) + " bytes runs past the end");
        }
        auto s = data_.subspan(pos_, static_cast<size_t>(arg));
        if (major == 3 && !ValidUtf8(s)) {
          pos_ = start;
          return Error("text string is not valid UTF-8");
        }
        pos_ += s.size();
        if (major == 2) return Value::Bytes(std::vector<uint8_t>(s.begin(), s.end()));
        return Value::Text(std::string(s.begin(), s.end()));
      }
      case 4: {
        // Each item takes at least one byte: a count beyond what is left is a lie, caught before reserving.
        if (arg > data_.size() - pos_)
          return Error("array of " + std::to_string(arg) + " items runs past the end");
        std::vector<Value> items;
        items.reserve(static_cast<size_t>(arg));
        for (uint64_t i = 0; i < arg; ++i) {
          GOVERN_ASSIGN_OR_RETURN(Value v, Item(depth + 1));
          items.push_back(std::move(v));
        }
        return Value::Array(std::move(items));
      }
      case 5: {
        if (arg > (data_.size() - pos_) / 2)
          return Error("map of " + std::to_string(arg) + " entries runs past the end");
        std::vector<std::pair<Value, Value>> entries;
        entries.reserve(static_cast<size_t>(arg));
        for (uint64_t i = 0; i < arg; ++i) {
          size_t key_at = pos_;
          GOVERN_ASSIGN_OR_RETURN(Value k, Item(depth + 1));
          if (k.type() == Value::Type::kArray || k.type() == Value::Type::kMap) {
            pos_ = key_at;
            return Error("map key is an array or map");
          }
          for (const auto& e : entries) {
            if (e.first == k) {
              pos_ = key_at;
              return Error("duplicate map key");
            }
          }
          GOVERN_ASSIGN_OR_RETURN(Value v, Item(depth + 1));
          entries.emplace_back(std::move(k), std::move(v));
        }
        return Value::Map(std::move(entries));
      }
    }
    return Error("unreachable major type");
  }

  Status Error(const std::string& what) const {
    return InvalidArgument("cbor: " + what + " at byte " + std::to_string(pos_));
  }

 private:
  static std::string Hex(uint8_t b) {
    const char* d = "0123456789abcdef";
    return {d[b >> 4], d[b & 15]};
  }

  Result<uint64_t> Argument(uint8_t info, size_t start) {
    if (info < 24) return uint64_t{info};
    if (info == 31) {
      pos_ = start;
      return Error("indefinite length is not allowed");
    }
    if (info > 27) {
      pos_ = start;
      return Error("reserved additional information " + std::to_string(info));
    }
    size_t n = size_t{1} << (info - 24);
    if (data_.size() - pos_ < n) {
      pos_ = start;
      return Error("truncated head");
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | data_[pos_ + i];
    pos_ += n;
    // Shortest form: each width must be needed.
    uint64_t min = n == 1 ? 24 : n == 2 ? 0x100 : n == 4 ? 0x10000 : 0x100000000ULL;
    if (v < min) {
      pos_ = start;
      return Error("non-canonical head: " + std::to_string(v) + " encoded in " + std::to_string(n) +
                   " bytes");
    }
    return v;
  }

  std::span<const uint8_t> data_;
  const Limits& limits_;
  size_t pos_ = 0;
  size_t items_ = 0;
};

void EncodeHead(std::vector<uint8_t>& out, uint8_t major, uint64_t arg) {
  uint8_t m = static_cast<uint8_t>(major << 5);
  if (arg < 24) {
    out.push_back(static_cast<uint8_t>(m | arg));
    return;
  }
  int n = arg <= 0xFF ? 1 : arg <= 0xFFFF ? 2 : arg <= 0xFFFFFFFFULL ? 4 : 8;
  out.push_back(static_cast<uint8_t>(m | (n == 1 ? 24 : n == 2 ? 25 : n == 4 ? 26 : 27)));
  for (int i = n - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(arg >> (8 * i)));
}

void EncodeTo(std::vector<uint8_t>& out, const Value& v) {
  switch (v.type()) {
    case Value::Type::kUnsigned:
      EncodeHead(out, 0, v.raw());
      break;
    case Value::Type::kNegative:
      EncodeHead(out, 1, v.raw());
      break;
    case Value::Type::kBytes:
      EncodeHead(out, 2, v.bytes().size());
      out.insert(out.end(), v.bytes().begin(), v.bytes().end());
      break;
    case Value::Type::kText:
      EncodeHead(out, 3, v.text().size());
      out.insert(out.end(), v.text().begin(), v.text().end());
      break;
    case Value::Type::kArray:
      EncodeHead(out, 4, v.array().size());
      for (const auto& i : v.array()) EncodeTo(out, i);
      break;
    case Value::Type::kMap:
      EncodeHead(out, 5, v.map().size());
      for (const auto& [k, x] : v.map()) {
        EncodeTo(out, k);
        EncodeTo(out, x);
      }
      break;
    case Value::Type::kBool:
      out.push_back(v.boolean() ? 0xF5 : 0xF4);
      break;
    case Value::Type::kNull:
      out.push_back(0xF6);
      break;
  }
}

}  // namespace

Result<Value> DecodePrefix(std::span<const uint8_t> data, size_t* consumed, const Limits& limits) {
  Decoder d(data, limits);
  GOVERN_ASSIGN_OR_RETURN(Value v, d.Item(1));
  *consumed = d.pos();
  return v;
}

Result<Value> Decode(std::span<const uint8_t> data, const Limits& limits) {
  Decoder d(data, limits);
  GOVERN_ASSIGN_OR_RETURN(Value v, d.Item(1));
  if (d.pos() != data.size()) return d.Error(std::to_string(data.size() - d.pos()) + " trailing bytes");
  return v;
}

std::vector<uint8_t> Encode(const Value& v) {
  std::vector<uint8_t> out;
  EncodeTo(out, v);
  return out;
}

}  // namespace govern::webauthn::cbor
