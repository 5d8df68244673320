#!/usr/bin/env bash
# `govern serve auth` with its private PostgreSQL; limits.mjs (node, no npm packages) drives sign-ins and
# token requests from several loopback source addresses and checks the per-address limits. Expects $GOVERN.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
: "${GOVERN:?GOVERN must point at the govern binary}"
GOVERN="$(realpath "$GOVERN")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d /tmp/govern-auth-limits-e2e-XXXXXX)"
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
base="http://127.0.0.1:$port"
# The database limits (per account, per address over 15 minutes) are set high so that only the
# in-memory per-address limits under test can answer 429.
"$GOVERN" --data-dir "$data" serve auth --set auth.listen="127.0.0.1:$port" --set auth.issuer="$base" \
  --set auth.limits.signin_burst=3 --set auth.limits.signin_per_minute=1 \
  --set auth.limits.token_burst=3 --set auth.limits.token_per_minute=1 \
  --set auth.rate_limit.account_failures=1000 --set auth.rate_limit.address_failures=1000 \
  --set auth.trusted_proxies=127.0.0.3/32 >"$work/serve.out" 2>"$work/serve.log" &
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
node "$here/limits.mjs" "$base" "$admin" || fail "limits steps failed"
# Each limit that tripped left a log line naming the address (127.0.0.2 for sign-in, 127.0.0.4 for token).
grep -q 'client address reached its limit.*127.0.0.2/32' "$work/serve.log" "$work/serve.out" || fail "no log line for the sign-in limit"
grep -q 'client address reached its limit.*127.0.0.4/32' "$work/serve.log" "$work/serve.out" || fail "no log line for the token limit"
kill -TERM "$serve_pid"
wait "$serve_pid" || fail "govern serve auth exited $? on SIGTERM"
serve_pid=""
echo "e2e_auth_limits: ok"
