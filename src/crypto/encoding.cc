// Table-driven hex and base64. Written by hand rather than with OpenSSL's EVP_DecodeBlock, which skips
// whitespace and accepts non-canonical input; these decoders must say no to anything odd.
#include "crypto/encoding.h"

#include <array>

#include "base/ascii.h"

namespace govern::crypto {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";
constexpr char kStdAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr char kUrlAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr uint8_t kInvalid = 0xff;

using DecodeTable = std::array<uint8_t, 256>;

constexpr DecodeTable MakeTable(const char* alphabet) {
  DecodeTable t{};
  for (auto& v : t) v = kInvalid;
  for (uint8_t i = 0; i < 64; ++i) t[static_cast<uint8_t>(alphabet[i])] = i;
  return t;
}

constexpr DecodeTable kStdTable = MakeTable(kStdAlphabet);
constexpr DecodeTable kUrlTable = MakeTable(kUrlAlphabet);

std::string EncodeBase64(std::span<const uint8_t> in, const char* alphabet, bool pad) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8) | in[i + 2];
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(alphabet[(v >> 6) & 63]);
    out.push_back(alphabet[v & 63]);
  }
  size_t rest = in.size() - i;
  if (rest == 1) {
    uint32_t v = uint32_t{in[i]} << 16;
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
    if (pad) out.append("==");
  } else if (rest == 2) {
    uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8);
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(alphabet[(v >> 6) & 63]);
    if (pad) out.push_back('=');
  }
  return out;
}

Status BadChar(std::string_view what, size_t pos) {
  return InvalidArgument(std::string(what) + ": invalid character at offset " + std::to_string(pos));
}

// Decodes unpadded base64 text (the padding, if any, was checked and stripped by the caller).
Result<std::vector<uint8_t>> DecodeUnpadded(std::string_view text, const DecodeTable& table,
                                            std::string_view what) {
  if (text.size() % 4 == 1) return InvalidArgument(std::string(what) + ": truncated input (length 1 mod 4)");
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    uint8_t v = table[static_cast<uint8_t>(text[i])];
    if (v == kInvalid) return BadChar(what, i);
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
      acc &= (1u << bits) - 1;
    }
  }
  // The leftover bits (2 or 4) must be zero, or two different strings would decode to the same bytes.
  if (acc != 0) return InvalidArgument(std::string(what) + ": non-zero trailing bits (not canonical)");
  return out;
}

}  // namespace

std::string HexEncode(std::span<const uint8_t> bytes) {
  std::string out(bytes.size() * 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kHexDigits[bytes[i] >> 4];
    out[2 * i + 1] = kHexDigits[bytes[i] & 15];
  }
  return out;
}

Result<std::vector<uint8_t>> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) return InvalidArgument("hex: odd length " + std::to_string(hex.size()));
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = HexDigitValue(hex[2 * i]);
    int lo = HexDigitValue(hex[2 * i + 1]);
    if (hi < 0) return BadChar("hex", 2 * i);
    if (lo < 0) return BadChar("hex", 2 * i + 1);
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return out;
}

std::string Base64Encode(std::span<const uint8_t> bytes) { return EncodeBase64(bytes, kStdAlphabet, true); }

Result<std::vector<uint8_t>> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return InvalidArgument("base64: length is not a multiple of 4");
  size_t pad = 0;
  if (!text.empty() && text.back() == '=') pad = (text.size() >= 2 && text[text.size() - 2] == '=') ? 2 : 1;
  return DecodeUnpadded(text.substr(0, text.size() - pad), kStdTable, "base64");
}

std::string Base64UrlEncode(std::span<const uint8_t> bytes) {
  return EncodeBase64(bytes, kUrlAlphabet, false);
}

Result<std::vector<uint8_t>> Base64UrlDecode(std::string_view text) {
  return DecodeUnpadded(text, kUrlTable, "base64url");
}

}  // namespace govern::crypto
