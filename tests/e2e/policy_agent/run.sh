#!/usr/bin/env bash
# The policy sidecar end to end against the real bundle server, both the real govern binary, each with
# its own data directory (the server's with its private PostgreSQL; the sidecar runs none). Decisions
# over HTTP and the Unix socket with curl.
# Expects $GOVERN (ctest sets it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
: "${GOVERN:?GOVERN must point at the govern binary}"
GOVERN="$(realpath "$GOVERN")"
work="$(mktemp -d /tmp/govern-policy-agent-e2e-XXXXXX)"
chmod 755 "$work"  # the private clusters run as the postgres user when we are root
sdata="$work/server"
adata="$work/agent"
sock="$work/agent.sock"
server_pid=""
agent_pid=""
cleanup() {
  for p in "$agent_pid" "$server_pid"; do
    if [ -n "$p" ]; then kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; fi
  done
  pg_stop_private "$sdata" "$adata"
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log "$work"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; } >&2; done; exit 1; }

# Waits for "is up" in $1 (the process $2); prints the port of service $3.
wait_up() {
  for _ in $(seq 1 600); do
    grep -q "is up" "$1" 2>/dev/null && break
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  awk -v s="$3" '$1 == s && $2 == "http" {n = split($3, a, ":"); print a[n]}' "$1"
}

start_server() {  # [extra govern flags...]
  # Emptied here, not by the background job's redirection: that runs when the child gets to it, and
  # until then wait_up would read the previous run's "is up" and its port (CI published to a server
  # still starting).
  : >"$work/server.out"
  "$GOVERN" --data-dir "$sdata" serve policy --set policy.server.listen=127.0.0.1:$sport "$@" >"$work/server.out" 2>>"$work/server.log" &
  server_pid=$!
  [ -n "$(wait_up "$work/server.out" "$server_pid" policy)" ] || fail "govern serve policy did not come up"
}
stop_server() {
  kill -TERM "$server_pid"
  wait "$server_pid" || fail "govern serve policy exited $? on SIGTERM"
  server_pid=""
}
start_agent() {  # [extra govern flags...]
  : >"$work/agent.out"  # see start_server
  GOVERN_POLICY_AGENT_KEY="$fetch" "$GOVERN" --data-dir "$adata" serve policy-agent "$@" \
    --set policy.agent.server="http://127.0.0.1:$sport" --set policy.agent.org=acme \
    --set policy.agent.trust="$work/server.pub" --set policy.agent.poll_interval=200ms \
    --set policy.agent.listen=127.0.0.1:0 --set policy.agent.socket="$sock" \
    >"$work/agent.out" 2>>"$work/agent.log" &
  agent_pid=$!
  aport="$(wait_up "$work/agent.out" "$agent_pid" policy-agent)"
  [ -n "$aport" ] || fail "govern serve policy-agent did not come up"
  agent="http://127.0.0.1:$aport"
  # The sidecar never uses PostgreSQL, so the runner starts none for it.
  [ ! -e "$adata/postgres" ] || fail "govern serve policy-agent made a PostgreSQL cluster under its data directory"
  if grep -q '^ *postgres ' "$work/agent.out"; then fail "govern serve policy-agent lists a PostgreSQL: $(cat "$work/agent.out")"; fi
}
stop_agent() {
  kill -TERM "$agent_pid"
  wait "$agent_pid" || fail "govern serve policy-agent exited $? on SIGTERM"
  agent_pid=""
}

# A free port for the server, kept across its restarts (the agent is configured with it).
sport="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"

gs() { "$GOVERN" --data-dir "$sdata" "$@"; }
pub="$(gs policy-server keys create --org acme --scope publish 2>>"$work/keys.log")" || fail "keys create publish"
fetch="$(gs policy-server keys create --org acme --scope fetch 2>>"$work/keys.log")" || fail "keys create fetch"
start_server
key_id="$(curl -sf "http://127.0.0.1:$sport/v1/policy/keys" | jq -r '.keys[0].key_id')"
curl -sf "http://127.0.0.1:$sport/v1/policy/keys/$key_id" >"$work/server.pub" || fail "GET server public key"

publish() {  # policies-text
  local body
  body="$(jq -n --arg p "$1" --argjson e "$entities" '{policies: $p, entities: $e}')"
  curl -sf -X PUT -H "Authorization: Bearer $pub" --data "$body" "http://127.0.0.1:$sport/v1/policy/set" | jq -r .version
}
entities='[{"uid":{"type":"Agent","id":"a1"},"attrs":{},"parents":[{"type":"Team","id":"eng"}]},
{"uid":{"type":"Team","id":"eng"},"attrs":{},"parents":[]}]'
v1='@id("read-docs")
permit(principal in Team::"eng", action == Action::"call_tool", resource == Tool::"docs");
@id("no-prod")
forbid(principal, action, resource == Tool::"prod-db");
permit(principal, action, resource == Tool::"prod-db");'
v2="$v1
@id(\"docs-off\")
forbid(principal, action, resource == Tool::\"docs\");"

req() {  # tool
  jq -n --arg t "$1" '{principal: {type: "Agent", id: "a1"}, action: {type: "Action", id: "call_tool"},
    resource: {type: "Tool", id: $t}, context: {args: {q: "x"}}}'
}
decide_http() { curl -s -X POST --data "$(req "$1")" "$agent/v1/decide"; }
decide_unix() { curl -s --unix-socket "$sock" -X POST --data "$(req "$1")" "http://agent/v1/decide"; }
status() { curl -sf "$agent/v1/status"; }
wait_version() {  # version
  for _ in $(seq 1 200); do
    [ "$(status | jq -r '.bundle.version // 0')" = "$1" ] && return 0
    sleep 0.1
  done
  fail "the agent did not load version $1: $(status)"
}

# Before any bundle: 503 problem+json, never a decision. The database URL points at a closed port: a
# sidecar that tried to connect would not come up.
closed_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
start_agent --set database.url="postgresql://govern@127.0.0.1:$closed_port/govern?connect_timeout=2"
[ "$(curl -s -o "$work/resp.out" -w '%{http_code}' -X POST --data "$(req docs)" "$agent/v1/decide")" = 503 ] || fail "no bundle: not 503"
grep -q "no policy bundle loaded yet" "$work/resp.out" || fail "no bundle: $(cat "$work/resp.out")"

# Version 1: allow and deny, over HTTP and over the Unix socket.
[ "$(publish "$v1")" = 1 ] || fail "publish v1"
wait_version 1
out="$(decide_http docs)"
[ "$(echo "$out" | jq -r .decision)" = allow ] || fail "docs over HTTP: $out"
[ "$(echo "$out" | jq -r '.reason[0]')" = read-docs ] || fail "docs reason: $out"
[ "$(echo "$out" | jq -r .bundle_version)" = 1 ] || fail "docs version: $out"
[ "$(echo "$out" | jq -r .decision_id | wc -c)" = 37 ] || fail "no decision id: $out"
out="$(decide_unix prod-db)"
[ "$(echo "$out" | jq -r .decision)" = deny ] || fail "prod-db over the socket: $out"
[ "$(echo "$out" | jq -r '.reason[0]')" = no-prod ] || fail "prod-db reason: $out"
[ "$(decide_unix docs | jq -r .decision)" = allow ] || fail "docs over the socket"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST --data '{"principal": 1}' "$agent/v1/decide")" = 400 ] || fail "bad request: not 400"

# Version 2 swaps in: docs is now denied.
[ "$(publish "$v2")" = 2 ] || fail "publish v2"
wait_version 2
out="$(decide_http docs)"
[ "$(echo "$out" | jq -r .decision)" = deny ] || fail "docs after v2: $out"
[ "$(echo "$out" | jq -r '.reason[0]')" = docs-off ] || fail "docs after v2 reason: $out"
[ -s "$adata/policy-agent/bundle.tar.gz" ] || fail "no bundle kept on disk"
# Every decision answered so far was recorded in the decision log (a WAL under the data directory).
recorded="$(status | jq -r .recording.recorded)"
[ "$recorded" = "$(status | jq -r .decisions)" ] && [ "$recorded" -ge 4 ] || fail "decisions not recorded: $(status)"
ls "$adata/policy/decisions/"* >/dev/null 2>&1 || fail "no decision log under the data directory"

# The server goes away: the agent keeps deciding from what it has, and says it cannot fetch.
stop_server
sleep 1
[ "$(decide_unix docs | jq -r .decision)" = deny ] || fail "deciding with the server down"
[ "$(status | jq -r .last_fetch.result)" = error ] || fail "status does not show the failed fetch: $(status)"

# Restarted with the server still down (and recording durably this time): decides from the bundle on disk.
stop_agent
start_agent --set policy.decisions.mode=durable
[ "$(status | jq -r .bundle.version)" = 2 ] || fail "restart: $(status)"
[ "$(status | jq -r .bundle.loaded_from)" = disk ] || fail "restart: not from disk: $(status)"
out="$(decide_http docs)"
[ "$(echo "$out" | jq -r .decision)" = deny ] && [ "$(echo "$out" | jq -r .bundle_version)" = 2 ] || fail "after restart: $out"
[ "$(decide_unix prod-db | jq -r .decision)" = deny ] || fail "after restart over the socket"
[ "$(status | jq -r .recording.mode)" = durable ] || fail "not recording durably: $(status)"
[ "$(status | jq -r .recording.synced)" -ge 2 ] || fail "durable decisions not synced: $(status)"

# The server comes back signing with a key the agent does not trust: version 3 is refused, 2 serves.
"$GOVERN" policy keygen --out-private "$work/rogue.key" --out-public "$work/rogue.pub" >/dev/null 2>&1 || fail "keygen"
start_server --set policy.server.signing_key="$work/rogue.key"
[ "$(publish "$v1")" = 3 ] || fail "publish v3"
for _ in $(seq 1 200); do
  [ "$(status | jq -r '.last_refusal.reason // empty')" = untrusted_key ] && break
  sleep 0.1
done
[ "$(status | jq -r .last_refusal.reason)" = untrusted_key ] || fail "untrusted bundle not refused: $(status)"
out="$(decide_http docs)"
[ "$(echo "$out" | jq -r .decision)" = deny ] && [ "$(echo "$out" | jq -r .bundle_version)" = 2 ] || fail "after refusal: $out"
grep -q "refused a bundle" "$work/agent.log" || fail "the refusal is not logged"

# Back to the trusted key: version 4 swaps in (docs allowed again).
stop_server
start_server
[ "$(publish "$v1
permit(principal, action == Action::\"read\", resource);")" = 4 ] || fail "publish v4"
wait_version 4
[ "$(decide_http docs | jq -r .decision)" = allow ] || fail "docs after v4"

# Version 5: a template and its links (links.json beside policies.cedar in the bundle). Each link is a
# policy of its own, reported by its link id (the template's @id would name every link alike).
tmpl='@id("tool-grant")
permit(principal == ?principal, action == Action::"call_tool", resource == ?resource);'
links='[{"templateId": "policy0", "newId": "grant-a1-search", "values": {"?principal": {"type": "Agent", "id": "a1"}, "?resource": {"type": "Tool", "id": "search"}}},
{"templateId": "policy0", "newId": "grant-a2-wiki", "values": {"?principal": {"type": "Agent", "id": "a2"}, "?resource": {"type": "Tool", "id": "wiki"}}}]'
[ "$(curl -sf -X PUT -H "Authorization: Bearer $pub" --data "$(jq -n --arg p "$tmpl" --argjson l "$links" --argjson e "$entities" '{policies: $p, links: $l, entities: $e}')" "http://127.0.0.1:$sport/v1/policy/set" | jq -r .version)" = 5 ] || fail "publish v5 (templates)"
wait_version 5
out="$(decide_http search)"
[ "$(echo "$out" | jq -r .decision)" = allow ] || fail "search by link: $out"
[ "$(echo "$out" | jq -c .reason)" = '["grant-a1-search"]' ] || fail "search reason is not the link id: $out"
[ "$(decide_unix wiki | jq -r .decision)" = deny ] || fail "wiki is linked for a2 only"
[ "$(decide_http docs | jq -r .decision)" = deny ] || fail "docs is linked for nobody"

stop_agent
[ ! -e "$sock" ] || fail "the Unix socket is left behind"
stop_server

# The engine's extensions: a @require_approval permit (approval_required) and limits.json (a rate of 2
# an hour per agent on docs). The bundle server takes `limits` only as a JSON object (its publish check)
# while limits.json is an array of limits (docs/policy-extensions.md), so this bundle is signed here
# with `govern policy sign` and the sidecar, trusting that key, decides from it on disk (no server).
"$GOVERN" policy keygen --out-private "$work/local.key" --out-public "$work/local.pub" >/dev/null 2>&1 || fail "keygen local"
mkdir -p "$work/b5"
cat >"$work/b5/policies.cedar" <<'CEDAR'
@id("read-docs")
permit(principal in Team::"eng", action == Action::"call_tool", resource == Tool::"docs");
@id("pay-needs-human") @require_approval("finance")
permit(principal, action == Action::"call_tool", resource == Tool::"pay");
CEDAR
echo "$entities" >"$work/b5/entities.json"
cat >"$work/b5/limits.json" <<'JSON'
[{"id": "docs-rate", "principal_in": "Team::\"eng\"", "action": "Action::\"call_tool\"",
  "resource": "Tool::\"docs\"", "rate": {"requests": 2, "per": "1h"}}]
JSON
"$GOVERN" policy sign --dir "$work/b5" --version 6 --org acme --key "$work/local.key" \
  --out "$adata/policy-agent/bundle.tar.gz" >/dev/null 2>>"$work/keys.log" || fail "policy sign v6"
: >"$work/agent.out"  # see start_server
"$GOVERN" --data-dir "$adata" serve policy-agent --set policy.agent.org=acme \
  --set policy.agent.trust="$work/local.pub" --set policy.agent.listen=127.0.0.1:0 \
  --set policy.agent.socket="$sock" >"$work/agent.out" 2>>"$work/agent.log" &
agent_pid=$!
aport="$(wait_up "$work/agent.out" "$agent_pid" policy-agent)"
[ -n "$aport" ] || fail "govern serve policy-agent (no server) did not come up"
agent="http://127.0.0.1:$aport"
[ "$(status | jq -r .bundle.version)" = 6 ] || fail "v6 from disk: $(status)"
before="$(status | jq -r .decisions)"
out="$(decide_http pay)"
[ "$(echo "$out" | jq -r .decision)" = approval_required ] || fail "pay: $out"
[ "$(echo "$out" | jq -c .reason)" = '["pay-needs-human"]' ] || fail "pay reason: $out"
[ "$(decide_http docs | jq -r .decision)" = allow ] || fail "docs 1 of 2"
[ "$(decide_unix docs | jq -r .decision)" = allow ] || fail "docs 2 of 2"
out="$(decide_http docs)"
[ "$(echo "$out" | jq -r .decision)" = deny ] || fail "docs over the rate: $out"
[ "$(echo "$out" | jq -c .reason)" = '["limit:docs-rate"]' ] || fail "docs over the rate reason: $out"
[ "$(echo "$out" | jq -r .limit)" = docs-rate ] || fail "docs over the rate limit: $out"
[ "$(echo "$out" | jq -r .decision_id | wc -c)" = 37 ] || fail "limit denial without a decision id: $out"
# A denial takes nothing: prod-db (no permit) is denied by default, not by the limit.
out="$(decide_http prod-db)"
[ "$(echo "$out" | jq -r .decision)" = deny ] && [ "$(echo "$out" | jq -c .reason)" = '[]' ] || fail "prod-db: $out"
st="$(status)"
[ "$(echo "$st" | jq -r .approval_required)" = 1 ] || fail "status approval_required: $st"
[ "$(echo "$st" | jq -r .limited)" = 1 ] || fail "status limited: $st"
[ "$(echo "$st" | jq -r .decisions)" = "$((before + 5))" ] || fail "status decisions: $st"
[ "$(echo "$st" | jq -r .recording.recorded)" = "$(echo "$st" | jq -r .decisions)" ] || fail "not all recorded: $st"
stop_agent

# Bundles signed with `govern policy sign` hold links.json or policies.json like any file, `govern
# policy inspect` lists them, and the sidecar decides from them: version 7 is Cedar text with templates
# and links.json, version 8 a Cedar JSON policy set (policies.json, its links inside).
mkdir -p "$work/b7"
printf '%s\n' "$tmpl" >"$work/b7/policies.cedar"
echo "$links" >"$work/b7/links.json"
echo "$entities" >"$work/b7/entities.json"
"$GOVERN" policy sign --dir "$work/b7" --version 7 --org acme --key "$work/local.key" \
  --out "$work/b7.tar.gz" >/dev/null 2>>"$work/keys.log" || fail "policy sign v7"
"$GOVERN" policy inspect "$work/b7.tar.gz" >"$work/inspect.out" 2>&1 || fail "policy inspect v7: $(cat "$work/inspect.out")"
grep -q "^  ok .* links.json$" "$work/inspect.out" || fail "inspect does not list links.json: $(cat "$work/inspect.out")"
grep -q "^  ok .* policies.cedar$" "$work/inspect.out" || fail "inspect does not list policies.cedar"
# `govern policy validate|evaluate --schema` read the same files (templates, --links, policies.json).
cat >"$work/b7.cedarschema" <<'SCHEMA'
entity Team; entity Agent in [Team]; entity Tool;
action call_tool appliesTo { principal: Agent, resource: Tool };
SCHEMA
"$GOVERN" policy validate --policies "$work/b7/policies.cedar" --links "$work/b7/links.json" \
  --schema "$work/b7.cedarschema" >"$work/validate.out" 2>&1 || fail "validate --schema with links: $(cat "$work/validate.out")"
grep -q "^[0-9]* policies, 0 errors" "$work/validate.out" || fail "validate --schema counts: $(cat "$work/validate.out")"
echo '[{"templateId": "policy0", "newId": "x", "values": {"?principal": {"type": "Agent", "id": "a1"}}}]' >"$work/half.json"
rc=0; "$GOVERN" policy validate --policies "$work/b7/policies.cedar" --links "$work/half.json" \
  --schema "$work/b7.cedarschema" >"$work/validate.out" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "half.json" "$work/validate.out" || fail "validate --schema with a bad link: rc $rc: $(cat "$work/validate.out")"
printf '%s\n' 'permit(principal == ?principal, action == Action::"call_tool", resource) when { principal.level > 1 };' >"$work/bad_tmpl.cedar"
rc=0; "$GOVERN" policy validate --policies "$work/bad_tmpl.cedar" --schema "$work/b7.cedarschema" >"$work/validate.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "validate --schema of a template that does not conform: rc $rc: $(cat "$work/validate.out")"
jq -n '{principal: {type: "Agent", id: "a1"}, action: {type: "Action", id: "call_tool"}, resource: {type: "Tool", id: "search"}}' >"$work/req.json"
out="$("$GOVERN" policy evaluate --policies "$work/b7/policies.cedar" --links "$work/b7/links.json" \
  --schema "$work/b7.cedarschema" --entities "$work/b7/entities.json" --request "$work/req.json" 2>&1)" || fail "evaluate --schema with links: $out"
[ "$(echo "$out" | jq -c .reason)" = '["grant-a1-search"]' ] || fail "evaluate --schema with links: $out"
cp "$work/b7.tar.gz" "$adata/policy-agent/bundle.tar.gz"
start_local_agent() {
  : >"$work/agent.out"  # see start_server
  "$GOVERN" --data-dir "$adata" serve policy-agent --set policy.agent.org=acme \
    --set policy.agent.trust="$work/local.pub" --set policy.agent.listen=127.0.0.1:0 \
    --set policy.agent.socket="$sock" >"$work/agent.out" 2>>"$work/agent.log" &
  agent_pid=$!
  aport="$(wait_up "$work/agent.out" "$agent_pid" policy-agent)"
  [ -n "$aport" ] || fail "govern serve policy-agent (no server) did not come up"
  agent="http://127.0.0.1:$aport"
}
start_local_agent
[ "$(status | jq -r .bundle.version)" = 7 ] || fail "v7 from disk: $(status)"
out="$(decide_http search)"
[ "$(echo "$out" | jq -r .decision)" = allow ] && [ "$(echo "$out" | jq -c .reason)" = '["grant-a1-search"]' ] || fail "v7 search: $out"
[ "$(decide_unix wiki | jq -r .decision)" = deny ] || fail "v7 wiki"
stop_agent

mkdir -p "$work/b8"
jq -n --arg t "$tmpl" --argjson l "$links" '{staticPolicies: {"no-search": "forbid(principal, action, resource == Tool::\"search\") unless { principal == Agent::\"root\" };"},
  templates: {"tool-grant": $t}, templateLinks: ($l | map(.templateId = "tool-grant"))}' >"$work/b8/policies.json"
echo "$entities" >"$work/b8/entities.json"
"$GOVERN" policy sign --dir "$work/b8" --version 8 --org acme --key "$work/local.key" \
  --out "$work/b8.tar.gz" >/dev/null 2>>"$work/keys.log" || fail "policy sign v8"
"$GOVERN" policy inspect "$work/b8.tar.gz" >"$work/inspect.out" 2>&1 || fail "policy inspect v8"
grep -q "^  ok .* policies.json$" "$work/inspect.out" || fail "inspect does not list policies.json: $(cat "$work/inspect.out")"
cp "$work/b8.tar.gz" "$adata/policy-agent/bundle.tar.gz"
start_local_agent
[ "$(status | jq -r .bundle.version)" = 8 ] || fail "v8 from disk: $(status)"
out="$(decide_http search)"
[ "$(echo "$out" | jq -r .decision)" = deny ] && [ "$(echo "$out" | jq -c .reason)" = '["no-search"]' ] || fail "v8 search: $out"
out="$(curl -s -X POST --data "$(jq -n '{principal: {type: "Agent", id: "a2"}, action: {type: "Action", id: "call_tool"}, resource: {type: "Tool", id: "wiki"}}')" "$agent/v1/decide")"
[ "$(echo "$out" | jq -r .decision)" = allow ] && [ "$(echo "$out" | jq -c .reason)" = '["grant-a2-wiki"]' ] || fail "v8 wiki for a2: $out"
stop_agent
echo "policy agent e2e: ok"
