#!/usr/bin/env bash
# `govern serve dns` end to end: one process with the zone API (dns.api_token set) and three replicas
# (no token, so no API) on one PostgreSQL (the private cluster of one data directory, which also holds
# the shared key that seals zone keys). Checks, each printing FAIL with what it saw:
#  - after each of CHANGES record changes through the API, every replica answers the new data (kdig,
#    polled); the propagation time (API acknowledged -> replica answers) is reported as median/p99,
#    not asserted;
#  - deletes, zone file import and export, problem+json 400 naming the field for bad rdata, 401
#    without the token;
#  - a signed zone (P-256) validated by delv with the DNSKEY from GET /ds as trust anchor;
#  - a key rollover (P-256 -> Ed25519) through POST .../keys/rollover: in each phase every replica's
#    answers (positive and denial) validate with every DS set a parent may hold then (from the first
#    key's DS and the CDS records served), and the old DS alone fails once the old key is gone;
#  - every replica's LISTEN connection cut (pg_terminate_backend): replicas reconnect, reload, and
#    serve a change made meanwhile.
# Expects $GOVERN; kdig, delv, curl on PATH.
set -euo pipefail
: "${GOVERN:?}"
GOVERN="$(realpath "$GOVERN")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for t in kdig delv curl python3; do command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }; done
changes="${CHANGES:-40}"

work="$(mktemp -d /tmp/govern-dns-service-XXXXXX)"
chmod 755 "$work"  # the private cluster runs as the postgres user when we are root
data="$work/data"
mkdir -p "$data"
base=$((20000 + RANDOM % 12000))
api_port=$base
dns_ports=($((base + 1)) $((base + 2)) $((base + 3)) $((base + 4)))  # [0] is the API process's
pids=()
token="e2e-token-$RANDOM$RANDOM"

source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
psql_run() { psql_in "$data" "$1"; }

cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pg_stop_private "$data"
  if [ $rc -ne 0 ]; then
    for i in 0 1 2 3; do echo "--- last lines of process $i"; tail -15 "$work/govern$i.log" 2>/dev/null || true; done
  fi
  [ -n "${GOVERN_KEEP_WORK:-}" ] && echo "kept $work" || rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

failures=0
checks=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
contains() { checks=$((checks + 1)); [[ "$3" == *"$2"* ]] || fail "$1: lacks '$2' in: $3"; }

common=(--set "data_dir=$data" --set log.format=text)
start() {  # INDEX [extra --set args]
  local i="$1"
  shift
  "$GOVERN" serve dns "${common[@]}" --set "dns.listen=127.0.0.1:${dns_ports[$i]}" "$@" >>"$work/govern$i.log" 2>&1 &
  pids+=($!)
  local pid=$!
  for _ in $(seq 1 300); do
    if kdig @127.0.0.1 -p "${dns_ports[$i]}" +timeout=1 +retry=0 +tcp example.invalid SOA 2>/dev/null | grep -q 'status:'; then
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { echo "process $i exited during start"; exit 1; }
    sleep 0.1
  done
  echo "process $i did not answer on ${dns_ports[$i]}"
  exit 1
}
# The API process first: it applies the migrations and makes the sealing key.
start 0 --set "dns.api_token=$token" --set "dns.api_listen=127.0.0.1:$api_port"
start 1
start 2
start 3
replicas=(1 2 3)

api() {  # METHOD PATH [curl args...]: prints the body, then the status on the last line
  local m="$1" p="$2"
  shift 2
  curl -sS -X "$m" -H "Authorization: Bearer $token" -w '\n%{http_code}' "http://127.0.0.1:$api_port$p" "$@"
}
status_of() { tail -n1 <<<"$1"; }
q() {  # INDEX NAME TYPE [kdig args]
  local i="$1" n="$2" t="$3"
  shift 3
  kdig @127.0.0.1 -p "${dns_ports[$i]}" +timeout=1 +retry=0 +short "$@" "$n" "$t" 2>&1
}
now_ns() { date +%s%N; }
# wait_all NAME TYPE EXPECT: polls every replica until its answer has EXPECT (a substring; "" waits for
# an empty answer).
wait_all() {
  local n="$1" t="$2" want="$3" t0="$4" times="${5:-/dev/null}" i got ok
  for i in "${replicas[@]}"; do
    ok=0
    for _ in $(seq 1 500); do
      got="$(q "$i" "$n" "$t")"
      if { [ -n "$want" ] && [[ "$got" == *"$want"* ]]; } || { [ -z "$want" ] && [ -z "$got" ]; }; then ok=1; break; fi
      sleep 0.005
    done
    checks=$((checks + 1))
    if [ $ok = 1 ]; then
      echo $((($(now_ns) - t0) / 1000)) >>"$times"
    else
      fail "replica $i: $n $t never answered '$want' (last: $got)"
    fi
  done
}

# --- zones ---
out="$(api POST /v1/dns/zones -H 'Content-Type: application/json' -d '{"name":"example.test"}')"
contains "create zone" "201" "$(status_of "$out")"
out="$(api POST /v1/dns/zones -H 'Content-Type: application/json' -d '{"name":"example.test"}')"
contains "create zone twice: 409" "409" "$(status_of "$out")"
out="$(curl -sS -w '\n%{http_code}' "http://127.0.0.1:$api_port/v1/dns/zones")"
contains "no token: 401" "401" "$(status_of "$out")"
out="$(api PUT /v1/dns/zones/example.test/rrsets/www/A -d '{"ttl":300,"rdata":["1.2.3"]}')"
contains "bad rdata: 400" "400" "$(status_of "$out")"
contains "bad rdata names the field" "rdata[0]" "$out"
contains "bad rdata is problem+json" '"status":400' "$out"
wait_all example.test SOA "hostmaster.example.test." "$(now_ns)"

# --- many changes; every replica must answer each one ---
: >"$work/prop"
for n in $(seq 1 "$changes"); do
  ip="10.0.$((n / 250)).$((n % 250 + 1))"
  # The change and the timing: a small poller PUTs it and polls all replicas at once over UDP;
  # correctness: kdig on each replica afterwards.
  python3 "$here/poll.py" "http://127.0.0.1:$api_port/v1/dns/zones/example.test/rrsets/www/A" "$token" \
    www.example.test "$ip" "${dns_ports[@]:1}" >>"$work/prop" ||
    fail "change $n: refused, or a replica did not answer $ip within 10 s"
  wait_all www.example.test A "$ip" "$(now_ns)"
done
serial="$(api GET /v1/dns/zones | head -n1)"
contains "serial counts every change" "\"serial\":$((changes + 1))" "$serial"
for i in "${replicas[@]}"; do
  contains "replica $i serves the serial" "$((changes + 1))" "$(q "$i" example.test SOA)"
done

# --- delete, import, export ---
out="$(api DELETE /v1/dns/zones/example.test/rrsets/www/A)"
contains "delete rrset" "204" "$(status_of "$out")"
wait_all www.example.test A "" "$(now_ns)"
zonefile=$'$ORIGIN example.test.\n$TTL 300\n@ SOA ns1 hostmaster 5000 3600 600 1209600 300\n@ NS ns1\nns1 A 192.0.2.53\nmail MX 10 mx.example.net.\n'
out="$(api POST /v1/dns/zones/example.test/file -H 'Content-Type: text/dns' --data-binary "$zonefile")"
contains "import" "204" "$(status_of "$out")"
wait_all mail.example.test MX "mx.example.net." "$(now_ns)"
out="$(api GET /v1/dns/zones/example.test/file)"
contains "export has the imported record" "mail.example.test. 300 IN MX 10 mx.example.net." "$out"
contains "export has the file's serial" " 5000 3600" "$out"
out="$(api POST /v1/dns/zones/example.test/file --data-binary $'www 300 IN A 1.2\n')"
contains "bad import: 400" "400" "$(status_of "$out")"

# --- signed zone: delv validates with the DNSKEY from the API ---
out="$(api POST /v1/dns/zones -H 'Content-Type: application/json' -d '{"name":"signed.test","dnssec":true}')"
contains "create signed zone" "201" "$(status_of "$out")"
api PUT /v1/dns/zones/signed.test/rrsets/www/A -d '{"ttl":300,"rdata":["192.0.2.7"]}' >/dev/null
wait_all www.signed.test A "192.0.2.7" "$(now_ns)"
ds="$(api GET /v1/dns/zones/signed.test/ds)"
contains "DS from the API" "IN DS" "$ds"
key="$(sed -n 's/.*"signed.test. [0-9]* IN DNSKEY \(257 3 13 [^"]*\)".*/\1/p' <<<"$ds" | head -1)"
[ -n "$key" ] || fail "no DNSKEY in $ds"
set -- $key
printf 'trust-anchors { signed.test. static-key %s %s %s "%s"; };\n' "$1" "$2" "$3" "$4" >"$work/anchor"
for i in "${replicas[@]}"; do
  out="$(delv @127.0.0.1 -p "${dns_ports[$i]}" -a "$work/anchor" +root=signed.test www.signed.test A 2>&1)"
  contains "replica $i: delv validates" "; fully validated" "$out"
  out="$(delv @127.0.0.1 -p "${dns_ports[$i]}" -a "$work/anchor" +root=signed.test nx.signed.test A 2>&1)"
  contains "replica $i: delv validates the denial" "negative response, fully validated" "$out"
  contains "replica $i: NSEC3 denial (the default) says NXDOMAIN" "nxdomain" "$out"
done
# The zone's online denial through the API: compact (RFC 9824: NOERROR, NSEC with NXNAME, kdig: TYPE128) on every
# replica, still validated; a bad value is 400.
out="$(api PUT /v1/dns/zones/signed.test/denial -d '{"denial":"compact"}')"
contains "denial -> compact" "204" "$(status_of "$out")"
contains "bad denial: 400" "400" "$(status_of "$(api PUT /v1/dns/zones/signed.test/denial -d '{"denial":"nsec"}')")"
for i in "${replicas[@]}"; do
  for _ in $(seq 1 200); do
    kdig @127.0.0.1 -p "${dns_ports[$i]}" +dnssec +norec nx.signed.test A 2>/dev/null | grep -q TYPE128 && break
    sleep 0.02
  done
  contains "replica $i: compact denial after the change (NXNAME, type 128)" "RRSIG NSEC TYPE128" \
    "$(kdig @127.0.0.1 -p "${dns_ports[$i]}" +dnssec +norec nx.signed.test A 2>&1)"
  out="$(delv @127.0.0.1 -p "${dns_ports[$i]}" -a "$work/anchor" +root=signed.test nx.signed.test A 2>&1)"
  contains "replica $i: delv validates the compact denial" "negative response, fully validated" "$out"
done

# --- key rollover (docs/dns.md "Key rollover"), P-256 -> Ed25519, no validation gap ---
# A zone with 1 s TTLs, rolled with propagation_delay 1 s and parent_delay 12 s: publish ~2 s, switch
# 12 s. The anchors are DS sets a parent could hold: A0 the first key's DS (from GET /keys, what the
# parent had before), Apub the CDS set published in phase publish (old and new), Anew the CDS set of
# phase switch (new only). In every phase every replica validates a positive answer and a denial with
# every DS set a parent or a resolver's cache may still hold then; at the end the old DS alone fails.
rollzone=$'$ORIGIN roll.test.\n$TTL 1\n@ SOA ns1 hostmaster 1 3600 600 1209600 1\n@ NS ns1\nns1 A 192.0.2.53\nwww A 192.0.2.80\n'
out="$(api POST /v1/dns/zones -H 'Content-Type: application/json' -d '{"name":"roll.test","dnssec":true,"dnskey_ttl":1}')"
contains "create roll.test" "201" "$(status_of "$out")"
out="$(api POST /v1/dns/zones/roll.test/file -H 'Content-Type: text/dns' --data-binary "$rollzone")"
contains "import roll.test" "204" "$(status_of "$out")"
wait_all www.roll.test A "192.0.2.80" "$(now_ns)"
keys_json() { api GET /v1/dns/zones/roll.test/keys | head -n1; }
# anchor FILE DS-LINES...: each "TAG ALG DIGESTTYPE HEX" as a static-ds trust anchor
anchor() {
  local f="$1" line
  shift
  { echo 'trust-anchors {'
    for line in "$@"; do set -- $line; printf '  roll.test. static-ds %s %s %s "%s";\n' "$1" "$2" "$3" "$4"; done
    echo '};'; } >"$f"
}
first_ds="$(keys_json | python3 -c 'import json,sys; print(json.load(sys.stdin)["keys"][0]["ds"])')"
anchor "$work/A0" "$first_ds"
cds_of() { q "$1" roll.test CDS; }  # CDS RDATA lines served by replica INDEX
dnskeys_of() { q "$1" roll.test DNSKEY | grep -c . || true; }
# wait_phase PHASE: polls GET /keys until the rollover is in PHASE (at most 30 s)
wait_phase() {
  local got=""
  for _ in $(seq 1 300); do
    got="$(phase_now)"
    [ "$got" = "$1" ] && return 0
    sleep 0.1
  done
  fail "rollover never reached phase $1 (last: $got)"
}
# wait_replicas DNSKEYS CDS: every replica serves that many DNSKEY and CDS records
wait_replicas() {
  local i got
  for i in "${replicas[@]}"; do
    for _ in $(seq 1 300); do
      [ "$(dnskeys_of "$i")" = "$1" ] && [ "$(cds_of "$i" | grep -c . || true)" = "$2" ] && break
      sleep 0.05
    done
    checks=$((checks + 1))
    [ "$(dnskeys_of "$i")" = "$1" ] && [ "$(cds_of "$i" | grep -c . || true)" = "$2" ] ||
      fail "replica $i: wanted $1 DNSKEY and $2 CDS, got $(dnskeys_of "$i") and $(cds_of "$i" | grep -c . || true)"
  done
}
phase_now() { keys_json | python3 -c 'import json,sys; r=json.load(sys.stdin)["rollover"]; print(r["phase"] if r else "")'; }
validates() {  # PHASE ANCHOR-NAME: every replica validates www (positive) and a missing name (denial)
  local i out n want
  for i in "${replicas[@]}"; do
    for n in www nx$RANDOM; do
      want="; fully validated"
      [ "$n" = www ] || want="negative response, fully validated"
      out="$(delv @127.0.0.1 -p "${dns_ports[$i]}" -a "$work/$2" +root=roll.test "$n.roll.test" A 2>&1)"
      contains "rollover $1, replica $i, anchor $2: $n validates" "$want" "$out"
    done
  done
}
validates before A0
out="$(api POST /v1/dns/zones/roll.test/keys/rollover -H 'Content-Type: application/json' \
  -d '{"algorithm":15,"propagation_delay":1,"parent_delay":12}')"
contains "rollover started: 202" "202" "$(status_of "$out")"
contains "rollover starts in phase publish" '"phase":"publish"' "$out"
contains "the new key comes in" '"state":"incoming"' "$out"
out="$(api POST /v1/dns/zones/roll.test/keys/rollover -d '{}')"
contains "second rollover meanwhile: 409" "409" "$(status_of "$out")"
out="$(api POST /v1/dns/zones/signed.test/keys/rollover -d '{"algorithm":8}')"
contains "bad algorithm: 400" "400" "$(status_of "$out")"
# publish: both keys in DNSKEY, CDS for both
wait_replicas 2 2
mapfile -t pub_cds < <(cds_of 1)
anchor "$work/Apub" "${pub_cds[@]}"
validates publish A0
validates publish Apub
# switch: the new key signs; CDS names the new key only (the parent drops the old DS)
wait_phase switch
wait_replicas 2 1
mapfile -t new_cds < <(cds_of 1)
anchor "$work/Anew" "${new_cds[@]}"
contains "switch: CDS is the new key's" " 15 2 " "${new_cds[*]}"
validates switch A0
validates switch Apub
validates switch Anew
# switch outlasts its time until the operator says the parent's DS names the new key
for _ in $(seq 1 300); do [[ "$(keys_json)" == *'"seconds_left":0'* ]] && break; sleep 0.1; done
sleep 2  # two rollover checks (dns.rollover.check_interval 1s) with the time up
contains "switch waits for the parent's DS" '"phase":"switch"' "$(keys_json)"
out="$(api POST /v1/dns/zones/roll.test/keys/rollover/ds-seen)"
contains "ds-seen: 200" "200" "$(status_of "$out")"
# done: the old key is gone; the new DS validates, the old one alone no longer does
wait_phase done
wait_replicas 1 1
validates done Anew
validates done Apub
out="$(delv @127.0.0.1 -p "${dns_ports[1]}" -a "$work/A0" +root=roll.test www.roll.test A 2>&1 || true)"
checks=$((checks + 1))
[[ "$out" == *"fully validated"* ]] && fail "done: the old DS alone still validates: $out"
out="$(api GET /v1/dns/zones)"
contains "roll.test is now algorithm 15" '"algorithm":15,"denial":"nsec3","dnssec":true,"name":"roll.test."' "$out"

# --- lost LISTEN connections: replicas reconnect and reload everything ---
killed="$(psql_run "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%'")"
contains "LISTEN connections cut" "4" "$killed"
api PUT /v1/dns/zones/example.test/rrsets/after/TXT -d '{"ttl":300,"rdata":["\"after reconnect\""]}' >/dev/null
wait_all after.example.test TXT "after reconnect" "$(now_ns)"

# --- delete a zone ---
out="$(api DELETE /v1/dns/zones/signed.test)"
contains "delete zone" "204" "$(status_of "$out")"
for i in "${replicas[@]}"; do
  for _ in $(seq 1 200); do
    kdig @127.0.0.1 -p "${dns_ports[$i]}" +timeout=1 +retry=0 www.signed.test A 2>&1 | grep -q REFUSED && break
    sleep 0.01
  done
  contains "replica $i refuses a deleted zone" "REFUSED" "$(kdig @127.0.0.1 -p "${dns_ports[$i]}" +timeout=1 +retry=0 www.signed.test A 2>&1)"
done

# --- propagation ---
sort -n "$work/prop" >"$work/prop.sorted"
count=$(wc -l <"$work/prop.sorted")
if [ "$count" -gt 0 ]; then
  med=$(sed -n "$(((count + 1) / 2))p" "$work/prop.sorted")
  p99=$(sed -n "$(((count * 99 + 99) / 100))p" "$work/prop.sorted")
  echo "propagation (API acknowledged -> replica answers, UDP-polled every ~1 ms, $count samples over 3 replicas):" \
    "median $((med / 1000)).$(((med % 1000) / 100)) ms, p99 $((p99 / 1000)).$(((p99 % 1000) / 100)) ms"
fi
echo "$checks checks, $failures failures"
[ "$failures" = 0 ]
