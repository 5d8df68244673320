#!/usr/bin/env bash
# Interop test against a real S3-compatible server that checks SigV4: s3rver from npm. Expects
# $S3_INTEROP_TEST (ctest sets it) pointing at the s3_interop_test binary.
set -euo pipefail
: "${S3_INTEROP_TEST:?S3_INTEROP_TEST must point at the s3_interop_test binary}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -d node_modules/@20minutes/s3rver ]; then
  npm ci --no-audit --no-fund
fi
# s3rver makes its ListObjectsV2 continuation tokens with DES, which OpenSSL 3 keeps in its legacy
# provider: without it every truncated listing is a 500 InternalError.
exec node --openssl-legacy-provider server.mjs "$S3_INTEROP_TEST" --gtest_color=no "$@"
