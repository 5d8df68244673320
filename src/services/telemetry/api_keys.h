// Telemetry API keys: how an organisation proves who it is when it sends events (scope "ingest") or
// reads them back (scope "query").
//
// The keys are services/keys (govern_service_keys) keys: `gvk_<key_id>_<secret>`, SHA-256 stored, in
// the table telemetry_ingest_keys. Create, list and revoke them with service_keys::CreateKey/ListKeys/
// RevokeKey on IngestKeys(); verify them on the request path with a service_keys::KeyCache built on
// IngestKeys() and VerifyKey below (no database round trip per request; a revocation takes effect
// within the cache's TTL, telemetry.key_cache_ttl).
//
// Thread-safe: IngestKeys() is an immutable value; VerifyKey is as thread-safe as the KeyCache.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "services/keys/keys.h"

namespace govern::telemetry {

inline constexpr std::string_view kIngestScope = "ingest";
inline constexpr std::string_view kQueryScope = "query";

// telemetry_ingest_keys, prefix "gvk", scopes "ingest" and "query".
const service_keys::KeyTable& IngestKeys();

// Organisation names: [a-z0-9][a-z0-9_-]{0,62}.
using service_keys::ValidateOrg;

// Verifies `key` for `scope` through `cache` (built on IngestKeys()) and calls `done` with the key's
// organisation, on the calling thread when the answer is cached or on a cache thread otherwise.
// Unauthenticated for a malformed, unknown, wrong, revoked or wrong-scope key, with one message for all
// (a caller learns nothing about which); Unavailable when the database could not answer.
void VerifyKey(service_keys::KeyCache& cache, std::string_view key, std::string_view scope,
               std::function<void(Result<std::string> org)> done);

}  // namespace govern::telemetry
