// The admin service: the process's own HTTP endpoint. Answers /healthz, /readyz (ready when the
// database answers) and /metrics, and GET /v1/status with the version, uptime, and every running
// service with its endpoints.
#pragma once

#include <memory>

#include "services/service.h"

namespace govern::services {

std::unique_ptr<Service> NewAdminService();

}  // namespace govern::services
