// TOTP second factor (RFC 6238, through govern_webauthn's totp.h): enrolment, confirmation and the
// check at sign-in, with the secret sealed under the storage key (keys.h) in auth_totp.
//
// A factor counts only once confirmed with a first good code. Each accepted code's time step is stored
// and must grow (`UPDATE ... WHERE last_step < step`), so a code is single use even when two sign-ins
// race. Failed checks count against "totp:<user_id>" in auth_rate_limits (passwords.h), so the 10^6
// codes cannot be walked. Free functions on a Connection: one thread at a time per Connection.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "crypto/aead.h"
#include "services/auth/passwords.h"

namespace govern::db {
class Connection;
}  // namespace govern::db

namespace govern::auth_service {

struct TotpEnrolment {
  std::string secret_base32;  // for manual entry
  std::string otpauth_uri;    // for the QR code
};

// A new secret for `user_id` (replacing an unconfirmed one). kAlreadyExists when a confirmed factor
// exists (an administrator removes it first).
Result<TotpEnrolment> BeginTotp(db::Connection& c, const crypto::Aes256GcmKey& key, std::string_view user_id,
                                std::string_view issuer_label, std::string_view account);
// Confirms the pending factor with a first code. kUnauthenticated for a wrong code.
Status ConfirmTotp(db::Connection& c, const crypto::Aes256GcmKey& key, std::string_view user_id,
                   std::string_view code, int64_t now_s);
// Whether the user has a confirmed factor.
Result<bool> HasTotp(db::Connection& c, std::string_view user_id);
// A sign-in check: ok, kUnauthenticated (wrong or reused code), kResourceExhausted (locked: *retry_after
// set), kUnavailable.
Status CheckTotp(db::Connection& c, const crypto::Aes256GcmKey& key, const RateLimitPolicy& limits,
                 std::string_view user_id, std::string_view code, int64_t now_s, int64_t* retry_after);
// Removes the factor (administrator).
Status RemoveTotp(db::Connection& c, std::string_view user_id);

}  // namespace govern::auth_service
