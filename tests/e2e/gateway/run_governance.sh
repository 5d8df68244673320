#!/usr/bin/env bash
# The official SDKs against the gateway (gateway_proxy) with a budget reconciled through the shared test
# PostgreSQL (ctest's pg fixture): requests pass until the budget is spent, then each SDK raises its
# quota / rate-limit error, unretried, and every request left one usage record.
# Expects $MODEL_STUB, $GATEWAY_PROXY and $GOVERN_TEST_PG_DIR (ctest sets them). Needs node and npm.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/proc.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
: "${MODEL_STUB:?MODEL_STUB must point at the model_stub binary}"
: "${GATEWAY_PROXY:?GATEWAY_PROXY must point at the gateway_proxy binary}"
: "${GOVERN_TEST_PG_DIR:?GOVERN_TEST_PG_DIR must name the test PostgreSQL (the pg fixture)}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -d node_modules/openai ] || [ ! -d node_modules/@anthropic-ai/sdk ]; then
  npm ci --no-audit --no-fund
fi
psql="$(pg_bin_dir)/psql"
pg_port="$(sed -n 4p "$GOVERN_TEST_PG_DIR/postmaster.pid")"
pg_sock="$(sed -n 5p "$GOVERN_TEST_PG_DIR/postmaster.pid")"
db="govern_e2e_gateway_$$"
work="$(mktemp -d /tmp/govern-gateway-governance-e2e-XXXXXX)"
pids=()
cleanup() {
  stop_started
  "$psql" -h "$pg_sock" -p "$pg_port" -U postgres -d postgres -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
"$psql" -h "$pg_sock" -p "$pg_port" -U postgres -d postgres -qc "CREATE DATABASE $db" >/dev/null

start stub "$MODEL_STUB" --listen 127.0.0.1:0
stub_port="$started_port"
# Each answer (6 input + 16 output tokens at 100 per million) costs 0.0022; the budget allows three.
cat >"$work/gateway.json" <<JSON
{
  "routes": [
    {"model": "gpt-stub", "base_url": "http://127.0.0.1:$stub_port", "format": "openai"},
    {"model": "claude-stub", "base_url": "http://127.0.0.1:$stub_port", "format": "anthropic"}
  ],
  "keys": [{"key": "gvg_e2e_budget", "org": "acme"}],
  "prices": {"gpt-stub": {"input": 100, "output": 100}, "claude-stub": {"input": 100, "output": 100}},
  "budgets": [{"id": "acme-day", "scope": "org", "org": "acme", "limit": 0.0066, "period": "day",
               "lease": 0.0066, "reserve": 0.0022}],
  "wal_dir": "$work/usage"
}
JSON
start gateway "$GATEWAY_PROXY" --config "$work/gateway.json" --listen 127.0.0.1:0 \
  --budget-db "host=$pg_sock port=$pg_port user=postgres dbname=$db" \
  --set gateway.budget.sync_interval=100ms
gw_port="$started_port"
gw_pid="$started_pid"
node governance.mjs "$gw_port"

# 3 answered, 1 OpenAI and 1 Anthropic refusal (the SDKs did not retry them): 5 records.
kill -TERM "$gw_pid"
wait "$gw_pid"
records="$(find "$work/usage" -maxdepth 1 -type f -exec cat {} + | grep -ao '"request_id"' | wc -l)"
refused="$(find "$work/usage" -maxdepth 1 -type f -exec cat {} + | grep -ao '"decision":"budget_exhausted"' | wc -l)"
if [ "$records" != 5 ] || [ "$refused" != 2 ]; then
  echo "expected 5 usage records, 2 of them budget_exhausted; found $records and $refused" >&2
  exit 1
fi
# The clean stop reported the spend and released the lease: the row claims exactly what was spent.
row="$("$psql" -h "$pg_sock" -p "$pg_port" -U postgres -d "$db" -Atc \
  "SELECT claimed_micros || ' ' || spent_micros FROM gateway_budgets WHERE budget_id = 'acme-day'")"
if [ "$row" != "6600 6600" ]; then
  echo "expected the budget row to claim and report 6600 micro-units, found '$row'" >&2
  exit 1
fi
echo "ok - budget exhausted in both SDK shapes, 5 usage records, row $row"
