// One-time codes for a second factor: TOTP (RFC 6238) over HOTP (RFC 4226), base32 secrets (RFC 4648)
// and the otpauth:// enrolment URI that authenticator apps read from a QR code.
//
// VerifyTotp accepts the code of the current 30-second step or of one step either side (clock drift)
// and returns the step it matched; the service stores that step and passes it back as last_used_step,
// so a code (or an older one) cannot be used twice. Codes are compared in constant time and every step
// of the window is computed, whichever matches. Refusals carry Error::kWrongCode / kCodeReused
// (errors.h); a code that is not `digits` decimal digits is kWrongCode too. Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "crypto/bytes.h"

namespace govern::webauthn {

enum class HashAlgorithm { kSha1, kSha256, kSha512 };

struct TotpParams {
  HashAlgorithm algorithm = HashAlgorithm::kSha1;  // what every authenticator app supports
  int digits = 6;                                  // 6 to 8
  int64_t period_seconds = 30;
  int window_steps = 1;  // steps accepted either side of the current one
};

inline constexpr size_t kTotpSecretSize = 20;  // 160 bits, RFC 4226's recommendation for SHA-1

// A fresh random secret.
Result<crypto::SecretBytes> NewTotpSecret();

// HOTP value of `counter`, zero-padded to `digits`.
Result<std::string> Hotp(std::span<const uint8_t> secret, uint64_t counter, int digits,
                         HashAlgorithm algorithm = HashAlgorithm::kSha1);

// The time step of `unix_seconds` (T0 = 0); negative times are refused by the functions below.
int64_t TotpStep(int64_t unix_seconds, int64_t period_seconds);

// The TOTP code at `unix_seconds`.
Result<std::string> Totp(std::span<const uint8_t> secret, int64_t unix_seconds,
                         const TotpParams& params = {});

// Verifies `code` at `unix_seconds`; returns the matched time step (store it; pass it back next time).
Result<int64_t> VerifyTotp(std::span<const uint8_t> secret, std::string_view code, int64_t unix_seconds,
                           std::optional<int64_t> last_used_step, const TotpParams& params = {});

// RFC 4648 base32, upper case, without padding (as otpauth:// URIs carry secrets).
std::string Base32Encode(std::span<const uint8_t> bytes);
// Accepts upper or lower case, with or without correct '=' padding; refuses other characters,
// impossible lengths and non-zero unused bits.
Result<std::vector<uint8_t>> Base32Decode(std::string_view text);

// otpauth://totp/<issuer>:<account>?secret=...&issuer=...&algorithm=...&digits=...&period=...
// (Google Authenticator Key Uri Format), every label and value percent-encoded.
std::string OtpauthUri(std::string_view issuer, std::string_view account, std::span<const uint8_t> secret,
                       const TotpParams& params = {});

}  // namespace govern::webauthn
