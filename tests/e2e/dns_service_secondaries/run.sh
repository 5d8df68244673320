#!/usr/bin/env bash
# `govern serve dns` (API + transfers + NOTIFY) followed by NSD and Knot (see CMakeLists.txt). Expects
# $GOVERN; nsd, knotd, kdig, delv, curl, python3. CHANGES (default 6) timed changes at the end.
set -euo pipefail
: "${GOVERN:?}"
GOVERN="$(realpath "$GOVERN")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../dns_secondaries/lib.sh
source "$here/../dns_secondaries/lib.sh"
for t in "${NSD:-/usr/sbin/nsd}" "${KNOTD:-/usr/sbin/knotd}" kdig delv curl python3; do
  command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }
done
changes="${CHANGES:-6}"
work="$(mktemp -d /tmp/govern-dns-svcsec-XXXXXX)"
chmod 755 "$work"  # the private cluster runs as the postgres user when we are root
data="$work/data"
mkdir -p "$data"
pid=""
cleanup() {
  local rc=$?
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  stop_secondaries
  if [ -f "$data/postgres/postmaster.pid" ]; then
    kill -QUIT "$(head -1 "$data/postgres/postmaster.pid")" 2>/dev/null || true
    sleep 1
  fi
  if [ $rc -ne 0 ]; then
    echo "--- govern"; tail -20 "$work/govern.log" 2>/dev/null || true
    echo "--- nsd"; tail -10 "$work/nsd/nsd.log" 2>/dev/null || true
    echo "--- knot"; tail -10 "$work/knot/knot.log" 2>/dev/null || true
  fi
  [ -n "${GOVERN_KEEP_WORK:-}" ] && echo "kept $work" || rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
failures=0
checks=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
contains() { checks=$((checks + 1)); [[ "$3" == *"$2"* ]] || fail "$1: lacks '$2' in: $3"; }
lacks() { checks=$((checks + 1)); [[ "$3" != *"$2"* ]] || fail "$1: has '$2' in: $3"; }
equal() { checks=$((checks + 1)); [ "$2" == "$3" ] || fail "$1: '$2' != '$3'"; }

read -r P P_NSD P_KNOT API < <(free_ports 4)
K256="$(head -c 32 /dev/urandom | base64)"
K512="$(head -c 64 /dev/urandom | base64 -w0)"
token="e2e-token-$RANDOM$RANDOM"
"$GOVERN" serve dns --set "data_dir=$data" --set log.format=text --set "dns.listen=127.0.0.1:$P" \
  --set "dns.api_token=$token" --set "dns.api_listen=127.0.0.1:$API" \
  --set "dns.transfer.tsig_keys=nsd-xfr:hmac-sha256:$K256,knot-xfr:hmac-sha512:$K512" \
  --set "dns.transfer.acl=* 127.0.0.1 key=nsd-xfr key=knot-xfr" \
  --set "dns.transfer.notify=* 127.0.0.1:$P_NSD key=nsd-xfr,* 127.0.0.1:$P_KNOT key=knot-xfr" \
  --set dns.transfer.notify_timeout=250ms --set dns.transfer.denial=nsec3 >"$work/govern.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  curl -s -o /dev/null "http://127.0.0.1:$API/v1/dns/zones" && break
  kill -0 "$pid" 2>/dev/null || { echo "govern exited during start" >&2; exit 1; }
  sleep 0.1
done
api() {  # METHOD PATH [JSON]: prints the HTTP status
  curl -sS -o /dev/null -w '%{http_code}' -X "$1" -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' "http://127.0.0.1:$API$2" ${3:+--data "$3"}
}
equal "create plain.test" 201 "$(api POST /v1/dns/zones '{"name":"plain.test"}')"
equal "create signed.test" 201 "$(api POST /v1/dns/zones '{"name":"signed.test","dnssec":true}')"
for z in plain.test signed.test; do
  equal "www.$z" 204 "$(api PUT "/v1/dns/zones/$z/rrsets/www/A" '{"ttl":300,"rdata":["192.0.2.1"]}')"
  equal "old.$z" 204 "$(api PUT "/v1/dns/zones/$z/rrsets/old/TXT" '{"rdata":["\"goes away\""]}')"
  equal "ns1.$z" 204 "$(api PUT "/v1/dns/zones/$z/rrsets/ns1/A" '{"rdata":["127.0.0.1"]}')"
done
for _ in $(seq 1 100); do [ "$(serial "$P" signed.test)" = 4 ] && break; sleep 0.05; done

start_secondaries "$P" "$P_NSD" "$P_KNOT" "$K256" "$K512" plain.test signed.test
for z in plain.test signed.test; do wait_serial "$P_NSD" "$P_KNOT" "$z" 4; done
out="$(kdig -p "$P" @127.0.0.1 plain.test AXFR 2>&1 || true)"
contains "unsigned AXFR refused by the service" "REFUSED" "$out"

# Changes through the API: NOTIFY, then IXFR.
for z in plain.test signed.test; do
  equal "change www.$z" 204 "$(api PUT "/v1/dns/zones/$z/rrsets/www/A" '{"ttl":300,"rdata":["192.0.2.2"]}')"
  equal "delete old.$z" 204 "$(api DELETE "/v1/dns/zones/$z/rrsets/old/TXT")"
  equal "add new.$z" 204 "$(api PUT "/v1/dns/zones/$z/rrsets/new/TXT" '{"rdata":["\"with serial 7\""]}')"
  wait_serial "$P_NSD" "$P_KNOT" "$z" 7
  contains "NSD got our NOTIFY for $z" "notify for $z. from 127.0.0.1" "$(cat "$work/nsd/nsd.log")"
  contains "Knot took $z by IXFR" "[$z.] IXFR, incoming, remote 127.0.0.1@$P, finished" "$(cat "$work/knot/knot.log")"
  same_answers "$P" "$P_NSD" "$P_KNOT" "www.$z A" "new.$z TXT" "old.$z TXT" "ns1.$z A" "$z NS" "$z SOA"
done
lacks "Knot never fell back to AXFR-style IXFR" "AXFR-style" "$(cat "$work/knot/knot.log")"
curl -sS -H "Authorization: Bearer $token" "http://127.0.0.1:$API/v1/dns/zones/signed.test/ds" >"$work/ds.json"
python3 -c '
import json, sys
key = [k for k in json.load(open(sys.argv[1]))["dnskey"] if " 257 3 " in k][0].split()
open(sys.argv[2], "w").write("trust-anchors {\n  signed.test. static-key %s %s %s \"%s\";\n};\n"
                             % (key[4], key[5], key[6], "".join(key[7:])))
' "$work/ds.json" "$work/ta.conf"
for p in "$P_NSD" "$P_KNOT"; do
  out="$(delv @127.0.0.1 -p "$p" -a "$work/ta.conf" +root=signed.test www.signed.test A 2>&1 || true)"
  contains "delv through port $p: positive" "; fully validated" "$out"
  contains "delv through port $p: the change" "192.0.2.2" "$out"
  out="$(delv @127.0.0.1 -p "$p" -a "$work/ta.conf" +root=signed.test old.signed.test TXT 2>&1 || true)"
  contains "delv through port $p: deleted name" "negative response, fully validated" "$out"
  contains "port $p denies with our NSEC3 chain (dns.transfer.denial=nsec3)" "NSEC3	1 0 0 -" \
    "$(kdig -p "$p" @127.0.0.1 old.signed.test TXT +dnssec 2>&1)"
done

# Timed changes: API answer -> both secondaries serve the new address (NOTIFY, SOA check, IXFR).
: >"$work/prop"
for n in $(seq 1 "$changes"); do
  python3 "$here/../dns_service/poll.py" "http://127.0.0.1:$API/v1/dns/zones/plain.test/rrsets/www/A" "$token" \
    www.plain.test "10.9.0.$n" "$P_NSD" "$P_KNOT" >>"$work/prop" ||
    fail "change $n: a secondary did not serve 10.9.0.$n within 10 s"
done
python3 - "$work/prop" <<'PY'
import sys
lines = [int(x) for x in open(sys.argv[1]) if x.strip()]
for name, vals in (("NSD", lines[0::2]), ("Knot", lines[1::2])):  # poll.py prints one line per port, in order
    v = sorted(x for x in vals if x >= 0)
    if v:
        p = lambda q: v[min(len(v) - 1, int(q * len(v)))] / 1000
        print("secondary propagation to %s over %d changes: median %.1f ms, p99 %.1f ms" % (name, len(v), p(0.5), p(0.99)))
PY

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
