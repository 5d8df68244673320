#!/usr/bin/env bash
# Requests/s of the bundle server's fetch: a poll that finds nothing new (If-None-Match, 304) and a full
# fetch of the signed bundle (200, 12.5 KB: 40 policies, 400 entities), with wrk. Not run by ctest:
#   bash tests/e2e/policy_server/bench.sh build/release/src/cli/govern [seconds]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
GOVERN="$(realpath "$1")"
secs="${2:-10}"
work="$(mktemp -d /tmp/ps-fetch-bench-XXXXXX)"; chmod 755 "$work"
spid=""
cleanup() {
  if [ -n "$spid" ]; then kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; fi
  pg_stop_private "$work/s"
  rm -rf "$work"
}
trap cleanup EXIT
source "$(dirname "${BASH_SOURCE[0]}")/bench_server.sh"
python3 - "$work/set.json" <<'PY'
import json, random, sys
random.seed(7)
pol = "\n".join(f'@id("p{i}")\npermit(principal in Team::"t{i % 20}", action == Action::"call_tool", '
                f'resource == Tool::"tool{i}") when {{ context.args.q != "x{i}" }};' for i in range(40))
ents = [{"uid": {"type": "Team", "id": f"t{i}"}, "attrs": {}, "parents": []} for i in range(20)]
ents += [{"uid": {"type": "Agent", "id": f"agent-{i:04d}"}, "attrs": {"owner": f"user{i}@example.com", "tier": i % 3,
          "token": "%032x" % random.getrandbits(128)},
          "parents": [{"type": "Team", "id": f"t{i % 20}"}]} for i in range(380)]
json.dump({"policies": pol, "entities": ents}, open(sys.argv[1], "w"))
PY
curl -sf -X PUT -H "Authorization: Bearer $pub" --data @"$work/set.json" "http://127.0.0.1:$sport/v1/policy/set" >/dev/null
curl -sf -D "$work/h" -o "$work/b.tgz" -H "Authorization: Bearer $fetch" "http://127.0.0.1:$sport/v1/policy/bundle"
etag="$(grep -i '^etag' "$work/h" | cut -d' ' -f2 | tr -d '\r')"
echo "bundle: $(stat -c %s "$work/b.tgz") bytes, etag $etag"
echo "== GET /v1/policy/bundle with a matching If-None-Match (304)"
wrk -t2 -c16 -d"${secs}s" --latency -H "Authorization: Bearer $fetch" -H "If-None-Match: $etag" \
  "http://127.0.0.1:$sport/v1/policy/bundle" | grep -E "Requests/sec|^ +(50|99)%|Non-2xx"
echo "== GET /v1/policy/bundle, full fetch (200)"
wrk -t2 -c16 -d"${secs}s" --latency -H "Authorization: Bearer $fetch" \
  "http://127.0.0.1:$sport/v1/policy/bundle" | grep -E "Requests/sec|^ +(50|99)%|Non-2xx"
