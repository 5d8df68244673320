#!/usr/bin/env bash
# Passkeys end to end in headless Chromium. Expects $PASSKEY_SERVER (ctest sets it) and /usr/bin/chromium.
set -euo pipefail
: "${PASSKEY_SERVER:?PASSKEY_SERVER must point at the passkey_test_server binary}"
server="$(realpath "$PASSKEY_SERVER")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
chromium="${CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "chromium not found at $chromium (Debian package chromium, see scripts/packages.txt)" >&2
  exit 1
fi
if [ ! -d node_modules/playwright-core ]; then
  npm ci --no-audit --no-fund
fi
# Never `npx playwright install`: the browser is Debian's.
CHROMIUM="$chromium" node passkeys.mjs "$server"
