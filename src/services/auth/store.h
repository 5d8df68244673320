// The auth service's directory in PostgreSQL: organisations, users, groups and memberships, OAuth
// clients (agents' service accounts and user-facing apps), and admin tokens.
//
// Free functions on a db::Connection (one thread at a time per connection, like the connection).
// Identifiers are made here: users "usr_<20 base32>", clients "cli_<20 base32>". Client secrets
// ("gvs_<43 base64url>", 256 random bits) and admin tokens ("gva_...") are shown once and stored as
// hex SHA-256: they are machine-made and high-entropy, so a slow hash would only cost each token
// request ~30 ms without making a guess any likelier (passwords, chosen by people, get Argon2id).
// Errors: kInvalidArgument for bad input (the message names the field), kAlreadyExists, kNotFound,
// kUnavailable when PostgreSQL failed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::db {
class Connection;
}  // namespace govern::db

namespace govern::auth_service {

// 1-63 of a-z, 0-9, '_' and '-', starting with a letter or digit.
Status ValidateOrg(std::string_view org);
// A plausible address: one '@', something on both sides, no spaces or control characters, <= 254 bytes.
Status ValidateEmail(std::string_view email);

struct Org {
  std::string org;
  std::string name;
};
Status CreateOrg(db::Connection& c, std::string_view org, std::string_view name);
Result<std::vector<Org>> ListOrgs(db::Connection& c);
Result<bool> OrgExists(db::Connection& c, std::string_view org);

struct User {
  std::string user_id;
  std::string org;
  std::string email;
  std::string subject;  // the OIDC "sub": user_id, or the outside provider's issuer|sub when linked
  std::string display_name;
  std::string password_hash;  // "" when the user has no password (passkey or single sign-on only)
  bool disabled = false;
};
// `password_hash` is a PHC string made by the caller (passwords.h), or "".
Result<User> CreateUser(db::Connection& c, std::string_view org, std::string_view email,
                        std::string_view display_name, std::string_view password_hash,
                        std::string_view subject = "");
// Case-insensitive on the email. nullopt when there is none.
Result<std::optional<User>> FindUserByEmail(db::Connection& c, std::string_view org, std::string_view email);
Result<std::optional<User>> FindUserBySubject(db::Connection& c, std::string_view subject);
Result<User> GetUser(db::Connection& c, std::string_view user_id);
Result<std::vector<User>> ListUsers(db::Connection& c, std::string_view org);
Status SetPasswordHash(db::Connection& c, std::string_view user_id, std::string_view hash);
Status SetUserDisabled(db::Connection& c, std::string_view user_id, bool disabled);

Status CreateGroup(db::Connection& c, std::string_view org, std::string_view name);
Status AddMember(db::Connection& c, std::string_view org, std::string_view group, std::string_view user_id);
Status RemoveMember(db::Connection& c, std::string_view org, std::string_view group,
                    std::string_view user_id);
// The names of the user's groups, direct and reached through groups inside groups (auth_subgroups,
// written by SCIM), sorted, each once: the `groups` claim.
Result<std::vector<std::string>> GroupsOf(db::Connection& c, std::string_view user_id);
Result<std::vector<std::string>> ListGroups(db::Connection& c, std::string_view org);

enum class ClientKind { kAgent, kApp };
struct Client {
  std::string client_id;
  std::string org;
  std::string name;
  ClientKind kind = ClientKind::kAgent;
  bool confidential = true;
  std::string secret_hash;  // hex SHA-256, "" for public clients
  std::vector<std::string> scopes;
  std::vector<std::string> redirect_uris;
  bool disabled = false;

  bool AllowsScope(std::string_view s) const;
  bool HasRedirect(std::string_view uri) const;  // exact match (RFC 9700 section 2.1)
};
struct NewClient {
  Client client;
  std::string secret;  // shown once; "" for public clients
};
// Agents are always confidential. Redirect URIs must be absolute https URLs, or http on a loopback
// host (RFC 8252 section 7.3), without a fragment; scopes are RFC 6749 scope tokens.
Result<NewClient> CreateClient(db::Connection& c, std::string_view org, std::string_view name,
                               ClientKind kind, bool confidential, const std::vector<std::string>& scopes,
                               const std::vector<std::string>& redirect_uris);
Result<std::optional<Client>> FindClient(db::Connection& c, std::string_view client_id);
Result<std::vector<Client>> ListClients(db::Connection& c, std::string_view org);
Status SetClientDisabled(db::Connection& c, std::string_view client_id, bool disabled);
// Constant-time check of a presented secret against the stored hash.
bool ClientSecretMatches(const Client& client, std::string_view secret);

// `govern auth admin-token`: a bearer token for the admin API, shown once.
Result<std::string> CreateAdminToken(db::Connection& c, std::string_view name);
// ok when `token` is a live admin token; kUnauthenticated otherwise.
Status CheckAdminToken(db::Connection& c, std::string_view token);

// "gvs_" / "gva_" / "gvc_" + 43 base64url characters of 256 random bits.
Result<std::string> NewSecret(std::string_view prefix);
// Hex SHA-256 of `text`.
std::string HashHex(std::string_view text);

}  // namespace govern::auth_service
