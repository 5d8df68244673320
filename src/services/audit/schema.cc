// The audit service's tables.
#include "services/audit/schema.h"

namespace govern::audit_service {

const service_keys::KeyTable& AuditKeyTable() {
  static const service_keys::KeyTable table{
      .table = "audit_keys", .prefix = "gva", .scopes = {"append", "read"}, .log_component = "audit"};
  return table;
}

// audit_append: one append batch under its head locks, so that a batch costs one round trip (BEGIN,
// settings, this, COMMIT travel in one pipeline) and the head locks are held only while PostgreSQL
// works, never across a round trip to the service.
//
// The service sends, per entry, the stored fields and the canonical encoding (audit-format.md section
// 2) split around the seq (audit::CanonicalEntrySplit): the seq is the only hashed member that depends
// on the head. Entries come grouped by organisation (in order within one), each (org, key) once. It
//   1. with p_lookup_first, looks up the keys already stored (before the lock wait, so the index probes
//      are not part of the hold; READ COMMITTED: a volatile function's statements each see what is
//      committed when they start);
//   2. locks p_first's head (waiting) and the other heads of p_orgs only if free (SKIP LOCKED: a batch
//      never waits while it holds a head, so replicas neither queue in chains nor deadlock);
//   3. without p_lookup_first, looks the keys up now (sees every commit of an earlier holder);
//   4. per entry of a locked head whose key is not stored: seq = next_seq, leaf_hash =
//      SHA-256(0x00 || before || decimal(seq) || after), entry_hash = SHA-256(prev || leaf), and the
//      leaf appended to the compact range (audit::CompactRange::Append: merges, and the completed
//      subtrees at levels that are multiples of p_stride (> 0), stored in audit_tree_nodes);
//   5. inserts the entries and nodes and updates the heads.
// A key committed by the head's previous holder after step 1 fails the INSERT with a unique violation
// (23505): the caller runs the batch again without p_lookup_first. Returns one row per ordinal: state
// 'n' (new: seq and hashes), 'e' (stored already: the stored entry's columns) or 'd' (its head was busy:
// nothing done), and in every row the lock wait and the hold so far in microseconds.
constexpr std::string_view kAppendFunctionSql = R"sql(
CREATE FUNCTION audit_append(
    p_first text, p_orgs text[], p_lookup_first boolean, p_stride integer,
    p_org text[], p_key text[], p_time bigint[], p_actor text[], p_action text[], p_target text[],
    p_outcome text[], p_details text[], p_before text[], p_after text[])
  RETURNS TABLE (r_ord integer, r_state text, r_seq bigint, r_prev bytea, r_entry bytea, r_leaf bytea,
                 r_time bigint, r_actor text, r_action text, r_target text, r_outcome text,
                 r_details text, r_waited_us bigint, r_held_us bigint)
  LANGUAGE plpgsql AS $fn$
DECLARE
  n integer := coalesce(array_length(p_org, 1), 0);
  ex bigint[];       -- per ordinal: seq of the stored entry with that key
  any_ex boolean := false;
  h_org text[];      -- the heads this batch holds, as read under the lock
  h_next bigint[];
  h_hash bytea[];
  h_cr bytea[];
  o_org text[];
  o_next bigint[];
  o_hash bytea[];
  o_cr bytea[];
  u_org text[] := '{}';  -- the heads to update
  u_next bigint[] := '{}';
  u_hash bytea[] := '{}';
  u_cr bytea[] := '{}';
  u_n integer := 0;
  sq bigint[];       -- per ordinal of a new entry: seq, prev_hash, entry_hash, leaf_hash
  pv bytea[];
  eh bytea[];
  lf bytea[];
  nd_org text[] := '{}';
  nd_lvl smallint[] := '{}';
  nd_idx bigint[] := '{}';
  nd_hash bytea[] := '{}';
  nd_n integer := 0;
  cur text;
  hk integer;
  nxt bigint;
  nxt0 bigint;
  hh bytea;
  cr bytea;
  hs bytea[];
  top integer;
  leaf bytea;
  lvl integer;
  t0 timestamptz;
  t1 timestamptz;
  w_us bigint;
  h_us bigint;
BEGIN
  -- Every per-ordinal array spans 1..n from the start (assigning element i of an empty array would
  -- make i its lower bound, and unnest would misalign the columns).
  sq := array_fill(NULL::bigint, ARRAY[n]);
  pv := array_fill(NULL::bytea, ARRAY[n]);
  eh := array_fill(NULL::bytea, ARRAY[n]);
  lf := array_fill(NULL::bytea, ARRAY[n]);
  IF p_lookup_first THEN
    SELECT array_agg(e.seq ORDER BY k.ord), count(e.seq) > 0 INTO ex, any_ex
      FROM unnest(p_org, p_key) WITH ORDINALITY AS k(ko, kk, ord)
      LEFT JOIN audit_entries e ON e.org = k.ko AND e.idem_key = k.kk;
  END IF;
  t0 := clock_timestamp();
  SELECT array_agg(h.org), array_agg(h.next_seq), array_agg(h.head_hash), array_agg(h.compact_range)
    INTO h_org, h_next, h_hash, h_cr
    FROM (SELECT org, next_seq, head_hash, compact_range FROM audit_heads WHERE org = p_first FOR UPDATE) h;
  IF h_org IS NULL THEN
    RAISE EXCEPTION 'audit: the chain head of % is missing', p_first;
  END IF;
  IF array_length(p_orgs, 1) > 1 THEN
    SELECT array_agg(h.org), array_agg(h.next_seq), array_agg(h.head_hash), array_agg(h.compact_range)
      INTO o_org, o_next, o_hash, o_cr
      FROM (SELECT org, next_seq, head_hash, compact_range FROM audit_heads
            WHERE org = ANY(p_orgs) AND org <> p_first FOR UPDATE SKIP LOCKED) h;
    IF o_org IS NOT NULL THEN
      h_org := h_org || o_org;
      h_next := h_next || o_next;
      h_hash := h_hash || o_hash;
      h_cr := h_cr || o_cr;
    END IF;
  END IF;
  t1 := clock_timestamp();
  IF NOT p_lookup_first THEN
    SELECT array_agg(e.seq ORDER BY k.ord), count(e.seq) > 0 INTO ex, any_ex
      FROM unnest(p_org, p_key) WITH ORDINALITY AS k(ko, kk, ord)
      LEFT JOIN audit_entries e ON e.org = k.ko AND e.idem_key = k.kk;
  END IF;
  FOR i IN 1..n + 1 LOOP
    IF i > n OR p_org[i] IS DISTINCT FROM cur THEN
      IF hk IS NOT NULL AND nxt <> nxt0 THEN
        cr := int8send(nxt - 1);
        FOR j IN 1..top LOOP
          cr := cr || hs[j];
        END LOOP;
        u_n := u_n + 1;
        u_org[u_n] := cur;
        u_next[u_n] := nxt;
        u_hash[u_n] := hh;
        u_cr[u_n] := cr;
      END IF;
      EXIT WHEN i > n;
      cur := p_org[i];
      hk := array_position(h_org, cur);
      IF hk IS NOT NULL THEN
        nxt := h_next[hk];
        nxt0 := nxt;
        hh := h_hash[hk];
        cr := h_cr[hk];
        top := (length(cr) - 8) / 32;
        IF length(cr) <> 8 + 32 * top OR substring(cr FROM 1 FOR 8) <> int8send(nxt - 1)
           OR top <> bit_count((nxt - 1)::bit(64)) OR length(hh) <> 32 THEN
          RAISE EXCEPTION 'audit: the chain head of % is inconsistent', cur USING ERRCODE = 'data_corrupted';
        END IF;
        hs := '{}';
        FOR j IN 1..top LOOP
          hs[j] := substring(cr FROM 9 + 32 * (j - 1) FOR 32);
        END LOOP;
      END IF;
    END IF;
    IF hk IS NULL OR ex[i] IS NOT NULL THEN
      CONTINUE;  -- a busy head (state 'd'), or stored already ('e')
    END IF;
    leaf := sha256('\x00'::bytea || convert_to(p_before[i] || nxt::text || p_after[i], 'UTF8'));
    sq[i] := nxt;
    pv[i] := hh;
    hh := sha256(hh || leaf);
    eh[i] := hh;
    lf[i] := leaf;
    -- The Merkle compact range (audit::CompactRange::Append): push the leaf, merge equal subtrees.
    top := top + 1;
    hs[top] := leaf;
    lvl := 0;
    WHILE (nxt >> lvl) & 1 = 0 LOOP
      top := top - 1;
      hs[top] := sha256('\x01'::bytea || hs[top] || hs[top + 1]);
      lvl := lvl + 1;
      IF lvl % p_stride = 0 THEN
        nd_n := nd_n + 1;
        nd_org[nd_n] := cur;
        nd_lvl[nd_n] := lvl;
        nd_idx[nd_n] := (nxt - 1) >> lvl;
        nd_hash[nd_n] := hs[top];
      END IF;
    END LOOP;
    nxt := nxt + 1;
  END LOOP;
  IF u_n > 0 THEN
    INSERT INTO audit_entries (org, seq, idem_key, time, actor, action, target, outcome, details,
                               prev_hash, entry_hash, leaf_hash)
      SELECT v.o, v.s, v.k, 'epoch'::timestamptz + v.t * interval '1 microsecond', v.a, v.ac, v.tg, v.oc,
             v.d, v.p, v.e, v.l
      FROM unnest(p_org, p_key, p_time, p_actor, p_action, p_target, p_outcome, p_details, sq, pv, eh, lf)
        AS v(o, k, t, a, ac, tg, oc, d, s, p, e, l)
      WHERE v.s IS NOT NULL;
    IF u_n = 1 THEN
      UPDATE audit_heads SET next_seq = u_next[1], head_hash = u_hash[1], compact_range = u_cr[1],
                             updated_at = now()
        WHERE org = u_org[1];
    ELSE
      UPDATE audit_heads h SET next_seq = v.nx, head_hash = v.hh, compact_range = v.cr, updated_at = now()
        FROM unnest(u_org, u_next, u_hash, u_cr) AS v(o, nx, hh, cr)
        WHERE h.org = v.o AND h.org = ANY(u_org);
    END IF;
  END IF;
  IF nd_n > 0 THEN
    INSERT INTO audit_tree_nodes (org, level, idx, hash) SELECT * FROM unnest(nd_org, nd_lvl, nd_idx, nd_hash);
  END IF;
  w_us := (extract(epoch FROM t1 - t0) * 1000000)::bigint;
  h_us := (extract(epoch FROM clock_timestamp() - t1) * 1000000)::bigint;
  RETURN QUERY SELECT v.ord::integer, CASE WHEN v.s IS NULL THEN 'd' ELSE 'n' END, v.s, v.p, v.e, v.l,
                      NULL::bigint, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, w_us, h_us
    FROM unnest(p_org, ex, sq, pv, eh, lf) WITH ORDINALITY AS v(o, x, s, p, e, l, ord)
    WHERE v.s IS NOT NULL OR NOT (v.o = ANY(h_org));
  IF any_ex THEN
    RETURN QUERY SELECT x.ord::integer, 'e'::text, e.seq, e.prev_hash, e.entry_hash, e.leaf_hash,
                        (extract(epoch FROM e.time) * 1000000)::bigint, e.actor, e.action, e.target,
                        e.outcome, e.details, w_us, h_us
      FROM unnest(p_org, ex) WITH ORDINALITY AS x(o, s, ord)
      JOIN audit_entries e ON e.org = x.o AND e.seq = x.s
      WHERE x.o = ANY(h_org);
  END IF;
END
$fn$
)sql";

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
      // The append batch as one statement (Batcher): see kAppendFunctionSql.
      {4, "audit_append: a batch's lock, chain, Merkle, insert and head update in one call",
       std::string(kAppendFunctionSql)},
  };
}

}  // namespace govern::audit_service
