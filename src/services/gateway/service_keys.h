// Gateway API keys from the Govern keys service (services/keys, as telemetry's gvk_, policy's gvp_ and
// audit's gva_ keys), beside the routes file's virtual keys and Govern access tokens.
//
// A key is `gvg_<key_id>_<secret>` (service_keys::KeyTable GatewayKeyTable(): table gateway_api_keys,
// scope "invoke"), made by service_keys::CreateKey and shown once; the table holds only its SHA-256.
// Keys made this way need no edit of the routes file and can be revoked at once, which virtual keys
// cannot (they live in the file).
//
// No database statement on the request path: ServiceKeyRing keeps every unrevoked key's (key_id, org,
// scope, hash) in memory, reloaded in the background every `reload_interval` (one SELECT of the
// table), swapped in atomically. A check is one SHA-256 of the presented key, a hash-map lookup and a
// constant-time comparison. So:
//  - a new key works, and a revoked key stops working, within one reload interval (plus the query);
//  - when the database cannot be reached, the last loaded keys keep working (and revocations since wait
//    for it to come back); before the first load, every service key is refused (401) with a message
//    saying the keys are not loaded.
//
// The caller is `Key:gvg_<key_id>` in the key's organisation; budgets of scope "key" name the key as
// "gvg_<key_id>" (never the secret); per-key requests/tokens per minute are the routes file's, so they
// do not apply to these keys (policy limits and budgets do, as for tokens).
//
// Thread-safe: Check from any thread at once; Reload from any thread (one at a time is best); Start and
// Stop from the owner.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "base/status.h"
#include "db/migrator.h"
#include "services/keys/keys.h"

namespace govern::db {
class Pool;
}

namespace govern::gateway {

struct Caller;  // governance.h

// The gateway's key table: gateway_api_keys, prefix gvg, scope "invoke".
const service_keys::KeyTable& GatewayKeyTable();
// The migration that creates it (the gateway's migrations, schema.h, take it as version 2).
db::Migration GatewayKeysMigration(int version);

class ServiceKeyRing {
 public:
  // `pool`: the gateway's database (must outlive the ring). Nothing is loaded until Reload or Start.
  ServiceKeyRing(db::Pool* pool, std::chrono::milliseconds reload_interval);
  ~ServiceKeyRing();  // Stop()s
  ServiceKeyRing(const ServiceKeyRing&) = delete;
  ServiceKeyRing& operator=(const ServiceKeyRing&) = delete;

  // Loads the table now. On failure (kUnavailable) the keys loaded before stay in use.
  Status Reload();
  // Reload now (its failure is returned, but the ring keeps trying), then every reload_interval on a
  // thread of its own.
  Status Start();
  void Stop();

  // Whether `credential` has the shape of a gateway service key (gvg_<12 base32>_<64 hex>): only those
  // are checked here, so a routes-file key or a token never costs a hash.
  static bool LooksLikeKey(std::string_view credential);
  // The caller for a valid, unrevoked key; kUnauthenticated ("missing or unknown API key", or that the
  // keys are not loaded yet) otherwise.
  Result<Caller> Check(std::string_view credential) const;

  size_t size() const;  // keys loaded
  bool loaded() const;  // at least one Reload succeeded

 private:
  struct Entry {
    std::string org;
    std::string scope;
    std::string hash;  // 32 bytes
  };
  using Snapshot = std::unordered_map<std::string, Entry>;

  db::Pool* pool_;
  std::chrono::milliseconds interval_;
  std::atomic<std::shared_ptr<const Snapshot>> keys_;  // null until the first load
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace govern::gateway
