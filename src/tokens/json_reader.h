// Internal to src/tokens: a strict, allocation-light pull reader for the small JSON objects of a token
// (the JWS header and the JWT claims), where a general JSON library costs more than the MAC.
//
// It accepts exactly RFC 8259 JSON: no comments, no trailing commas, no NaN, no leading zeros, no
// control characters or invalid UTF-8 in strings (escapes, surrogate pairs included, are decoded).
// Nesting is limited (kMaxDepth), so hostile input cannot exhaust the stack. A value may be read as
// the type the caller expects or skipped whole. Not thread-safe (a value on one thread's stack).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::tokens::internal {

class JsonReader {
 public:
  static constexpr int kMaxDepth = 32;

  explicit JsonReader(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  // The next non-space character ('{', '[', '"', digit, '-', 't', 'f', 'n'), or 0 at the end.
  char Peek();
  Status BeginObject();
  // Reads the next member's name into *key (after '{' or a member), or returns false at the '}'.
  Result<bool> NextMember(std::string* key);
  Status BeginArray();
  // True when the array continues with another element, false at its ']'.
  Result<bool> NextElement();
  Status ReadString(std::string* out);
  // A JSON number; `integral` says whether it had neither fraction nor exponent.
  Status ReadNumber(double* out, bool* integral, int64_t* as_int);
  Status Skip();
  // ok when only whitespace is left.
  Status End();

 private:
  Status Error(std::string_view what) const;
  void SkipSpace();
  Status SkipValue(int depth);
  Status Literal(std::string_view word);

  const char* p_;
  const char* end_;
  int depth_ = 0;
  bool first_ = false;  // the container just opened has had no member yet
};

}  // namespace govern::tokens::internal
