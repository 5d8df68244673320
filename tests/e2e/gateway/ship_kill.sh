#!/usr/bin/env bash
# Usage records reach telemetry exactly once across gateway crashes (issue 9): `govern serve telemetry`
# (real intake, WAL, ingest, its private PostgreSQL), the model stub, and the gateway (gateway_proxy, usage
# records durable before each answer, shipped by its usage shipper). Eight callers load the gateway while it
# is killed with SIGKILL three times (once by itself between intake's 200 and its cursor update) and
# restarted on the same port; then telemetry's query API must hold exactly one usage event for every
# request the client saw completed, none twice, and intake must have seen the re-sent batch.
# Expects $GOVERN, $MODEL_STUB and $GATEWAY_PROXY (ctest sets them). Needs node (no npm packages).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
: "${GOVERN:?GOVERN must point at the govern binary}"
: "${MODEL_STUB:?MODEL_STUB must point at the model_stub binary}"
: "${GATEWAY_PROXY:?GATEWAY_PROXY must point at the gateway_proxy binary}"
GOVERN="$(realpath "$GOVERN")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d /tmp/govern-gateway-ship-e2e-XXXXXX)"
chmod 755 "$work"  # the private cluster runs as the postgres user when we are root
data="$work/var"
serve_pid=""
stub_pid=""
gw_pid=""
load_pid=""
cleanup() {
  for p in "$load_pid" "$gw_pid" "$stub_pid"; do
    if [ -n "$p" ]; then kill -KILL "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; fi
  done
  if [ -n "$serve_pid" ]; then kill -TERM "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  pg_stop_private "$data"
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log "$work"/*.out "$work"/*.err; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; } >&2; done; exit 1; }
g() { "$GOVERN" --data-dir "$data" "$@"; }

# Telemetry, with an ingest key for the gateway and a query key for the check.
g telemetry keys create --org ops --name gateway >"$work/ingest.key" 2>>"$work/keys.log" || fail "keys create"
qkey="$(g telemetry keys create --org ops --scope query 2>>"$work/keys.log")" || fail "keys create query"
"$GOVERN" --data-dir "$data" serve telemetry --set telemetry.listen=127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 1 600); do
  grep -q "is up" "$work/serve.out" 2>/dev/null && break
  kill -0 "$serve_pid" 2>/dev/null || break
  sleep 0.1
done
tport="$(awk '$1 == "telemetry" {n = split($3, a, ":"); print a[n]}' "$work/serve.out")"
[ -n "$tport" ] || fail "govern serve telemetry did not come up"
endpoint="http://127.0.0.1:$tport"

"$MODEL_STUB" --listen 127.0.0.1:0 >"$work/stub.out" 2>"$work/stub.err" &
stub_pid=$!
for _ in $(seq 1 100); do grep -q '^listening ' "$work/stub.out" 2>/dev/null && break; sleep 0.05; done
stub_port="$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$work/stub.out")"
[ -n "$stub_port" ] || fail "the model stub did not start"

cat >"$work/gateway.json" <<JSON
{
  "routes": [{"model": "gpt-stub", "base_url": "http://127.0.0.1:$stub_port", "format": "openai"}],
  "keys": [{"key": "gvg_ship_e2e", "org": "acme"}],
  "prices": {"gpt-stub": {"input": 1.0, "output": 2.0}},
  "wal_dir": "$work/usage",
  "usage_durable_before_response": true,
  "ship": {"endpoint": "$endpoint", "key_file": "$work/ingest.key", "batch_events": 100, "interval_ms": 20,
           "max_backoff_ms": 500}
}
JSON
# start_gateway LISTEN [FLAGS...]: sets gw_pid and gw_port.
start_gateway() {
  local listen="$1"; shift
  : >"$work/gateway.out"
  "$GATEWAY_PROXY" --config "$work/gateway.json" --listen "$listen" --workers 2 "$@" >"$work/gateway.out" 2>>"$work/gateway.err" &
  gw_pid=$!
  for _ in $(seq 1 200); do
    grep -q '^listening ' "$work/gateway.out" 2>/dev/null && break
    kill -0 "$gw_pid" 2>/dev/null || fail "the gateway exited at start"
    sleep 0.02
  done
  gw_port="$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$work/gateway.out")"
  [ -n "$gw_port" ] || fail "the gateway did not start"
}
# Round 1: the gateway SIGKILLs itself after intake's 200 for its 5th usage batch, before its cursor moves
# (so that batch is certainly sent twice); rounds 2 and 3: kill -9 from outside, wherever it is.
start_gateway 127.0.0.1:0 --ship-kill-after-batches 5
node "$here/ship_load.mjs" load "$gw_port" "$work/completed.txt" "$work/stop" >"$work/load.out" 2>"$work/load.err" &
load_pid=$!
for round in 1 2 3; do
  if [ "$round" -eq 1 ]; then
    rc=0
    wait "$gw_pid" || rc=$?
    [ "$rc" -eq 137 ] || fail "the gateway exited $rc in round 1, want 137 (SIGKILL after a batch)"
  else
    sleep 1
    kill -KILL "$gw_pid"
    wait "$gw_pid" 2>/dev/null || true
  fi
  echo "round $round: gateway killed with $(wc -l <"$work/completed.txt") requests completed so far"
  start_gateway "127.0.0.1:$gw_port"
done
sleep 1
touch "$work/stop"
wait "$load_pid" || fail "the load client failed"
load_pid=""
cat "$work/load.out"

# The last gateway ships what is left (the killed ones' unshipped records included, from the cursor).
node "$here/ship_load.mjs" verify "$endpoint" "$qkey" "$work/completed.txt" 60 >"$work/verify.out" 2>&1 ||
  fail "verify: $(cat "$work/verify.out")"
cat "$work/verify.out"
# Intake really took a batch twice (round 1's, at least): more events accepted than stored.
stored="$(sed -n 's/^telemetry: \([0-9]*\) usage events.*/\1/p' "$work/verify.out")"
accepted="$(curl -s "$endpoint/metrics" | awk '/^telemetry_intake_events_accepted_total/ {print $2}')"
[ -n "$accepted" ] && [ -n "$stored" ] || fail "no intake metrics"
[ "${accepted%.*}" -gt "$stored" ] || fail "intake accepted $accepted events for $stored stored: nothing was re-sent"
echo "ok: exactly one usage event per completed request across 3 gateway kills; intake accepted $accepted events for $stored stored (re-sends deduplicated)"
