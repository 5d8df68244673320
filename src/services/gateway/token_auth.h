// TokenAuth: the gateway's check of Govern access tokens (JWTs from the auth service), offered beside
// the virtual keys. Verified locally with tokens::Checker (its cache of verified tokens keyed by the
// token's SHA-256 makes a repeat check a hash and a lookup; time, audience and revocation are checked
// every time); keys and revocations are kept current by tokens::TrustRefresher (the auth service's JWKS
// and revocation list over HTTP, and its internal ring file for the default HS256 tokens), as the
// streams broker's OAUTHBEARER does. No database, no network on the request path.
//
// The principal: a token whose `act` names an agent acting for a person is that agent (Agent:<act.sub>,
// with the person as `on_behalf_of`); a client-credentials token (sub == client_id) is the agent
// Agent:<sub>; any other is the person User:<sub>. The organisation is the token's `org` (a token
// without one is refused).
//
// Thread-safe: Check from any thread; Create and the destructor from one owner.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"
#include "tokens/checker.h"

namespace govern::net {
class HttpClient;
}
namespace govern::tokens {
class TrustRefresher;
}

namespace govern::gateway {

struct TokenAuthOptions {
  std::string issuer;               // "iss" must equal it; empty: tokens are not accepted
  std::string audience = "govern";  // "aud" must hold it
  std::string trust_url;            // base of /.well-known/jwks.json and /oauth/revocations; "": issuer
  std::string ring_file;            // the auth service's internal ring file; "": none
  std::shared_ptr<const tokens::KeySet> local_keys;  // fixed keys (a JWKS file), beside the pulled ones
  bool pull = true;                                  // false: local keys and the ring file only (tests)
  std::chrono::milliseconds period{std::chrono::seconds(5)};
  const Clock* clock = nullptr;
};

struct TokenPrincipal {
  std::string type;  // "Agent" or "User"
  std::string id;
  std::string org;
  std::string on_behalf_of;  // the person an agent acts for (token exchange); "" otherwise
  std::string Name() const { return type + ":" + id; }  // "Agent:cli_1", as budgets name principals
};

class TokenAuth {
 public:
  static Result<std::unique_ptr<TokenAuth>> Create(TokenAuthOptions options);
  ~TokenAuth();
  TokenAuth(const TokenAuth&) = delete;
  TokenAuth& operator=(const TokenAuth&) = delete;

  // A compact JWS: three base64url parts separated by dots (a virtual key never looks like one).
  static bool LooksLikeToken(std::string_view credential);

  // The principal of a valid token, or kUnauthenticated (kInvalidArgument when malformed) whose message
  // is safe to show the client ("the access token expired", ...).
  Result<TokenPrincipal> Check(std::string_view token) const;

  tokens::Checker& checker() { return *checker_; }

 private:
  TokenAuth() = default;
  TokenAuthOptions options_;
  std::unique_ptr<tokens::Checker> checker_;
  std::unique_ptr<net::HttpClient> http_;
  std::unique_ptr<tokens::TrustRefresher> refresher_;
};

}  // namespace govern::gateway
