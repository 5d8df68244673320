#!/usr/bin/env bash
# Interop test with the official SDKs: `openai` and `@anthropic-ai/sdk` (pinned) against the model stub.
# Expects $MODEL_STUB (ctest sets it). Needs node and npm; installs the locked packages on first use.
set -euo pipefail
: "${MODEL_STUB:?MODEL_STUB must point at the model_stub binary}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -d node_modules/openai ] || [ ! -d node_modules/@anthropic-ai/sdk ]; then
  npm ci --no-audit --no-fund
fi
work="$(mktemp -d /tmp/govern-gateway-e2e-XXXXXX)"
stub_pid=""
cleanup() {
  if [ -n "$stub_pid" ]; then kill "$stub_pid" 2>/dev/null || true; wait "$stub_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
"$MODEL_STUB" --listen 127.0.0.1:0 >"$work/stub.out" 2>"$work/stub.err" &
stub_pid=$!
for _ in $(seq 1 100); do
  grep -q '^listening ' "$work/stub.out" 2>/dev/null && break
  kill -0 "$stub_pid" 2>/dev/null || { cat "$work/stub.err" >&2; exit 1; }
  sleep 0.05
done
port="$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$work/stub.out")"
[ -n "$port" ] || { echo "model stub did not start" >&2; cat "$work/stub.err" >&2; exit 1; }
node sdk.mjs "$port"
