// The policy bundle server's tables.
#include "services/policy/schema.h"

namespace govern::policy_service {

std::vector<db::Migration> Migrations() {
  return {
      {1, "policy api keys, heads and versions", R"sql(
CREATE TABLE policy_api_keys (
  key_id      text PRIMARY KEY,
  org         text NOT NULL,
  secret_hash bytea NOT NULL,
  scope       text NOT NULL CHECK (scope IN ('publish', 'fetch')),
  name        text NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX policy_api_keys_org ON policy_api_keys (org);

CREATE TABLE policy_heads (
  org     text PRIMARY KEY,
  version bigint NOT NULL CHECK (version >= 0)
);

CREATE TABLE policy_versions (
  org        text NOT NULL,
  version    bigint NOT NULL CHECK (version > 0),
  policies   text NOT NULL,
  entities   text NOT NULL,
  schema     text,
  limits     text,
  bundle     bytea NOT NULL,
  digest     text NOT NULL,
  signed_by  text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org, version)
);
)sql"},
  };
}

}  // namespace govern::policy_service
