#!/usr/bin/env bash
# `govern serve auth` with its private PostgreSQL against outside OAuth/OIDC clients: openid-client and
# jose (npm; interop.mjs says what is checked). An admin token comes from `govern auth admin-token`,
# everything else goes over HTTP. Expects $GOVERN (ctest sets it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
: "${GOVERN:?GOVERN must point at the govern binary}"
GOVERN="$(realpath "$GOVERN")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -d node_modules/openid-client ] || [ ! -d node_modules/jose ]; then
  npm ci --no-audit --no-fund
fi
work="$(mktemp -d /tmp/govern-auth-oidc-e2e-XXXXXX)"
chmod 755 "$work"  # the private cluster runs as the postgres user when we are root
data="$work/var"
updata="$work/upstream"  # a second govern serve auth: the organisation's outside OIDC provider
serve_pid=""
up_pid=""
cleanup() {
  for p in "$serve_pid" "$up_pid"; do
    if [ -n "$p" ]; then kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; fi
  done
  pg_stop_private "$data" "$updata"
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log "$work"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -30 "$f"; } >&2; done; exit 1; }

# serve NAME DATA PORT EXTRA...: starts govern serve auth; sets started_pid.
serve() {
  local name="$1" dir="$2" p="$3"
  shift 3
  "$GOVERN" --data-dir "$dir" serve auth --set auth.listen="127.0.0.1:$p" --set auth.issuer="http://127.0.0.1:$p" \
    "$@" >"$work/$name.out" 2>"$work/$name.log" &
  started_pid=$!
  for _ in $(seq 1 600); do
    grep -q "is up" "$work/$name.out" 2>/dev/null && break
    kill -0 "$started_pid" 2>/dev/null || fail "govern serve auth ($name) exited"
    sleep 0.1
  done
  grep -q "is up" "$work/$name.out" || fail "govern serve auth ($name) did not come up"
}
admin_token() {
  "$GOVERN" --data-dir "$1" auth admin-token --name e2e 2>>"$work/cli.log" |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).admin_token))'
}
port="$(free_port)"
base="http://127.0.0.1:$port"
serve serve "$data" "$port" --set auth.rate_limit.account_failures=3 --set auth.rotation.check_every=300ms
serve_pid=$started_pid
upport="$(free_port)"
serve upstream "$updata" "$upport"
up_pid=$started_pid
admin="$(admin_token "$data")"
upadmin="$(admin_token "$updata")"
[ -n "$admin" ] && [ -n "$upadmin" ] || fail "govern auth admin-token"
node interop.mjs "$base" "$admin" "http://127.0.0.1:$upport" "$upadmin" || fail "interop steps failed"
# The timer (key schedule, revocation reload, sweep of expired rows) ran every 300 ms meanwhile.
if grep -q "failed" "$work/serve.log"; then fail "the auth service logged a failure"; fi
kill -TERM "$serve_pid" "$up_pid"
wait "$serve_pid" || fail "govern serve auth exited $? on SIGTERM"
wait "$up_pid" || fail "the upstream govern serve auth exited $? on SIGTERM"
serve_pid=""
up_pid=""
echo "e2e_auth_oidc: ok"
