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
      // Templates with links and JSON policy sets were first stored before these columns existed, as an
      // envelope in `policies`: {"govern_source": 1, "json": bool, "policies": "<text>", "links": "<text>"
      // | null}. Such rows are unpacked here. Only that envelope made `policies` begin with '{' (valid
      // Cedar text never does); the CASE keeps every other row's text from being cast to jsonb, and a
      // JSON object without "govern_source" is left as it is. (A `policies` beginning with '{' that is
      // not JSON would stop the migration with PostgreSQL's error; no build of the server wrote one.)
      {2, "policy versions: links and policies format columns", R"sql(
ALTER TABLE policy_versions
  ADD COLUMN links text,
  ADD COLUMN policies_format text NOT NULL DEFAULT 'cedar'
    CONSTRAINT policy_versions_policies_format CHECK (policies_format IN ('cedar', 'json')),
  ADD CONSTRAINT policy_versions_links_with_cedar CHECK (links IS NULL OR policies_format = 'cedar');

UPDATE policy_versions AS v
SET policies = e.env ->> 'policies',
    links = e.env ->> 'links',
    policies_format = CASE WHEN (e.env -> 'json') = 'true'::jsonb THEN 'json' ELSE 'cedar' END
FROM (SELECT org, version, CASE WHEN policies LIKE '{%' THEN policies::jsonb END AS env
      FROM policy_versions WHERE policies LIKE '{%') AS e
WHERE v.org = e.org AND v.version = e.version AND e.env IS NOT NULL
  AND jsonb_typeof(e.env) = 'object' AND e.env ? 'govern_source'
  AND jsonb_typeof(e.env -> 'policies') = 'string';
)sql"},
  };
}

}  // namespace govern::policy_service
