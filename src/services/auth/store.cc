// The directory: organisations, users, groups, clients and admin tokens in PostgreSQL.
#include "services/auth/store.h"

#include <array>
#include <nlohmann/json.hpp>

#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "crypto/random.h"
#include "crypto/sha256.h"
#include "db/connection.h"

namespace govern::auth_service {
namespace {

constexpr std::string_view kBase32 = "abcdefghijklmnopqrstuvwxyz234567";

Result<std::string> NewId(std::string_view prefix) {
  std::array<uint8_t, 20> random{};
  GOVERN_RETURN_IF_ERROR(crypto::RandomBytes(random));
  std::string id(prefix);
  for (uint8_t b : random) id.push_back(kBase32[b & 31]);
  return id;
}

std::string JsonList(const std::vector<std::string>& v) { return nlohmann::json(v).dump(); }

Result<std::vector<std::string>> ParseList(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array()) return Internal("malformed array column");
  std::vector<std::string> out;
  for (const auto& e : j) {
    if (!e.is_string()) return Internal("malformed array column");
    out.push_back(e.get<std::string>());
  }
  return out;
}

bool ScopeTokenOk(std::string_view s) {
  // RFC 6749 section 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
  if (s.empty() || s.size() > 128) return false;
  for (char ch : s) {
    unsigned char u = static_cast<unsigned char>(ch);
    if (u < 0x21 || u > 0x7e || u == 0x22 || u == 0x5c) return false;
  }
  return true;
}

Status ValidateRedirect(std::string_view uri) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument("redirect URI '" + std::string(uri.substr(0, 200)) + "' " + std::string(why));
  };
  if (uri.size() > 2000) return bad("is longer than 2000 bytes");
  if (uri.find('#') != std::string_view::npos) return bad("has a fragment (RFC 6749 section 3.1.2)");
  for (char ch : uri) {
    if (static_cast<unsigned char>(ch) <= 0x20 || ch == 0x7f) return bad("has a space or control character");
  }
  if (uri.starts_with("https://") && uri.size() > 8) return OkStatus();
  for (std::string_view host : {"http://127.0.0.1", "http://[::1]", "http://localhost"}) {
    if (uri.starts_with(host) &&
        (uri.size() == host.size() || uri[host.size()] == ':' || uri[host.size()] == '/'))
      return OkStatus();
  }
  return bad("must be https, or http on a loopback host (RFC 8252 section 7.3)");
}

User UserFrom(const db::Rows& r, int i) {
  User u;
  u.user_id = r.Text(i, 0);
  u.org = r.Text(i, 1);
  u.email = r.Text(i, 2);
  u.subject = r.Text(i, 3);
  u.display_name = r.Text(i, 4);
  u.password_hash = r.Text(i, 5);
  u.disabled = r.Text(i, 6) == "t";
  return u;
}

constexpr const char* kUserColumns =
    "SELECT user_id, org, email, subject, display_name, COALESCE(password_hash, ''), disabled FROM "
    "auth_users ";

Result<Client> ClientFrom(const db::Rows& r, int i) {
  Client c;
  c.client_id = r.Text(i, 0);
  c.org = r.Text(i, 1);
  c.name = r.Text(i, 2);
  c.kind = r.Text(i, 3) == "agent" ? ClientKind::kAgent : ClientKind::kApp;
  c.confidential = r.Text(i, 4) == "t";
  c.secret_hash = r.Text(i, 5);
  GOVERN_ASSIGN_OR_RETURN(c.scopes, ParseList(r.Text(i, 6)));
  GOVERN_ASSIGN_OR_RETURN(c.redirect_uris, ParseList(r.Text(i, 7)));
  c.disabled = r.Text(i, 8) == "t";
  return c;
}

constexpr const char* kClientColumns =
    "SELECT client_id, org, name, kind, confidential, COALESCE(secret_hash, ''), "
    "array_to_json(scopes)::text, "
    "array_to_json(redirect_uris)::text, disabled FROM auth_clients ";

Status Affected(const Result<db::Rows>& rows, std::string what) {
  if (!rows.ok()) return rows.status();
  if (rows->affected() == 0) return NotFound(std::move(what));
  return OkStatus();
}

}  // namespace

std::string HashHex(std::string_view text) {
  auto d = crypto::Sha256(text);
  return d.ok() ? crypto::HexEncode(*d) : std::string();
}

Result<std::string> NewSecret(std::string_view prefix) {
  std::array<uint8_t, 32> random{};
  GOVERN_RETURN_IF_ERROR(crypto::RandomBytes(random));
  return std::string(prefix) + crypto::Base64UrlEncode(random);
}

Status ValidateOrg(std::string_view org) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument("organisation '" + std::string(org.substr(0, 80)) + "' " + std::string(why) +
                           " (use 1-63 of a-z, 0-9, '_' and '-', starting with a letter or digit)");
  };
  if (org.empty()) return InvalidArgument("organisation is empty");
  if (org.size() > 63) return bad("is longer than 63 characters");
  for (size_t i = 0; i < org.size(); ++i) {
    char c = org[i];
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) continue;
    if (i > 0 && (c == '_' || c == '-')) continue;
    return bad("has a character it may not have at position " + std::to_string(i + 1));
  }
  return OkStatus();
}

Status ValidateEmail(std::string_view email) {
  if (email.empty() || email.size() > 254) return InvalidArgument("email must be 1-254 bytes");
  size_t at = email.find('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == email.size() ||
      email.find('@', at + 1) != std::string_view::npos) {
    return InvalidArgument("email must have one '@' with something on both sides");
  }
  for (char ch : email) {
    if (static_cast<unsigned char>(ch) <= 0x20 || ch == 0x7f)
      return InvalidArgument("email has a space or control character");
  }
  return OkStatus();
}

Status CreateOrg(db::Connection& c, std::string_view org, std::string_view name) {
  GOVERN_RETURN_IF_ERROR(ValidateOrg(org));
  if (name.size() > 200) return InvalidArgument("name is longer than 200 bytes");
  auto rows = c.Exec("INSERT INTO auth_orgs (org, name) VALUES ($1, $2)", db::Params(org, name));
  if (!rows.ok() && rows.status().code() == Code::kAlreadyExists)
    return AlreadyExists("organisation '" + std::string(org) + "' exists");
  return rows.status();
}

Result<std::vector<Org>> ListOrgs(db::Connection& c) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c.Exec("SELECT org, name FROM auth_orgs ORDER BY org"));
  std::vector<Org> out;
  for (int i = 0; i < rows.size(); ++i)
    out.push_back({std::string(rows.Text(i, 0)), std::string(rows.Text(i, 1))});
  return out;
}

Result<bool> OrgExists(db::Connection& c, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          c.ExecPrepared("SELECT 1 FROM auth_orgs WHERE org = $1", db::Params(org)));
  return !rows.empty();
}

Result<User> CreateUser(db::Connection& c, std::string_view org, std::string_view email,
                        std::string_view display_name, std::string_view password_hash,
                        std::string_view subject) {
  GOVERN_RETURN_IF_ERROR(ValidateOrg(org));
  GOVERN_RETURN_IF_ERROR(ValidateEmail(email));
  if (display_name.size() > 200) return InvalidArgument("display name is longer than 200 bytes");
  GOVERN_ASSIGN_OR_RETURN(bool exists, OrgExists(c, org));
  if (!exists) return NotFound("no organisation '" + std::string(org) + "'");
  User u;
  GOVERN_ASSIGN_OR_RETURN(u.user_id, NewId("usr_"));
  u.org = org;
  u.email = email;
  u.subject = subject.empty() ? u.user_id : std::string(subject);
  u.display_name = display_name;
  u.password_hash = password_hash;
  std::optional<std::string> hash;
  if (!password_hash.empty()) hash = std::string(password_hash);
  auto rows = c.Exec(
      "INSERT INTO auth_users (user_id, org, email, subject, display_name, password_hash) "
      "VALUES ($1, $2, $3, $4, $5, $6)",
      db::Params(u.user_id, u.org, u.email, u.subject, u.display_name, hash));
  if (!rows.ok() && rows.status().code() == Code::kAlreadyExists)
    return AlreadyExists("a user with this email or subject exists in '" + std::string(org) + "'");
  if (!rows.ok()) return rows.status();
  return u;
}

Result<std::optional<User>> FindUserByEmail(db::Connection& c, std::string_view org, std::string_view email) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows, c.ExecPrepared(std::string(kUserColumns) + "WHERE org = $1 AND lower(email) = lower($2)",
                                    db::Params(org, email)));
  if (rows.empty()) return std::optional<User>();
  return std::optional<User>(UserFrom(rows, 0));
}

Result<std::optional<User>> FindUserBySubject(db::Connection& c, std::string_view subject) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows, c.ExecPrepared(std::string(kUserColumns) + "WHERE subject = $1", db::Params(subject)));
  if (rows.empty()) return std::optional<User>();
  return std::optional<User>(UserFrom(rows, 0));
}

Result<User> GetUser(db::Connection& c, std::string_view user_id) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows, c.ExecPrepared(std::string(kUserColumns) + "WHERE user_id = $1", db::Params(user_id)));
  if (rows.empty()) return NotFound("no user '" + std::string(user_id.substr(0, 64)) + "'");
  return UserFrom(rows, 0);
}

Result<std::vector<User>> ListUsers(db::Connection& c, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows, c.Exec(std::string(kUserColumns) + "WHERE org = $1 ORDER BY email", db::Params(org)));
  std::vector<User> out;
  for (int i = 0; i < rows.size(); ++i) out.push_back(UserFrom(rows, i));
  return out;
}

Status SetPasswordHash(db::Connection& c, std::string_view user_id, std::string_view hash) {
  return Affected(
      c.Exec("UPDATE auth_users SET password_hash = $2 WHERE user_id = $1", db::Params(user_id, hash)),
      "no user '" + std::string(user_id.substr(0, 64)) + "'");
}

Status SetUserDisabled(db::Connection& c, std::string_view user_id, bool disabled) {
  return Affected(
      c.Exec("UPDATE auth_users SET disabled = $2 WHERE user_id = $1", db::Params(user_id, disabled)),
      "no user '" + std::string(user_id.substr(0, 64)) + "'");
}

Status CreateGroup(db::Connection& c, std::string_view org, std::string_view name) {
  GOVERN_RETURN_IF_ERROR(ValidateOrg(org));
  if (name.empty() || name.size() > 200) return InvalidArgument("group name must be 1-200 bytes");
  auto rows = c.Exec("INSERT INTO auth_groups (org, name) VALUES ($1, $2)", db::Params(org, name));
  if (!rows.ok() && rows.status().code() == Code::kAlreadyExists)
    return AlreadyExists("group '" + std::string(name) + "' exists");
  if (!rows.ok() && rows.status().code() == Code::kFailedPrecondition)
    return NotFound("no organisation '" + std::string(org) + "'");
  return rows.status();
}

Status AddMember(db::Connection& c, std::string_view org, std::string_view group, std::string_view user_id) {
  auto rows = c.Exec(
      "INSERT INTO auth_memberships (org, name, user_id) SELECT $1, $2, u.user_id FROM auth_users u "
      "WHERE u.user_id = $3 AND u.org = $1 ON CONFLICT DO NOTHING",
      db::Params(org, group, user_id));
  if (!rows.ok() && rows.status().code() == Code::kFailedPrecondition) return NotFound("no such group");
  if (!rows.ok()) return rows.status();
  if (rows->affected() == 0) {
    GOVERN_ASSIGN_OR_RETURN(db::Rows m,
                            c.Exec("SELECT 1 FROM auth_memberships WHERE org=$1 AND name=$2 AND user_id=$3",
                                   db::Params(org, group, user_id)));
    if (m.empty())
      return NotFound("no user '" + std::string(user_id.substr(0, 64)) + "' in this organisation");
  }
  return OkStatus();
}

Status RemoveMember(db::Connection& c, std::string_view org, std::string_view group,
                    std::string_view user_id) {
  return Affected(c.Exec("DELETE FROM auth_memberships WHERE org = $1 AND name = $2 AND user_id = $3",
                         db::Params(org, group, user_id)),
                  "no such membership");
}

Result<std::vector<std::string>> GroupsOf(db::Connection& c, std::string_view user_id) {
  // The user's groups and every group containing one of them (auth_subgroups), once each. UNION, not
  // UNION ALL, so the walk ends even if a cycle were ever written.
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      c.ExecPrepared(
          "WITH RECURSIVE g (org, name) AS (SELECT org, name FROM auth_memberships WHERE user_id = $1 "
          "UNION SELECT s.org, s.name FROM g JOIN auth_subgroups s ON s.org = g.org AND s.subgroup = "
          "g.name) SELECT name FROM g ORDER BY name",
          db::Params(user_id)));
  std::vector<std::string> out;
  for (int i = 0; i < rows.size(); ++i) out.emplace_back(rows.Text(i, 0));
  return out;
}

Result<std::vector<std::string>> ListGroups(db::Connection& c, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows, c.Exec("SELECT name FROM auth_groups WHERE org = $1 ORDER BY name", db::Params(org)));
  std::vector<std::string> out;
  for (int i = 0; i < rows.size(); ++i) out.emplace_back(rows.Text(i, 0));
  return out;
}

bool Client::AllowsScope(std::string_view s) const {
  for (const auto& x : scopes) {
    if (x == s) return true;
  }
  return false;
}

bool Client::HasRedirect(std::string_view uri) const {
  for (const auto& x : redirect_uris) {
    if (x == uri) return true;
  }
  return false;
}

Result<NewClient> CreateClient(db::Connection& c, std::string_view org, std::string_view name,
                               ClientKind kind, bool confidential, const std::vector<std::string>& scopes,
                               const std::vector<std::string>& redirect_uris) {
  GOVERN_RETURN_IF_ERROR(ValidateOrg(org));
  if (name.size() > 200) return InvalidArgument("name is longer than 200 bytes");
  if (kind == ClientKind::kAgent && !confidential)
    return InvalidArgument("an agent client is always confidential");
  if (kind == ClientKind::kApp && redirect_uris.empty())
    return InvalidArgument("an app client needs at least one redirect URI");
  if (scopes.size() > 100 || redirect_uris.size() > 20)
    return InvalidArgument("too many scopes or redirect URIs");
  for (const auto& s : scopes) {
    if (!ScopeTokenOk(s))
      return InvalidArgument("scope '" + s.substr(0, 80) + "' is not an RFC 6749 scope token");
  }
  for (const auto& u : redirect_uris) GOVERN_RETURN_IF_ERROR(ValidateRedirect(u));
  GOVERN_ASSIGN_OR_RETURN(bool exists, OrgExists(c, org));
  if (!exists) return NotFound("no organisation '" + std::string(org) + "'");
  NewClient out;
  Client& cl = out.client;
  GOVERN_ASSIGN_OR_RETURN(cl.client_id, NewId("cli_"));
  cl.org = org;
  cl.name = name;
  cl.kind = kind;
  cl.confidential = confidential;
  cl.scopes = scopes;
  cl.redirect_uris = redirect_uris;
  std::optional<std::string> hash;
  if (confidential) {
    GOVERN_ASSIGN_OR_RETURN(out.secret, NewSecret("gvs_"));
    cl.secret_hash = HashHex(out.secret);
    hash = cl.secret_hash;
  }
  GOVERN_RETURN_IF_ERROR(
      c.Exec("INSERT INTO auth_clients (client_id, org, name, kind, confidential, secret_hash, scopes, "
             "redirect_uris) "
             "VALUES ($1, $2, $3, $4, $5, $6, ARRAY(SELECT jsonb_array_elements_text($7::jsonb)), "
             "ARRAY(SELECT jsonb_array_elements_text($8::jsonb)))",
             db::Params(cl.client_id, org, name, kind == ClientKind::kAgent ? "agent" : "app", confidential,
                        hash, JsonList(scopes), JsonList(redirect_uris)))
          .status());
  return out;
}

Result<std::optional<Client>> FindClient(db::Connection& c, std::string_view client_id) {
  if (client_id.empty() || client_id.size() > 100) return std::optional<Client>();
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c.ExecPrepared(std::string(kClientColumns) + "WHERE client_id = $1",
                                                        db::Params(client_id)));
  if (rows.empty()) return std::optional<Client>();
  GOVERN_ASSIGN_OR_RETURN(Client cl, ClientFrom(rows, 0));
  return std::optional<Client>(std::move(cl));
}

Result<std::vector<Client>> ListClients(db::Connection& c, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      c.Exec(std::string(kClientColumns) + "WHERE org = $1 ORDER BY created_at", db::Params(org)));
  std::vector<Client> out;
  for (int i = 0; i < rows.size(); ++i) {
    GOVERN_ASSIGN_OR_RETURN(Client cl, ClientFrom(rows, i));
    out.push_back(std::move(cl));
  }
  return out;
}

Status SetClientDisabled(db::Connection& c, std::string_view client_id, bool disabled) {
  return Affected(
      c.Exec("UPDATE auth_clients SET disabled = $2 WHERE client_id = $1", db::Params(client_id, disabled)),
      "no client '" + std::string(client_id.substr(0, 64)) + "'");
}

bool ClientSecretMatches(const Client& client, std::string_view secret) {
  if (!client.confidential || client.secret_hash.empty()) return false;
  return crypto::ConstantTimeEquals(HashHex(secret), client.secret_hash);
}

Result<std::string> CreateAdminToken(db::Connection& c, std::string_view name) {
  if (name.size() > 200) return InvalidArgument("name is longer than 200 bytes");
  GOVERN_ASSIGN_OR_RETURN(std::string token, NewSecret("gva_"));
  GOVERN_RETURN_IF_ERROR(c.Exec("INSERT INTO auth_admin_tokens (token_hash, name) VALUES ($1, $2)",
                                db::Params(HashHex(token), name))
                             .status());
  return token;
}

Status CheckAdminToken(db::Connection& c, std::string_view token) {
  if (!token.starts_with("gva_") || token.size() > 100) return Unauthenticated("not an admin token");
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows, c.ExecPrepared("SELECT 1 FROM auth_admin_tokens WHERE token_hash = $1 AND NOT revoked",
                                    db::Params(HashHex(token))));
  if (rows.empty()) return Unauthenticated("invalid or revoked admin token");
  return OkStatus();
}

}  // namespace govern::auth_service
