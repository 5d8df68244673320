#!/usr/bin/env bash
# Checks that libgovern_policy.so exports the C ABI and nothing else: check_exports.sh LIB
set -euo pipefail
lib="$1"
syms="$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)"
others="$(grep -v '^govern_policy_' <<<"$syms" || true)"
if [ -n "$others" ]; then
  echo "exports other than govern_policy_*:" >&2
  echo "$others" | head -20 >&2
  exit 1
fi
header="$(dirname "${BASH_SOURCE[0]}")/govern_policy.h"
missing=0
for f in $(grep -o 'GOVERN_POLICY_API [^(]*(' "$header" | grep -o 'govern_policy_[a-z_]*(' | tr -d '('); do
  if ! grep -qx "$f" <<<"$syms"; then
    echo "declared in govern_policy.h but not exported: $f" >&2
    missing=1
  fi
done
[ "$missing" = 0 ] || exit 1
echo "ok: $(wc -l <<<"$syms") symbols, all govern_policy_*, every declared function exported"
