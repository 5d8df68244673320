#!/usr/bin/env bash
# The Python example as a test: run.sh LIBGOVERN_POLICY_SO POLICY_CAPI_BUNDLES
# Makes the signed bundles in a scratch directory, then runs example.py against them.
set -euo pipefail
lib="$1"
make_bundles="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/bundles"
"$make_bundles" "$work/bundles" >/dev/null
python3 "$(dirname "${BASH_SOURCE[0]}")/example.py" "$lib" "$work/bundles" "$work/decisions"
