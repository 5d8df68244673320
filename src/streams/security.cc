// Security: the listener gate, the SASL handlers and the authorisation check (see security.h).
#include "streams/security.h"

#include "base/log.h"
#include "streams/wire.h"

namespace govern::streams {

std::string Session::principal() const {
  std::lock_guard<std::mutex> l(mu_);
  return principal_;
}
bool Session::authenticated() const {
  std::lock_guard<std::mutex> l(mu_);
  return authenticated_;
}
int64_t Session::session_end_ms() const {
  std::lock_guard<std::mutex> l(mu_);
  return end_ms_;
}

Security::Security(SecurityOptions options, const Clock& clock)
    : options_(std::move(options)), authorizer_(options_.authorizer), clock_(clock) {}

void Security::SetAuthorizer(std::shared_ptr<const Authorizer> authorizer) {
  authorizer_.store(std::move(authorizer), std::memory_order_release);
}

bool Security::Admit(const Session& s, int16_t api_key) const {
  if (api_key == kApiSaslHandshake || api_key == kApiSaslAuthenticate) return true;
  std::lock_guard<std::mutex> l(s.mu_);
  if (!s.authenticated_) return !options_.require_sasl || api_key == 18;  // ApiVersions
  if (s.end_ms_ != 0 && clock_.UnixMicros() / 1000 >= s.end_ms_) return false;
  const Authenticator* auth = options_.authenticator.get();
  if (auth && !s.ended_ && !s.credential_.empty()) {
    uint64_t v = auth->trust_version();
    if (v != s.trust_version_) {
      Status still = auth->StillValid(s.auth_mechanism_, s.credential_);
      if (!still.ok()) {
        s.ended_ = true;
        log::Info("streams", "closing session", {{"principal", s.principal_}, {"reason", still.message()}});
      }
      s.trust_version_ = v;
    }
  }
  return !s.ended_;
}

bool Security::Allowed(const Session& s, AclOp op, ResourceType type, std::string_view name) const {
  auto authorizer = authorizer_.load(std::memory_order_acquire);
  if (!authorizer) return true;
  std::lock_guard<std::mutex> l(s.mu_);
  return authorizer->Allowed(s.principal_, op, type, name);
}

std::optional<std::string> Security::SaslHandshake(Session& s, int16_t version, std::string_view body) const {
  Reader r(body);
  std::string_view mechanism = r.String();
  if (!r.ok()) return std::nullopt;
  Writer w;
  std::vector<std::string> offered =
      options_.authenticator ? options_.authenticator->mechanisms() : std::vector<std::string>{};
  bool ok = options_.authenticator && options_.authenticator->Offers(mechanism);
  // v0 would be followed by raw SASL frames without a Kafka header; only the SaslAuthenticate form (v1) is
  // served, which every client since Kafka 1.0 uses when the broker advertises it.
  int16_t error = !ok ? kErrUnsupportedSaslMechanism : version < 1 ? kErrIllegalSaslState : int16_t{0};
  if (error == 0) {
    std::lock_guard<std::mutex> l(s.mu_);
    s.mechanism_ = std::string(mechanism);
  }
  w.Int16(error);
  w.ArrayCount(static_cast<int32_t>(offered.size()));
  for (auto& m : offered) w.String(m);
  return std::move(w.str());
}

std::optional<std::string> Security::SaslAuthenticate(Session& s, int16_t version,
                                                      std::string_view body) const {
  Reader r(body);
  std::optional<std::string_view> bytes = version >= 2 ? r.CompactNullableString() : r.NullableBytes();
  if (version >= 2) r.SkipTaggedFields();
  if (!r.ok()) return std::nullopt;
  std::string mechanism;
  {
    std::lock_guard<std::mutex> l(s.mu_);
    mechanism.swap(s.mechanism_);
  }
  int16_t error = 0;
  std::string message;
  int64_t lifetime_ms = 0;
  bool close = false;
  if (mechanism.empty() || !options_.authenticator) {
    error = kErrIllegalSaslState;
    message = "SaslAuthenticate without a SaslHandshake naming an enabled mechanism";
  } else {
    // Read before the check: a revocation that lands meanwhile is seen by the next request.
    uint64_t trust_version = options_.authenticator->trust_version();
    auto res = options_.authenticator->Authenticate(mechanism, bytes.value_or(std::string_view()));
    if (!res.ok()) {
      error = kErrSaslAuthenticationFailed;
      message = res.status().message();
      log::Info("streams", "SASL authentication failed", {{"mechanism", mechanism}, {"error", message}});
    } else {
      int64_t now_ms = clock_.UnixMicros() / 1000;
      std::lock_guard<std::mutex> l(s.mu_);
      if (s.authenticated_ && s.principal_ != res->principal) {
        // KIP-368: re-authentication may not change who the connection is.
        error = kErrSaslAuthenticationFailed;
        message = "re-authentication must keep the principal";
        close = true;
      } else if (res->session_end_ms != 0 && res->session_end_ms <= now_ms) {
        error = kErrSaslAuthenticationFailed;
        message = "authentication failed: session already expired";
      } else {
        s.authenticated_ = true;
        s.principal_ = res->principal;
        s.end_ms_ = res->session_end_ms;
        s.auth_mechanism_ = std::move(res->mechanism);
        s.credential_ = std::move(res->credential);
        s.trust_version_ = trust_version;
        s.ended_ = false;
        if (s.end_ms_ != 0) lifetime_ms = s.end_ms_ - now_ms;
      }
    }
  }
  if (close) return std::nullopt;
  Writer w;
  w.Int16(error);
  if (version >= 2) {
    if (error == 0) {
      w.UVarint(0);  // null error message
    } else {
      w.CompactString(message);
    }
    w.UVarint(1);  // empty server response (compact bytes: length + 1)
  } else {
    w.NullableString(error == 0 ? std::nullopt : std::optional<std::string_view>(message));
    w.Int32(0);  // empty server response
  }
  if (version >= 1) w.Int64(lifetime_ms);
  if (version >= 2) w.EmptyTaggedFields();
  return std::move(w.str());
}

}  // namespace govern::streams
