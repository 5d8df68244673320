#!/usr/bin/env bash
# Two gateway_proxy processes on one port (`--reuse-port`: SO_REUSEPORT on their listening sockets, as
# bench/gateway/streams runs them, one per core): the second binds the port the first took, the kernel
# spreads new connections over both, and each records the requests it answered in its own WAL. 40
# requests, each on a new connection: both processes must have answered some (all 40 on one would happen
# with probability 2^-39) and the two WALs must hold 40 records together.
# Expects $MODEL_STUB and $GATEWAY_PROXY (ctest sets them). Needs curl.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/proc.sh"
: "${MODEL_STUB:?MODEL_STUB must point at the model_stub binary}"
: "${GATEWAY_PROXY:?GATEWAY_PROXY must point at the gateway_proxy binary}"
work="$(mktemp -d /tmp/govern-gateway-reuseport-e2e-XXXXXX)"
pids=()
cleanup() {
  stop_started
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.out "$work"/*.err; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; } >&2; done; exit 1; }

start stub "$MODEL_STUB" --listen 127.0.0.1:0
stub_port="$started_port"
for g in a b; do
  cat >"$work/gateway-$g.json" <<JSON
{"routes": [{"model": "gpt-stub", "base_url": "http://127.0.0.1:$stub_port", "format": "openai", "api_key": "sk-up"}],
 "keys": [{"key": "gvg_e2e_key", "org": "acme"}],
 "wal_dir": "$work/usage-$g"}
JSON
done
start gateway-a "$GATEWAY_PROXY" --config "$work/gateway-a.json" --listen 127.0.0.1:0 --workers 1 --reuse-port
port="$started_port"
pid_a="$started_pid"
start gateway-b "$GATEWAY_PROXY" --config "$work/gateway-b.json" --listen "127.0.0.1:$port" --workers 1 --reuse-port
pid_b="$started_pid"
[ "$started_port" = "$port" ] || fail "gateway-b listens on $started_port, not $port"

for i in $(seq 1 40); do
  code="$(curl -s -o "$work/answer.json" -w '%{http_code}' "http://127.0.0.1:$port/v1/chat/completions" \
    -H 'Authorization: Bearer gvg_e2e_key' -H 'Content-Type: application/json' \
    -d '{"model": "gpt-stub", "messages": [{"role": "user", "content": "hello"}]}')"
  [ "$code" = 200 ] || fail "request $i answered $code: $(cat "$work/answer.json")"
done

# A clean stop flushes each WAL; records are JSON text inside the segments.
kill -TERM "$pid_a" "$pid_b"
wait "$pid_a" || fail "gateway-a did not stop cleanly"
wait "$pid_b" || fail "gateway-b did not stop cleanly"
# (grep finding nothing must count 0, not end the script under pipefail)
count() { find "$work/usage-$1" -maxdepth 1 -type f -exec cat {} + | { grep -ao '"request_id"' || true; } | wc -l; }
a="$(count a)"
b="$(count b)"
[ $((a + b)) -eq 40 ] || fail "expected 40 usage records in the two WALs, found $a + $b"
[ "$a" -gt 0 ] && [ "$b" -gt 0 ] || fail "one process answered every request ($a + $b): the port is not shared"
echo "ok - 40 requests over two gateway processes on one port: $a + $b"
