#!/usr/bin/env bash
# Differential test of Govern's Cedar engine against the Cedar reference (@cedar-policy/cedar-wasm).
#   run.sh [compare.mjs arguments]   the corpus, then $POLICY_DRT_CASES (20000) generated cases from seed
#                                    $POLICY_DRT_SEED (1), against `$GOVERN policy eval-cases` (or the
#                                    command in $GOVERN_POLICY_EVAL)
#   run.sh selftest                  the harness itself: a deliberately wrong engine must be caught
# Installs the locked npm packages on first use.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -d node_modules/@cedar-policy/cedar-wasm ]; then
  npm ci --no-audit --no-fund
fi
if [ "${1:-}" = selftest ]; then
  out="$(mktemp -d /tmp/govern-policy-drt-selftest-XXXXXX)"
  trap 'rm -rf "$out"' EXIT
  # The generator is deterministic: the same seed gives the same cases.
  a="$(node generate.mjs --seed 3 --cases 300 | sha256sum)"
  b="$(node generate.mjs --seed 3 --cases 300 | sha256sum)"
  c="$(node generate.mjs --seed 4 --cases 300 | sha256sum)"
  if [ "$a" != "$b" ] || [ "$a" = "$c" ]; then echo "selftest: generate.mjs is not deterministic per seed" >&2; exit 1; fi
  # The reference against itself agrees everywhere...
  node compare.mjs --engine "node oracle.mjs" --cases 1000 --seed 7
  # ...and a wrong engine is caught: exit 1, both of its difference classes reported, minimised cases written.
  set +e
  node compare.mjs --engine "node buggy_engine.mjs" --cases 1000 --seed 7 --max-reports 2 --out "$out" >"$out/log" 2>&1
  rc=$?
  set -e
  cat "$out/log"
  if [ "$rc" != 1 ]; then echo "selftest: expected exit 1 from a wrong engine, got $rc" >&2; exit 1; fi
  grep -q 'engine failure, reference answer' "$out/log" || { echo "selftest: failure class not reported" >&2; exit 1; }
  grep -q '(decision)' "$out/log" || { echo "selftest: decision class not reported" >&2; exit 1; }
  [ "$(wc -l <"$out/regressions-found.ndjson")" -ge 2 ] || { echo "selftest: no regression cases written" >&2; exit 1; }
  echo "selftest: OK"
  exit 0
fi
if [ -z "${GOVERN_POLICY_EVAL:-}" ]; then
  : "${GOVERN:?GOVERN must point at the govern binary (or GOVERN_POLICY_EVAL at an eval-cases command)}"
fi
exec node compare.mjs --cases "${POLICY_DRT_CASES:-20000}" --seed "${POLICY_DRT_SEED:-1}" "$@"
