// The OAuth 2.1 / OIDC provider's logic, apart from HTTP: client authentication, the token endpoint's
// grants (authorization_code with PKCE S256, client_credentials, refresh_token with rotation and reuse
// detection, RFC 8693 token exchange), authorization codes, introspection (RFC 7662), revocation
// (RFC 7009) and the revocation list services pull.
//
// Every answer is a Reply: the HTTP status and the JSON body, errors exactly as RFC 6749 section 5.2
// ({"error": "...", "error_description": "..."}; invalid_client is 401 and asks for Basic auth).
// Provider is thread-safe: its state is the Issuer and Checker (both thread-safe) and options; each
// call takes the Connection of the calling thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "services/auth/form.h"
#include "services/auth/store.h"
#include "tokens/checker.h"
#include "tokens/issuer.h"

namespace govern::db {
class Connection;
}  // namespace govern::db

namespace govern::auth_service {

struct Reply {
  int status = 200;
  std::string body;              // JSON
  bool basic_challenge = false;  // add WWW-Authenticate: Basic (invalid_client)
  int retry_after = 0;           // seconds, for 429
  bool revoked = false;          // this call added to the revocation list (reload it)
};

// RFC 6749 section 5.2 error body.
Reply OAuthError(int status, std::string_view error, std::string_view description);

// Who the caller says it is: from Authorization: Basic (client_secret_basic, RFC 6749 section 2.3.1,
// both parts form-urlencoded) or from the form (client_secret_post; a public client sends client_id
// alone). Both at once is invalid_request.
struct ClientAuth {
  std::string client_id;
  std::optional<std::string> secret;
};
// nullopt with `error` set when the request is malformed.
std::optional<ClientAuth> ReadClientAuth(const Form& form, std::optional<std::string_view> authorization,
                                         Reply* error);

// RFC 7636: 43-128 characters of [A-Za-z0-9-._~].
bool ValidCodeVerifier(std::string_view v);
// BASE64URL(SHA256(verifier)).
std::string S256(std::string_view verifier);

struct ProviderOptions {
  std::string issuer;  // "iss", and an audience tokens for the provider itself carry
  std::string default_audience = "govern";
  std::chrono::seconds access_lifetime{600};
  std::chrono::seconds id_lifetime{600};
  std::chrono::seconds refresh_lifetime{std::chrono::hours(24 * 30)};
  std::chrono::seconds code_lifetime{60};
};

// What the authorization endpoint hands to NewCode once the user is signed in.
struct CodeGrant {
  std::string client_id;
  std::string user_id;
  std::string redirect_uri;
  std::string scope;
  std::string nonce;
  std::string code_challenge;  // S256
  int64_t auth_time = 0;
};

class Provider {
 public:
  // `issuer` signs Govern's own access tokens (internal HS256 ring) and ID tokens; `external`, when
  // given, signs access tokens for any other audience with the asymmetric ring, so outside resource
  // servers verify them with the published JWKS alone. `external` also signs person sessions (code and
  // refresh grants) and any token with scope auth:admin: the auth service's own APIs accept only those.
  Provider(ProviderOptions options, const tokens::Issuer& issuer, const tokens::Checker& checker,
           const Clock& clock = Clock::Real(), const tokens::Issuer* external = nullptr);

  const ProviderOptions& options() const { return options_; }

  // The token endpoint: `body` form-urlencoded, `authorization` the header if sent.
  Reply Token(db::Connection& c, std::string_view body, std::optional<std::string_view> authorization) const;
  // RFC 7662 (the caller must be a confidential client).
  Reply Introspect(db::Connection& c, std::string_view body,
                   std::optional<std::string_view> authorization) const;
  // RFC 7009 (client-authenticated; 200 for unknown tokens).
  Reply Revoke(db::Connection& c, std::string_view body, std::optional<std::string_view> authorization) const;
  // {"version":N,"jti":{...},"sid":{...}} of entries not yet expired.
  Result<std::string> RevocationListJson(db::Connection& c) const;
  // OIDC userinfo for a bearer access token (401 with invalid_token otherwise).
  Reply UserInfo(db::Connection& c, std::string_view bearer) const;

  // A one-time authorization code (returned in clear; stored by hash), valid code_lifetime.
  Result<std::string> NewCode(db::Connection& c, const CodeGrant& grant) const;

  // The client authenticated as its kind requires (secret for confidential clients, none for public
  // ones). nullopt with `error` (401 invalid_client) otherwise.
  std::optional<Client> Authenticate(db::Connection& c, const ClientAuth& auth, Reply* error) const;

 private:
  Reply AuthorizationCode(db::Connection& c, const Client& client, const Form& form) const;
  Reply ClientCredentials(const Client& client, const Form& form) const;
  Reply Refresh(db::Connection& c, const Client& client, const Form& form) const;
  Reply Exchange(db::Connection& c, const Client& client, const Form& form) const;
  // Issues an access + refresh pair (and an ID token when scope has openid) and stores the refresh
  // token's family.
  Reply IssueForUser(db::Connection& c, const Client& client, const User& user, const std::string& scope,
                     const std::string& nonce, int64_t auth_time, const std::string& family) const;
  // Checks one of our access tokens whatever its audience (signature, issuer, expiry, revocation).
  Result<tokens::ClaimsPtr> CheckAny(std::string_view token) const;
  int64_t Now() const;
  // The published (asymmetric) ring for any audience outside Govern and for tokens that carry
  // auth:admin: the auth service's own admin API and account API accept only published-ring tokens,
  // because the internal ring file is handed to other services, whose holders could otherwise mint them.
  const tokens::Issuer& AccessIssuerFor(std::string_view audience,
                                        const std::vector<std::string>& scope) const;
  // Person sessions (authorization code, refresh) call the account API (/v1/auth/me/...): published ring.
  const tokens::Issuer& SessionIssuer() const { return external_ ? *external_ : issuer_; }

  ProviderOptions options_;
  const tokens::Issuer& issuer_;
  const tokens::Issuer* external_;
  const tokens::Checker& checker_;
  const Clock& clock_;
};

}  // namespace govern::auth_service
