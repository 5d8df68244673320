// Security: what the broker asks about authentication, authorisation and screening, bundled so the
// broker needs one option (BrokerOptions::security; null = an open listener with no ACLs and no
// screening, the development default) and one per-connection Session.
//
//  - Listener mode: with require_sasl, a connection that has not authenticated may send only
//    ApiVersions, SaslHandshake and SaslAuthenticate; anything else closes it (as Kafka does). Without
//    it, unauthenticated connections act as User:ANONYMOUS (and SASL still works when an Authenticator
//    is set).
//  - SaslHandshake v0..1 and SaslAuthenticate v0..2 (v2 flexible) are answered here. A session with an
//    end (a token's exp, or max_session_ms) is told its lifetime in SaslAuthenticate v1+ (KIP-368); once
//    it has passed, any request but the SASL ones closes the connection. Re-authentication on the same
//    connection must keep the principal.
//  - Revocation: a session keeps what granted it (the token, or the PLAIN user's hash). When the
//    Authenticator's trust_version changes (a new revocation list, reloaded users), the next request of
//    each authenticated connection re-checks it (StillValid: a cached token check, a map lookup) and a
//    session whose token was revoked or whose user was removed or changed ends there: the request closes
//    the connection, as an expired session does (KIP-368), and the client's reconnect gets
//    SASL_AUTHENTICATION_FAILED. Requests pay one atomic comparison while nothing changes.
//  - Allowed(): the Authorizer's answer for the session's principal (always true without one).
//    SetAuthorizer swaps the rules atomically (the ACL file was reloaded); a request sees the old rules
//    or the new ones, never a mix.
//
// Security is thread-safe (only the authorizer changes after construction); a Session is shared by the
// requests of one connection (which may be handled on several threads) and guards itself with a mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "streams/acl.h"
#include "streams/sasl.h"
#include "streams/screening.h"

namespace govern::streams {

// Kafka error codes of this layer (the protocol's numbers).
inline constexpr int16_t kErrUnsupportedSaslMechanism = 33;
inline constexpr int16_t kErrIllegalSaslState = 34;
inline constexpr int16_t kErrTopicAuthorizationFailed = 29;
inline constexpr int16_t kErrGroupAuthorizationFailed = 30;
inline constexpr int16_t kErrClusterAuthorizationFailed = 31;
inline constexpr int16_t kErrPolicyViolation = 44;
inline constexpr int16_t kErrSaslAuthenticationFailed = 58;
inline constexpr int16_t kErrInvalidRecord = 87;

inline constexpr int16_t kApiSaslHandshake = 17;
inline constexpr int16_t kApiSaslAuthenticate = 36;
inline constexpr std::string_view kAnonymous = "User:ANONYMOUS";

class Session {
 public:
  std::string principal() const;  // "User:<name>", or User:ANONYMOUS before authentication
  bool authenticated() const;
  int64_t session_end_ms() const;  // 0: no end

 private:
  friend class Security;
  mutable std::mutex mu_;
  std::string principal_{kAnonymous};
  bool authenticated_ = false;
  std::string mechanism_;  // chosen by the last SaslHandshake; cleared by SaslAuthenticate
  int64_t end_ms_ = 0;
  // What the session rests on (AuthResult), re-checked when the trust version moves past trust_version_.
  std::string auth_mechanism_;
  std::string credential_;
  mutable uint64_t trust_version_ = 0;
  mutable bool ended_ = false;  // revoked or removed since authentication
};

struct SecurityOptions {
  bool require_sasl = false;
  std::shared_ptr<const Authenticator> authenticator;  // null: no SASL offered
  std::shared_ptr<const Authorizer> authorizer;        // null: everything allowed
  std::shared_ptr<const Screener> screener;            // null: no screening
};

class Security {
 public:
  explicit Security(SecurityOptions options, const Clock& clock = Clock::Real());

  bool require_sasl() const { return options_.require_sasl; }
  const Authenticator* authenticator() const { return options_.authenticator.get(); }
  std::shared_ptr<const Authorizer> authorizer() const { return authorizer_.load(std::memory_order_acquire); }
  // Replaces the ACL rules (null: everything allowed). Thread-safe beside Allowed.
  void SetAuthorizer(std::shared_ptr<const Authorizer> authorizer);
  const Screener* screener() const { return options_.screener.get(); }

  // Whether a request with this API key may be served on the session now (see the header comment).
  bool Admit(const Session& session, int16_t api_key) const;
  // The session's principal may do `op` on the resource (true without an Authorizer).
  bool Allowed(const Session& session, AclOp op, ResourceType type, std::string_view name) const;

  // The SASL request handlers: the response body, or nullopt to close the connection (unparsable
  // request, failed re-authentication).
  std::optional<std::string> SaslHandshake(Session& session, int16_t version, std::string_view body) const;
  std::optional<std::string> SaslAuthenticate(Session& session, int16_t version, std::string_view body) const;

 private:
  SecurityOptions options_;
  std::atomic<std::shared_ptr<const Authorizer>> authorizer_;
  const Clock& clock_;
};

}  // namespace govern::streams
