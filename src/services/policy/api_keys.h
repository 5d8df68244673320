// Policy server API keys: how an organisation proves who it is when it publishes a policy set (scope
// "publish") or fetches its signed bundles (scope "fetch", what a sidecar holds).
//
// The keys are services/keys (govern_service_keys) keys: `gvp_<key_id>_<secret>`, SHA-256 stored, in
// the table policy_api_keys. Create, list and revoke them with service_keys::CreateKey/ListKeys/
// RevokeKey on PolicyKeys(); the server verifies them with a service_keys::KeyCache (a revocation takes
// effect within policy.server.key_cache_ttl) and OrgWithScope below.
//
// Thread-safe: PolicyKeys() is an immutable value and OrgWithScope a pure function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "services/keys/keys.h"

namespace govern::policy_service {

inline constexpr std::string_view kPublishScope = "publish";
inline constexpr std::string_view kFetchScope = "fetch";

// policy_api_keys, prefix "gvp", scopes "publish" and "fetch".
const service_keys::KeyTable& PolicyKeys();

// The organisation of a verified key whose scope is one of `scopes`. A failed verification passes
// through (Unauthenticated: 401, Unavailable: 503); PermissionDenied (403, naming both scopes) for a
// valid key of another scope.
Result<std::string> OrgWithScope(const Result<service_keys::KeyIdentity>& key,
                                 const std::vector<std::string_view>& scopes);

}  // namespace govern::policy_service
