#!/usr/bin/env bash
# The official SDKs against the gateway (gateway_proxy) in front of the model stub, then a check that
# every authenticated request left one usage record in the gateway's WAL.
# Expects $MODEL_STUB and $GATEWAY_PROXY (ctest sets them). Needs node and npm.
set -euo pipefail
: "${MODEL_STUB:?MODEL_STUB must point at the model_stub binary}"
: "${GATEWAY_PROXY:?GATEWAY_PROXY must point at the gateway_proxy binary}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -d node_modules/openai ] || [ ! -d node_modules/@anthropic-ai/sdk ]; then
  npm ci --no-audit --no-fund
fi
work="$(mktemp -d /tmp/govern-gateway-proxy-e2e-XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# start NAME CMD...: runs CMD in the background; sets $started_port (from its "listening" line) and
# $started_pid. Not run in a subshell, so that cleanup sees every pid.
start() {
  local name="$1"; shift
  "$@" >"$work/$name.out" 2>"$work/$name.err" &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 1 100); do
    grep -q '^listening ' "$work/$name.out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/$name.err" >&2; exit 1; }
    sleep 0.05
  done
  started_pid="$pid"
  started_port="$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$work/$name.out")"
  [ -n "$started_port" ] || { echo "$name did not start" >&2; cat "$work/$name.err" >&2; exit 1; }
}

start stub "$MODEL_STUB" --listen 127.0.0.1:0
stub_port="$started_port"
cat >"$work/gateway.json" <<JSON
{
  "routes": [
    {"model": "gpt-stub", "base_url": "http://127.0.0.1:$stub_port", "format": "openai", "api_key": "sk-up", "stub_fault_headers": true},
    {"model": "claude-stub", "base_url": "http://127.0.0.1:$stub_port", "format": "anthropic", "api_key": "sk-ant-up", "stub_fault_headers": true},
    {"model": "gemini-stub", "deployments": [{"provider": "gemini", "base_url": "http://127.0.0.1:$stub_port", "api_key": "gk", "model": "gemini-2.5-flash"}]},
    {"model": "gemini-embed-stub", "deployments": [{"provider": "gemini", "base_url": "http://127.0.0.1:$stub_port", "api_key": "gk", "model": "text-embedding-004"}]},
    {"model": "bedrock-stub", "deployments": [{"provider": "bedrock", "region": "us-east-1", "base_url": "http://127.0.0.1:$stub_port", "api_key": "bedrock-key", "model": "anthropic.claude-3-5-haiku-20241022-v1:0"}]},
    {"model": "titan-stub", "deployments": [{"provider": "bedrock", "region": "us-east-1", "base_url": "http://127.0.0.1:$stub_port", "api_key": "bedrock-key", "model": "amazon.titan-embed-text-v2:0"}]}
  ],
  "keys": [
    {"key": "gvg_e2e_key", "org": "acme"},
    {"key": "gvg_e2e_limited", "org": "acme", "requests_per_minute": 2},
    {"key": "gvg_e2e_dlp_mask", "org": "dlp-mask"},
    {"key": "gvg_e2e_dlp_block", "org": "dlp-block"}
  ],
  "dlp": {"orgs": {"dlp-mask": {"mode": "mask"}, "dlp-block": {"mode": "block"}}},
  "prices": {"gpt-stub": {"input": 1.0, "output": 2.0}},
  "wal_dir": "$work/usage"
}
JSON
start gateway "$GATEWAY_PROXY" --config "$work/gateway.json" --listen 127.0.0.1:0 --workers 2
gw_port="$started_port"
gw_pid="$started_pid"
node proxy.mjs "$gw_port"
node dlp.mjs "$gw_port"  # DLP: 7 more recorded requests

# A clean stop flushes the usage WAL. Every request that passed authentication is recorded once: 19 in
# proxy.mjs (the 401s and the models list are not), plus 12 Responses and embeddings calls, 8 on the
# Gemini and Bedrock routes (6 Responses, 2 embeddings), and 7 in dlp.mjs. Records are JSON text inside the WAL segments.
kill -TERM "$gw_pid"
wait "$gw_pid"
records="$(find "$work/usage" -maxdepth 1 -type f -exec cat {} + | grep -ao '"request_id"' | wc -l)"
if [ "$records" != 46 ]; then
  echo "expected 46 usage records in the WAL, found $records" >&2
  exit 1
fi
echo "ok - 46 usage records in the WAL"
