// The scim service's migrations.
#include "services/scim/schema.h"

#include "db/pool.h"
#include "services/auth/schema.h"

namespace govern::scim_service {

const service_keys::KeyTable& ScimKeyTable() {
  static const service_keys::KeyTable* t = new service_keys::KeyTable{
      .table = "scim_keys", .prefix = "gvs", .scopes = {"sync"}, .log_component = "scim"};
  return *t;
}

Status PrepareAuthTables(db::Pool& pool) {
  // auth's migration 4 holds the auth_memberships (user_id) index a user's groups are read by.
  return db::Migrator("auth", auth_service::Migrations()).Apply(pool).status();
}

std::vector<db::Migration> Migrations() {
  return {
      {1, "scim resources, change log and keys",
       R"sql(
CREATE TABLE scim_resources (
  id          text PRIMARY KEY,
  org         text NOT NULL,
  kind        text NOT NULL CHECK (kind IN ('User', 'Group')),
  name        text NOT NULL,            -- userName or displayName: unique per organisation, any case
  external_id text,
  active      boolean NOT NULL DEFAULT true,
  body        jsonb NOT NULL,           -- the normalized resource without id and meta
  version     bigint NOT NULL DEFAULT 1,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX scim_resources_name ON scim_resources (org, kind, lower(name));
CREATE INDEX scim_resources_external ON scim_resources (org, kind, external_id);
CREATE INDEX scim_resources_list ON scim_resources (org, kind, created_at, id);
-- Every change, in order: what the directory's history is made of.
CREATE TABLE scim_changes (
  seq         bigserial PRIMARY KEY,
  org         text NOT NULL,
  at          timestamptz NOT NULL DEFAULT now(),
  kind        text NOT NULL,
  id          text NOT NULL,
  action      text NOT NULL CHECK (action IN ('create', 'replace', 'patch', 'delete')),
  version     bigint NOT NULL,
  key_id      text NOT NULL DEFAULT ''
);
CREATE INDEX scim_changes_org ON scim_changes (org, seq);
)sql" + service_keys::TableSql(ScimKeyTable())},
      {2, "a group's version is the seq of its latest change row",
       R"sql(
-- A group's meta.version (its ETag) and lastModified are those of its latest change row: a membership
-- change appends a change row and no longer rewrites the group's row (docs/scim.md, "Versions").
CREATE INDEX scim_changes_group ON scim_changes (id, seq) WHERE kind = 'Group';
)sql"},
  };
}

}  // namespace govern::scim_service
