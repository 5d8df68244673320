// Service API keys: one implementation of the `<prefix>_<key_id>_<secret>` bearer keys that services
// hand to organisations (telemetry gvk_, policy gvp_, audit gva_), each in its own table.
//
// A key looks like `<prefix>_<key_id>_<secret>`: key_id is 12 characters of lower-case base32 (a-z, 2-7)
// and names the row in the service's table; secret is 32 random bytes (OpenSSL's CSPRNG) in lower-case
// hex. Only SHA-256 of the whole key is stored, so the table never holds a usable key; the full key is
// shown once, by CreateKey. A service describes its table with a KeyTable (table name, prefix, scope
// names); the table has the columns that TableSql() creates (key_id, org, secret_hash, scope, name,
// created_at, revoked_at), which is what telemetry_ingest_keys and policy_api_keys already are.
//
// KeyCache verifies presented keys on the request path without touching PostgreSQL per request (see
// below). CheckKey asks the table directly (rare calls, or where a revocation must act at once).
//
// The free functions take a Connection (one thread at a time, like the Connection). KeyCache is
// thread-safe. A KeyTable is a plain value; it must outlive a KeyCache built from it (it is copied).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"

namespace govern::db {
class Connection;
class Pool;
}  // namespace govern::db

namespace govern::service_keys {

// What a service's keys are.
struct KeyTable {
  std::string table;                // e.g. "audit_keys": [a-z_][a-z0-9_]* (checked by Validate)
  std::string prefix;               // e.g. "gva": keys start "gva_"; [a-z]{1,8}
  std::vector<std::string> scopes;  // e.g. {"append", "read"}: the only values of the scope column
  std::string log_component = "keys";

  // InvalidArgument when the table name, prefix or scopes are not usable (a programming error).
  Status Validate() const;
  // InvalidArgument unless `scope` is one of `scopes` (the message lists them).
  Status CheckScope(std::string_view scope) const;
};

// CREATE TABLE (and its org index) for a service that keeps its keys in a new table.
std::string TableSql(const KeyTable& table);

// Organisation names: [a-z0-9][a-z0-9_-]{0,62}. InvalidArgument says what is wrong.
Status ValidateOrg(std::string_view org);

inline constexpr size_t kKeyIdLength = 12;
inline constexpr size_t kKeySecretBytes = 32;

// The parts of a presented key of `table`. Only the shape is checked: Unauthenticated when it is not a
// key of this table's prefix.
struct ParsedKey {
  std::string_view key_id;
  std::string_view secret;
};
Result<ParsedKey> ParseKey(const KeyTable& table, std::string_view key);

struct KeyInfo {
  std::string key_id;
  std::string org;
  std::string scope;
  std::string name;
  std::string created_at;                 // RFC 3339, UTC
  std::optional<std::string> revoked_at;  // RFC 3339, UTC; nullopt while the key is valid
};

// Who a verified key belongs to.
struct KeyIdentity {
  std::string key_id;
  std::string org;
  std::string scope;
};

// Makes a key for `org` with `scope` (one of the table's) and a free-text `name` (up to 200 bytes),
// stores its hash, and returns the whole key: the only time it is ever available.
Result<std::string> CreateKey(db::Connection& conn, const KeyTable& table, std::string_view org,
                              std::string_view scope, std::string_view name);
// Every key (of `org`, when not empty), oldest first. Never returns secrets (the table has none).
Result<std::vector<KeyInfo>> ListKeys(db::Connection& conn, const KeyTable& table, std::string_view org = {});
// Revokes a key. NotFound for an unknown key_id; revoking a revoked key is ok and keeps the first time.
Status RevokeKey(db::Connection& conn, const KeyTable& table, std::string_view key_id);

// Asks the table about `key` now. Unauthenticated for a malformed, unknown, wrong or revoked key (one
// message for all: a caller learns nothing about which key ids exist); Unavailable when the database
// could not answer. The caller decides what the scope and organisation allow.
Result<KeyIdentity> CheckKey(db::Connection& conn, const KeyTable& table, std::string_view key);

struct KeyCacheOptions {
  std::chrono::milliseconds ttl{10000};  // how long an answer from the table is trusted (0: never)
  size_t max_entries = 100000;           // cached key_ids; unknown ones are dropped first when full
  int threads = 2;                       // database lookups in parallel
  size_t max_queued = 10000;             // distinct key_ids waiting for a lookup; more: Unavailable
  const Clock* clock = nullptr;          // nullptr: Clock::Real()
};

// Verifies presented keys with a short-lived cache of what the table says about each key_id
// (organisation, scope, hash, revoked or unknown) and a constant-time comparison of the presented key's
// hash. A revocation therefore takes effect within one TTL. Lookups that miss the cache run on the
// cache's own threads, never on the caller's (an HTTP event loop must not block on the database), and
// concurrent misses for one key_id share one query.
class KeyCache {
 public:
  // Receives who the key belongs to; Unauthenticated for a malformed, unknown, wrong or revoked key;
  // Unavailable when the database could not answer (the caller should ask again later).
  using Callback = std::function<void(Result<KeyIdentity> key)>;

  KeyCache(db::Pool* pool, KeyTable table, KeyCacheOptions options = {});
  // Calls Shutdown().
  ~KeyCache();
  KeyCache(const KeyCache&) = delete;
  KeyCache& operator=(const KeyCache&) = delete;

  // Verifies `key`. When the answer is cached (or the key is malformed), `done` runs on the calling
  // thread before Verify returns; otherwise it runs later on one of the cache's threads. Keep `done`
  // short or hand the work on.
  void Verify(std::string_view key, Callback done);
  // The same, waiting for the answer (CLI, tests). Never call it on an event loop.
  Result<KeyIdentity> VerifyBlocking(std::string_view key);

  // Forgets what is cached about `key_id` (after a revocation in this process).
  void Forget(std::string_view key_id);

  // Stops the lookup threads; callbacks still waiting get Unavailable. Idempotent.
  void Shutdown();

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;          // lookups sent to the database
    uint64_t lookups_failed = 0;  // the database could not answer
  };
  Stats GetStats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::service_keys
