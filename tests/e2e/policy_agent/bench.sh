#!/usr/bin/env bash
# Throughput of the sidecar's POST /v1/decide (loopback HTTP, decisions recorded, buffered) and of the
# server's 304 poll, with wrk. Not run by ctest: bash tests/e2e/policy_agent/bench.sh build/release/src/cli/govern
set -euo pipefail
GOVERN="$(realpath "$1")"
work="$(mktemp -d /tmp/ps-bench-XXXXXX)"; chmod 755 "$work"
trap 'kill $spid $apid 2>/dev/null; wait $spid $apid 2>/dev/null; rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/../policy_server/bench_server.sh"
kid="$(curl -s http://127.0.0.1:$sport/v1/policy/keys | jq -r '.keys[0].key_id')"
curl -s http://127.0.0.1:$sport/v1/policy/keys/$kid > "$work/s.pub"
policies='@id("read-docs")
permit(principal in Team::"eng", action == Action::"call_tool", resource == Tool::"docs");
@id("no-prod")
forbid(principal, action, resource == Tool::"prod-db");'
entities='[{"uid":{"type":"Agent","id":"a1"},"attrs":{},"parents":[{"type":"Team","id":"eng"}]},{"uid":{"type":"Team","id":"eng"},"attrs":{},"parents":[]}]'
jq -n --arg p "$policies" --argjson e "$entities" '{policies: $p, entities: $e}' | curl -s -X PUT -H "Authorization: Bearer $pub" --data @- http://127.0.0.1:$sport/v1/policy/set >/dev/null
GOVERN_POLICY_AGENT_KEY="$fetch" "$GOVERN" --data-dir "$work/a" serve policy-agent --log-level warn \
  --set policy.agent.server=http://127.0.0.1:$sport --set policy.agent.org=acme --set policy.agent.trust="$work/s.pub" \
  --set policy.agent.listen=127.0.0.1:0 --set policy.agent.poll_interval=200ms >"$work/a.out" 2>&1 & apid=$!
until grep -q "is up" "$work/a.out"; do sleep 0.1; done
aport="$(awk '$1 == "policy-agent" && $2 == "http" {n = split($3, a, ":"); print a[n]}' "$work/a.out")"
until curl -sf http://127.0.0.1:$aport/v1/status | jq -e '.bundle.version == 1' >/dev/null; do sleep 0.1; done
cat > "$work/decide.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"principal":{"type":"Agent","id":"a1"},"action":{"type":"Action","id":"call_tool"},"resource":{"type":"Tool","id":"docs"},"context":{"args":{"q":"x"}}}'
wrk.headers["Content-Type"] = "application/json"
LUA
echo "== POST /v1/decide (sidecar, loopback HTTP)"
wrk -t2 -c16 -d10s --latency -s "$work/decide.lua" http://127.0.0.1:$aport/v1/decide | grep -E "Requests/sec|50%|99%|Non-2xx"
etag="$(curl -s -D - -o /dev/null -H "Authorization: Bearer $fetch" http://127.0.0.1:$sport/v1/policy/bundle | grep -i '^etag' | cut -d' ' -f2 | tr -d '\r')"
echo "== GET /v1/policy/bundle with If-None-Match (server, 304)"
wrk -t2 -c16 -d10s --latency -H "Authorization: Bearer $fetch" -H "If-None-Match: $etag" http://127.0.0.1:$sport/v1/policy/bundle | grep -E "Requests/sec|50%|99%|Non-2xx"
