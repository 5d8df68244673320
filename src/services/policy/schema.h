// The policy bundle server's PostgreSQL schema (its migrations).
//
// Tables (docs/policy-server.md explains each choice):
//   policy_api_keys  API keys (scope "publish" to change an organisation's policy set, "fetch" to read
//                    its bundles), stored as SHA-256 of the whole key; one organisation each
//   policy_heads     one row per organisation: its latest version. Publishing locks this row, so two
//                    concurrent publishes for one organisation take versions one after the other
//   policy_versions  every accepted policy set (history kept) with the signed bundle built from it;
//                    a version's bundle bytes never change, so its ETag is stable. The source is kept
//                    as published: policies (policies_format 'cedar' text or a 'json' policy set),
//                    links (Cedar text only), entities, schema, limits
#pragma once

#include <vector>

#include "db/migrator.h"

namespace govern::policy_service {

std::vector<db::Migration> Migrations();

}  // namespace govern::policy_service
