#!/usr/bin/env bash
# Interop test with a real outside reader and writer: DuckDB. Expects $PARQUET_TOOL (ctest sets it).
set -euo pipefail
: "${PARQUET_TOOL:?PARQUET_TOOL must point at the parquet_tool binary}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -d node_modules/@duckdb/node-api ]; then
  npm ci --no-audit --no-fund
fi
work="$(mktemp -d /tmp/govern-parquet-e2e-XXXXXX)"
trap 'rm -rf "$work"' EXIT
"$PARQUET_TOOL" write-interop "$work"
node interop.mjs "$(realpath "$PARQUET_TOOL")" "$work"
