// The policy bundle server (`govern serve policy`): stores each organisation's Cedar policy set in
// PostgreSQL (a new version per accepted change, history kept), builds and signs a bundle per version,
// and serves the latest with ETag / If-None-Match so sidecars poll cheaply. docs/policy-server.md is
// the API.
//
// Configuration keys (under "policy.server."): listen, signing_key, max_set_bytes, workers,
// key_cache_ttl.
#pragma once

#include <memory>

#include "services/service.h"

namespace govern::policy_service {

std::unique_ptr<services::Service> NewPolicyServer();

}  // namespace govern::policy_service
