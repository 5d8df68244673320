// The audit service's tables.
#include "services/audit/schema.h"

namespace govern::audit_service {

const service_keys::KeyTable& AuditKeyTable() {
  static const service_keys::KeyTable table{
      .table = "audit_keys", .prefix = "gva", .scopes = {"append", "read"}, .log_component = "audit"};
  return table;
}

std::vector<db::Migration> Migrations() {
  return {
      {1, "audit keys", service_keys::TableSql(AuditKeyTable())},
      {2, "audit heads, entries, tree nodes, checkpoints, retention", R"sql(
CREATE TABLE audit_heads (
  org            text PRIMARY KEY,
  next_seq       bigint NOT NULL DEFAULT 1,
  head_hash      bytea NOT NULL DEFAULT '\x0000000000000000000000000000000000000000000000000000000000000000',
  compact_range  bytea NOT NULL DEFAULT '\x0000000000000000',
  first_seq      bigint NOT NULL DEFAULT 1,
  first_prev     bytea NOT NULL DEFAULT '\x0000000000000000000000000000000000000000000000000000000000000000',
  updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE audit_entries (
  org         text NOT NULL,
  seq         bigint NOT NULL,
  idem_key    text NOT NULL,
  time        timestamptz NOT NULL,
  actor       text NOT NULL,
  action      text NOT NULL,
  target      text NOT NULL,
  outcome     text NOT NULL,
  details     text NOT NULL,
  prev_hash   bytea NOT NULL,
  entry_hash  bytea NOT NULL,
  leaf_hash   bytea NOT NULL,
  PRIMARY KEY (org, seq),
  UNIQUE (org, idem_key)
);
CREATE INDEX audit_entries_actor ON audit_entries (org, actor, seq DESC);
CREATE INDEX audit_entries_action ON audit_entries (org, action, seq DESC);
CREATE INDEX audit_entries_time ON audit_entries (org, time DESC, seq DESC);

CREATE TABLE audit_tree_nodes (
  org    text NOT NULL,
  level  smallint NOT NULL,
  idx    bigint NOT NULL,
  hash   bytea NOT NULL,
  PRIMARY KEY (org, level, idx)
);

CREATE TABLE audit_checkpoints (
  org         text NOT NULL,
  size        bigint NOT NULL,
  root        bytea NOT NULL,
  chain_head  bytea NOT NULL,
  time        timestamptz NOT NULL,
  note        text NOT NULL,
  PRIMARY KEY (org, size)
);

CREATE TABLE audit_retention (
  org         text PRIMARY KEY,
  keep_secs   bigint,
  updated_at  timestamptz NOT NULL DEFAULT now()
);
)sql"},
      // Every append batch updates its heads: free room on their pages keeps those updates HOT (no
      // index entries, pruned in place) instead of spreading dead versions over new pages.
      {3, "audit heads: fillfactor for HOT updates", "ALTER TABLE audit_heads SET (fillfactor = 30)"},
  };
}

}  // namespace govern::audit_service
