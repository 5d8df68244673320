#!/usr/bin/env bash
# Single sign-on through npm `oidc-provider`: `govern serve auth` on its private PostgreSQL signs users
# of an organisation in through the provider (sso.mjs runs the provider and says what is checked).
# Expects $GOVERN (ctest sets it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
: "${GOVERN:?GOVERN must point at the govern binary}"
GOVERN="$(realpath "$GOVERN")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -d node_modules/oidc-provider ] || [ ! -d node_modules/jose ]; then
  npm ci --no-audit --no-fund
fi
work="$(mktemp -d /tmp/govern-auth-sso-e2e-XXXXXX)"
chmod 755 "$work"  # the private cluster runs as the postgres user when we are root
data="$work/var"
serve_pid=""
cleanup() {
  if [ -n "$serve_pid" ]; then kill -TERM "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  pg_stop_private "$data"
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log "$work"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -30 "$f"; } >&2; done; exit 1; }
port="$(free_port)"
"$GOVERN" --data-dir "$data" serve auth --set auth.listen="127.0.0.1:$port" --set auth.issuer="http://127.0.0.1:$port" \
  >"$work/serve.out" 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 1 600); do
  grep -q "is up" "$work/serve.out" 2>/dev/null && break
  kill -0 "$serve_pid" 2>/dev/null || fail "govern serve auth exited"
  sleep 0.1
done
grep -q "is up" "$work/serve.out" || fail "govern serve auth did not come up"
admin="$("$GOVERN" --data-dir "$data" auth admin-token --name e2e 2>>"$work/cli.log" |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).admin_token))')"
[ -n "$admin" ] || fail "govern auth admin-token"
node sso.mjs "http://127.0.0.1:$port" "$admin" || fail "single sign-on steps failed"
# Each refused answer is logged with its reason.
grep -q "outside ID token refused" "$work/serve.log" || fail "the refusals were not logged"
kill -TERM "$serve_pid"
wait "$serve_pid" || fail "govern serve auth exited $? on SIGTERM"
serve_pid=""
echo "e2e_auth_sso: ok"
