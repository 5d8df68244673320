#!/usr/bin/env bash
# The operator's telemetry commands against a real service and its private PostgreSQL:
# `govern telemetry ingest status|replay|skip`, `export`, `dlp-policy get|set|delete`, and their errors.
# Expects $GOVERN, $LOADGEN and $PARQUET_TOOL (ctest sets them).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
: "${GOVERN:?}" "${LOADGEN:?}" "${PARQUET_TOOL:?}"
work="$(mktemp -d /tmp/govern-tcli-XXXXXX)"
chmod 755 "$work"  # the private cluster runs as the postgres user when we are root
data="$work/data"
# Below the kernel's ephemeral range (32768-60999), so no bind(0) or outgoing connection of a
# test running beside this one can take the port between the pick and govern's listen.
port=$((20000 + RANDOM % 12000))
server_pid=""
failures=0
checks=0
cleanup() {
  local rc=$?
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null || true
  [ -f "$data/postgres/postmaster.pid" ] && kill -QUIT "$(head -1 "$data/postgres/postmaster.pid")" 2>/dev/null || true
  sleep 0.5
  [ $rc -ne 0 ] && tail -30 "$work/govern.log" 2>/dev/null || true
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# Compaction every second: the events below are from an old hour, so they move to the archive at once.
g() { "$GOVERN" --data-dir "$data" --set "telemetry.listen=127.0.0.1:$port" --set telemetry.compaction.interval=1s "$@"; }
# expect DESCRIPTION EXIT_CODE SUBSTRING -- command...
expect() {
  local desc="$1" want_rc="$2" want="$3"
  shift 3
  checks=$((checks + 1))
  local out rc=0
  out="$("$@" 2>&1)" || rc=$?
  if [ "$rc" != "$want_rc" ]; then fail "$desc: exit $rc, want $want_rc; output: $out"
  elif [[ "$out" != *"$want"* ]]; then fail "$desc: output lacks '$want'; got: $out"; fi
}
start() {
  # Not through g(): a backgrounded function is a subshell, and $! would be the subshell, not govern.
  "$GOVERN" --data-dir "$data" --set "telemetry.listen=127.0.0.1:$port" --set telemetry.compaction.interval=1s \
    serve telemetry >>"$work/govern.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "govern did not listen"; exit 1
}
stop() { kill -TERM "$server_pid"; wait "$server_pid" || true; server_pid=""; }
rows() { psql_in "$data" "$1"; }
# Events stored, counting each copy: rows in PostgreSQL plus rows of manifest-listed archive files.
stored_copies() {
  rows "SELECT (SELECT count(*) FROM telemetry_events) + (SELECT coalesce(sum(rows), 0) FROM telemetry_archive_files)"
}
# Waits until `stored_copies` is $1 and PostgreSQL holds no row (everything archived).
wait_archived() {
  for _ in $(seq 1 150); do
    [ "$(stored_copies)" = "$1" ] && [ "$(rows 'SELECT count(*) FROM telemetry_events')" = 0 ] && return 0
    sleep 0.2
  done
  return 1
}

key="$(g telemetry keys create --org acme 2>/dev/null)"
start
# 2,000 events inside the hour 2026-01-01T10 (UTC), so export has a known hour to write.
hour_ns=1767261600000000000
"$LOADGEN" --url "http://127.0.0.1:$port" --org acme --key "$key" --connections 1 --batch 200 \
  --events 2000 --duration 60 --start-unix-nanos "$((hour_ns + 60000000000))" >"$work/loadgen.log" 2>&1
checks=$((checks + 1))
wait_archived 2000 || fail "2000 events stored and archived, got $(stored_copies) copies"
expect "ingest status while serving" 1 "in use" g telemetry ingest status
stop

expect "ingest status" 0 "unstored records 0" g telemetry ingest status
next="$(g telemetry ingest status 2>/dev/null | sed -n 's/.*next \([0-9]*\).*/\1/p')"
expect "skip where the cursor is not" 1 "only the record it is stopped on" g telemetry ingest skip --seq 1
expect "replay before the WAL" 1 "must lie between" g telemetry ingest replay --from 0
expect "replay from the start" 0 "from $next to 1" g telemetry ingest replay --from 1
expect "status after replay" 0 "next 1 " g telemetry ingest status
start
for _ in $(seq 1 100); do
  [ "$(rows "SELECT min(next_seq) FROM telemetry_ingest_cursor WHERE name = 'ingest' OR name LIKE 'ingest:%'")" = "$next" ] && break
  sleep 0.2
done
# The replay put every archived event back into PostgreSQL; compaction deletes the repeats rather than
# archiving them twice.
checks=$((checks + 1))
wait_archived 2000 || fail "a replay stores nothing twice: $(stored_copies) copies"
stop  # the private PostgreSQL stops with its last user
expect "replayed to the end" 0 "next $next " g telemetry ingest status

expect "export a bad hour" 1 "expected a UTC hour" g telemetry export --org acme --hour 2026-01-01T10:30 --out "$work/x.parquet"
expect "export" 0 "wrote" g telemetry export --org acme --hour 2026-01-01T10 --out "$work/h.parquet"
n="$("$PARQUET_TOOL" dump "$work/h.parquet" | sed -n 's/.*"num_rows":\([0-9]*\).*/\1/p' | head -1)"
checks=$((checks + 1))
[ "$n" = 2000 ] || fail "the exported hour holds $n rows, want 2000"
expect "export an empty hour" 0 "wrote" g telemetry export --org acme --hour 2026-01-01T11 --out "$work/e.parquet"

cat >"$work/policy.json" <<'JSON'
{"custom_rules": [{"id": "ticket", "pattern": "TCK-[0-9]{6}"}], "actions": {"email": "hash"}, "hash_key": "k3y"}
JSON
echo '{"custom_rules": [{"id": "bad", "pattern": "("}]}' >"$work/bad.json"
expect "no policy yet" 0 "no policy" g telemetry dlp-policy get --org acme
expect "set a bad policy" 1 "bad" g telemetry dlp-policy set --org acme "$work/bad.json"
expect "set a policy" 0 "ticket" g telemetry dlp-policy set --org acme "$work/policy.json"
expect "get it back without the key" 0 '"hash_key_set":true' g telemetry dlp-policy get --org acme
expect "delete it" 0 "deleted" g telemetry dlp-policy delete --org acme
expect "bad org name" 1 "" g telemetry dlp-policy get --org "Bad Org"

echo "$((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
