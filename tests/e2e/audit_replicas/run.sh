#!/usr/bin/env bash
# Three `govern serve audit` replicas on one PostgreSQL (the private cluster of one data directory),
# many concurrent writers across many organisations (audit_loadgen, retrying on the next replica with
# the same idempotency key), every replica killed with SIGKILL mid-run and restarted. Afterwards:
# every acknowledged entry is stored exactly once with the seq and hash it was acknowledged with, no
# organisation's chain has a gap, nothing unacknowledged was stored, and `govern audit verify --org`
# passes for every organisation against the signed checkpoints in PostgreSQL and on disk. Replica 2
# appends in the database (audit.append_in_database), the others in the service.
#
# Expects $GOVERN and $LOADGEN (paths of govern and audit_loadgen). Optional: ORGS, WRITERS, SECONDS.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
: "${GOVERN:?}" "${LOADGEN:?}"
orgs="${ORGS:-25}"
writers="${WRITERS:-48}"
seconds="${SECONDS_RUN:-20}"

work="$(mktemp -d /tmp/govern-audit-replicas-XXXXXX)"
chmod 755 "$work"  # the private cluster runs as the postgres user when we are root
data="$work/data"
mkdir -p "$data"
base=$((20000 + RANDOM % 12000))
ports=("$base" $((base + 1)) $((base + 2)))
pids=("" "" "")
loadgen_pid=""

pg_conninfo() { pg_conninfo_of "$data"; }
psql_run() { psql_in "$data" "$1"; }

cleanup() {
  local rc=$?
  [ -n "$loadgen_pid" ] && kill -9 "$loadgen_pid" 2>/dev/null || true
  for p in "${pids[@]}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  [ -n "${GOVERN_KEEP_WORK:-}" ] || pg_stop_private "$data"
  if [ $rc -ne 0 ]; then
    for i in 0 1 2; do echo "--- last lines of replica $i"; tail -15 "$work/govern$i.log" 2>/dev/null || true; done
    echo "--- loadgen"; tail -5 "$work/loadgen.log" 2>/dev/null || true
  fi
  [ -n "${GOVERN_KEEP_WORK:-}" ] && echo "kept $work" || rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

common=(--set "data_dir=$data" --set log.format=text --set audit.checkpoint_interval=1s)

start_replica() {  # INDEX
  local i="$1" own=()
  # Replica 2 appends in the database (audit.append_in_database): both append paths share the chains.
  [ "$i" = 2 ] && own=(--set audit.append_in_database=true)
  "$GOVERN" serve audit "${common[@]}" "${own[@]}" --set "audit.listen=127.0.0.1:${ports[$i]}" >>"$work/govern$i.log" 2>&1 &
  pids[$i]=$!
  for _ in $(seq 1 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/${ports[$i]}") 2>/dev/null; then return 0; fi
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then echo "replica $i exited during start"; return 1; fi
    sleep 0.1
  done
  echo "replica $i did not listen on ${ports[$i]}"; return 1
}
kill9_replica() { kill -9 "${pids[$1]}"; wait "${pids[$1]}" 2>/dev/null || true; pids[$1]=""; }
stop_replica() { kill -TERM "${pids[$1]}"; wait "${pids[$1]}" 2>/dev/null || true; pids[$1]=""; }

start_replica 0
start_replica 1
start_replica 2
urls="http://127.0.0.1:${ports[0]},http://127.0.0.1:${ports[1]},http://127.0.0.1:${ports[2]}"
"$LOADGEN" --urls "$urls" --pg "$(pg_conninfo)" --orgs "$orgs" --writers "$writers" --duration "$seconds" \
  --acked "$work/acked" --summary "$work/summary.json" --read-every 50 >"$work/loadgen.log" 2>&1 &
loadgen_pid=$!

# Kill every replica once, mid-run (SIGKILL: in-flight transactions die with their connections).
step=$((seconds / 6 > 0 ? seconds / 6 : 1))
for i in 1 2 0; do
  sleep "$step"; kill9_replica "$i"; sleep 1; start_replica "$i"
done
wait "$loadgen_pid" || { echo "loadgen failed"; cat "$work/loadgen.log"; exit 1; }
loadgen_pid=""
cat "$work/loadgen.log"

acked=$(wc -l <"$work/acked")
[ "$acked" -gt 0 ] || { echo "nothing was acknowledged"; exit 1; }
psql_run "CREATE TABLE e2e_acked (org text, idem text, seq bigint, hash text)"
as_pg_owner "$(pg_bin_dir)/psql" -X -q -d "$(pg_conninfo)" -c "\\copy e2e_acked FROM '$work/acked' WITH (FORMAT text, DELIMITER ' ')"

fail=0
check() {  # DESCRIPTION SQL (must return 0)
  local got
  got="$(psql_run "$2")"
  if [ "$got" != 0 ]; then echo "FAIL: $1: $got"; fail=1; else echo "ok: $1"; fi
}
check "acknowledged entries missing or changed" \
  "SELECT count(*) FROM e2e_acked a LEFT JOIN audit_entries e ON e.org = a.org AND e.idem_key = a.idem
     AND e.seq = a.seq AND encode(e.entry_hash, 'hex') = a.hash WHERE e.seq IS NULL"
check "acknowledgements for one idempotency key with different entries" \
  "SELECT count(*) FROM (SELECT org, idem FROM e2e_acked GROUP BY org, idem HAVING count(DISTINCT (seq, hash)) > 1) d"
check "stored entries never acknowledged" \
  "SELECT count(*) FROM audit_entries e WHERE NOT EXISTS (SELECT 1 FROM e2e_acked a WHERE a.org = e.org AND a.idem = e.idem_key)"
check "organisations with a seq gap" \
  "SELECT count(*) FROM (SELECT org FROM audit_entries GROUP BY org HAVING count(*) <> max(seq) OR min(seq) <> 1) g"
check "chain heads that disagree with their entries" \
  "SELECT count(*) FROM audit_heads h WHERE next_seq - 1 <> (SELECT count(*) FROM audit_entries e WHERE e.org = h.org)"
echo "acknowledged: $acked; stored: $(psql_run 'SELECT count(*) FROM audit_entries'); organisations: $(psql_run 'SELECT count(*) FROM audit_heads')"

org_list="$(psql_run "SELECT org FROM audit_heads ORDER BY org")"
for i in 0 1 2; do stop_replica "$i"; done
# One more checkpoint of every chain, then verify each against the checkpoints (PostgreSQL and files).
verified=0
for org in $org_list; do
  "$GOVERN" audit checkpoint --org "$org" "${common[@]}" >/dev/null 2>>"$work/cli.log"
  if out="$("$GOVERN" audit verify --org "$org" "${common[@]}" 2>&1)"; then
    verified=$((verified + 1))
    [ "$verified" = 1 ] && echo "$out"
  else
    echo "FAIL: verify $org: $out"; fail=1
  fi
done
echo "verify: $verified of $orgs organisations verified; $(ls "$data/audit/checkpoints" | wc -l) with checkpoint files"
[ "$verified" = "$orgs" ] || { echo "FAIL: not every organisation verified"; fail=1; }
[ "$fail" = 0 ] && echo "PASS"
exit "$fail"
