#!/usr/bin/env bash
# e2e_auth_trust: `govern serve auth` on its private PostgreSQL; tokens from it checked by
# auth_trust_check (Checker + TrustRefresher, as every other service would). Needs node (fetch only, no
# packages). Expects $GOVERN and $TRUST_CHECK (ctest sets them).
set -euo pipefail
: "${GOVERN:?GOVERN must point at the govern binary}"
: "${TRUST_CHECK:?TRUST_CHECK must point at auth_trust_check}"
GOVERN="$(realpath "$GOVERN")"
TRUST_CHECK="$(realpath "$TRUST_CHECK")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d /tmp/govern-auth-trust-e2e-XXXXXX)"
chmod 755 "$work"  # the private cluster runs as the postgres user when we are root
data="$work/var"
serve_pid=""
cleanup() {
  if [ -n "$serve_pid" ]; then kill -TERM "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  pg_ctl_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/pg_ctl"
  if [ -f "$data/postgres/postmaster.pid" ]; then
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$pg_ctl_bin" -D "$data/postgres" -m immediate stop || true
    else "$pg_ctl_bin" -D "$data/postgres" -m immediate stop || true; fi
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log "$work"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -30 "$f"; } >&2; done; exit 1; }
port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
base="http://127.0.0.1:$port"
serve() {  # serve NAME EXTRA...
  local name="$1"
  shift
  "$GOVERN" --data-dir "$data" serve auth --set auth.listen="127.0.0.1:$port" --set auth.issuer="$base" "$@" \
    >"$work/$name.out" 2>"$work/$name.log" &
  serve_pid=$!
  for _ in $(seq 1 600); do
    grep -q "is up" "$work/$name.out" 2>/dev/null && break
    kill -0 "$serve_pid" 2>/dev/null || fail "govern serve auth ($name) exited"
    sleep 0.1
  done
  grep -q "is up" "$work/$name.out" || fail "govern serve auth ($name) did not come up"
}
stop() {
  kill -TERM "$serve_pid"
  wait "$serve_pid" || fail "govern serve auth exited $? on SIGTERM"
  serve_pid=""
}
serve published
admin="$("$GOVERN" --data-dir "$data" auth admin-token --name e2e 2>>"$work/cli.log" |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).admin_token))')"
[ -n "$admin" ] || fail "govern auth admin-token"
node "$here/trust.mjs" setup "$base" "$admin" "$TRUST_CHECK" "$work/state.json" || fail "trust steps (published) failed"
stop
# The same deployment switched to HS256 access tokens: a JWKS-only service cannot check new tokens,
# while tokens issued before the switch still pass.
serve internal --set auth.access_token_signing=internal
node "$here/trust.mjs" internal "$base" "$admin" "$TRUST_CHECK" "$work/state.json" || fail "trust steps (internal) failed"
stop
echo "e2e_auth_trust: ok"
