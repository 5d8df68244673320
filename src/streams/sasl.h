// SASL for the broker: the PLAIN (RFC 4616) and OAUTHBEARER (RFC 7628) client messages, the PLAIN user
// store, and the Authenticator that turns one client message into a principal.
//
// PLAIN users are kept hashed: Argon2id PHC strings (crypto/password.h) or salted SHA-256
// ("sha256:<salt hex>:<hex of SHA-256(salt || password)>"); the comparison is constant-time either way.
// The users file has one "<name> <hash>" per line ('#' comments); names are 1..255 bytes without
// spaces or NUL.
//
// OAUTHBEARER carries a Govern access token (docs/tokens.md) checked locally with tokens::Checker for
// the configured audience; the principal is User:<sub>, and the session ends when the token expires
// (KIP-368: SaslAuthenticate v1+ tells the client, which re-authenticates before then).
//
// A session stays tied to what granted it (AuthResult::credential): when the trust state changes (the
// Checker's revocation list gets a new version, or SetUsers swaps the users), Security re-checks each
// session on its next request with StillValid, so a revoked token or a removed user (or changed password)
// ends sessions that were already open, not only new authentications.
//
// Pure parsers are thread-safe; UserStore is immutable; Authenticator is thread-safe (the users are
// swapped atomically by SetUsers; the Checker it uses is thread-safe).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"

namespace govern::tokens {
class Checker;
}

namespace govern::streams {

struct PlainMessage {
  std::string_view authzid;  // empty, or equal to authcid (we do not act on behalf of others)
  std::string_view authcid;
  std::string_view password;
};
// "[authzid] NUL authcid NUL passwd"; InvalidArgument when malformed.
Result<PlainMessage> ParsePlain(std::string_view message);

struct OAuthBearerMessage {
  std::string_view authzid;  // from the GS2 header "n,a=<authzid>,"; may be empty
  std::string_view token;    // from "auth=Bearer <token>"
};
// "n,[a=<authzid>],\x01auth=Bearer <token>\x01[key=value\x01]*\x01"; InvalidArgument when malformed.
Result<OAuthBearerMessage> ParseOAuthBearer(std::string_view message);

// "sha256:<salt hex>:<hash hex>" for `password` with a fresh 16-byte salt (for tests and tools).
Result<std::string> HashPasswordSha256(std::string_view password);

class UserStore {
 public:
  explicit UserStore(std::map<std::string, std::string, std::less<>> users) : users_(std::move(users)) {}
  static Result<std::shared_ptr<const UserStore>> Parse(std::string_view text);
  static Result<std::shared_ptr<const UserStore>> LoadFile(const std::string& path);
  // ok when the user exists and the password matches; kUnauthenticated otherwise (the same message for
  // an unknown user and a wrong password; an unknown user still costs a hash).
  Status Verify(std::string_view user, std::string_view password) const;
  // The stored hash of `user`, empty when there is no such user.
  std::string_view HashOf(std::string_view user) const;
  size_t size() const { return users_.size(); }

 private:
  std::map<std::string, std::string, std::less<>> users_;
};

struct AuthenticatorOptions {
  std::string audience = "govern:streams";  // the "aud" an OAUTHBEARER token must carry
  // Longest session without re-authentication for PLAIN (0: no limit); for tokens the session also
  // ends at the token's exp.
  int64_t max_session_ms = 0;
};

struct AuthResult {
  std::string principal;       // "User:<name>"
  int64_t session_end_ms = 0;  // Unix ms when the session must re-authenticate; 0: never
  // What the session rests on, for StillValid: the mechanism, and the token (OAUTHBEARER) or the user
  // name and its stored hash (PLAIN, "<name> <hash>").
  std::string mechanism;
  std::string credential;
};

class Authenticator {
 public:
  // Either may be null: that mechanism is then not offered. `clock` must outlive this object.
  Authenticator(AuthenticatorOptions options, std::shared_ptr<const UserStore> users,
                std::shared_ptr<const tokens::Checker> checker, const Clock& clock = Clock::Real());

  // The mechanisms offered, in order ("PLAIN", "OAUTHBEARER").
  std::vector<std::string> mechanisms() const;
  bool Offers(std::string_view mechanism) const;
  // Checks one client message. kUnauthenticated (message safe to send to the client) on a bad password,
  // token or malformed message; kUnimplemented for a mechanism not offered.
  Result<AuthResult> Authenticate(std::string_view mechanism, std::string_view message) const;

  // Changes whenever a session granted earlier may have lost its ground: a new revocation list in the
  // Checker or new users (SetUsers). Cheap (atomic loads); Security compares it on every request.
  uint64_t trust_version() const;
  // Whether a session granted by Authenticate (its mechanism and credential) still stands: the token is
  // not revoked (nor expired), the PLAIN user still exists with the same hash. kUnauthenticated with a
  // message safe to show otherwise.
  Status StillValid(std::string_view mechanism, std::string_view credential) const;

  // Replaces the PLAIN users (the users file was reloaded). Only when PLAIN is offered (users were given
  // at construction); ignored otherwise.
  void SetUsers(std::shared_ptr<const UserStore> users);

 private:
  std::shared_ptr<const UserStore> users() const { return users_.load(std::memory_order_acquire); }
  AuthenticatorOptions options_;
  std::atomic<std::shared_ptr<const UserStore>> users_;
  std::atomic<uint64_t> users_generation_{0};
  std::shared_ptr<const tokens::Checker> checker_;
  const Clock& clock_;
};

}  // namespace govern::streams
