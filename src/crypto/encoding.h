// Hex and base64 (RFC 4648) encoding with strict decoders, for keys, digests and JOSE.
//
// Decoders are for outside input: they refuse anything that is not the canonical encoding (a bad
// character, a wrong length, missing or stray padding, non-zero unused bits) with a clear
// kInvalidArgument naming the position, never by crashing or by guessing. Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::crypto {

// Lower-case hex.
std::string HexEncode(std::span<const uint8_t> bytes);
// Accepts upper- and lower-case digits; an odd length or any other character is an error.
Result<std::vector<uint8_t>> HexDecode(std::string_view hex);

// Standard alphabet (+/) with '=' padding.
std::string Base64Encode(std::span<const uint8_t> bytes);
// Requires the padding that Base64Encode writes; no whitespace, no URL alphabet.
Result<std::vector<uint8_t>> Base64Decode(std::string_view text);

// URL-safe alphabet (-_) without padding, as JOSE (JWS, JWK) uses it (RFC 7515 section 2).
std::string Base64UrlEncode(std::span<const uint8_t> bytes);
// Refuses '=' padding, the standard alphabet and a length of 1 mod 4.
Result<std::vector<uint8_t>> Base64UrlDecode(std::string_view text);

// Conveniences for text payloads.
inline std::string Base64UrlEncode(std::string_view s) {
  return Base64UrlEncode(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}
inline std::string Base64Encode(std::string_view s) {
  return Base64Encode(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

}  // namespace govern::crypto
