#!/usr/bin/env bash
# Interop test with real OTLP senders: the OpenTelemetry JS log exporters (JSON and protobuf+gzip)
# send logs to `govern serve telemetry` with a key from `govern telemetry keys create`; then
# the query API must return every log intact, once (and nothing to another organisation), and
# `govern telemetry wal inspect --events` must show them in the WAL. Expects $GOVERN (ctest sets it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
: "${GOVERN:?GOVERN must point at the govern binary}"
GOVERN="$(realpath "$GOVERN")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -d node_modules/@opentelemetry/sdk-logs ]; then
  npm ci --no-audit --no-fund
fi
work="$(mktemp -d /tmp/govern-telemetry-e2e-XXXXXX)"
chmod 755 "$work"  # the private cluster runs as the postgres user when we are root
data="$work/var"
serve_pid=""
cleanup() {
  if [ -n "$serve_pid" ]; then kill -TERM "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  pg_stop_private "$data"
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log "$work"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; } >&2; done; exit 1; }

g() { "$GOVERN" --data-dir "$data" "$@"; }

key="$(g telemetry keys create --org acme --name e2e 2>>"$work/keys.log")" || fail "keys create"
revoked="$(g telemetry keys create --org acme --name to-revoke 2>>"$work/keys.log")" || fail "keys create"
revoked_id="$(echo "$revoked" | cut -c5-16)"
g telemetry keys revoke "$revoked_id" >>"$work/keys.out" 2>>"$work/keys.log" || fail "keys revoke"
g telemetry keys list --org acme >"$work/list.out" 2>>"$work/keys.log" || fail "keys list"
grep -q "$revoked_id .*acme" "$work/list.out" || fail "keys list lacks the revoked key"
if grep -q "${key:17}" "$work/list.out"; then fail "keys list prints a secret"; fi

"$GOVERN" --data-dir "$data" serve telemetry --set telemetry.listen=127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 1 600); do
  grep -q "is up" "$work/serve.out" 2>/dev/null && break
  kill -0 "$serve_pid" 2>/dev/null || break
  sleep 0.1
done
port="$(awk '$1 == "telemetry" {n = split($3, a, ":"); print a[n]}' "$work/serve.out")"
[ -n "$port" ] || fail "govern serve telemetry did not come up"

# While the service runs, the WAL is locked: inspect says so and exits 1.
rc=0
g telemetry wal inspect >"$work/inspect-busy.out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "wal inspect while serving exited $rc, want 1"
grep -q "in use" "$work/inspect-busy.out" || fail "wal inspect while serving: $(cat "$work/inspect-busy.out")"

node send.mjs "http://127.0.0.1:$port" "$key" "$revoked" >"$work/sent.json" 2>"$work/send.log" || fail "send.mjs"

# Back through the query API (after ingest stores them), with a query key; another org sees nothing.
qkey="$(g telemetry keys create --org acme --scope query 2>>"$work/keys.log")" || fail "keys create query"
okey="$(g telemetry keys create --org other --scope query 2>>"$work/keys.log")" || fail "keys create other"
node verify_query.mjs "http://127.0.0.1:$port" "$work/sent.json" "$qkey" "$okey" >"$work/query.out" 2>&1 ||
  fail "verify_query.mjs: $(cat "$work/query.out")"
cat "$work/query.out"

kill -TERM "$serve_pid"
wait "$serve_pid" || fail "govern serve telemetry exited $? on SIGTERM"
serve_pid=""

g telemetry wal inspect --events >"$work/wal.txt" 2>"$work/inspect.log" || fail "wal inspect"
node verify.mjs "$work/sent.json" "$work/wal.txt" acme || fail "verify.mjs"
