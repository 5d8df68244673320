// HOTP/TOTP with OpenSSL's one-shot HMAC (a second factor is checked a few times per sign-in, so the
// pre-keyed HMAC of crypto/sha256.h would buy nothing and it has no SHA-1).
#include "webauthn/totp.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "crypto/random.h"
#include "webauthn/errors.h"

namespace govern::webauthn {

namespace {

const EVP_MD* Md(HashAlgorithm a) {
  switch (a) {
    case HashAlgorithm::kSha1:
      return EVP_sha1();
    case HashAlgorithm::kSha256:
      return EVP_sha256();
    case HashAlgorithm::kSha512:
      return EVP_sha512();
  }
  return EVP_sha1();
}

std::string_view AlgName(HashAlgorithm a) {
  switch (a) {
    case HashAlgorithm::kSha1:
      return "SHA1";
    case HashAlgorithm::kSha256:
      return "SHA256";
    case HashAlgorithm::kSha512:
      return "SHA512";
  }
  return "SHA1";
}

Status CheckParams(const TotpParams& p) {
  if (p.digits < 6 || p.digits > 8) return InvalidArgument("totp: digits must be 6 to 8");
  if (p.period_seconds <= 0) return InvalidArgument("totp: period must be positive");
  if (p.window_steps < 0 || p.window_steps > 10) return InvalidArgument("totp: window must be 0 to 10 steps");
  return OkStatus();
}

constexpr char kBase32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

std::string PercentEncode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

}  // namespace

Result<crypto::SecretBytes> NewTotpSecret() { return crypto::RandomSecret(kTotpSecretSize); }

Result<std::string> Hotp(std::span<const uint8_t> secret, uint64_t counter, int digits,
                         HashAlgorithm algorithm) {
  if (digits < 6 || digits > 8) return InvalidArgument("hotp: digits must be 6 to 8");
  if (secret.empty()) return InvalidArgument("hotp: empty secret");
  uint8_t msg[8];
  for (int i = 7; i >= 0; --i) {
    msg[i] = static_cast<uint8_t>(counter & 0xFF);
    counter >>= 8;
  }
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (HMAC(Md(algorithm), secret.data(), static_cast<int>(secret.size()), msg, sizeof msg, mac, &len) ==
      nullptr) {
    return Internal("hotp: HMAC failed");
  }
  // Dynamic truncation (RFC 4226 section 5.3).
  unsigned offset = mac[len - 1] & 0x0F;
  uint32_t bin = (uint32_t{mac[offset]} & 0x7F) << 24 | uint32_t{mac[offset + 1]} << 16 |
                 uint32_t{mac[offset + 2]} << 8 | mac[offset + 3];
  uint32_t mod = 1;
  for (int i = 0; i < digits; ++i) mod *= 10;
  std::string code = std::to_string(bin % mod);
  return std::string(static_cast<size_t>(digits) - code.size(), '0') + code;
}

int64_t TotpStep(int64_t unix_seconds, int64_t period_seconds) { return unix_seconds / period_seconds; }

Result<std::string> Totp(std::span<const uint8_t> secret, int64_t unix_seconds, const TotpParams& params) {
  GOVERN_RETURN_IF_ERROR(CheckParams(params));
  if (unix_seconds < 0) return InvalidArgument("totp: time before 1970");
  return Hotp(secret, static_cast<uint64_t>(TotpStep(unix_seconds, params.period_seconds)), params.digits,
              params.algorithm);
}

Result<int64_t> VerifyTotp(std::span<const uint8_t> secret, std::string_view code, int64_t unix_seconds,
                           std::optional<int64_t> last_used_step, const TotpParams& params) {
  GOVERN_RETURN_IF_ERROR(CheckParams(params));
  if (unix_seconds < 0) return InvalidArgument("totp: time before 1970");
  bool digits_only = code.size() == static_cast<size_t>(params.digits);
  for (char c : code) digits_only = digits_only && c >= '0' && c <= '9';
  if (!digits_only)
    return MakeError(Error::kWrongCode, "not a " + std::to_string(params.digits) + "-digit code");
  int64_t now = TotpStep(unix_seconds, params.period_seconds);
  std::optional<int64_t> matched;
  for (int64_t step = now - params.window_steps; step <= now + params.window_steps; ++step) {
    if (step < 0) continue;
    GOVERN_ASSIGN_OR_RETURN(std::string want,
                            Hotp(secret, static_cast<uint64_t>(step), params.digits, params.algorithm));
    // Every step is computed and compared; the first match wins (codes of neighbouring steps collide
    // with probability 10^-digits, and the earlier step is the conservative one to burn).
    if (crypto::ConstantTimeEquals(want, code) && !matched) matched = step;
  }
  if (!matched) return MakeError(Error::kWrongCode, "the code matches no step in the window");
  if (last_used_step && *matched <= *last_used_step) {
    return MakeError(Error::kCodeReused, "step " + std::to_string(*matched) +
                                             " is not after the last used step " +
                                             std::to_string(*last_used_step));
  }
  return *matched;
}

std::string Base32Encode(std::span<const uint8_t> bytes) {
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (uint8_t b : bytes) {
    buffer = (buffer << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out.push_back(kBase32[(buffer >> (bits - 5)) & 31]);
      bits -= 5;
    }
  }
  if (bits > 0) out.push_back(kBase32[(buffer << (5 - bits)) & 31]);
  return out;
}

Result<std::vector<uint8_t>> Base32Decode(std::string_view text) {
  size_t end = text.size();
  while (end > 0 && text[end - 1] == '=') --end;
  if (end != text.size() && text.size() % 8 != 0)
    return InvalidArgument("base32: padding to a length not a multiple of 8");
  if (text.size() - end > 6) return InvalidArgument("base32: too much padding");
  // Lengths mod 8 of 1, 3 and 6 leave bits that make no whole byte.
  size_t rem = end % 8;
  if (rem == 1 || rem == 3 || rem == 6)
    return InvalidArgument("base32: impossible length " + std::to_string(end));
  if (end != text.size() && (end + 7) / 8 * 8 != text.size()) return InvalidArgument("base32: wrong padding");
  std::vector<uint8_t> out;
  out.reserve(end * 5 / 8);
  uint32_t buffer = 0;
  int bits = 0;
  for (size_t i = 0; i < end; ++i) {
    char c = text[i];
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a';
    } else if (c >= '2' && c <= '7') {
      v = c - '2' + 26;
    } else {
      return InvalidArgument("base32: bad character at " + std::to_string(i));
    }
    buffer = (buffer << 5) | static_cast<uint32_t>(v);
    bits += 5;
    if (bits >= 8) {
      out.push_back(static_cast<uint8_t>(buffer >> (bits - 8)));
      bits -= 8;
      buffer &= (1u << bits) - 1;
    }
  }
  if (bits > 0 && (buffer & ((1u << bits) - 1)) != 0) return InvalidArgument("base32: non-zero unused bits");
  return out;
}

std::string OtpauthUri(std::string_view issuer, std::string_view account, std::span<const uint8_t> secret,
                       const TotpParams& params) {
  std::string uri = "otpauth://totp/" + PercentEncode(issuer) + ":" + PercentEncode(account);
  uri += "?secret=" + Base32Encode(secret);
  uri += "&issuer=" + PercentEncode(issuer);
  uri += "&algorithm=" + std::string(AlgName(params.algorithm));
  uri += "&digits=" + std::to_string(params.digits);
  uri += "&period=" + std::to_string(params.period_seconds);
  return uri;
}

}  // namespace govern::webauthn
