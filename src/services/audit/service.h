// `govern serve audit`: the audit log service (HTTP API in api.h, appends through batcher.h, tables in
// schema.h). Config keys under "audit." (DeclareConfig). Besides the API it runs one maintenance
// thread: at audit.checkpoint_interval it signs a checkpoint for every organisation whose chain moved
// and writes it to PostgreSQL and to audit.checkpoint_dir; every few minutes it applies retention.
// Every replica does the same; the work is idempotent (one checkpoint per org and size).
#pragma once

#include <memory>

#include "services/service.h"

namespace govern::audit_service {

std::unique_ptr<services::Service> NewAuditService();

}  // namespace govern::audit_service
