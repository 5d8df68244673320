// Passkeys (WebAuthn, through govern_webauthn; docs/passkeys.md): registration for a signed-in user and
// sign-in by a discoverable credential, with challenges and credentials in PostgreSQL.
//
// Each ceremony's challenge is a row of auth_challenges (kind 'passkey-reg' for a user, or
// 'passkey-auth' under a random handle for a sign-in not yet tied to a user), single use (taken out with
// DELETE ... RETURNING before the response is judged, whatever the outcome) and valid five minutes. The
// user handle is the user_id's bytes (random, no personal data). A credential id is unique across users
// (primary key). Free functions on a Connection: one thread at a time per Connection.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "services/auth/store.h"
#include "webauthn/ceremony.h"
#include "webauthn/parse.h"

namespace govern::db {
class Connection;
}  // namespace govern::db

namespace govern::auth_service {

// The PublicKeyCredentialCreationOptionsJSON for `user`, its challenge stored against the user.
Result<std::string> BeginPasskeyRegistration(db::Connection& c, const webauthn::RelyingParty& rp,
                                             std::string_view rp_name, const User& user, int64_t now_s);
// Verifies the browser's answer against the user's pending challenge and stores the credential.
// kAlreadyExists when the credential id is registered; the webauthn error otherwise.
Status FinishPasskeyRegistration(db::Connection& c, const webauthn::RelyingParty& rp, const User& user,
                                 const webauthn::RegistrationResponse& response, int64_t now_s);

struct PasskeyChallenge {
  std::string handle;        // give back with the answer
  std::string options_json;  // PublicKeyCredentialRequestOptionsJSON (no allowCredentials: discoverable)
};
Result<PasskeyChallenge> BeginPasskeySignIn(db::Connection& c, const webauthn::RelyingParty& rp,
                                            int64_t now_s);
// The user the assertion proves, after storing the new sign count. kUnauthenticated for an unknown
// handle or credential, a disabled user, or any failed check.
Result<User> FinishPasskeySignIn(db::Connection& c, const webauthn::RelyingParty& rp, std::string_view handle,
                                 const webauthn::AssertionResponse& response, int64_t now_s);

}  // namespace govern::auth_service
