#!/usr/bin/env bash
# Telemetry archive interop: `run.sh duckdb` (DuckDB reads every file the compactor wrote) or
# `run.sh s3` (compaction to s3rver, wrong keys included). Expects $ARCHIVE_E2E_TOOL (ctest sets it)
# and the `pg` fixture's GOVERN_TEST_PG_DIR.
set -euo pipefail
: "${ARCHIVE_E2E_TOOL:?ARCHIVE_E2E_TOOL must point at the archive_e2e_tool binary}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -d node_modules/@duckdb/node-api ] || [ ! -d node_modules/@20minutes/s3rver ]; then
  npm ci --no-audit --no-fund
fi
case "${1:-}" in
  duckdb)
    work="$(mktemp -d /tmp/govern-archive-e2e-XXXXXX)"
    trap 'rm -rf "$work"' EXIT
    "$ARCHIVE_E2E_TOOL" write "$work"
    node duckdb.mjs "$work"
    ;;
  s3)
    # s3rver makes its ListObjectsV2 continuation tokens with DES (OpenSSL 3's legacy provider).
    exec node --openssl-legacy-provider server.mjs "$ARCHIVE_E2E_TOOL" --gtest_color=no
    ;;
  *)
    echo "usage: run.sh duckdb|s3" >&2
    exit 2
    ;;
esac
