// `govern serve scim`: SCIM 2.0 directory sync (api.h) into the directory auth signs people in from
// (store.h). Config keys under "scim." (DeclareConfig). At Start it also applies the auth service's
// migrations (the tables it writes), which is a no-op when auth already did.
#pragma once

#include <memory>

#include "services/service.h"

namespace govern::scim_service {

std::unique_ptr<services::Service> NewScimService();

}  // namespace govern::scim_service
