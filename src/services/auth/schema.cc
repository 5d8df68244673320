// The auth service's tables.
#include "services/auth/schema.h"

namespace govern::auth_service {

std::vector<db::Migration> Migrations() {
  return {
      {1, "auth organisations, users, groups, clients, keys, codes, refresh families, revocations", R"sql(
CREATE TABLE auth_orgs (
  org        text PRIMARY KEY,
  name       text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE auth_users (
  user_id       text PRIMARY KEY,
  org           text NOT NULL REFERENCES auth_orgs (org),
  email         text NOT NULL,
  subject       text NOT NULL UNIQUE,
  display_name  text NOT NULL DEFAULT '',
  password_hash text,
  disabled      boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX auth_users_email ON auth_users (org, lower(email));

CREATE TABLE auth_groups (
  org        text NOT NULL REFERENCES auth_orgs (org),
  name       text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org, name)
);

CREATE TABLE auth_memberships (
  org     text NOT NULL,
  name    text NOT NULL,
  user_id text NOT NULL REFERENCES auth_users (user_id) ON DELETE CASCADE,
  PRIMARY KEY (org, name, user_id),
  FOREIGN KEY (org, name) REFERENCES auth_groups (org, name) ON DELETE CASCADE
);

-- OAuth clients: agents (service accounts, confidential, client_credentials) and user-facing apps
-- (public with PKCE, or confidential).
CREATE TABLE auth_clients (
  client_id     text PRIMARY KEY,
  org           text NOT NULL REFERENCES auth_orgs (org),
  name          text NOT NULL DEFAULT '',
  kind          text NOT NULL CHECK (kind IN ('agent', 'app')),
  confidential  boolean NOT NULL,
  secret_hash   text,
  scopes        text[] NOT NULL DEFAULT '{}',
  redirect_uris text[] NOT NULL DEFAULT '{}',
  disabled      boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL DEFAULT now(),
  CHECK (confidential = (secret_hash IS NOT NULL))
);
CREATE INDEX auth_clients_org ON auth_clients (org);

-- Key rings (tokens/issuer.h KeyRing::Serialize), sealed with the storage key. One row per purpose:
-- 'access' (internal HS256) and 'id' (asymmetric, published in the JWKS).
CREATE TABLE auth_signing_keys (
  purpose    text PRIMARY KEY CHECK (purpose IN ('access', 'id')),
  sealed     bytea NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE auth_codes (
  code_hash      text PRIMARY KEY,
  client_id      text NOT NULL REFERENCES auth_clients (client_id) ON DELETE CASCADE,
  user_id        text NOT NULL REFERENCES auth_users (user_id) ON DELETE CASCADE,
  redirect_uri   text NOT NULL,
  scope          text NOT NULL DEFAULT '',
  nonce          text NOT NULL DEFAULT '',
  code_challenge text NOT NULL,
  auth_time      bigint NOT NULL,
  expires_at     bigint NOT NULL,
  used           boolean NOT NULL DEFAULT false
);

-- Refresh token families (RFC 9700 section 4.14.2): every token ever issued in a family, by hash; a
-- used token presented again revokes the family.
CREATE TABLE auth_refresh_families (
  family     text PRIMARY KEY,
  client_id  text NOT NULL,
  org        text NOT NULL,
  subject    text NOT NULL,
  scope      text NOT NULL DEFAULT '',
  audience   text NOT NULL DEFAULT '',
  revoked    boolean NOT NULL DEFAULT false,
  expires_at bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE auth_refresh_tokens (
  token_hash text PRIMARY KEY,
  family     text NOT NULL REFERENCES auth_refresh_families (family) ON DELETE CASCADE,
  used       boolean NOT NULL DEFAULT false,
  issued_at  bigint NOT NULL
);
CREATE INDEX auth_refresh_tokens_family ON auth_refresh_tokens (family);

-- What services pull (tokens/checker.h RevocationList): kind 'jti' or 'sid', kept until expires_at.
CREATE TABLE auth_revocations (
  seq        bigserial PRIMARY KEY,
  kind       text NOT NULL CHECK (kind IN ('jti', 'sid')),
  id         text NOT NULL,
  expires_at bigint NOT NULL,
  UNIQUE (kind, id)
);

-- Failed sign-in counts per key ('account:<org>/<email>', 'addr:<ip>') in a fixed window.
CREATE TABLE auth_rate_limits (
  key          text PRIMARY KEY,
  window_start bigint NOT NULL,
  failures     integer NOT NULL,
  locked_until bigint NOT NULL DEFAULT 0
);

CREATE TABLE auth_passkeys (
  credential_id bytea PRIMARY KEY,
  user_id       text NOT NULL REFERENCES auth_users (user_id) ON DELETE CASCADE,
  public_key    bytea NOT NULL,
  algorithm     integer NOT NULL,
  sign_count    bigint NOT NULL DEFAULT 0,
  transports    text NOT NULL DEFAULT '',
  aaguid        bytea,
  backup_eligible boolean NOT NULL DEFAULT false,
  backup_state    boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz
);
CREATE INDEX auth_passkeys_user ON auth_passkeys (user_id);

CREATE TABLE auth_totp (
  user_id     text PRIMARY KEY REFERENCES auth_users (user_id) ON DELETE CASCADE,
  sealed      bytea NOT NULL,
  confirmed   boolean NOT NULL DEFAULT false,
  last_step   bigint NOT NULL DEFAULT 0
);

-- Single-use challenges of a sign-in in progress (passkey, TOTP step, outside-provider state).
CREATE TABLE auth_challenges (
  challenge_hash text PRIMARY KEY,
  kind           text NOT NULL,
  user_id        text,
  payload        text NOT NULL DEFAULT '',
  expires_at     bigint NOT NULL
);

-- Browser sessions after sign-in (cookie value by hash).
CREATE TABLE auth_sessions (
  session_hash text PRIMARY KEY,
  user_id      text NOT NULL REFERENCES auth_users (user_id) ON DELETE CASCADE,
  auth_time    bigint NOT NULL,
  expires_at   bigint NOT NULL
);

-- Admin bearer tokens made by `govern auth admin-token` (hash only).
CREATE TABLE auth_admin_tokens (
  token_hash text PRIMARY KEY,
  name       text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked    boolean NOT NULL DEFAULT false
);
)sql"},
      {2, "auth single sign-on through an outside OIDC provider per organisation", R"sql(
CREATE TABLE auth_sso (
  org           text PRIMARY KEY REFERENCES auth_orgs (org) ON DELETE CASCADE,
  issuer        text NOT NULL,
  client_id     text NOT NULL,
  client_secret bytea NOT NULL,
  updated_at    timestamptz NOT NULL DEFAULT now()
);
-- Outside identities ("<issuer>|<sub>") linked to users; the user's own subject never changes.
CREATE TABLE auth_sso_links (
  identity text PRIMARY KEY,
  user_id  text NOT NULL REFERENCES auth_users (user_id) ON DELETE CASCADE
);
)sql"},
      {3, "auth factor removal log", R"sql(
-- Every administrator change to a user's sign-in factors (factors.h), written in the transaction of
-- the change. No foreign key: the record outlives the user.
CREATE TABLE auth_factor_events (
  seq              bigserial PRIMARY KEY,
  at               bigint NOT NULL,
  org              text NOT NULL,
  user_id          text NOT NULL,
  action           text NOT NULL,
  factor           text NOT NULL,
  factor_id        text NOT NULL DEFAULT '',
  actor            text NOT NULL DEFAULT '',
  forced           boolean NOT NULL DEFAULT false,
  reason           text NOT NULL DEFAULT '',
  sessions_ended   integer NOT NULL DEFAULT 0,
  families_revoked integer NOT NULL DEFAULT 0
);
CREATE INDEX auth_factor_events_user ON auth_factor_events (user_id, seq);
)sql"},
      {4, "auth memberships by user", R"sql(
-- A user's groups (the groups claim, SCIM's User.groups) and the ON DELETE CASCADE from auth_users
-- read memberships by user. Databases where the scim service made this index at start (before it was
-- auth's) keep it under auth's name instead of building a second one.
ALTER INDEX IF EXISTS scim_auth_memberships_user RENAME TO auth_memberships_user;
CREATE INDEX IF NOT EXISTS auth_memberships_user ON auth_memberships (user_id);
)sql"},
      {5, "auth single sign-on: email_verified required to match or create users by email", R"sql(
-- Per organisation; true (the default) refuses an outside identity whose provider does not say its
-- email is verified when that email would pick or create the user (sso.h MatchOrCreateSsoUser).
ALTER TABLE auth_sso ADD COLUMN require_email_verified boolean NOT NULL DEFAULT true;
)sql"},
      {6, "auth groups inside groups", R"sql(
-- Group `subgroup` is a member of group `name` (SCIM nested groups): a user of the subgroup is in
-- `name` too, for the groups claim (GroupsOf) and policy entities. Writers keep it free of cycles.
CREATE TABLE auth_subgroups (
  org      text NOT NULL,
  name     text NOT NULL,
  subgroup text NOT NULL,
  PRIMARY KEY (org, name, subgroup),
  FOREIGN KEY (org, name) REFERENCES auth_groups (org, name) ON DELETE CASCADE,
  FOREIGN KEY (org, subgroup) REFERENCES auth_groups (org, name) ON DELETE CASCADE,
  CHECK (name <> subgroup)
);
CREATE INDEX auth_subgroups_subgroup ON auth_subgroups (org, subgroup);
)sql"},
      {7, "auth sessions by user", R"sql(
-- Ending a user's sessions (deactivation, factor removal, SCIM delete) and the ON DELETE CASCADE from
-- auth_users look sessions up by user; without this they scan every session.
CREATE INDEX IF NOT EXISTS auth_sessions_user ON auth_sessions (user_id);
)sql"},
      {8, "auth revocation list version in commit order", R"sql(
-- The revocation list's version was max(seq), but seqs are taken at insert and transactions commit in
-- any order: a list read between two commits could carry the newer seq without the older revocation,
-- and a service already holding that version (tokens::TrustRefresher pulls only newer versions) then
-- never saw the revocation. Each revocation now bumps one counter row; its row lock orders the bumps
-- by commit, so a snapshot that sees version v sees every revocation that made a version up to v.
-- Per row, not per statement: statements that insert nothing (ON CONFLICT, empty CTEs) bump nothing
-- and take no lock.
CREATE TABLE auth_revocation_version (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  v   bigint NOT NULL
);
INSERT INTO auth_revocation_version (v) SELECT COALESCE(max(seq), 0) FROM auth_revocations;
CREATE FUNCTION auth_revocation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE auth_revocation_version SET v = v + 1;
  RETURN NULL;
END $$;
CREATE TRIGGER auth_revocations_bump AFTER INSERT ON auth_revocations
  FOR EACH ROW EXECUTE FUNCTION auth_revocation_bump();
)sql"},
  };
}

}  // namespace govern::auth_service
