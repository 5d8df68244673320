#!/usr/bin/env bash
# End to end: decision log -> DecisionShipper -> `govern serve telemetry` (real intake, WAL, ingest,
# PostgreSQL) -> GET /v1/query/events. The shipper dies twice mid-run (SIGKILL after intake's 200 and
# before its cursor moves; kill -9 from outside while it ships); every decision must be stored once.
# Expects $GOVERN and $TOOL (decision_ship_tool); ctest sets both.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
: "${GOVERN:?GOVERN must point at the govern binary}"
: "${TOOL:?TOOL must point at decision_ship_tool}"
GOVERN="$(realpath "$GOVERN")"
TOOL="$(realpath "$TOOL")"
work="$(mktemp -d /tmp/govern-decisions-e2e-XXXXXX)"
chmod 755 "$work"  # the private cluster runs as the postgres user when we are root
data="$work/var"
serve_pid=""
ship_pid=""
cleanup() {
  if [ -n "$ship_pid" ]; then kill -KILL "$ship_pid" 2>/dev/null || true; wait "$ship_pid" 2>/dev/null || true; fi
  if [ -n "$serve_pid" ]; then kill -TERM "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  pg_stop_private "$data"
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log "$work"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; } >&2; done; exit 1; }
g() { "$GOVERN" --data-dir "$data" "$@"; }

key="$(g telemetry keys create --org acme --name decisions 2>>"$work/keys.log")" || fail "keys create"
qkey="$(g telemetry keys create --org acme --scope query 2>>"$work/keys.log")" || fail "keys create query"

"$GOVERN" --data-dir "$data" serve telemetry --set telemetry.listen=127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 1 600); do
  grep -q "is up" "$work/serve.out" 2>/dev/null && break
  kill -0 "$serve_pid" 2>/dev/null || break
  sleep 0.1
done
port="$(awk '$1 == "telemetry" {n = split($3, a, ":"); print a[n]}' "$work/serve.out")"
[ -n "$port" ] || fail "govern serve telemetry did not come up"
endpoint="http://127.0.0.1:$port"
dir="$work/decisions"
ids="$work/ids.txt"

# 600 decisions, durable.
"$TOOL" record --dir "$dir" --count 600 --mode durable --ids "$ids" >"$work/record1.out" 2>"$work/record1.log" ||
  fail "record"

# 1. The shipper SIGKILLs itself after intake's 200 for its third batch, before the cursor moves.
rc=0
"$TOOL" ship --dir "$dir" --endpoint "$endpoint" --key "$key" --batch 50 --kill-after-batches 3 \
  >"$work/ship1.out" 2>"$work/ship1.log" || rc=$?
[ "$rc" -eq 137 ] || fail "the first shipper exited $rc, want 137 (SIGKILL)"
grep -q "acknowledged up to 150" "$work/ship1.out" || fail "the first shipper did not get its third batch through"

# 2. Ship slowly (a pause after each 200, before the cursor update) and kill -9 from outside mid-run.
"$TOOL" ship --dir "$dir" --endpoint "$endpoint" --key "$key" --batch 50 --slow-ms 300 \
  >"$work/ship2.out" 2>"$work/ship2.log" &
ship_pid=$!
for _ in $(seq 1 600); do
  [ "$(grep -c acknowledged "$work/ship2.out" 2>/dev/null || true)" -ge 3 ] && break
  kill -0 "$ship_pid" 2>/dev/null || break
  sleep 0.05
done
[ "$(grep -c acknowledged "$work/ship2.out")" -ge 3 ] || fail "the second shipper made no progress"
kill -KILL "$ship_pid"
rc=0
wait "$ship_pid" || rc=$?
ship_pid=""
[ "$rc" -eq 137 ] || fail "the second shipper exited $rc, want 137"
# The second run started where the first one's cursor was: its first batch was the one already stored.
head -1 "$work/ship2.out" | grep -q "acknowledged up to 150" || fail "the second shipper did not re-send batch 3"

# 3. More decisions (buffered mode), then ship everything.
"$TOOL" record --dir "$dir" --count 250 --mode buffered --ids "$ids" >"$work/record2.out" 2>"$work/record2.log" ||
  fail "record (buffered)"
"$TOOL" ship --dir "$dir" --endpoint "$endpoint" --key "$key" --batch 50 >"$work/ship3.out" 2>"$work/ship3.log" ||
  fail "ship to the end"

[ "$(wc -l <"$ids")" -eq 850 ] || fail "ids file has $(wc -l <"$ids") lines"
"$TOOL" verify --endpoint "$endpoint" --key "$qkey" --ids "$ids" --timeout-s 120 >"$work/verify.out" 2>&1 ||
  fail "verify: $(cat "$work/verify.out")"
cat "$work/verify.out"

# Intake really took batches twice (the re-sends after each kill): more events accepted than stored.
accepted="$(curl -s "$endpoint/metrics" | awk '/^telemetry_intake_events_accepted_total/ {print $2}')"
[ -n "$accepted" ] || fail "no intake metrics"
[ "${accepted%.*}" -gt 850 ] || fail "intake accepted only $accepted events: nothing was re-sent"
echo "ok: 850 decisions stored exactly once after two shipper kills; intake accepted $accepted events (re-sends deduplicated)"
