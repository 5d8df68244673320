// A strict decoder for the subset of CBOR (RFC 8949) that WebAuthn and COSE use.
//
// Accepted: unsigned and negative integers (to 64 bits of magnitude, negatives down to -2^63), byte and
// text strings, arrays, maps, false/true/null. Refused with kInvalidArgument and a message naming the
// byte offset: indefinite lengths, tags, floats and other simple values, heads that are not in their
// shortest form (CTAP2 canonical encoding, which authenticators must use), text that is not UTF-8,
// duplicate map keys, nesting deeper than Limits::max_depth, more items than Limits::max_items, and
// lengths that run past the input. Map key order is not checked (WebAuthn relying parties must accept
// what the client passed on). Pure functions and plain values: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace govern::webauthn::cbor {

class Value {
 public:
  enum class Type { kUnsigned, kNegative, kBytes, kText, kArray, kMap, kBool, kNull };

  static Value Unsigned(uint64_t v);
  // For kNegative: the value is -1 - n (so n = 0 is -1), as CBOR major type 1 carries it.
  static Value NegativeFromRaw(uint64_t n);
  static Value Int(int64_t v);
  static Value Bytes(std::vector<uint8_t> b);
  static Value Text(std::string s);
  static Value Array(std::vector<Value> items);
  static Value Map(std::vector<std::pair<Value, Value>> entries);
  static Value Bool(bool b);
  static Value Null();

  Type type() const { return type_; }
  bool is_int() const { return type_ == Type::kUnsigned || type_ == Type::kNegative; }
  // The integer when it fits in int64_t.
  std::optional<int64_t> AsInt() const;
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  const std::string& text() const { return text_; }
  const std::vector<Value>& array() const { return array_; }
  const std::vector<std::pair<Value, Value>>& map() const { return map_; }
  bool boolean() const { return uint_ != 0; }
  // The head's argument as encoded: the magnitude of kUnsigned, n of kNegative.
  uint64_t raw() const { return uint_; }

  // Map lookups by integer or text key; null when absent or when this is not a map.
  const Value* Find(int64_t key) const;
  const Value* Find(std::string_view key) const;

  friend bool operator==(const Value& a, const Value& b);

 private:
  Type type_ = Type::kNull;
  uint64_t uint_ = 0;  // magnitude for ints, 0/1 for bools
  std::vector<uint8_t> bytes_;
  std::string text_;
  std::vector<Value> array_;
  std::vector<std::pair<Value, Value>> map_;
};

struct Limits {
  int max_depth = 16;
  size_t max_items = 4096;  // every decoded value counts one
};

// Decodes exactly one item that must fill `data`.
Result<Value> Decode(std::span<const uint8_t> data, const Limits& limits = {});

// Decodes one item at the start of `data`; sets `consumed` to its encoded length. For structures that
// hold CBOR followed by more bytes (authenticator data: the credential key, then extensions).
Result<Value> DecodePrefix(std::span<const uint8_t> data, size_t* consumed, const Limits& limits = {});

// Canonical (shortest-form) encoding, for tests and for building fixtures; maps keep their given order.
std::vector<uint8_t> Encode(const Value& v);

}  // namespace govern::webauthn::cbor
