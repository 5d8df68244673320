// `govern serve auth`: the sign-in and token service (OAuth 2.1 / OIDC provider, directory admin API).
// docs/auth.md is the map: endpoints, configuration, what is stored.
#pragma once

#include <memory>

#include "services/service.h"

namespace govern::auth_service {

std::unique_ptr<services::Service> NewAuthService();

}  // namespace govern::auth_service
