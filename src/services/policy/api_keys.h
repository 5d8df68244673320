// Policy server API keys: how an organisation proves who it is when it publishes a policy set (scope
// "publish") or fetches its signed bundles (scope "fetch", what a sidecar holds).
//
// A key looks like `gvp_<key_id>_<secret>`: key_id is 12 characters of lower-case base32 and names the
// row in policy_api_keys; secret is 32 random bytes in lower-case hex. Only SHA-256 of the whole key
// is stored; the full key is shown once, by CreateKey. The same shape as telemetry's gvk_ keys (services
// do not include each other, so this is a separate small table and a few lines of its own).
//
// CheckKey asks PostgreSQL on every call (publishing and polling are rare next to decisions), so a
// revocation takes effect at once. Free functions on a Connection: one thread at a time per
// Connection, like the Connection.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::db {
class Connection;
}  // namespace govern::db

namespace govern::policy_service {

enum class KeyScope { kPublish, kFetch };

// "publish" / "fetch".
std::string_view ScopeName(KeyScope scope);
Result<KeyScope> ParseScope(std::string_view name);

// Organisation names: [a-z0-9][a-z0-9_-]{0,62}. InvalidArgument says what is wrong.
Status ValidateOrg(std::string_view org);

struct KeyInfo {
  std::string key_id;
  std::string org;
  KeyScope scope = KeyScope::kFetch;
  std::string name;
  std::string created_at;                 // RFC 3339, UTC
  std::optional<std::string> revoked_at;  // RFC 3339, UTC; nullopt while the key is valid
};

// Makes a key for `org` with `scope`, stores its hash and returns the whole key (the only time it is
// ever available).
Result<std::string> CreateKey(db::Connection& conn, std::string_view org, KeyScope scope,
                              std::string_view name);
// Every key (of `org`, when not empty), oldest first. Never returns secrets (the table has none).
Result<std::vector<KeyInfo>> ListKeys(db::Connection& conn, std::string_view org = {});
// NotFound for an unknown key_id; revoking a revoked key is ok and keeps the first time.
Status RevokeKey(db::Connection& conn, std::string_view key_id);

// The organisation of a presented key that holds `scope`. Unauthenticated for a malformed, unknown,
// wrong or revoked key (one message for all: a caller learns nothing about which key ids exist);
// PermissionDenied for a valid key of the other scope; Unavailable when the database could not answer.
Result<std::string> CheckKey(db::Connection& conn, std::string_view key, KeyScope scope);

}  // namespace govern::policy_service
