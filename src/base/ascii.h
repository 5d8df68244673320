// Small ASCII helpers shared by parsers (hex digits in percent-escapes, JSON \u escapes, bytea, hex
// encodings; trimming header values and credential-file lines). Locale-independent; constexpr;
// thread-safe.
#pragma once

#include <string_view>

namespace govern {

// The value of a hex digit ('0'-'9', 'a'-'f', 'A'-'F'), or -1 for any other character.
constexpr int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `s` without its leading and trailing characters from `chars`. The default is HTTP's optional
// whitespace (SP and HTAB, RFC 9110 section 5.6.3); line-oriented files add "\r" (CRLF endings).
constexpr std::string_view TrimAscii(std::string_view s, std::string_view chars = " \t") {
  const auto first = s.find_first_not_of(chars);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(chars) - first + 1);
}

}  // namespace govern
