#!/usr/bin/env bash
# e2e_auth_trust: `govern serve auth` on its private PostgreSQL; tokens from it checked by
# auth_trust_check (Checker + TrustRefresher, as every other service would). Needs node (fetch only, no
# packages). Expects $GOVERN and $TRUST_CHECK (ctest sets them).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
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
  pg_stop_private "$data"
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log "$work"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -30 "$f"; } >&2; done; exit 1; }
port="$(free_port)"
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
ring="$data/auth/internal-ring.json"
# A short key schedule (a key signs 60 s; its successor is published 48 s ahead, so ~12 s after start),
# checked every 200 ms: the rotation and the rewritten ring file happen while the test runs.
serve internal --set auth.rotation.period=60s --set auth.rotation.publish_ahead=48s --set auth.rotation.check_every=200ms
admin="$("$GOVERN" --data-dir "$data" auth admin-token --name e2e 2>>"$work/cli.log" |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).admin_token))')"
[ -n "$admin" ] || fail "govern auth admin-token"
node "$here/trust.mjs" setup "$base" "$admin" "$TRUST_CHECK" "$work/state.json" "$ring" || fail "trust steps (internal) failed"
# A rotation tick whose ring file write fails (the path is now a non-empty directory, so the rename
# over it fails) logs the error, still reloads revocations, and writes the file on a later tick.
[ "$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).keys.length)' "$ring")" = 1 ] ||
  fail "the ring rotated before the stall step (setup took over ~10 s)"
rm -f "$ring"
mkdir -p "$ring/blocked"
for _ in $(seq 1 300); do
  grep -q 'writing the internal ring file failed' "$work/internal.log" && break
  sleep 0.1
done
grep -q 'writing the internal ring file failed' "$work/internal.log" || fail "the ring file write did not fail"
cat >"$work/revoke.sh" <<EOF
set -euo pipefail
psql="\$(ls /usr/lib/postgresql/*/bin/psql | sort -V | tail -1)"
conn="host=$data/postgres port=\$(cat "$data/postgres/govern.port") user=postgres dbname=govern"
sql="INSERT INTO auth_revocations (kind, id, expires_at) VALUES ('jti', '\$1', \$2)"
if [ "\$(id -u)" -eq 0 ]; then runuser -u postgres -- "\$psql" -X -q -v ON_ERROR_STOP=1 -d "\$conn" -c "\$sql"
else "\$psql" -X -q -v ON_ERROR_STOP=1 -d "\$conn" -c "\$sql"; fi
EOF
REVOKE_SCRIPT="$work/revoke.sh" node "$here/trust.mjs" stalled "$base" "$admin" "$TRUST_CHECK" "$work/state.json" "$ring" ||
  fail "trust steps (stalled) failed"
rm -rf "$ring"
for _ in $(seq 1 100); do
  [ -f "$ring" ] && break
  sleep 0.1
done
[ -f "$ring" ] || fail "the ring file was not written again once writable"
node "$here/trust.mjs" rotated "$base" "$admin" "$TRUST_CHECK" "$work/state.json" "$ring" || fail "trust steps (rotated) failed"
grep -q 'msg="internal ring file written".*keys=1' "$work/internal.log" || fail "no ring file written at start"
grep -q 'msg="internal ring file written".*keys=2' "$work/internal.log" || fail "the rotation did not rewrite the ring file"
stop
# The same deployment switched to signatures: JWKS-only services check new tokens, earlier HS256 ones
# still pass where the ring is loaded.
serve published --set auth.access_token_signing=published
node "$here/trust.mjs" published "$base" "$admin" "$TRUST_CHECK" "$work/state.json" "$ring" || fail "trust steps (published) failed"
stop
echo "e2e_auth_trust: ok"
