#!/usr/bin/env bash
# Interop test with a real outside JOSE implementation: jose (npm). Expects $TOKENS_TOOL (ctest sets it).
set -euo pipefail
: "${TOKENS_TOOL:?TOKENS_TOOL must point at the tokens_tool binary}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -d node_modules/jose ]; then
  npm ci --no-audit --no-fund
fi
work="$(mktemp -d /tmp/govern-tokens-jose-XXXXXX)"
trap 'rm -rf "$work"' EXIT
node interop.mjs "$(realpath "$TOKENS_TOOL")" "$work"
