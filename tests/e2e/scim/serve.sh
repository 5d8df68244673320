#!/usr/bin/env bash
# `govern serve scim` end to end with the real binary and its private PostgreSQL (under a fresh
# data_dir): `govern scim key create` makes a key, curl creates a user, PATCHes it (Entra's "Replace"),
# finds it with a filter, lists it, nests its group in another (and is refused a cycle), then
# `govern scim key revoke` and the same key gets 401 (the
# service's key cache trusts an answer up to 10 s, so the 401 is polled for, up to 30 s). Each check
# prints FAIL with what it saw. Expects $GOVERN; curl and python3 on PATH.
set -euo pipefail
: "${GOVERN:?}"
GOVERN="$(realpath "$GOVERN")"
for t in curl python3; do command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }; done

work="$(mktemp -d /tmp/govern-scim-serve-XXXXXX)"
chmod 755 "$work"  # the private cluster runs as the postgres user when we are root
data="$work/data"
mkdir -p "$data"
port=$((20000 + RANDOM % 12000))
base="http://127.0.0.1:$port/scim/v2"
pid=""
common=(--set "data_dir=$data" --set log.format=text)

cleanup() {
  local rc=$?
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
  [ -n "$pid" ] && wait "$pid" 2>/dev/null || true
  if [ -f "$data/postgres/postmaster.pid" ]; then
    kill -QUIT "$(head -1 "$data/postgres/postmaster.pid")" 2>/dev/null || true
    sleep 1
  fi
  if [ $rc -ne 0 ]; then echo "--- last lines of govern"; tail -20 "$work/govern.log" 2>/dev/null || true; fi
  [ -n "${GOVERN_KEEP_WORK:-}" ] && echo "kept $work" || rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# json FILE EXPR: evaluates a Python expression over the parsed body `j`.
json() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
# req METHOD PATH [BODY]: the status code; the body is in $work/body.
req() {
  local args=(-sS -o "$work/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $key"
    -H 'Content-Type: application/scim+json')
  [ $# -ge 3 ] && args+=(--data-binary "$3")
  curl "${args[@]}" "$base$2"
}

"$GOVERN" serve scim "${common[@]}" --set "scim.listen=127.0.0.1:$port" >>"$work/govern.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  curl -fsS -o /dev/null "$base/ServiceProviderConfig" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { echo "govern serve scim exited during start"; exit 1; }
  sleep 0.1
done
curl -fsS -o /dev/null "$base/ServiceProviderConfig" || { echo "scim did not answer on $port"; exit 1; }

key="$("$GOVERN" scim key create --org acme --name e2e "${common[@]}" 2>"$work/create.err")"
[[ "$key" == gvs_* ]] || { echo "FAIL: key create printed '$key': $(cat "$work/create.err")"; exit 1; }
"$GOVERN" scim key list --org acme "${common[@]}" >"$work/list.txt"
key_id="$(awk 'NR==2 {print $1}' "$work/list.txt")"
grep -q "acme" "$work/list.txt" || fail "key list lacks the key: $(cat "$work/list.txt")"

user='{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"Ada.Lovelace@acme.test",
  "externalId":"e-1","active":true,"name":{"givenName":"Ada","familyName":"Lovelace"},
  "emails":[{"value":"ada@acme.test","type":"work","primary":true}]}'
code="$(req POST /Users "$user")"
[ "$code" = 201 ] || { echo "FAIL: create: $code $(cat "$work/body")"; exit 1; }
id="$(json "$work/body" 'j["id"]')"

code="$(req PATCH "/Users/$id" '{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
  "Operations":[{"op":"Replace","path":"title","value":"Countess"},{"op":"Replace","value":{"active":"False"}}]}')"
[ "$code" = 200 ] || fail "patch: $code $(cat "$work/body")"
[ "$(json "$work/body" 'j.get("title")')" = Countess ] || fail "patch: no title in $(cat "$work/body")"
[ "$(json "$work/body" 'j.get("active")')" = False ] || fail "patch: still active: $(cat "$work/body")"

# userName eq matches in any case (RFC 7643 caseExact false).
code="$(req GET "/Users?filter=userName%20eq%20%22ada.lovelace@ACME.test%22")"
[ "$code" = 200 ] || fail "filter: $code $(cat "$work/body")"
[ "$(json "$work/body" 'j["totalResults"]')" = 1 ] || fail "filter: $(cat "$work/body")"
[ "$(json "$work/body" 'j["Resources"][0]["id"]')" = "$id" ] || fail "filter: wrong user: $(cat "$work/body")"
code="$(req GET "/Users?filter=title%20eq%20%22Countess%22%20and%20active%20eq%20false")"
[ "$(json "$work/body" 'j["totalResults"]')" = 1 ] || fail "filter on title and active: $code $(cat "$work/body")"
code="$(req GET "/Users?filter=userName%20eq%20%22nobody%22")"
[ "$(json "$work/body" 'j["totalResults"]')" = 0 ] || fail "filter for nobody: $code $(cat "$work/body")"

# A group with the user as member: the list shows the user's groups.
code="$(req POST /Groups "{\"displayName\":\"Engineers\",\"members\":[{\"value\":\"$id\"}]}")"
[ "$code" = 201 ] || fail "group create: $code $(cat "$work/body")"
code="$(req GET "/Users?startIndex=1&count=10")"
[ "$(json "$work/body" '[g["display"] for g in j["Resources"][0].get("groups", [])]')" = "['Engineers']" ] ||
  fail "list lacks the user's groups: $code $(cat "$work/body")"

# Nested groups: Staff holds Engineers; the user is in Staff indirectly; Engineers cannot hold Staff.
eng="$(json "$work/body" '[g["value"] for g in j["Resources"][0]["groups"]][0]')"
code="$(req POST /Groups "{\"displayName\":\"Staff\",\"members\":[{\"value\":\"$eng\",\"type\":\"Group\"}]}")"
[ "$code" = 201 ] || fail "nested group create: $code $(cat "$work/body")"
staff="$(json "$work/body" 'j.get("id")')"
[ "$(json "$work/body" '[(m["type"], m["$ref"].endswith("/Groups/'"$eng"'")) for m in j["members"]]')" = "[('Group', True)]" ] ||
  fail "nested group members: $(cat "$work/body")"
code="$(req GET "/Users/$id")"
[ "$(json "$work/body" 'sorted((g["display"], g["type"]) for g in j["groups"])')" = "[('Engineers', 'direct'), ('Staff', 'indirect')]" ] ||
  fail "user's nested groups: $code $(cat "$work/body")"
code="$(req PATCH "/Groups/$eng" "{\"Operations\":[{\"op\":\"add\",\"path\":\"members\",\"value\":[{\"value\":\"$staff\"}]}]}")"
[ "$code" = 400 ] && [ "$(json "$work/body" 'j["scimType"]')" = invalidValue ] || fail "cycle: $code $(cat "$work/body")"

# The directory as Cedar entities: a policy on Staff admits the user through Engineers (nesting).
"$GOVERN" scim entities --org acme --out "$work/entities.json" "${common[@]}" 2>>"$work/govern.log" ||
  fail "scim entities"
printf 'permit(principal in Group::"Staff", action == Action::"read", resource);\n' >"$work/staff.cedar"
printf '{"principal":{"type":"User","id":"%s"},"action":{"type":"Action","id":"read"},"resource":{"type":"Doc","id":"d"},"context":{}}\n' "$id" >"$work/req.json"
decision="$("$GOVERN" policy evaluate --policies "$work/staff.cedar" --entities "$work/entities.json" --request "$work/req.json")" ||
  fail "policy evaluate: $decision"
[ "$(printf '%s' "$decision" | python3 -c 'import json,sys; print(json.load(sys.stdin)["decision"])')" = allow ] ||
  fail "Staff policy over the directory's entities: $decision; entities: $(cat "$work/entities.json")"
"$GOVERN" scim entities --org other "${common[@]}" 2>>"$work/govern.log" | python3 -c 'import json,sys; assert json.load(sys.stdin) == []' ||
  fail "another organisation's entities are not empty"

code="$(req GET /Users/not-a-user)"
[ "$code" = 404 ] || fail "unknown id: $code"

"$GOVERN" scim key revoke "$key_id" "${common[@]}" >/dev/null || fail "key revoke $key_id"
code=""
for _ in $(seq 1 300); do
  code="$(req GET /Users)"
  [ "$code" = 401 ] && break
  sleep 0.1
done
[ "$code" = 401 ] || fail "revoked key still answered $code"

if [ "$failures" -gt 0 ]; then
  echo "$failures checks failed"
  exit 1
fi
echo "ok: key create, create, PATCH, filters, list with groups, nested groups, Cedar entities, revoke -> 401"
