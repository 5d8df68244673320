#!/usr/bin/env bash
# kafkajs 2.2.4 (npm, pinned by package-lock.json) against govern-streams-serve: see flows.mjs. Expects
# $STREAMS_SERVE (ctest sets it), node and npm; installs the locked package on first use.
set -euo pipefail
: "${STREAMS_SERVE:?STREAMS_SERVE must point at govern-streams-serve}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STREAMS_SERVE="$(realpath "$STREAMS_SERVE")"
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
