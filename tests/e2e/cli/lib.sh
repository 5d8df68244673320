# Shared helpers for the CLI shell tests. Sourced; expects $GOVERN.
set -euo pipefail
: "${GOVERN:?GOVERN must point at the govern binary}"
GOVERN="$(realpath "$GOVERN")"
work="$(mktemp -d /tmp/govern-cli-XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
checks=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# expect_output "description" "expected substring" -- command...
# Runs the command, requires exit code $expect_rc (default 0) and the substring in stdout+stderr.
expect() {
  local desc="$1" want_rc="$2" want="$3"
  shift 3
  checks=$((checks + 1))
  local out rc=0
  out="$("$@" 2>&1)" || rc=$?
  if [ "$rc" != "$want_rc" ]; then
    fail "$desc: exit $rc, want $want_rc; output: $out"
  elif [[ "$out" != *"$want"* ]]; then
    fail "$desc: output lacks '$want'; got: $out"
  fi
}

finish() {
  echo "$((checks - failures)) passed, $failures failed"
  [ "$failures" -eq 0 ]
}
