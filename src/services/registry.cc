// The list of services this binary holds, in start order.
#include "services/admin/admin.h"
#include "services/service.h"
#include "services/telemetry/service.h"

namespace govern::services {

const std::vector<Registration>& Registry() {
  static const std::vector<Registration> registry = {
      {"admin", "health, readiness, metrics and status of this govern process (HTTP)", &NewAdminService},
      {"telemetry",
       "takes in events (OTLP/HTTP logs, NDJSON), stores each once in PostgreSQL, archives old hours to "
       "Parquet, answers queries with DLP redaction",
       &telemetry::NewTelemetryService},
  };
  return registry;
}

}  // namespace govern::services
