// The OAuth 2.1 / OIDC provider's grants, introspection and revocation.
#include "services/auth/grants.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "crypto/encoding.h"
#include "crypto/sha256.h"
#include "db/connection.h"
#include "net/http.h"

namespace govern::auth_service {
namespace {

using json = nlohmann::json;

constexpr std::string_view kExchangeGrant = "urn:ietf:params:oauth:grant-type:token-exchange";
constexpr std::string_view kAccessTokenType = "urn:ietf:params:oauth:token-type:access_token";

std::vector<std::string> SplitScope(std::string_view s) {
  std::vector<std::string> out;
  std::istringstream in{std::string(s)};
  std::string w;
  while (in >> w) {
    if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
  }
  return out;
}

std::string JoinScope(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += ' ';
    out += s;
  }
  return out;
}

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

Reply InvalidGrant(std::string_view why) { return OAuthError(400, "invalid_grant", why); }
Reply InvalidRequest(std::string_view why) { return OAuthError(400, "invalid_request", why); }
Reply Unavailable503() {
  return OAuthError(503, "temporarily_unavailable", "the token store is unavailable; retry");
}

}  // namespace

Reply OAuthError(int status, std::string_view error, std::string_view description) {
  json j = {{"error", error}};
  if (!description.empty()) j["error_description"] = description;
  Reply r;
  r.status = status;
  r.body = j.dump();
  r.basic_challenge = error == "invalid_client" && status == 401;
  return r;
}

std::optional<ClientAuth> ReadClientAuth(const Form& form, std::optional<std::string_view> authorization,
                                         Reply* error) {
  ClientAuth auth;
  bool basic = false;
  if (authorization && authorization->size() >= 6 &&
      net::EqualsIgnoreCase(authorization->substr(0, 6), "Basic ")) {
    std::string_view b64 = authorization->substr(6);
    while (!b64.empty() && b64.front() == ' ') b64.remove_prefix(1);
    auto decoded = crypto::Base64Decode(b64);
    std::string_view text = decoded.ok() ? crypto::AsString(*decoded) : std::string_view();
    size_t colon = text.find(':');
    if (!decoded.ok() || colon == std::string_view::npos) {
      *error = OAuthError(401, "invalid_client", "malformed Basic credentials");
      return std::nullopt;
    }
    auth.client_id = net::PercentDecode(text.substr(0, colon), true);
    auth.secret = net::PercentDecode(text.substr(colon + 1), true);
    basic = true;
  }
  auto form_id = form.Get("client_id");
  auto form_secret = form.Get("client_secret");
  if (basic) {
    if (form_secret) {
      *error = InvalidRequest("client credentials sent both in the Authorization header and the body");
      return std::nullopt;
    }
    if (form_id && *form_id != auth.client_id) {
      *error = InvalidRequest("client_id in the body differs from the Authorization header");
      return std::nullopt;
    }
  } else {
    if (!form_id) {
      *error = OAuthError(401, "invalid_client", "client authentication is required");
      return std::nullopt;
    }
    auth.client_id = *form_id;
    auth.secret = form_secret;
  }
  return auth;
}

bool ValidCodeVerifier(std::string_view v) {
  if (v.size() < 43 || v.size() > 128) return false;
  for (char c : v) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '.' || c == '_' || c == '~';
    if (!ok) return false;
  }
  return true;
}

std::string S256(std::string_view verifier) {
  auto d = crypto::Sha256(verifier);
  return d.ok() ? crypto::Base64UrlEncode(*d) : std::string();
}

Provider::Provider(ProviderOptions options, const tokens::Issuer& issuer, const tokens::Checker& checker,
                   const Clock& clock, const tokens::Issuer* external)
    : options_(std::move(options)), issuer_(issuer), external_(external), checker_(checker), clock_(clock) {}

const tokens::Issuer& Provider::AccessIssuerFor(std::string_view audience,
                                                const std::vector<std::string>& scope) const {
  if (external_ == nullptr) return issuer_;
  if (audience != options_.default_audience) return *external_;
  return std::find(scope.begin(), scope.end(), "auth:admin") != scope.end() ? *external_ : issuer_;
}

int64_t Provider::Now() const { return clock_.UnixMicros() / 1'000'000; }

std::optional<Client> Provider::Authenticate(db::Connection& c, const ClientAuth& auth, Reply* error) const {
  auto found = FindClient(c, auth.client_id);
  if (!found.ok()) {
    *error = Unavailable503();
    return std::nullopt;
  }
  const std::optional<Client>& client = *found;
  bool ok = client && !client->disabled;
  if (ok && client->confidential) ok = auth.secret && ClientSecretMatches(*client, *auth.secret);
  if (ok && !client->confidential) ok = !auth.secret;  // a public client has no secret to send
  if (!ok) {
    *error = OAuthError(401, "invalid_client", "client authentication failed");
    return std::nullopt;
  }
  return client;
}

Result<tokens::ClaimsPtr> Provider::CheckAny(std::string_view token) const {
  // The audience is checked by the caller's policy; the Checker needs one, so take the token's own
  // after the checker has verified everything else.
  GOVERN_ASSIGN_OR_RETURN(tokens::ParsedJws parsed, tokens::ParseCompact(token));
  GOVERN_ASSIGN_OR_RETURN(tokens::Claims unverified, tokens::ClaimsFromJson(parsed.payload));
  if (unverified.aud.empty()) return Unauthenticated("malformed: no audience");
  return checker_.Check(token, unverified.aud.front());
}

Reply Provider::Token(db::Connection& c, std::string_view body,
                      std::optional<std::string_view> authorization) const {
  auto form = Form::Parse(body);
  if (!form.ok()) return InvalidRequest(form.status().message());
  auto grant = form->Get("grant_type");
  if (!grant) return InvalidRequest("grant_type is missing");
  if (*grant != "authorization_code" && *grant != "client_credentials" && *grant != "refresh_token" &&
      *grant != kExchangeGrant) {
    return OAuthError(400, "unsupported_grant_type",
                      "supported: authorization_code, client_credentials, "
                      "refresh_token, token-exchange");
  }
  Reply error;
  auto auth = ReadClientAuth(*form, authorization, &error);
  if (!auth) return error;
  auto client = Authenticate(c, *auth, &error);
  if (!client) return error;
  if (*grant == "authorization_code") return AuthorizationCode(c, *client, *form);
  if (*grant == "client_credentials") return ClientCredentials(*client, *form);
  if (*grant == "refresh_token") return Refresh(c, *client, *form);
  return Exchange(c, *client, *form);
}

Result<std::string> Provider::NewCode(db::Connection& c, const CodeGrant& g) const {
  GOVERN_ASSIGN_OR_RETURN(std::string code, NewSecret("gvc_"));
  GOVERN_RETURN_IF_ERROR(
      c.Exec("INSERT INTO auth_codes (code_hash, client_id, user_id, redirect_uri, scope, nonce, "
             "code_challenge, "
             "auth_time, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
             db::Params(HashHex(code), g.client_id, g.user_id, g.redirect_uri, g.scope, g.nonce,
                        g.code_challenge, g.auth_time, Now() + options_.code_lifetime.count()))
          .status());
  return code;
}

Reply Provider::AuthorizationCode(db::Connection& c, const Client& client, const Form& form) const {
  auto code = form.Get("code");
  auto redirect = form.Get("redirect_uri");
  auto verifier = form.Get("code_verifier");
  if (!code) return InvalidRequest("code is missing");
  if (!redirect) return InvalidRequest("redirect_uri is missing");
  if (!verifier) return InvalidRequest("code_verifier is missing (PKCE is required)");
  if (!ValidCodeVerifier(*verifier))
    return InvalidRequest("code_verifier must be 43-128 unreserved characters");
  // Used at most once: the row is marked in the same statement that reads it.
  auto rows = c.Exec(
      "UPDATE auth_codes SET used = true WHERE code_hash = $1 AND NOT used "
      "RETURNING client_id, user_id, redirect_uri, scope, nonce, code_challenge, auth_time, expires_at",
      db::Params(HashHex(*code)));
  if (!rows.ok()) return Unavailable503();
  if (rows->empty()) return InvalidGrant("the authorization code is invalid, expired or already used");
  if (rows->Text(0, 0) != client.client_id) return InvalidGrant("the code was issued to another client");
  if (rows->Text(0, 2) != *redirect)
    return InvalidGrant("redirect_uri differs from the authorization request");
  auto expires = rows->Int64(0, 7);
  if (!expires.ok() || *expires < Now()) return InvalidGrant("the authorization code expired");
  if (!crypto::ConstantTimeEquals(S256(*verifier), rows->Text(0, 5)))
    return InvalidGrant("code_verifier does not match the code_challenge");
  auto user = GetUser(c, rows->Text(0, 1));
  if (!user.ok() || user->disabled) return InvalidGrant("the user is disabled or gone");
  auto auth_time = rows->Int64(0, 6);
  return IssueForUser(c, client, *user, std::string(rows->Text(0, 3)), std::string(rows->Text(0, 4)),
                      auth_time.ok() ? *auth_time : 0, "");
}

Reply Provider::IssueForUser(db::Connection& c, const Client& client, const User& user,
                             const std::string& scope, const std::string& nonce, int64_t auth_time,
                             const std::string& family) const {
  tokens::Claims claims;
  claims.sub = user.subject;
  claims.aud = {options_.default_audience};
  claims.org = user.org;
  claims.scope = SplitScope(scope);
  claims.client_id = client.client_id;
  claims.sid = family;
  auto pair = SessionIssuer().IssuePair(claims, options_.access_lifetime);
  if (!pair.ok()) return OAuthError(500, "server_error", "could not sign the token");
  int64_t now = Now();
  Status stored = c.Transact([&](db::Connection& tx) -> Status {
    if (family.empty()) {
      GOVERN_RETURN_IF_ERROR(
          tx.Exec("INSERT INTO auth_refresh_families (family, client_id, org, subject, scope, audience, "
                  "expires_at) "
                  "VALUES ($1, $2, $3, $4, $5, $6, $7)",
                  db::Params(pair->refresh.family, client.client_id, user.org, user.user_id, scope,
                             options_.default_audience, now + options_.refresh_lifetime.count()))
              .status());
    }
    return tx
        .Exec("INSERT INTO auth_refresh_tokens (token_hash, family, issued_at) VALUES ($1, $2, $3)",
              db::Params(pair->refresh.hash, pair->refresh.family, now))
        .status();
  });
  if (!stored.ok()) return Unavailable503();
  json out = {{"access_token", pair->access},
              {"token_type", "Bearer"},
              {"expires_in", options_.access_lifetime.count()},
              {"refresh_token", pair->refresh.token}};
  if (!scope.empty()) out["scope"] = scope;
  if (Contains(claims.scope, "openid")) {
    tokens::Claims id;
    id.sub = user.subject;
    id.aud = {client.client_id};
    id.nonce = nonce;
    id.auth_time = auth_time;
    id.org = user.org;
    auto id_token = issuer_.IssueId(id, options_.id_lifetime, pair->access);
    if (!id_token.ok()) return OAuthError(500, "server_error", "could not sign the ID token");
    out["id_token"] = *id_token;
  }
  return Reply{200, out.dump()};
}

Reply Provider::ClientCredentials(const Client& client, const Form& form) const {
  if (client.kind != ClientKind::kAgent || !client.confidential)
    return OAuthError(400, "unauthorized_client", "client_credentials is for agent clients");
  std::vector<std::string> scope = client.scopes;
  if (auto asked = form.Get("scope")) {
    scope = SplitScope(*asked);
    for (const auto& s : scope) {
      if (!client.AllowsScope(s))
        return OAuthError(400, "invalid_scope", "scope " + s + " is not allowed for this client");
    }
  }
  tokens::Claims claims;
  claims.sub = client.client_id;
  claims.aud = {form.GetOr("audience", options_.default_audience)};
  claims.org = client.org;
  claims.scope = scope;
  claims.client_id = client.client_id;
  auto token =
      AccessIssuerFor(claims.aud.front(), claims.scope).IssueAccess(claims, options_.access_lifetime);
  if (!token.ok()) return OAuthError(500, "server_error", "could not sign the token");
  json out = {
      {"access_token", *token}, {"token_type", "Bearer"}, {"expires_in", options_.access_lifetime.count()}};
  if (!scope.empty()) out["scope"] = JoinScope(scope);
  return Reply{200, out.dump()};
}

Reply Provider::Refresh(db::Connection& c, const Client& client, const Form& form) const {
  auto presented = form.Get("refresh_token");
  if (!presented) return InvalidRequest("refresh_token is missing");
  auto hash = tokens::HashRefreshToken(*presented);
  if (!hash.ok()) return InvalidGrant("the refresh token is invalid");
  int64_t now = Now();
  // What happened, decided inside the transaction (which may retry).
  enum class Outcome {
    kRotate,
    kUnknown,
    kRevoked,
    kReused,
    kOtherClient,
    kExpired
  } outcome = Outcome::kUnknown;
  std::string family, subject, scope;
  Status s = c.Transact([&](db::Connection& tx) -> Status {
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows rows,
        tx.Exec("SELECT t.used, f.family, f.client_id, f.subject, f.scope, f.revoked, f.expires_at "
                "FROM auth_refresh_tokens t JOIN auth_refresh_families f USING (family) "
                "WHERE t.token_hash = $1 FOR UPDATE",
                db::Params(*hash)));
    if (rows.empty()) {
      outcome = Outcome::kUnknown;
      return OkStatus();
    }
    family = rows.Text(0, 1);
    subject = rows.Text(0, 3);
    scope = rows.Text(0, 4);
    GOVERN_ASSIGN_OR_RETURN(int64_t expires_at, rows.Int64(0, 6));
    if (rows.Text(0, 2) != client.client_id) {
      outcome = Outcome::kOtherClient;
    } else if (rows.Text(0, 5) == "t") {
      outcome = Outcome::kRevoked;
    } else if (rows.Text(0, 0) == "t") {
      // Reuse of a rotated token (RFC 9700 section 4.14.2): the family is compromised; revoke it and
      // every access token carrying it as sid.
      outcome = Outcome::kReused;
      GOVERN_RETURN_IF_ERROR(
          tx.Exec("UPDATE auth_refresh_families SET revoked = true WHERE family = $1", db::Params(family))
              .status());
      GOVERN_RETURN_IF_ERROR(
          tx.Exec("INSERT INTO auth_revocations (kind, id, expires_at) VALUES ('sid', $1, $2) "
                  "ON CONFLICT (kind, id) DO NOTHING",
                  db::Params(family, now + options_.access_lifetime.count() + 60))
              .status());
    } else if (expires_at < now) {
      outcome = Outcome::kExpired;
    } else {
      outcome = Outcome::kRotate;
      GOVERN_RETURN_IF_ERROR(
          tx.Exec("UPDATE auth_refresh_tokens SET used = true WHERE token_hash = $1", db::Params(*hash))
              .status());
    }
    return OkStatus();
  });
  if (!s.ok()) return Unavailable503();
  switch (outcome) {
    case Outcome::kUnknown:
    case Outcome::kOtherClient:
      return InvalidGrant("the refresh token is invalid");
    case Outcome::kRevoked:
      return InvalidGrant("the refresh token was revoked");
    case Outcome::kReused: {
      Reply r = InvalidGrant("the refresh token was already used; its session is revoked");
      r.revoked = true;
      return r;
    }
    case Outcome::kExpired:
      return InvalidGrant("the refresh token expired");
    case Outcome::kRotate:
      break;
  }
  auto user = GetUser(c, subject);
  if (!user.ok() || user->disabled) return InvalidGrant("the user is disabled or gone");
  std::string granted = scope;
  if (auto asked = form.Get("scope")) {
    std::vector<std::string> had = SplitScope(scope);
    for (const auto& w : SplitScope(*asked)) {
      if (!Contains(had, w))
        return OAuthError(400, "invalid_scope", "scope " + w + " was not granted originally");
    }
    granted = JoinScope(SplitScope(*asked));
  }
  return IssueForUser(c, client, *user, granted, "", 0, family);
}

Reply Provider::Exchange(db::Connection& c, const Client& client, const Form& form) const {
  auto subject_token = form.Get("subject_token");
  auto subject_type = form.Get("subject_token_type");
  if (!subject_token || !subject_type)
    return InvalidRequest("subject_token and subject_token_type are required");
  if (*subject_type != kAccessTokenType) return InvalidRequest("subject_token_type must be an access token");
  auto subject = CheckAny(*subject_token);
  if (!subject.ok())
    return InvalidGrant("the subject_token is not valid: " +
                        std::string(tokens::Describe(tokens::RejectOf(subject.status()))));
  const tokens::Claims& sub = **subject;
  std::vector<tokens::Actor> actors = sub.actors;
  auto actor_token = form.Get("actor_token");
  if (actor_token) {
    if (form.GetOr("actor_token_type") != kAccessTokenType)
      return InvalidRequest("actor_token_type must be an access token");
    auto actor = CheckAny(*actor_token);
    if (!actor.ok())
      return InvalidGrant("the actor_token is not valid: " +
                          std::string(tokens::Describe(tokens::RejectOf(actor.status()))));
    // The acting party is the client asking: it may not present someone else's token as itself.
    if ((*actor)->client_id != client.client_id)
      return InvalidGrant("the actor_token was not issued to this client");
    actors.insert(actors.begin(), tokens::Actor{(*actor)->sub, (*actor)->client_id});
  } else {
    actors.insert(actors.begin(), tokens::Actor{client.client_id, client.client_id});
  }
  if (actors.size() > 8) return InvalidGrant("the delegation chain is too long");
  if (sub.org != client.org) return InvalidGrant("the subject belongs to another organisation");
  // Scope: what was asked (or everything the subject had), within the subject's and the client's.
  std::vector<std::string> scope = sub.scope;
  if (auto asked = form.Get("scope")) scope = SplitScope(*asked);
  for (const auto& s : scope) {
    if (!sub.HasScope(s))
      return OAuthError(400, "invalid_scope", "the subject token does not carry scope " + s);
    if (!client.AllowsScope(s))
      return OAuthError(400, "invalid_scope", "scope " + s + " is not allowed for this client");
  }
  tokens::Claims claims;
  claims.sub = sub.sub;
  claims.aud = {form.GetOr("audience", options_.default_audience)};
  claims.org = sub.org;
  claims.scope = scope;
  claims.actors = std::move(actors);
  claims.client_id = client.client_id;
  claims.sid = sub.sid;  // revoking the user's session also ends what was delegated from it
  auto token =
      AccessIssuerFor(claims.aud.front(), claims.scope).IssueAccess(claims, options_.access_lifetime);
  if (!token.ok()) return OAuthError(500, "server_error", "could not sign the token");
  (void)c;
  json out = {{"access_token", *token},
              {"issued_token_type", kAccessTokenType},
              {"token_type", "Bearer"},
              {"expires_in", options_.access_lifetime.count()}};
  if (!scope.empty()) out["scope"] = JoinScope(scope);
  return Reply{200, out.dump()};
}

Reply Provider::Introspect(db::Connection& c, std::string_view body,
                           std::optional<std::string_view> authorization) const {
  auto form = Form::Parse(body);
  if (!form.ok()) return InvalidRequest(form.status().message());
  Reply error;
  auto auth = ReadClientAuth(*form, authorization, &error);
  if (!auth) return error;
  auto client = Authenticate(c, *auth, &error);
  if (!client) return error;
  if (!client->confidential)
    return OAuthError(401, "invalid_client", "introspection needs a confidential client");
  auto token = form->Get("token");
  if (!token) return InvalidRequest("token is missing");
  json inactive = {{"active", false}};
  if (token->starts_with("gvr_")) {
    auto hash = tokens::HashRefreshToken(*token);
    if (!hash.ok()) return Reply{200, inactive.dump()};
    auto rows = c.Exec(
        "SELECT f.client_id, f.subject, f.scope, f.org, f.expires_at, f.family FROM auth_refresh_tokens t "
        "JOIN "
        "auth_refresh_families f USING (family) WHERE t.token_hash = $1 AND NOT t.used AND NOT f.revoked",
        db::Params(*hash));
    if (!rows.ok()) return Unavailable503();
    if (rows->empty()) return Reply{200, inactive.dump()};
    auto exp = rows->Int64(0, 4);
    if (!exp.ok() || *exp < Now()) return Reply{200, inactive.dump()};
    if (rows->Text(0, 3) != client->org) return Reply{200, inactive.dump()};
    auto user = GetUser(c, rows->Text(0, 1));
    json out = {{"active", true},
                {"token_type", "refresh_token"},
                {"client_id", rows->Text(0, 0)},
                {"sub", user.ok() ? user->subject : std::string(rows->Text(0, 1))},
                {"scope", rows->Text(0, 2)},
                {"org", rows->Text(0, 3)},
                {"exp", *exp},
                {"sid", rows->Text(0, 5)},
                {"iss", options_.issuer}};
    return Reply{200, out.dump()};
  }
  auto claims = CheckAny(*token);
  // A client learns about tokens of its own organisation only.
  if (!claims.ok() || (*claims)->org != client->org) return Reply{200, inactive.dump()};
  const tokens::Claims& cl = **claims;
  json out = json::parse(tokens::ClaimsToJson(cl), nullptr, false);
  if (!out.is_object()) out = json::object();
  out["active"] = true;
  out["token_type"] = "Bearer";
  return Reply{200, out.dump()};
}

Reply Provider::Revoke(db::Connection& c, std::string_view body,
                       std::optional<std::string_view> authorization) const {
  auto form = Form::Parse(body);
  if (!form.ok()) return InvalidRequest(form.status().message());
  Reply error;
  auto auth = ReadClientAuth(*form, authorization, &error);
  if (!auth) return error;
  auto client = Authenticate(c, *auth, &error);
  if (!client) return error;
  auto token = form->Get("token");
  if (!token) return InvalidRequest("token is missing");
  int64_t now = Now();
  if (token->starts_with("gvr_")) {
    auto hash = tokens::HashRefreshToken(*token);
    if (!hash.ok()) return Reply{200, "{}"};
    Status s = c.Transact([&](db::Connection& tx) -> Status {
      GOVERN_ASSIGN_OR_RETURN(
          db::Rows rows,
          tx.Exec("UPDATE auth_refresh_families f SET revoked = true FROM auth_refresh_tokens t "
                  "WHERE t.token_hash = $1 AND t.family = f.family AND f.client_id = $2 RETURNING f.family",
                  db::Params(*hash, client->client_id)));
      if (rows.empty()) return OkStatus();
      return tx
          .Exec(
              "INSERT INTO auth_revocations (kind, id, expires_at) VALUES ('sid', $1, $2) ON CONFLICT DO "
              "NOTHING",
              db::Params(rows.Text(0, 0), now + options_.access_lifetime.count() + 60))
          .status();
    });
    if (!s.ok()) return Unavailable503();
    return Reply{.status = 200, .body = "{}", .revoked = true};
  }
  auto claims = CheckAny(*token);
  // RFC 7009 section 2.2: an invalid token is not an error; a token of another client is not revoked.
  if (!claims.ok() || (*claims)->client_id != client->client_id || (*claims)->jti.empty())
    return Reply{200, "{}"};
  auto rows = c.Exec(
      "INSERT INTO auth_revocations (kind, id, expires_at) VALUES ('jti', $1, $2) ON CONFLICT DO NOTHING",
      db::Params((*claims)->jti, (*claims)->exp + 60));
  if (!rows.ok()) return Unavailable503();
  return Reply{.status = 200, .body = "{}", .revoked = true};
}

Result<std::string> Provider::RevocationListJson(db::Connection& c) const {
  // One statement, so one snapshot: the version (schema migration 8) and the entries agree. Always one
  // row at least (kind NULL when nothing is revoked).
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      c.ExecPrepared("SELECT r.kind, r.id, r.expires_at, v.v FROM auth_revocation_version v "
                     "LEFT JOIN auth_revocations r ON r.expires_at >= $1 ORDER BY r.seq",
                     db::Params(Now())));
  tokens::RevocationList::Entries jti, sid;
  uint64_t version = 0;
  for (int i = 0; i < rows.size(); ++i) {
    GOVERN_ASSIGN_OR_RETURN(int64_t v, rows.Int64(i, 3));
    version = static_cast<uint64_t>(v);
    if (rows.IsNull(i, 0)) continue;
    GOVERN_ASSIGN_OR_RETURN(int64_t exp, rows.Int64(i, 2));
    (rows.Text(i, 0) == "jti" ? jti : sid)[std::string(rows.Text(i, 1))] = exp;
  }
  return tokens::RevocationList(version, std::move(jti), std::move(sid)).ToJson();
}

Reply Provider::UserInfo(db::Connection& c, std::string_view bearer) const {
  auto claims = CheckAny(bearer);
  if (!claims.ok() || !(*claims)->HasScope("openid")) {
    Reply r = OAuthError(401, "invalid_token", "the access token is invalid or lacks the openid scope");
    return r;
  }
  auto user = FindUserBySubject(c, (*claims)->sub);
  if (!user.ok()) return Unavailable503();
  if (!*user) return OAuthError(401, "invalid_token", "no such user");
  json out = {{"sub", (*user)->subject}, {"org", (*user)->org}};
  if ((*claims)->HasScope("email")) {
    out["email"] = (*user)->email;
    out["email_verified"] = false;
  }
  if ((*claims)->HasScope("profile")) out["name"] = (*user)->display_name;
  auto groups = GroupsOf(c, (*user)->user_id);
  if (groups.ok() && (*claims)->HasScope("groups")) out["groups"] = *groups;
  return Reply{200, out.dump()};
}

}  // namespace govern::auth_service
