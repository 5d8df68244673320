#!/usr/bin/env bash
# The routes file reloaded without a restart (src/services/gateway/routes_reload.h): `govern serve gateway`
# in front of the model stub, with polling off (gateway.routes_reload_interval=0s) so that only SIGHUP
# reloads. A model added to the file answers after SIGHUP, with the process still the same; a broken file
# sent with SIGHUP is logged and the routes stay; SIGTERM still stops it cleanly.
# Expects $GOVERN and $MODEL_STUB (ctest sets them). Needs curl.
set -euo pipefail
: "${GOVERN:?GOVERN must point at the govern binary}"
: "${MODEL_STUB:?MODEL_STUB must point at the model_stub binary}"
work="$(mktemp -d /tmp/govern-gateway-reload-e2e-XXXXXX)"
serve_pid=""
stub_pid=""
cleanup() {
  for p in "$serve_pid" "$stub_pid"; do
    if [ -n "$p" ]; then kill -KILL "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log "$work"/*.out "$work"/*.err; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; } >&2; done; exit 1; }

"$MODEL_STUB" --listen 127.0.0.1:0 >"$work/stub.out" 2>"$work/stub.err" &
stub_pid=$!
for _ in $(seq 1 100); do grep -q '^listening ' "$work/stub.out" 2>/dev/null && break; sleep 0.05; done
stub_port="$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$work/stub.out")"
[ -n "$stub_port" ] || fail "the model stub did not start"

# routes MODEL...: a routes file routing each model to the stub, written as a new file renamed over the old.
routes() {
  local r="" m
  for m in "$@"; do r="$r${r:+,}{\"model\": \"$m\", \"base_url\": \"http://127.0.0.1:$stub_port\"}"; done
  printf '{"routes": [%s], "keys": [{"key": "gvg_reload_e2e", "org": "acme"}]}\n' "$r" >"$work/routes.json.new"
  mv "$work/routes.json.new" "$work/routes.json"
}
routes gpt-one
"$GOVERN" --data-dir "$work/var" serve gateway --set gateway.listen=127.0.0.1:0 \
  --set "gateway.routes_file=$work/routes.json" --set gateway.routes_reload_interval=0s \
  >"$work/serve.out" 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 1 300); do
  grep -q "is up" "$work/serve.out" 2>/dev/null && break
  kill -0 "$serve_pid" 2>/dev/null || fail "govern serve gateway exited at start"
  sleep 0.05
done
port="$(awk '$1 == "gateway" {n = split($3, a, ":"); print a[n]}' "$work/serve.out")"
[ -n "$port" ] || fail "govern serve gateway did not come up"

chat() {  # chat MODEL: prints the status
  curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/chat/completions" \
    -H 'Authorization: Bearer gvg_reload_e2e' -H 'Content-Type: application/json' \
    -d "{\"model\": \"$1\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}"
}
[ "$(chat gpt-one)" = 200 ] || fail "gpt-one before the reload"
[ "$(chat gpt-two)" = 404 ] || fail "gpt-two before the reload"

routes gpt-one gpt-two
kill -HUP "$serve_pid"
ok=""
for _ in $(seq 1 200); do
  [ "$(chat gpt-two)" = 200 ] && { ok=1; break; }
  kill -0 "$serve_pid" 2>/dev/null || fail "SIGHUP stopped the gateway"
  sleep 0.05
done
[ -n "$ok" ] || fail "gpt-two does not answer after SIGHUP"
grep -q "routes file reloaded" "$work/serve.log" || fail "no reload in the log"

# A broken file: logged, the routes stay.
printf '{"routes": [{"model": "gpt-three"' >"$work/routes.json.new"
mv "$work/routes.json.new" "$work/routes.json"
kill -HUP "$serve_pid"
for _ in $(seq 1 200); do grep -q "routes file not reloaded" "$work/serve.log" && break; sleep 0.05; done
grep -q "routes file not reloaded" "$work/serve.log" || fail "the broken file was not reported"
[ "$(chat gpt-two)" = 200 ] || fail "gpt-two after a broken file"
[ "$(chat gpt-one)" = 200 ] || fail "gpt-one after a broken file"

kill -TERM "$serve_pid"
rc=0
wait "$serve_pid" || rc=$?
serve_pid=""
[ "$rc" = 0 ] || fail "govern serve gateway exited $rc on SIGTERM"
echo "PASS: the routes file reloads on SIGHUP; a broken one keeps the routes"
