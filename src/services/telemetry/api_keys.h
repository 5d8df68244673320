// Telemetry API keys: how an organisation proves who it is when it sends events (scope "ingest") or
// reads them back (scope "query").
//
// A key looks like `gvk_<key_id>_<secret>`: key_id is 12 characters of lower-case base32 (a-z, 2-7)
// and names the row in telemetry_ingest_keys; secret is 32 random bytes (OpenSSL's CSPRNG) in lower-case
// hex. Only SHA-256 of the whole key is stored, so the table never holds a usable key; the full key is
// shown once, by CreateKey.
//
// KeyCache verifies presented keys on the request path without touching PostgreSQL per request: it
// caches what the table says about a key_id (organisation, scope, hash, revoked or unknown) for a short
// TTL and compares the presented key's hash in constant time. A revocation therefore takes effect within
// one TTL. Lookups that miss the cache run on the cache's own threads, never on the caller's (an HTTP
// event loop must not block on the database), and concurrent misses for one key_id share one query.
//
// The free functions take a Connection (one thread at a time, like the Connection). KeyCache is
// thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
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

namespace govern::telemetry {

enum class KeyScope { kIngest, kQuery };

// "ingest" / "query".
std::string_view ScopeName(KeyScope scope);
// The scope called `name`; InvalidArgument otherwise.
Result<KeyScope> ParseScope(std::string_view name);

// Organisation names: [a-z0-9][a-z0-9_-]{0,62}. InvalidArgument says what is wrong.
Status ValidateOrg(std::string_view org);

inline constexpr size_t kKeyIdLength = 12;
inline constexpr size_t kKeySecretBytes = 32;

// The parts of a presented key. Only the shape is checked: Unauthenticated when it is not a key.
struct ParsedKey {
  std::string_view key_id;
  std::string_view secret;
};
Result<ParsedKey> ParseKey(std::string_view key);

struct KeyInfo {
  std::string key_id;
  std::string org;
  KeyScope scope = KeyScope::kIngest;
  std::string name;
  std::string created_at;                 // RFC 3339, UTC
  std::optional<std::string> revoked_at;  // RFC 3339, UTC; nullopt while the key is valid
};

// Makes a key for `org` with `scope` and a free-text `name` (up to 200 bytes), stores its hash, and
// returns the whole key: the only time it is ever available.
Result<std::string> CreateKey(db::Connection& conn, std::string_view org, KeyScope scope,
                              std::string_view name);
// Every key (of `org`, when not empty), oldest first. Never returns secrets (the table has none).
Result<std::vector<KeyInfo>> ListKeys(db::Connection& conn, std::string_view org = {});
// Revokes a key. NotFound for an unknown key_id; revoking a revoked key is ok and keeps the first time.
Status RevokeKey(db::Connection& conn, std::string_view key_id);

struct KeyCacheOptions {
  std::chrono::milliseconds ttl{10000};  // how long an answer from the table is trusted (0: never)
  size_t max_entries = 100000;           // cached key_ids; unknown ones are dropped first when full
  int threads = 2;                       // database lookups in parallel
  size_t max_queued = 10000;             // distinct key_ids waiting for a lookup; more: Unavailable
  const Clock* clock = nullptr;          // nullptr: Clock::Real()
};

class KeyCache {
 public:
  // Receives the key's organisation; Unauthenticated for a malformed, unknown, wrong, revoked or
  // wrong-scope key (one message for all, so a caller learns nothing about which); Unavailable when
  // the database could not answer (the caller should ask again later).
  using Callback = std::function<void(Result<std::string> org)>;

  KeyCache(db::Pool* pool, KeyCacheOptions options = {});
  // Calls Shutdown().
  ~KeyCache();
  KeyCache(const KeyCache&) = delete;
  KeyCache& operator=(const KeyCache&) = delete;

  // Verifies `key` for `scope`. When the answer is cached (or the key is malformed), `done` runs on
  // the calling thread before Verify returns; otherwise it runs later on one of the cache's threads.
  // Keep `done` short or hand the work on; it may do non-blocking work such as queueing a WAL append.
  void Verify(std::string_view key, KeyScope scope, Callback done);
  // The same, waiting for the answer (CLI, tests). Never call it on an event loop.
  Result<std::string> VerifyBlocking(std::string_view key, KeyScope scope);

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

}  // namespace govern::telemetry
