// The audit service's tables (applied by the Migrator under the service name "audit") and its key table.
//
//   audit_keys          gva_ API keys (services/keys), scopes "append" and "read"
//   audit_heads         one row per organisation: next_seq, head_hash (entry_hash of next_seq - 1),
//                       the compact range of the Merkle tree over every entry so far, and first_seq (the
//                       oldest entry kept after retention) with prev_hash of that entry
//   audit_entries       the entries; PK (org, seq), UNIQUE (org, idem_key); indexes by actor, action, time
//   audit_tree_nodes    complete Merkle subtrees at levels 4, 8, 12, ... (chain.h kNodeStride), so proofs
//                       read O(log n) rows
//   audit_checkpoints   signed checkpoints (org, size): root, chain head, time, the signed note
//   audit_retention     per-organisation retention override
#pragma once

#include <vector>

#include "db/migrator.h"
#include "services/keys/keys.h"

namespace govern::audit_service {

std::vector<db::Migration> Migrations();
const service_keys::KeyTable& AuditKeyTable();

}  // namespace govern::audit_service
