#include "services/gateway/token_auth.h"

#include <algorithm>

#include "base/log.h"
#include "net/http_client.h"
#include "tokens/trust_refresher.h"

namespace govern::gateway {

TokenAuth::~TokenAuth() {
  if (refresher_) refresher_->Stop();
}

Result<std::unique_ptr<TokenAuth>> TokenAuth::Create(TokenAuthOptions options) {
  if (options.issuer.empty()) return InvalidArgument("gateway tokens: the issuer is required");
  std::unique_ptr<TokenAuth> a(new TokenAuth());
  const Clock& clock = options.clock != nullptr ? *options.clock : Clock::Real();
  auto keys = options.local_keys ? options.local_keys : std::make_shared<const tokens::KeySet>();
  a->checker_ = std::make_unique<tokens::Checker>(tokens::CheckerOptions{options.issuer}, keys, clock);
  if (options.pull || !options.ring_file.empty()) {
    std::string base = options.trust_url.empty() ? options.issuer : options.trust_url;
    while (base.ends_with('/')) base.pop_back();
    a->http_ = std::make_unique<net::HttpClient>();
    a->refresher_ = std::make_unique<tokens::TrustRefresher>(
        tokens::TrustSources{.jwks_url = options.pull ? base + "/.well-known/jwks.json" : "",
                             .revocations_url = options.pull ? base + "/oauth/revocations" : "",
                             .period = options.period,
                             .local_keys = options.local_keys,
                             .ring_file = options.ring_file,
                             .clock = options.clock},
        *a->checker_, *a->http_);
    // Not fatal: virtual keys keep working, and the pull is retried every period.
    if (Status s = a->refresher_->RefreshOnce(); !s.ok())
      log::Warn("gateway", "token keys not pulled yet", {{"error", s.ToString()}});
    a->refresher_->Start();
  }
  a->options_ = std::move(options);
  return a;
}

bool TokenAuth::LooksLikeToken(std::string_view c) {
  if (c.size() < 5 || std::count(c.begin(), c.end(), '.') != 2) return false;
  return std::all_of(c.begin(), c.end(), [](char ch) {
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
           ch == '_' || ch == '.';
  });
}

Result<TokenPrincipal> TokenAuth::Check(std::string_view token) const {
  auto claims = checker_->Check(token, options_.audience);
  if (!claims.ok()) {
    tokens::Reject r = tokens::RejectOf(claims.status());
    return Unauthenticated("invalid access token: " + std::string(tokens::Describe(r)));
  }
  const tokens::Claims& c = **claims;
  if (c.org.empty()) return Unauthenticated("invalid access token: it names no organisation");
  TokenPrincipal p;
  p.org = c.org;
  if (!c.actors.empty() && !c.actors.front().sub.empty()) {
    p.type = "Agent";
    p.id = c.actors.front().sub;
    p.on_behalf_of = c.sub;
  } else if (!c.client_id.empty() && c.sub == c.client_id) {
    p.type = "Agent";
    p.id = c.sub;
  } else {
    p.type = "User";
    p.id = c.sub;
  }
  if (p.id.empty()) return Unauthenticated("invalid access token: it names no subject");
  return p;
}

}  // namespace govern::gateway
