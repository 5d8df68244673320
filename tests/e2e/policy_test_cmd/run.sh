#!/usr/bin/env bash
# `govern policy test --policies --entities --limits --cases` end to end (docs/policy.md): the exit code
# (0 all pass, 1 some fail, 2 bad input) and the report, line by line. Expects $GOVERN (ctest sets it).
# No database or service is involved.
set -euo pipefail
: "${GOVERN:?GOVERN must point at the govern binary}"
GOVERN="$(realpath "$GOVERN")"
work="$(mktemp -d /tmp/govern-policy-test-XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# run NAME CASES_FILE [extra flags]: runs the cases; leaves the exit code in $rc, stdout in NAME.out,
# stderr in NAME.err.
run() {
  local name="$1" cases="$2"
  shift 2
  rc=0
  "$GOVERN" policy test --policies policies.cedar --entities entities.json --limits limits.json \
    --cases "$cases" "$@" >"$name.out" 2>"$name.err" || rc=$?
}
# same NAME EXPECTED: the whole report is exactly EXPECTED.
same() {
  if [ "$(cat "$1.out")" != "$2" ]; then
    fail "$1: the report differs"
    diff <(printf '%s\n' "$2") "$1.out" >&2 || true
  fi
}

# Cases name policies by their ids as the Cedar reference gives them, policy0, policy1, ... in text order
# (docs/policy-embedding.md).
cat >policies.cedar <<'CEDAR'
// policy0: eng reads docs
permit(principal in Team::"eng", action == Action::"call_tool", resource == Tool::"docs");
// policy1: never prod
forbid(principal, action, resource == Tool::"prod-db");
// policy2: payments wait for a human
@require_approval("finance")
permit(principal, action == Action::"call_tool", resource == Tool::"pay");
// policy3: small searches (errs when context.args has no n)
permit(principal, action == Action::"call_tool", resource == Tool::"search") when { context.args.n < 10 };
CEDAR
cat >entities.json <<'JSON'
[{"uid": {"type": "Agent", "id": "a1"}, "attrs": {}, "parents": [{"type": "Team", "id": "eng"}]},
 {"uid": {"type": "Agent", "id": "a2"}, "attrs": {}, "parents": []},
 {"uid": {"type": "Team", "id": "eng"}, "attrs": {}, "parents": []}]
JSON
# Two docs calls an hour per agent: the third is denied by the limit (cases run in order).
cat >limits.json <<'JSON'
[{"id": "docs-rate", "principal_in": "Team::\"eng\"", "action": "Action::\"call_tool\"",
  "resource": "Tool::\"docs\"", "rate": {"requests": 2, "per": "1h"}}]
JSON
req() {  # principal tool [context-json]
  printf '{"principal": {"type": "Agent", "id": "%s"}, "action": {"type": "Action", "id": "call_tool"}, "resource": {"type": "Tool", "id": "%s"}, "context": %s}' "$1" "$2" "${3:-{\}}"
}

# 1. Every expectation met: exit 0, no FAIL line, the count.
cat >pass.json <<JSON
[
 {"name": "docs allowed", "request": $(req a1 docs), "decision": "allow", "reason": ["policy0"]},
 {"name": "docs again", "request": $(req a1 docs), "decision": "allow"},
 {"name": "docs limited", "request": $(req a1 docs), "decision": "deny", "reason": ["limit:docs-rate"]},
 {"name": "prod forbidden", "request": $(req a1 prod-db), "decision": "deny", "reason": ["policy1"], "errors": []},
 {"name": "outsider", "request": $(req a2 docs), "decision": "deny", "reason": []},
 {"name": "pay waits for a human", "request": $(req a2 pay), "decision": "approval_required", "reason": ["policy2"]},
 {"name": "small search", "request": $(req a2 search '{"args": {"n": 3}}'), "decision": "allow", "reason": ["policy3"]},
 {"name": "search without n errs", "request": $(req a2 search '{"args": {}}'), "decision": "deny", "reason": [], "errors": ["policy3"]}
]
JSON
run pass pass.json
[ "$rc" = 0 ] || fail "all passing: exit $rc, want 0; $(cat pass.out pass.err)"
same pass "8 cases, 0 failed"
[ ! -s pass.err ] || fail "all passing: wrote to stderr: $(cat pass.err)"

# 2. Failing expectations: a wrong decision, a wrong reason, a wrong error list, an erroring policy
# named under its case; passing cases are not reported. Exit 1.
cat >mixed.json <<JSON
[
 {"name": "docs allowed", "request": $(req a1 docs), "decision": "allow", "reason": ["policy0"]},
 {"name": "prod thought allowed", "request": $(req a1 prod-db), "decision": "allow"},
 {"name": "wrong reason", "request": $(req a1 docs), "decision": "allow", "reason": ["policy1"]},
 {"request": $(req a2 search '{"args": {}}'), "decision": "deny", "errors": []},
 {"name": "approval", "request": $(req a2 pay), "decision": "approval_required"}
]
JSON
run mixed mixed.json
[ "$rc" = 1 ] || fail "failing cases: exit $rc, want 1; $(cat mixed.out mixed.err)"
expected_mixed="FAIL prod thought allowed: expected allow, got decision deny
FAIL wrong reason: expected allow, got reason [\"policy0\"]
FAIL case #3: expected deny, got errors [\"policy3\"]
  policy3 errored: $(sed -n 's/^  policy3 errored: //p' mixed.out)
5 cases, 3 failed"
same mixed "$expected_mixed"
grep -q "^  policy3 errored: .\+" mixed.out || fail "the erroring policy's message is missing: $(cat mixed.out)"
if grep -q "docs allowed\|approval" mixed.out; then fail "passing cases reported: $(cat mixed.out)"; fi

# 3. Input it must refuse, exit 2 with the file named: not an array, a case without a decision, a
# request that is not one, a cases file that is not JSON, policies that do not parse, no such file.
echo '{"name": "x"}' >object.json
echo '[{"name": "no decision", "request": {}}]' >nodecision.json
echo '[{"name": "bad request", "request": {"principal": 3}, "decision": "allow"}]' >badreq.json
echo '[{"name": ' >broken.json
for c in object nodecision badreq broken; do
  run "$c" "$c.json"
  [ "$rc" = 2 ] || fail "$c: exit $rc, want 2; $(cat "$c.out" "$c.err")"
  grep -q "$c.json" "$c.err" || fail "$c: the error does not name the file: $(cat "$c.err")"
  [ ! -s "$c.out" ] || fail "$c: printed a report: $(cat "$c.out")"
done
grep -q "no decision" nodecision.err || fail "nodecision: the error does not name the case: $(cat nodecision.err)"
grep -q "bad request" badreq.err || fail "badreq: the error does not name the case: $(cat badreq.err)"
cp policies.cedar good.cedar
printf 'permit(principal, action, resource) when { 1 + };\n' >>policies.cedar
run badpolicies pass.json
[ "$rc" = 2 ] || fail "policies that do not parse: exit $rc, want 2"
grep -q "policies.cedar" badpolicies.err || fail "bad policies: the error does not name the file: $(cat badpolicies.err)"
cp good.cedar policies.cedar
run missing nosuch.json
[ "$rc" = 2 ] || fail "missing cases file: exit $rc, want 2"
# Fixed again, the first file still passes (the limit's counters start afresh in each run).
run again pass.json
[ "$rc" = 0 ] || fail "rerun: exit $rc; $(cat again.out)"

if [ "$failures" -gt 0 ]; then
  echo "policy test e2e: $failures failed" >&2
  exit 1
fi
echo "policy test e2e: ok"
