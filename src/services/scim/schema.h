// The scim service's tables and its bearer keys.
//
// scim_resources holds every SCIM User and Group of every organisation as its normalized JSON (without
// id, meta, a user's groups and a group's members, which live elsewhere); scim_changes is the change log
// (one row per create, replace, patch, delete); scim_keys the per-organisation bearer keys (gvs_).
// Users and memberships are also written to the auth service's auth_users / auth_groups /
// auth_memberships, which people sign in from (docs/scim.md).
#pragma once

#include <vector>

#include "base/status.h"
#include "db/migrator.h"
#include "services/keys/keys.h"

namespace govern::db {
class Pool;
}  // namespace govern::db

namespace govern::scim_service {

std::vector<db::Migration> Migrations();

// Applies the auth service's migrations (the tables SCIM writes, and the auth_memberships (user_id)
// index a user's groups are read by; a no-op when auth already did). Called at Start, since the runner
// applies scim's migrations without auth's when auth is not selected. Writes nothing of auth's schema
// itself.
Status PrepareAuthTables(db::Pool& pool);

// scim_keys, prefix "gvs", one scope "sync".
const service_keys::KeyTable& ScimKeyTable();

}  // namespace govern::scim_service
