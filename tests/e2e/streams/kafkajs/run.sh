#!/usr/bin/env bash
# kafkajs 2.2.4 (npm, pinned by package-lock.json) against govern-streams-serve: flows.mjs on an open
# broker, then sasl.mjs (SASL PLAIN and OAUTHBEARER, ACLs) on a broker that requires SASL. Expects
# $STREAMS_SERVE and $STREAMS_TOKEN_TOOL (ctest sets them), node and npm; installs the locked package on
# first use.
set -euo pipefail
: "${STREAMS_SERVE:?STREAMS_SERVE must point at govern-streams-serve}"
: "${STREAMS_TOKEN_TOOL:?STREAMS_TOKEN_TOOL must point at streams_token_tool}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STREAMS_SERVE="$(realpath "$STREAMS_SERVE")"
TOOL="$(realpath "$STREAMS_TOKEN_TOOL")"
cd "$here"
if [ ! -d node_modules/kafkajs ]; then
  npm ci --no-audit --no-fund
fi
work="$(mktemp -d /tmp/govern-streams-kafkajs-XXXXXX)"
broker_pid=""
cleanup() {
  [ -n "$broker_pid" ] && kill "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$STREAMS_SERVE" --listen "127.0.0.1:$port" --data-dir "$work/data" --group-initial-delay-ms 500 \
  >"$work/broker.log" 2>&1 &
broker_pid=$!
for _ in $(seq 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
  sleep 0.05
done
if ! node flows.mjs "127.0.0.1:$port"; then
  echo "--- broker log (tail)" >&2
  tail -30 "$work/broker.log" >&2
  exit 1
fi
kill "$broker_pid" && wait "$broker_pid" 2>/dev/null || true
broker_pid=""

# SASL required: PLAIN users alice and bob, OAUTHBEARER tokens of a test key ring, ACLs.
ISS="https://auth.streams.test"
mkdir "$work/keys"
"$TOOL" keygen "$work/keys"
printf 'alice %s\nbob %s\n' "$("$TOOL" users alice-pw)" "$("$TOOL" users bob-pw)" >"$work/users"
cat >"$work/acl" <<'EOT'
allow User:alice all topic:*
allow User:alice all group:*
allow User:alice create cluster:*
allow User:bob read topic:public
allow User:carol write topic:js-oauth
EOT
"$TOOL" mint "$work/keys" "$ISS" carol govern:streams 300 >"$work/good"
"$TOOL" mint "$work/keys" "$ISS" carol govern:streams -60 >"$work/expired"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$STREAMS_SERVE" --listen "127.0.0.1:$port" --data-dir "$work/data-sasl" --group-initial-delay-ms 500 \
  --require-sasl true --users-file "$work/users" --jwks-file "$work/keys/jwks.json" --issuer "$ISS" \
  --acl-file "$work/acl" >"$work/broker-sasl.log" 2>&1 &
broker_pid=$!
for _ in $(seq 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
  sleep 0.05
done
if ! node sasl.mjs "127.0.0.1:$port" "$work/good" "$work/expired"; then
  echo "--- broker log (tail)" >&2
  tail -30 "$work/broker-sasl.log" >&2
  exit 1
fi
