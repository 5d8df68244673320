#!/usr/bin/env bash
# Cross-checks govern_scim with npm scim2-parse-filter and scim-patch. Expects $SCIM_TOOL (ctest sets it).
set -euo pipefail
: "${SCIM_TOOL:?SCIM_TOOL must point at the scim_tool binary}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -d node_modules/scim2-parse-filter ] || [ ! -d node_modules/scim-patch ]; then
  npm ci --no-audit --no-fund
fi
node crosscheck.mjs "$(realpath "$SCIM_TOOL")"
