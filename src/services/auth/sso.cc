// Outside OIDC providers: settings, ID token checks, user matching.
#include "services/auth/sso.h"

#include <nlohmann/json.hpp>

#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "db/connection.h"
#include "services/auth/keys.h"
#include "tokens/checker.h"
#include "tokens/jose.h"

namespace govern::auth_service {

Status SetSsoProvider(db::Connection& c, const crypto::Aes256GcmKey& key, const SsoProvider& p) {
  GOVERN_RETURN_IF_ERROR(ValidateOrg(p.org));
  if (!p.issuer.starts_with("https://") && !p.issuer.starts_with("http://127.0.0.1") &&
      !p.issuer.starts_with("http://localhost"))
    return InvalidArgument("issuer must be an https URL (http only on a loopback host)");
  if (p.client_id.empty() || p.client_secret.empty() || p.client_id.size() > 200 ||
      p.client_secret.size() > 500)
    return InvalidArgument("client_id and client_secret are required");
  GOVERN_ASSIGN_OR_RETURN(std::string sealed, Seal(key, p.client_secret, "sso:" + p.org));
  auto rows = c.Exec(
      "INSERT INTO auth_sso (org, issuer, client_id, client_secret, require_email_verified) "
      "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (org) DO "
      "UPDATE SET issuer = EXCLUDED.issuer, client_id = EXCLUDED.client_id, client_secret = "
      "EXCLUDED.client_secret, require_email_verified = EXCLUDED.require_email_verified, "
      "updated_at = now()",
      db::Params(p.org, p.issuer, p.client_id, db::Bytea{sealed}, p.require_email_verified));
  if (!rows.ok() && rows.status().code() == Code::kFailedPrecondition)
    return NotFound("no organisation '" + p.org + "'");
  return rows.status();
}

Result<std::optional<SsoProvider>> GetSsoProvider(db::Connection& c, const crypto::Aes256GcmKey& key,
                                                  std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      c.ExecPrepared(
          "SELECT issuer, client_id, client_secret, require_email_verified FROM auth_sso WHERE org = $1",
          db::Params(org)));
  if (rows.empty()) return std::optional<SsoProvider>();
  GOVERN_ASSIGN_OR_RETURN(std::string sealed, rows.Bytes(0, 2));
  GOVERN_ASSIGN_OR_RETURN(std::string secret, Open(key, sealed, "sso:" + std::string(org)));
  GOVERN_ASSIGN_OR_RETURN(bool require_verified, rows.Bool(0, 3));
  return std::optional<SsoProvider>(SsoProvider{std::string(org), std::string(rows.Text(0, 0)),
                                                std::string(rows.Text(0, 1)), std::move(secret),
                                                require_verified});
}

Result<IdTokenClaims> VerifyOutsideIdToken(std::string_view id_token, std::string_view jwks_json,
                                           std::string_view issuer, std::string_view client_id,
                                           std::string_view expected_nonce, int64_t now_s) {
  auto keys = tokens::KeySet::FromJwks(jwks_json);
  if (!keys.ok()) return Unauthenticated("the provider's JWKS is unusable: " + keys.status().message());
  auto parsed = tokens::ParseCompact(id_token);
  if (!parsed.ok()) return Unauthenticated("the ID token is malformed");
  auto key = keys->Find(parsed->header);
  if (!key.ok()) return Unauthenticated("no key of the provider fits the ID token");
  if (!(*key)->Verify(parsed->signing_input, parsed->signature).ok())
    return Unauthenticated("the ID token's signature does not verify");
  auto claims = tokens::ClaimsFromJson(parsed->payload);
  if (!claims.ok()) return Unauthenticated("the ID token's claims are malformed");
  if (claims->iss != issuer) return Unauthenticated("the ID token is from another issuer");
  if (!claims->HasAudience(client_id)) return Unauthenticated("the ID token is for another client");
  {
    // OIDC Core 3.1.3.7 steps 4-5: with several audiences an azp must be there, and an azp must be us.
    auto raw = nlohmann::json::parse(parsed->payload, nullptr, false);
    auto azp = raw.is_object() ? raw.find("azp") : raw.end();
    bool has_azp = raw.is_object() && azp != raw.end();
    if (has_azp && (!azp->is_string() || azp->get<std::string>() != client_id))
      return Unauthenticated("the ID token was issued to another party (azp)");
    if (claims->aud.size() > 1 && !has_azp)
      return Unauthenticated("the ID token has several audiences and no azp");
  }
  if (claims->exp == 0 || claims->exp + 60 < now_s) return Unauthenticated("the ID token expired");
  if (claims->sub.empty()) return Unauthenticated("the ID token names no subject");
  if (expected_nonce.empty() || !crypto::ConstantTimeEquals(claims->nonce, expected_nonce))
    return Unauthenticated("the ID token's nonce does not match");
  return IdTokenClaims{claims->sub, claims->nonce};
}

Result<User> MatchOrCreateSsoUser(db::Connection& c, std::string_view org, std::string_view issuer,
                                  std::string_view sub, const OutsideEmail& outside, bool require_verified) {
  std::string_view email = outside.address;
  std::string identity = std::string(issuer) + "|" + std::string(sub);
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows linked,
      c.ExecPrepared("SELECT user_id FROM auth_sso_links WHERE identity = $1", db::Params(identity)));
  if (!linked.empty()) {
    GOVERN_ASSIGN_OR_RETURN(User u, GetUser(c, linked.Text(0, 0)));
    if (u.org != org) return PermissionDenied("this identity belongs to another organisation");
    return u;
  }
  if (email.empty()) return Unauthenticated("the provider gave no email to match or create the user with");
  if (require_verified && !outside.verified)
    return Unauthenticated("the provider did not say the email address is verified");
  GOVERN_ASSIGN_OR_RETURN(std::optional<User> by_email, FindUserByEmail(c, org, email));
  User user;
  if (by_email) {
    user = std::move(*by_email);  // the organisation's provider vouches for this address
  } else {
    GOVERN_ASSIGN_OR_RETURN(user, CreateUser(c, org, email, "", ""));
  }
  GOVERN_RETURN_IF_ERROR(
      c.Exec("INSERT INTO auth_sso_links (identity, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
             db::Params(identity, user.user_id))
          .status());
  return user;
}

}  // namespace govern::auth_service
