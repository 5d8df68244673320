// Small ASCII helpers shared by every parser (hex digits in percent-escapes, JSON \u escapes, bytea,
// hex encodings). Locale-independent; constexpr; thread-safe.
#pragma once

namespace govern {

// The value of a hex digit ('0'-'9', 'a'-'f', 'A'-'F'), or -1 for any other character.
constexpr int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace govern
