#!/usr/bin/env bash
# Passkeys through the auth service's own sign-in page: `govern serve auth` on its private PostgreSQL,
# Debian's Chromium headless with a virtual authenticator (signin.mjs says what is checked).
# Expects $GOVERN (ctest sets it) and /usr/bin/chromium.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
: "${GOVERN:?GOVERN must point at the govern binary}"
GOVERN="$(realpath "$GOVERN")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
chromium="${CHROMIUM:-/usr/bin/chromium}"
[ -x "$chromium" ] || { echo "chromium not found at $chromium" >&2; exit 1; }
if [ ! -d node_modules/playwright-core ]; then
  npm ci --no-audit --no-fund
fi
work="$(mktemp -d /tmp/govern-passkeys-signin-XXXXXX)"
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
# http://localhost is a secure context and "localhost" a valid RP ID (an IP address is not).
"$GOVERN" --data-dir "$data" serve auth --set auth.listen="127.0.0.1:$port" --set auth.issuer="http://localhost:$port" \
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
CHROMIUM="$chromium" SIGNIN_DATA_DIR="$data" node signin.mjs "http://localhost:$port" "$admin" || fail "passkey sign-in steps failed"
kill -TERM "$serve_pid"
wait "$serve_pid" || fail "govern serve auth exited $? on SIGTERM"
serve_pid=""
echo "e2e_passkeys_signin: ok"
