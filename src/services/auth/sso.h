// Single sign-on through an outside OpenID Connect provider, per organisation: the provider's settings
// (client secret sealed under the storage key), and the check of the ID token it returns.
//
// The flow (service.cc): /oauth/sso starts from an authorization request, keeps state, nonce and a PKCE
// verifier in a single-use challenge, and redirects to the provider; /oauth/sso/callback takes the
// challenge back by state, redeems the code, checks the ID token here (signature with the provider's
// JWKS, iss, aud, exp, nonce), reads the email and email_verified from userinfo, and matches or creates
// the user: first by the link of "<iss>|<sub>" (auth_sso_links), else by email in the organisation (then
// linked), else a new user (linked). The user's own subject never changes. Matching or creating by email
// needs the provider to say the email is verified (OIDC Core 5.1 email_verified: true), unless the
// organisation turned that off (require_email_verified): otherwise anyone who can register an
// unverified address at the provider would take over the Govern account that has it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "crypto/aead.h"
#include "services/auth/store.h"

namespace govern::db {
class Connection;
}  // namespace govern::db

namespace govern::auth_service {

struct SsoProvider {
  std::string org;
  std::string issuer;
  std::string client_id;
  std::string client_secret;
  bool require_email_verified = true;
};

Status SetSsoProvider(db::Connection& c, const crypto::Aes256GcmKey& key, const SsoProvider& p);
// nullopt when the organisation has none.
Result<std::optional<SsoProvider>> GetSsoProvider(db::Connection& c, const crypto::Aes256GcmKey& key,
                                                  std::string_view org);

struct IdTokenClaims {
  std::string sub;
  std::string nonce;
};
// Verifies an outside ID token: signature by a key of `jwks_json` (the key decides the algorithm; alg none
// and unknown kids refused), iss == issuer, aud contains client_id, exp in the future (60 s skew),
// nonce == expected. kUnauthenticated with the reason otherwise.
Result<IdTokenClaims> VerifyOutsideIdToken(std::string_view id_token, std::string_view jwks_json,
                                           std::string_view issuer, std::string_view client_id,
                                           std::string_view expected_nonce, int64_t now_s);

// What the provider said about the identity's email (userinfo).
struct OutsideEmail {
  std::string address;
  bool verified = false;  // email_verified was true
};

// The user for an outside identity, created when neither its subject nor its email is known. A linked
// identity needs no email; matching or creating by email is refused (kUnauthenticated) when
// `require_verified` and the provider did not say the email is verified.
Result<User> MatchOrCreateSsoUser(db::Connection& c, std::string_view org, std::string_view issuer,
                                  std::string_view sub, const OutsideEmail& email,
                                  bool require_verified = true);

}  // namespace govern::auth_service
