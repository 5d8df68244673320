#!/usr/bin/env bash
# The bundle server end to end: `govern serve policy` with its private PostgreSQL, keys from
# `govern policy-server keys create`, everything else over HTTP with curl (jq reads the JSON).
# Expects $GOVERN (ctest sets it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
: "${GOVERN:?GOVERN must point at the govern binary}"
GOVERN="$(realpath "$GOVERN")"
work="$(mktemp -d /tmp/govern-policy-server-e2e-XXXXXX)"
chmod 755 "$work"  # the private cluster runs as the postgres user when we are root
data="$work/var"
serve_pid=""
serve2_pid=""
cleanup() {
  for p in "$serve_pid" "$serve2_pid"; do
    if [ -n "$p" ]; then kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; fi
  done
  pg_stop_private "$data"
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log "$work"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; } >&2; done; exit 1; }
g() { "$GOVERN" --data-dir "$data" "$@"; }

# launch NAME: starts a server on the data directory (output in NAME.out/.log); sets launched_pid and
# launched_base (empty when it did not come up).
launch() {
  # NAME.out is emptied here, not by the background job's redirection: that runs when the child gets to
  # it, and until then the wait below would read a previous run's "is up" and its port.
  : >"$work/$1.out"
  # A short key cache TTL, so the revocation below takes effect within a second.
  "$GOVERN" --data-dir "$data" serve policy --set policy.server.listen=127.0.0.1:0 \
    --set policy.server.key_cache_ttl=1s >"$work/$1.out" 2>"$work/$1.log" &
  launched_pid=$!
  for _ in $(seq 1 600); do
    grep -q "is up" "$work/$1.out" 2>/dev/null && break
    kill -0 "$launched_pid" 2>/dev/null || break
    sleep 0.1
  done
  local p
  p="$(awk '$1 == "policy" {n = split($3, a, ":"); print a[n]}' "$work/$1.out")"
  launched_base="${p:+http://127.0.0.1:$p}"
}
start_server() {
  launch serve
  serve_pid="$launched_pid"
  base="$launched_base"
  [ -n "$base" ] || fail "govern serve policy did not come up"
}
stop_server() {
  kill -TERM "$serve_pid"
  wait "$serve_pid" || fail "govern serve policy exited $? on SIGTERM"
  serve_pid=""
}

pub="$(g policy-server keys create --org acme --scope publish --name ci 2>>"$work/keys.log")" || fail "keys create publish"
fetch="$(g policy-server keys create --org acme --scope fetch --name sidecar 2>>"$work/keys.log")" || fail "keys create fetch"
other_fetch="$(g policy-server keys create --org globex --scope fetch 2>>"$work/keys.log")" || fail "keys create globex"
g policy-server keys list --org acme >"$work/list.out" 2>>"$work/keys.log" || fail "keys list"
grep -q "${fetch:4:12} .*acme .*fetch" "$work/list.out" || fail "keys list lacks the fetch key"
if grep -q "${fetch:17}" "$work/list.out"; then fail "keys list prints a secret"; fi

start_server
# The generated signing key: kept under the data directory, 0600, its public key served.
[ "$(stat -c %a "$data/policy/signing.key")" = "600" ] || fail "signing.key is not mode 0600"
key_id="$(curl -sf "$base/v1/policy/keys" | jq -r '.keys[0].key_id')"
[ -n "$key_id" ] && [ "$key_id" != null ] || fail "GET /v1/policy/keys"
curl -sf "$base/v1/policy/keys/$key_id" >"$work/server.pub" || fail "GET /v1/policy/keys/$key_id"
cmp -s "$work/server.pub" "$data/policy/signing.pub" || fail "served public key differs from signing.pub"

policies='@id("read-docs")
permit(principal in Team::"eng", action == Action::"call_tool", resource == Tool::"docs");
@id("no-prod")
forbid(principal, action, resource == Tool::"prod-db");'
entities='[{"uid":{"type":"Agent","id":"a1"},"attrs":{},"parents":[{"type":"Team","id":"eng"}]},
{"uid":{"type":"Team","id":"eng"},"attrs":{},"parents":[]}]'
body="$(jq -n --arg p "$policies" --argjson e "$entities" '{policies: $p, entities: $e, limits: [{id: "a1-rate", principal: "Agent::\"a1\"", rate: {requests: 60, per: "1m"}}]}')"

code() { curl -s -o "$work/resp.out" -w '%{http_code}' "$@"; }

# Publish: 201 with version 1; the same set again is 200 unchanged.
[ "$(code -X PUT -H "Authorization: Bearer $pub" --data "$body" "$base/v1/policy/set")" = 201 ] || fail "publish: $(cat "$work/resp.out")"
[ "$(jq -r .version "$work/resp.out")" = 1 ] || fail "first version is not 1"
etag1="$(jq -r .etag "$work/resp.out")"
[ "$(code -X PUT -H "Authorization: Bearer $pub" --data "$body" "$base/v1/policy/set")" = 200 ] || fail "republish"
[ "$(jq -r .unchanged "$work/resp.out")" = true ] || fail "republish is not unchanged"

# Bad policies: 400 problem+json listing the error with line and column; nothing published.
bad="$(jq -n --arg p 'permit(principal, action, resource);
permit(principal, action, resource) when { context.x == };' '{policies: $p}')"
[ "$(curl -s -D "$work/bad.hdr" -o "$work/resp.out" -w '%{http_code}' -X PUT -H "Authorization: Bearer $pub" --data "$bad" "$base/v1/policy/set")" = 400 ] || fail "bad policies not 400"
grep -qi "content-type: application/problem+json" "$work/bad.hdr" || fail "bad policies: not problem+json"
[ "$(jq -r '.errors[0].file' "$work/resp.out")" = policies ] || fail "bad policies: $(cat "$work/resp.out")"
[ "$(jq -r '.errors[0].line' "$work/resp.out")" = 2 ] || fail "bad policies: wrong line: $(cat "$work/resp.out")"
[ "$(jq -r '.errors[0].column' "$work/resp.out")" -gt 0 ] || fail "bad policies: no column"
bad_ent="$(jq -n '{policies: "permit(principal, action, resource);", entities: [{"uid": 3}]}')"
[ "$(code -X PUT -H "Authorization: Bearer $pub" --data "$bad_ent" "$base/v1/policy/set")" = 400 ] || fail "bad entities not 400"
[ "$(jq -r '.errors[0].file' "$work/resp.out")" = entities ] || fail "bad entities: $(cat "$work/resp.out")"
bad_lim="$(jq -n '{policies: "permit(principal, action, resource);", limits: {"Agent::\"a1\"": {per_minute: 60}}}')"
[ "$(code -X PUT -H "Authorization: Bearer $pub" --data "$bad_lim" "$base/v1/policy/set")" = 400 ] || fail "limits not an array: not 400"
[ "$(jq -r '.errors[0].file' "$work/resp.out")" = limits ] || fail "bad limits: $(cat "$work/resp.out")"
[ "$(code -X PUT -H "Authorization: Bearer $pub" --data "not json" "$base/v1/policy/set")" = 400 ] || fail "non-JSON body not 400"

# A set with a schema is validated against it before anything is stored: every error of every policy
# with its line and column (422 when everything parses but does not conform; 400 when something does
# not parse), entities that do not conform, and a schema that does not parse.
ipub="$(g policy-server keys create --org initech --scope publish 2>>"$work/keys.log")" || fail "keys create initech"
ifetch="$(g policy-server keys create --org initech --scope fetch 2>>"$work/keys.log")" || fail "keys create initech fetch"
schema='entity Team;
entity Agent in [Team] { owner: String, ip?: ipaddr };
entity Tool;
action call_tool appliesTo { principal: Agent, resource: Tool, context: { risky: Bool } };'
typed='@id("ok")
permit(principal in Team::"eng", action == Action::"call_tool", resource == Tool::"docs");
@id("owner-is-text")
permit(principal, action == Action::"call_tool", resource) when { principal.owner == 3 };
@id("unguarded")
forbid(principal, action == Action::"call_tool", resource) when { principal.ip.isLoopback() };
@id("robot")
permit(principal == Robot::"r2", action, resource);'
ents='[{"uid": {"type": "Agent", "id": "a1"}, "attrs": {"owner": "ann", "ip": "127.0.0.1"}, "parents": [{"type": "Team", "id": "eng"}]},
{"uid": {"type": "Team", "id": "eng"}, "attrs": {}, "parents": []}]'
typed_body="$(jq -n --arg p "$typed" --arg s "$schema" --argjson e "$ents" '{policies: $p, schema: $s, entities: $e}')"
[ "$(curl -s -D "$work/typed.hdr" -o "$work/resp.out" -w '%{http_code}' -X PUT -H "Authorization: Bearer $ipub" --data "$typed_body" "$base/v1/policy/set")" = 422 ] || fail "policies against the schema: not 422: $(cat "$work/resp.out")"
grep -qi "content-type: application/problem+json" "$work/typed.hdr" || fail "schema errors: not problem+json"
[ "$(jq -r '.status' "$work/resp.out")" = 422 ] || fail "schema errors: status member"
[ "$(jq -r '[.errors[] | "\(.file):\(.line)"] | join(" ")' "$work/resp.out")" = "policies:4 policies:6 policies:8" ] || fail "schema errors: $(cat "$work/resp.out")"
[ "$(jq -r '[.errors[] | select(.column > 0)] | length' "$work/resp.out")" = 3 ] || fail "schema errors without columns: $(cat "$work/resp.out")"
jq -r .detail "$work/resp.out" | grep -q "policies:8:[0-9]*: .*Robot" || fail "schema errors: detail lacks file:line:column: $(cat "$work/resp.out")"
[ "$(code -H "Authorization: Bearer $ifetch" "$base/v1/policy/bundle")" = 404 ] || fail "a refused set was published"
# An entity that does not conform (owner is a String) is reported too, beside a policy error.
bad_ents="$(jq -n --arg p "$typed" --arg s "$schema" '{policies: $p, schema: $s, entities: [{"uid": {"type": "Agent", "id": "a2"}, "attrs": {"owner": 7}, "parents": []}]}')"
[ "$(code -X PUT -H "Authorization: Bearer $ipub" --data "$bad_ents" "$base/v1/policy/set")" = 422 ] || fail "entities against the schema: not 422"
[ "$(jq -r '[.errors[].file] | unique | join(",")' "$work/resp.out")" = "entities,policies" ] || fail "entity errors: $(cat "$work/resp.out")"
# A schema that does not parse: 400, with its position.
bad_schema="$(jq -n --arg s 'entity Team;
entity Agent in [Team {' '{policies: "permit(principal, action, resource);", schema: $s}')"
[ "$(code -X PUT -H "Authorization: Bearer $ipub" --data "$bad_schema" "$base/v1/policy/set")" = 400 ] || fail "bad schema: not 400"
[ "$(jq -r '.errors[0] | "\(.file):\(.line)"' "$work/resp.out")" = schema:2 ] || fail "bad schema: $(cat "$work/resp.out")"
# Fixed, the set is published with its schema in the bundle (a JSON schema value is taken too), and
# the entities as the engine reads them with it (the address as an ipaddr value).
good="$(printf '%s\n' "$typed" | head -2)
@id(\"guarded\")
forbid(principal, action == Action::\"call_tool\", resource) when { principal has ip && principal.ip.isLoopback() && context.risky };"
good_body="$(jq -n --arg p "$good" --arg s "$schema" --argjson e "$ents" '{policies: $p, schema: $s, entities: $e}')"
[ "$(code -X PUT -H "Authorization: Bearer $ipub" --data "$good_body" "$base/v1/policy/set")" = 201 ] || fail "valid set with a schema: $(cat "$work/resp.out")"
curl -sf -H "Authorization: Bearer $ifetch" -o "$work/typed.tar.gz" "$base/v1/policy/bundle" || fail "fetch initech"
mkdir "$work/t" && tar xzf "$work/typed.tar.gz" -C "$work/t"
[ "$(cat "$work/t/schema.cedarschema")" = "$schema" ] || fail "schema.cedarschema differs"
jq -e '.[] | select(.uid.id == "a1") | .attrs.ip.__extn.fn == "ip"' "$work/t/entities.json" >/dev/null || fail "entities not conformed: $(cat "$work/t/entities.json")"
json_schema='{"": {"entityTypes": {"Tool": {}}, "actions": {"use": {"appliesTo": {"principalTypes": ["Tool"], "resourceTypes": ["Tool"]}}}}}'
[ "$(code -X PUT -H "Authorization: Bearer $ipub" --data "$(jq -n --argjson s "$json_schema" '{policies: "permit(principal, action == Action::\"use\", resource);", schema: $s}')" "$base/v1/policy/set")" = 201 ] || fail "JSON schema: $(cat "$work/resp.out")"
[ "$(code -X PUT -H "Authorization: Bearer $ipub" --data "$(jq -n --argjson s "$json_schema" '{policies: "permit(principal, action == Action::\"view\", resource);", schema: $s}')" "$base/v1/policy/set")" = 422 ] || fail "JSON schema, unknown action: not 422"

# Templates and links: Cedar text with templates and a "links" array is published, the bundle holds
# policies.cedar and links.json, and the set reads back with its links; a link to no template is 400
# naming the link (file "links"); a Cedar JSON policy set is bundled as policies.json.
hpub="$(g policy-server keys create --org hooli --scope publish 2>>"$work/keys.log")" || fail "keys create hooli"
hfetch="$(g policy-server keys create --org hooli --scope fetch 2>>"$work/keys.log")" || fail "keys create hooli fetch"
tmpl='@id("reader")
permit(principal == ?principal, action == Action::"read", resource in ?resource);'
links='[{"templateId": "policy0", "newId": "alice-docs", "values": {"?principal": {"type": "User", "id": "alice"}, "?resource": {"type": "Folder", "id": "docs"}}}]'
[ "$(code -X PUT -H "Authorization: Bearer $hpub" --data "$(jq -n --arg p "$tmpl" --argjson l "$links" '{policies: $p, links: $l}')" "$base/v1/policy/set")" = 201 ] || fail "templates and links: $(cat "$work/resp.out")"
curl -sf -H "Authorization: Bearer $hfetch" -o "$work/tl.tar.gz" "$base/v1/policy/bundle" || fail "fetch hooli"
g policy verify "$work/tl.tar.gz" --trust "$work/server.pub" --org hooli >/dev/null 2>&1 || fail "templates bundle does not verify"
mkdir "$work/tl" && tar xzf "$work/tl.tar.gz" -C "$work/tl"
[ "$(cat "$work/tl/policies.cedar")" = "$tmpl" ] || fail "templates: policies.cedar differs"
jq -e '.[0].newId == "alice-docs" and .[0].values["?resource"].id == "docs"' "$work/tl/links.json" >/dev/null || fail "links.json: $(cat "$work/tl/links.json" 2>&1)"
[ ! -e "$work/tl/policies.json" ] || fail "templates bundle has policies.json"
[ "$(code -H "Authorization: Bearer $hfetch" "$base/v1/policy/set")" = 200 ] || fail "GET hooli set"
jq -e '(.links | fromjson | .[0].newId) == "alice-docs"' "$work/resp.out" >/dev/null || fail "GET set lacks the links: $(cat "$work/resp.out")"
bad_link="$(jq -n --arg p "$tmpl" '{policies: $p, links: [{templateId: "policy9", newId: "bob-docs", values: {"?principal": {type: "User", id: "bob"}}}]}')"
[ "$(curl -s -D "$work/bl.hdr" -o "$work/resp.out" -w '%{http_code}' -X PUT -H "Authorization: Bearer $hpub" --data "$bad_link" "$base/v1/policy/set")" = 400 ] || fail "bad link: not 400: $(cat "$work/resp.out")"
grep -qi "content-type: application/problem+json" "$work/bl.hdr" || fail "bad link: not problem+json"
[ "$(jq -r '.errors[0].file' "$work/resp.out")" = links ] || fail "bad link: file: $(cat "$work/resp.out")"
jq -r '.errors[0].message' "$work/resp.out" | grep -q "bob-docs" || fail "bad link: the message does not name it: $(cat "$work/resp.out")"
[ "$(code -X PUT -H "Authorization: Bearer $hpub" --data "$(jq -n --arg p "$tmpl" '{policies: $p, links: [{templateId: "policy0", newId: "half", values: {"?principal": {type: "User", id: "bob"}}}]}')" "$base/v1/policy/set")" = 400 ] || fail "link with a slot unfilled: not 400"
jq -r '.errors[0].message' "$work/resp.out" | grep -q "half" || fail "unfilled slot: $(cat "$work/resp.out")"
# Templates are validated against a schema too (422 for a template that does not conform).
hschema='entity User; entity Folder; entity Doc in [Folder];
action read appliesTo { principal: User, resource: [Doc, Folder] };'
[ "$(code -X PUT -H "Authorization: Bearer $hpub" --data "$(jq -n --arg p "$tmpl
permit(principal == ?principal, action == Action::\"read\", resource) when { principal.level > 3 };" --arg s "$hschema" --argjson l "$links" '{policies: $p, links: $l, schema: $s}')" "$base/v1/policy/set")" = 422 ] || fail "template against the schema: not 422: $(cat "$work/resp.out")"
[ "$(jq -r '.errors[0] | "\(.file):\(.line)"' "$work/resp.out")" = policies:3 ] || fail "template schema error: $(cat "$work/resp.out")"
[ "$(code -H "Authorization: Bearer $hfetch" "$base/v1/policy/set")" = 200 ] && [ "$(jq -r .version "$work/resp.out")" = 1 ] || fail "a refused set was published"
# A Cedar JSON policy set (an object as "policies") carries its own templateLinks; "links" beside it is 400.
jset="$(jq -n --arg t 'permit(principal == ?principal, action == Action::"read", resource);' '{templates: {reader: $t}, templateLinks: [{templateId: "reader", newId: "carol-reads", values: {"?principal": {type: "User", id: "carol"}}}]}')"
[ "$(code -X PUT -H "Authorization: Bearer $hpub" --data "$(jq -n --argjson j "$jset" '{policies: $j}')" "$base/v1/policy/set")" = 201 ] || fail "JSON policy set: $(cat "$work/resp.out")"
curl -sf -H "Authorization: Bearer $hfetch" -o "$work/js.tar.gz" "$base/v1/policy/bundle" || fail "fetch hooli v2"
mkdir "$work/js" && tar xzf "$work/js.tar.gz" -C "$work/js"
[ ! -e "$work/js/policies.cedar" ] && [ ! -e "$work/js/links.json" ] || fail "JSON set bundle has policies.cedar or links.json"
jq -e '.templateLinks[0].newId == "carol-reads"' "$work/js/policies.json" >/dev/null || fail "policies.json: $(cat "$work/js/policies.json" 2>&1)"
[ "$(code -H "Authorization: Bearer $hfetch" "$base/v1/policy/set")" = 200 ] || fail "GET hooli set v2"
jq -e '.policies.templates.reader != null and .links == null' "$work/resp.out" >/dev/null || fail "GET set of a JSON policy set: $(cat "$work/resp.out")"
[ "$(code -X PUT -H "Authorization: Bearer $hpub" --data "$(jq -n --argjson j "$jset" '{policies: $j, links: []}')" "$base/v1/policy/set")" = 400 ] || fail "JSON set with links: not 400"
bad_jset="$(jq -n --arg t 'permit(principal == ?principal, action, resource);' '{templates: {reader: $t}, templateLinks: [{templateId: "writer", newId: "dave-writes", values: {}}]}')"
[ "$(code -X PUT -H "Authorization: Bearer $hpub" --data "$(jq -n --argjson j "$bad_jset" '{policies: $j}')" "$base/v1/policy/set")" = 400 ] || fail "JSON set with a bad link: not 400"
jq -r '.errors[0].message' "$work/resp.out" | grep -q "dave-writes" || fail "JSON set bad link: $(cat "$work/resp.out")"

# Keys: none 401, a garbage key 401, the wrong scope 403 both ways, another org sees nothing of acme.
[ "$(code "$base/v1/policy/bundle")" = 401 ] || fail "no key: not 401"
[ "$(code -H "Authorization: Bearer gvp_nonsense" "$base/v1/policy/bundle")" = 401 ] || fail "bad key: not 401"
[ "$(code -H "Authorization: Bearer $pub" "$base/v1/policy/bundle")" = 403 ] || fail "publish key fetching: not 403"
[ "$(code -X PUT -H "Authorization: Bearer $fetch" --data "$body" "$base/v1/policy/set")" = 403 ] || fail "fetch key publishing: not 403"
[ "$(code -H "Authorization: Bearer $other_fetch" "$base/v1/policy/bundle")" = 404 ] || fail "globex sees a bundle"

# Fetch: 200 application/gzip with the ETag; If-None-Match gives 304.
[ "$(curl -s -D "$work/b.hdr" -o "$work/v1.tar.gz" -w '%{http_code}' -H "Authorization: Bearer $fetch" "$base/v1/policy/bundle")" = 200 ] || fail "fetch"
grep -qi "content-type: application/gzip" "$work/b.hdr" || fail "bundle content type"
etag="$(grep -i '^etag:' "$work/b.hdr" | cut -d' ' -f2 | tr -d '\r')"
[ "$etag" = "$etag1" ] || fail "ETag $etag is not the published one $etag1"
[ "$(code -H "Authorization: Bearer $fetch" -H "If-None-Match: $etag" "$base/v1/policy/bundle")" = 304 ] || fail "If-None-Match: not 304"
[ "$(code -H "Authorization: Bearer $fetch" -H "If-None-Match: \"00\"" "$base/v1/policy/bundle")" = 200 ] || fail "another ETag: not 200"

# The bundle verifies with the served public key, for acme, and holds what was published.
g policy verify "$work/v1.tar.gz" --trust "$work/server.pub" --org acme >"$work/verify.out" 2>&1 || fail "policy verify: $(cat "$work/verify.out")"
g policy verify "$work/v1.tar.gz" --trust "$work/server.pub" --org globex >"$work/verify2.out" 2>&1 && fail "verify for globex passed"
grep -q wrong_bundle "$work/verify2.out" || fail "verify for globex: $(cat "$work/verify2.out")"
mkdir "$work/x" && tar xzf "$work/v1.tar.gz" -C "$work/x"
[ "$(cat "$work/x/policies.cedar")" = "$policies" ] || fail "policies.cedar differs"
[ -f "$work/x/limits.json" ] || fail "no limits.json"

# A second version: new ETag, the set reads back, the old ETag no longer matches.
body2="$(jq -n --arg p "$policies
permit(principal, action == Action::\"read\", resource);" --argjson e "$entities" '{policies: $p, entities: $e}')"
[ "$(code -X PUT -H "Authorization: Bearer $pub" --data "$body2" "$base/v1/policy/set")" = 201 ] || fail "publish v2"
[ "$(jq -r .version "$work/resp.out")" = 2 ] || fail "second version is not 2"
[ "$(code -H "Authorization: Bearer $fetch" -H "If-None-Match: $etag" "$base/v1/policy/bundle")" = 200 ] || fail "stale ETag: not 200"
cp "$work/resp.out" "$work/v2.tar.gz"
[ "$(code -H "Authorization: Bearer $fetch" "$base/v1/policy/set")" = 200 ] || fail "GET set"
[ "$(jq -r .version "$work/resp.out")" = 2 ] || fail "GET set version"
jq -e '.policies | contains("Action::\"read\"")' "$work/resp.out" >/dev/null || fail "GET set policies"
[ "$(jq -r .limits "$work/resp.out")" = null ] || fail "GET set limits of v2"
[ "$(code -H "Authorization: Bearer $pub" "$base/v1/policy/set?version=1")" = 200 ] || fail "GET set version 1"
jq -e '.limits | fromjson | .[0].id == "a1-rate"' "$work/resp.out" >/dev/null || fail "history: v1 limits"
g policy verify "$work/v2.tar.gz" --trust "$work/server.pub" --org acme --min-version 2 >/dev/null 2>&1 || fail "verify v2"

# Concurrent publishes from several clients: every answer a distinct version.
pids=()
for i in 1 2 3 4 5 6; do
  jq -n --arg p "@id(\"c$i\") permit(principal, action, resource);" '{policies: $p}' >"$work/c$i.json"
  curl -s -X PUT -H "Authorization: Bearer $pub" --data @"$work/c$i.json" "$base/v1/policy/set" >"$work/c$i.out" &
  pids+=($!)
done
wait "${pids[@]}"
versions="$(for i in 1 2 3 4 5 6; do jq -r .version "$work/c$i.out"; done | sort -n | tr '\n' ' ')"
[ "$versions" = "3 4 5 6 7 8 " ] || fail "concurrent publishes got versions: $versions"

# Restart: the same key, the same bytes for the same version (a stable ETag).
latest_hdr_etag() { curl -s -D - -o /dev/null -H "Authorization: Bearer $fetch" "$base/v1/policy/bundle" | grep -i '^etag:' | cut -d' ' -f2 | tr -d '\r'; }
before="$(latest_hdr_etag)"
curl -sf -H "Authorization: Bearer $fetch" "$base/v1/policy/bundle" -o "$work/before.tar.gz"
stop_server
start_server
[ "$(latest_hdr_etag)" = "$before" ] || fail "ETag changed across a restart"
curl -sf -H "Authorization: Bearer $fetch" "$base/v1/policy/bundle" -o "$work/after.tar.gz"
cmp -s "$work/before.tar.gz" "$work/after.tar.gz" || fail "bundle bytes changed across a restart"
[ "$(curl -sf "$base/v1/policy/keys" | jq -r '.keys[0].key_id')" = "$key_id" ] || fail "signing key changed across a restart"

# Two replicas against one PostgreSQL (the second on the same data directory): each keeps the bytes
# of the versions it served in memory, yet a publish through one is served at once by the other.
launch serve2
serve2_pid="$launched_pid"
base2="$launched_base"
[ -n "$base2" ] || fail "the second replica did not come up"
for b in "$base" "$base2" "$base2"; do  # the second fetch from replica 2 is served from its memory
  curl -sf -H "Authorization: Bearer $fetch" "$b/v1/policy/bundle" -o "$work/r.tar.gz" || fail "fetch from $b"
  cmp -s "$work/r.tar.gz" "$work/after.tar.gz" || fail "replica $b serves other bytes"
done
body9="$(jq -n '{policies: "@id(\"r9\") permit(principal, action, resource);"}')"
[ "$(code -X PUT -H "Authorization: Bearer $pub" --data "$body9" "$base/v1/policy/set")" = 201 ] || fail "publish v9"
[ "$(jq -r .version "$work/resp.out")" = 9 ] || fail "version after the replicas: $(cat "$work/resp.out")"
etag9="$(jq -r .etag "$work/resp.out")"
for b in "$base2" "$base"; do
  [ "$(curl -s -D "$work/r.hdr" -o "$work/r.tar.gz" -w '%{http_code}' -H "Authorization: Bearer $fetch" -H "If-None-Match: $before" "$b/v1/policy/bundle")" = 200 ] || fail "$b answers the old ETag with other than 200"
  grep -qi "^x-govern-bundle-version: 9" "$work/r.hdr" || fail "$b does not serve version 9: $(cat "$work/r.hdr")"
  grep -qi "^etag: $etag9" "$work/r.hdr" || fail "$b serves another ETag than $etag9"
  g policy verify "$work/r.tar.gz" --trust "$work/server.pub" --org acme --min-version 9 >/dev/null 2>&1 || fail "$b: version 9 does not verify"
  [ "$(code -H "Authorization: Bearer $fetch" -H "If-None-Match: $etag9" "$b/v1/policy/bundle")" = 304 ] || fail "$b: version 9 ETag not 304"
done
kill -TERM "$serve2_pid"; wait "$serve2_pid" || fail "the second replica exited $? on SIGTERM"
serve2_pid=""

# A revoked key is refused once the server's cached answer about it expires (key_cache_ttl, 1 s here).
g policy-server keys revoke "${fetch:4:12}" >"$work/revoke.out" 2>>"$work/keys.log" || fail "keys revoke"
grep -q "within policy.server.key_cache_ttl" "$work/revoke.out" || fail "keys revoke does not say when: $(cat "$work/revoke.out")"
refused=""
for _ in $(seq 1 100); do
  [ "$(code -H "Authorization: Bearer $fetch" "$base/v1/policy/bundle")" = 401 ] && { refused=1; break; }
  sleep 0.1
done
[ -n "$refused" ] || fail "revoked key still accepted after 10 s (key_cache_ttl is 1 s)"

stop_server
echo "policy server e2e: ok"
