#!/usr/bin/env bash
# Gateway API keys made with the CLI (`govern gateway keys`, src/cli/gateway_cmd.h) against a running
# `govern serve gateway` with gateway.keys.enabled on the shared test PostgreSQL (ctest's pg fixture): a
# key created with the CLI calls a model (200), is listed, and once revoked is refused (401) within the
# reload interval (200ms here). Also: revoking with another organisation's --org is refused.
# Expects $GOVERN, $MODEL_STUB and $GOVERN_TEST_PG_DIR (ctest sets them). Needs curl.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
: "${GOVERN:?GOVERN must point at the govern binary}"
: "${MODEL_STUB:?MODEL_STUB must point at the model_stub binary}"
: "${GOVERN_TEST_PG_DIR:?GOVERN_TEST_PG_DIR must name the test PostgreSQL (the pg fixture)}"
psql="$(pg_bin_dir)/psql"
pg_port="$(sed -n 4p "$GOVERN_TEST_PG_DIR/postmaster.pid")"
pg_sock="$(sed -n 5p "$GOVERN_TEST_PG_DIR/postmaster.pid")"
db="govern_e2e_gateway_keys_$$"
work="$(mktemp -d /tmp/govern-gateway-keys-e2e-XXXXXX)"
serve_pid=""
stub_pid=""
cleanup() {
  for p in "$serve_pid" "$stub_pid"; do
    if [ -n "$p" ]; then kill -KILL "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; fi
  done
  "$psql" -h "$pg_sock" -p "$pg_port" -U postgres -d postgres -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log "$work"/*.out "$work"/*.err; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; } >&2; done; exit 1; }
"$psql" -h "$pg_sock" -p "$pg_port" -U postgres -d postgres -qc "CREATE DATABASE $db" >/dev/null
g() { "$GOVERN" --data-dir "$work/var" --set "database.url=host=$pg_sock port=$pg_port user=postgres dbname=$db" "$@"; }

"$MODEL_STUB" --listen 127.0.0.1:0 >"$work/stub.out" 2>"$work/stub.err" &
stub_pid=$!
for _ in $(seq 1 100); do grep -q '^listening ' "$work/stub.out" 2>/dev/null && break; sleep 0.05; done
stub_port="$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$work/stub.out")"
[ -n "$stub_port" ] || fail "the model stub did not start"
printf '{"routes": [{"model": "gpt-one", "base_url": "http://127.0.0.1:%s"}]}\n' "$stub_port" >"$work/routes.json"

# Made before the gateway ever ran: the CLI applies the gateway migrations itself.
key="$(g gateway keys create --org acme --name "e2e key" 2>"$work/create.err")" || fail "keys create"
[[ "$key" =~ ^gvg_[a-z2-7]{12}_[0-9a-f]{64}$ ]] || fail "keys create printed \"$key\""
key_id="${key:4:12}"
grep -q "shown only this once" "$work/create.err" || fail "keys create did not say the key is shown once"
g gateway keys list --org acme >"$work/list.out" 2>"$work/list.err" || fail "keys list"
grep -q "^$key_id  *acme  *invoke .*e2e key" "$work/list.out" || fail "the key is not listed"
grep -q "${key:17}" "$work/list.out" && fail "keys list shows the secret"

# The binary itself, not through g: a backgrounded function is a subshell, so $! would name the
# subshell and the cleanup's kill would leave the server running.
"$GOVERN" --data-dir "$work/var" --set "database.url=host=$pg_sock port=$pg_port user=postgres dbname=$db" \
  serve gateway --set gateway.listen=127.0.0.1:0 --set "gateway.routes_file=$work/routes.json" \
  --set gateway.keys.enabled=true --set gateway.keys.reload_interval=200ms \
  >"$work/serve.out" 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 1 300); do
  grep -q "is up" "$work/serve.out" 2>/dev/null && break
  kill -0 "$serve_pid" 2>/dev/null || fail "govern serve gateway exited at start"
  sleep 0.05
done
port="$(awk '$1 == "gateway" {n = split($3, a, ":"); print a[n]}' "$work/serve.out")"
[ -n "$port" ] || fail "govern serve gateway did not come up"
chat() {  # prints the status
  curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/chat/completions" \
    -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d '{"model": "gpt-one", "messages": [{"role": "user", "content": "hi"}]}'
}
[ "$(chat)" = 200 ] || fail "the CLI's key was refused"

# Another organisation's --org: refused, and the key still works.
if g gateway keys revoke --org other "$key_id" >"$work/wrong.out" 2>"$work/wrong.err"; then
  fail "revoke with another organisation succeeded"
fi
[ "$(chat)" = 200 ] || fail "the key stopped working after a refused revoke"

g gateway keys revoke --org acme "$key_id" >"$work/revoke.out" 2>"$work/revoke.err" || fail "keys revoke"
g gateway keys list >"$work/list2.out" 2>&1 || fail "keys list after revoke"
grep "^$key_id " "$work/list2.out" | grep -q " - " && fail "the revoked key is listed without a revocation time"
status=""
for _ in $(seq 1 200); do  # within the 200ms reload interval; bounded at 10s, not timed
  status="$(chat)"
  [ "$status" = 401 ] && break
  sleep 0.05
done
[ "$status" = 401 ] || fail "the revoked key still answers ($status)"
echo "PASS: a CLI-made gateway key answers, is listed without its secret, and is refused once revoked"
