#!/usr/bin/env bash
# Tampering with the audit tables, as someone with write access to PostgreSQL would, is caught by
# `govern audit verify` against signed checkpoints, which names the right entry (and exits 1):
#   change a field, delete an entry, reorder two entries, truncate the tail, and rewrite an entry then
#   recompute the whole chain in SQL (and drop the database's checkpoints: the files on disk remain).
# Also offline: an export file with a changed line fails `govern audit verify FILE --key`.
#
# Expects $GOVERN. Uses curl for the HTTP API.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
: "${GOVERN:?}"
work="$(mktemp -d /tmp/govern-audit-tamper-XXXXXX)"
chmod 755 "$work"
data="$work/data"
mkdir -p "$data"
port=$((20000 + RANDOM % 12000))
pid=""
pg_conninfo() { pg_conninfo_of "$data"; }
psql_run() { psql_in "$data" "$1"; }
cleanup() {
  local rc=$?
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
  pg_stop_private "$data"
  [ $rc -ne 0 ] && tail -20 "$work/govern.log" 2>/dev/null
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
common=(--set "data_dir=$data" --set log.format=text --set audit.checkpoint_interval=0s
        --set "audit.listen=127.0.0.1:$port")

"$GOVERN" serve audit "${common[@]}" >>"$work/govern.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
key="$("$GOVERN" audit keys create --org acme --scope append "${common[@]}" 2>/dev/null)"
read_key="$("$GOVERN" audit keys create --org acme --scope read "${common[@]}" 2>/dev/null)"
url="http://127.0.0.1:$port/v1/audit/acme"
# 20 entries, a checkpoint signed after each (so a rewrite is pinned to one entry).
for i in $(seq 1 20); do
  curl -sf -o /dev/null -H "Authorization: Bearer $key" -H "Idempotency-Key: e$i" \
    -d "{\"actor\":\"user$i\",\"action\":\"doc.read\",\"target\":\"doc$i\",\"details\":{\"i\":$i}}" "$url/entries"
  curl -sf -o /dev/null -X POST -H "Authorization: Bearer $key" "$url/checkpoints"
done
curl -sf "http://127.0.0.1:$port/v1/audit/checkpoint-key" | sed 's/.*"verifier_key":"\([^"]*\)".*/\1/' >"$work/key.pub"
# The service keeps running (and with it the private PostgreSQL) while the tables are tampered with.
"$GOVERN" audit export --org acme --from-db --out "$work/clean.ndjson" "${common[@]}"
"$GOVERN" audit verify "$work/clean.ndjson" --key "$work/key.pub" "${common[@]}"
# The same export through the service's API, checked against the checkpoint files as well.
"$GOVERN" audit export --org acme --url "http://127.0.0.1:$port" --key "$read_key" --out "$work/http.ndjson" "${common[@]}"
cmp "$work/clean.ndjson" "$work/http.ndjson"
"$GOVERN" audit verify "$work/http.ndjson" --key "$work/key.pub" --checkpoints "$data/audit/checkpoints" "${common[@]}"

fail=0
expect_bad() {  # NAME FIRST_BAD [verify args...]
  local name="$1" want="$2"
  shift 2
  local out rc=0
  out="$("$GOVERN" audit verify "$@" "${common[@]}" 2>&1)" || rc=$?
  if [ "$rc" = 1 ] && grep -q "first bad entry $want\b" <<<"$out"; then
    echo "ok: $name: $(grep -m1 "first bad entry" <<<"$out")"
  else
    echo "FAIL: $name (exit $rc, want entry $want): $out"; fail=1
  fi
}
snapshot() {
  psql_run "CREATE TABLE saved AS SELECT * FROM audit_entries; CREATE TABLE saved_cp AS SELECT * FROM audit_checkpoints;
            CREATE TABLE saved_heads AS SELECT * FROM audit_heads"
}
restore() {
  psql_run "DELETE FROM audit_entries; INSERT INTO audit_entries SELECT * FROM saved;
            DELETE FROM audit_checkpoints; INSERT INTO audit_checkpoints SELECT * FROM saved_cp;
            DELETE FROM audit_heads; INSERT INTO audit_heads SELECT * FROM saved_heads"
}
snapshot
psql_run "UPDATE audit_entries SET outcome = 'denied' WHERE seq = 7"
expect_bad "change a field" 7 --org acme
restore
psql_run "DELETE FROM audit_entries WHERE seq = 9"
expect_bad "delete an entry" 9 --org acme
restore
psql_run "UPDATE audit_entries SET seq = -4 WHERE seq = 4; UPDATE audit_entries SET seq = 4 WHERE seq = 5;
          UPDATE audit_entries SET seq = 5 WHERE seq = -4"
expect_bad "reorder" 4 --org acme
restore
psql_run "DELETE FROM audit_entries WHERE seq > 17; DELETE FROM audit_checkpoints WHERE size > 17;
          UPDATE audit_heads SET next_seq = 18"
expect_bad "truncate the tail (the files on disk still hold checkpoint 20)" 18 --org acme
restore
psql_run "UPDATE audit_entries SET actor = 'mallory' WHERE seq = 12"
psql_run "DO \$\$
DECLARE r record; prev bytea := '\\x0000000000000000000000000000000000000000000000000000000000000000';
        canon text; leaf bytea;
BEGIN
  FOR r IN SELECT * FROM audit_entries WHERE org = 'acme' ORDER BY seq LOOP
    canon := '{\"action\":' || to_json(r.action)::text || ',\"actor\":' || to_json(r.actor)::text ||
             ',\"details\":' || r.details || ',\"idempotency_key\":' || to_json(r.idem_key)::text ||
             ',\"org\":' || to_json(r.org)::text || ',\"outcome\":' || to_json(r.outcome)::text ||
             ',\"seq\":' || r.seq || ',\"target\":' || to_json(r.target)::text || ',\"time\":\"' ||
             to_char(r.time AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') || '\"}';
    leaf := sha256('\\x00'::bytea || convert_to(canon, 'UTF8'));
    UPDATE audit_entries SET prev_hash = prev, entry_hash = sha256(prev || leaf), leaf_hash = leaf
      WHERE org = r.org AND seq = r.seq;
    prev := sha256(prev || leaf);
  END LOOP;
  UPDATE audit_heads SET head_hash = prev WHERE org = 'acme';
END \$\$;
DELETE FROM audit_checkpoints;"
expect_bad "rewrite entry 12 and recompute the whole chain in SQL" 12 --org acme

# Offline: one character of entry 15 changed in the export file.
sed 's/"target":"doc15"/"target":"doc16"/' "$work/clean.ndjson" >"$work/bad.ndjson"
expect_bad "export file with a changed entry" 15 "$work/bad.ndjson" --key "$work/key.pub"
# Retention keeps what remains verifiable: entries older than 1 s go, up to the newest checkpoint and
# in runs of 16 (so 1..16 of 20), and the rest still verifies, from the database and as an export.
restore
sleep 2
out="$("$GOVERN" audit retention --org acme --keep 1s --apply "${common[@]}" 2>/dev/null)"
if grep -q "removed 16 entries" <<<"$out" && "$GOVERN" audit verify --org acme "${common[@]}" >/dev/null 2>&1 &&
   "$GOVERN" audit export --org acme --out "$work/kept.ndjson" "${common[@]}" 2>/dev/null &&
   "$GOVERN" audit verify "$work/kept.ndjson" --key "$work/key.pub" "${common[@]}" 2>/dev/null | grep -q "4 entries verified"; then
  echo "ok: retention removed 16 entries and the remaining 4 verify"
else
  echo "FAIL: retention: $out"; fail=1
fi
[ "$fail" = 0 ] && echo PASS
exit "$fail"
