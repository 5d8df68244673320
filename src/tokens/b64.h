// Internal to src/tokens: base64url without padding (RFC 7515 section 2) on the token hot paths.
//
// Same strictness as crypto::Base64UrlDecode (only the URL alphabet, no '=', no length of 1 mod 4, no
// non-zero unused bits: one token has exactly one encoding), but appending into caller buffers with
// table lookups instead of a byte at a time, since encoding and decoding are most of the cost of
// issuing and first-checking a MAC'd token. Pure functions: thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace govern::tokens::internal {

inline constexpr char kB64Url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

inline constexpr std::array<int8_t, 256> kB64UrlValue = [] {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(kB64Url[i])] = static_cast<int8_t>(i);
  return t;
}();

inline size_t B64UrlEncodedSize(size_t n) { return (n / 3) * 4 + (n % 3 == 0 ? 0 : n % 3 + 1); }

// Appends the encoding of `in` to *out.
inline void AppendB64Url(std::string* out, std::span<const uint8_t> in) {
  const size_t start = out->size();
  out->resize(start + B64UrlEncodedSize(in.size()));
  char* o = out->data() + start;
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8) | in[i + 2];
    o[0] = kB64Url[v >> 18];
    o[1] = kB64Url[(v >> 12) & 63];
    o[2] = kB64Url[(v >> 6) & 63];
    o[3] = kB64Url[v & 63];
    o += 4;
  }
  if (in.size() - i == 1) {
    uint32_t v = uint32_t{in[i]} << 16;
    o[0] = kB64Url[v >> 18];
    o[1] = kB64Url[(v >> 12) & 63];
  } else if (in.size() - i == 2) {
    uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8);
    o[0] = kB64Url[v >> 18];
    o[1] = kB64Url[(v >> 12) & 63];
    o[2] = kB64Url[(v >> 6) & 63];
  }
}
inline void AppendB64Url(std::string* out, std::string_view in) {
  AppendB64Url(out, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(in.data()), in.size()));
}

// Decodes `in` into *out (replacing its contents). False on any non-canonical input.
template <typename Bytes>
bool DecodeB64Url(std::string_view in, Bytes* out) {
  if (in.size() % 4 == 1) return false;
  out->resize(in.size() / 4 * 3 + (in.size() % 4 == 0 ? 0 : in.size() % 4 - 1));
  auto* o = reinterpret_cast<uint8_t*>(out->data());
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  size_t i = 0;
  for (; i + 4 <= in.size(); i += 4) {
    int a = kB64UrlValue[p[i]], b = kB64UrlValue[p[i + 1]], c = kB64UrlValue[p[i + 2]],
        d = kB64UrlValue[p[i + 3]];
    if ((a | b | c | d) < 0) return false;
    uint32_t v = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6) | uint32_t(d);
    o[0] = static_cast<uint8_t>(v >> 16);
    o[1] = static_cast<uint8_t>(v >> 8);
    o[2] = static_cast<uint8_t>(v);
    o += 3;
  }
  const size_t rest = in.size() - i;
  if (rest == 2) {
    int a = kB64UrlValue[p[i]], b = kB64UrlValue[p[i + 1]];
    if ((a | b) < 0 || (b & 15) != 0) return false;  // unused bits must be zero
    o[0] = static_cast<uint8_t>((a << 2) | (b >> 4));
  } else if (rest == 3) {
    int a = kB64UrlValue[p[i]], b = kB64UrlValue[p[i + 1]], c = kB64UrlValue[p[i + 2]];
    if ((a | b | c) < 0 || (c & 3) != 0) return false;
    o[0] = static_cast<uint8_t>((a << 2) | (b >> 4));
    o[1] = static_cast<uint8_t>(((b & 15) << 4) | (c >> 2));
  }
  return true;
}

}  // namespace govern::tokens::internal
