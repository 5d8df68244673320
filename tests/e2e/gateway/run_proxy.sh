#!/usr/bin/env bash
# The official SDKs against the gateway (gateway_proxy) in front of the model stub, then a check that
# every authenticated request left one usage record in the gateway's WAL.
# Expects $MODEL_STUB and $GATEWAY_PROXY (ctest sets them). Needs node and npm.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/proc.sh"
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
  stop_started
  rm -rf "$work"
}
trap cleanup EXIT

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
    {"model": "titan-stub", "deployments": [{"provider": "bedrock", "region": "us-east-1", "base_url": "http://127.0.0.1:$stub_port", "api_key": "bedrock-key", "model": "amazon.titan-embed-text-v2:0"}]},
    {"model": "azure-stub", "deployments": [{"provider": "azure", "base_url": "http://127.0.0.1:$stub_port", "api_key": "az-key", "azure_deployment": "gpt4o-e2e"}]}
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
# Gemini and Bedrock routes (6 Responses, 2 embeddings), 4 on the Azure route (3 Responses, 1 embeddings),
# and 7 in dlp.mjs. Records are JSON text inside the WAL segments.
kill -TERM "$gw_pid"
wait "$gw_pid"
records="$(find "$work/usage" -maxdepth 1 -type f -exec cat {} + | grep -ao '"request_id"' | wc -l)"
if [ "$records" != 50 ]; then
  echo "expected 50 usage records in the WAL, found $records" >&2
  exit 1
fi
echo "ok - 50 usage records in the WAL"
