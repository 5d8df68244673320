#!/usr/bin/env bash
# govern-dns-serve against real DNS tools. Expects $DNS_SERVE (ctest sets it) and kdig, dig, delv,
# ldns-read-zone on PATH. Each check prints FAIL with what it saw; the exit status counts failures.
set -euo pipefail
: "${DNS_SERVE:?DNS_SERVE must point at govern-dns-serve}"
DNS_SERVE="$(realpath "$DNS_SERVE")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for t in kdig dig delv ldns-read-zone; do
  command -v "$t" >/dev/null || { echo "missing $t (install knot-dnsutils bind9-dnsutils ldnsutils)" >&2; exit 1; }
done
work="$(mktemp -d /tmp/govern-dns-XXXXXX)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
cd "$work"
failures=0
checks=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# contains DESCRIPTION SUBSTRING TEXT
contains() { checks=$((checks + 1)); [[ "$3" == *"$2"* ]] || fail "$1: lacks '$2' in: $3"; }
lacks() { checks=$((checks + 1)); [[ "$3" != *"$2"* ]] || fail "$1: has '$2' in: $3"; }

cat > zone <<'Z'
$ORIGIN example.test.
$TTL 300
@ 3600 IN SOA ns1 hostmaster ( 2026113001 3600 900 604800 60 )
@ IN NS ns1
ns1 IN A 127.0.0.1
www IN A 192.0.2.1
www IN AAAA 2001:db8::1
@ IN MX 10 mail
mail IN A 192.0.2.25
alias IN CNAME www
*.wild IN A 192.0.2.99
*.wild IN TXT "wild text"
*.w1 IN CNAME x.w2
*.w2 IN A 192.0.2.98
a.b IN TXT "deep"
txt IN TXT "hello \"world\"" "second"
_sip._tcp IN SRV 0 5 5060 www
@ IN CAA 0 issue "letsencrypt.org"
svc IN HTTPS 1 . alpn=h2,h3 port=8443 ipv4hint=192.0.2.1
ptr IN PTR www
unk IN TYPE65000 \# 3 010203
sub IN NS ns.sub
ns.sub IN A 192.0.2.53
Z

# start NAME ARGS...: runs the server on a free port, sets PORT_<NAME>.
start() {
  local name="$1"
  shift
  "$DNS_SERVE" --port 0 "$@" > "$name.out" 2> "$name.err" &
  pids+=($!)
  for _ in $(seq 1 100); do
    if grep -q listening "$name.out" 2>/dev/null; then break; fi
    sleep 0.05
  done
  local port
  port="$(awk '/listening on/{print $3}' "$name.out")"
  [ -n "$port" ] || { echo "server $name did not start: $(cat "$name.err")" >&2; exit 1; }
  printf -v "PORT_$name" '%s' "$port"
}

# --- unsigned: answers as kdig and dig see them ---
start plain --zone example.test.=zone
P=$PORT_plain
# Whitespace squeezed so expectations read as zone-file lines.
k() { kdig @127.0.0.1 -p "$P" +norec +noall +answer +authority +additional "$@" 2>&1 | tr -s ' \t' ' '; }
kh() { kdig @127.0.0.1 -p "$P" +norec "$@" 2>&1 | tr -s ' \t' ' '; }
contains "A" "www.example.test. 300 IN A 192.0.2.1" "$(k www.example.test A)"
contains "AAAA" "2001:db8::1" "$(k www.example.test AAAA)"
# dig prints names as received (kdig lower-cases them).
contains "case kept" "WwW.ExAmPlE.tEsT. 300 IN A 192.0.2.1" \
  "$(dig @127.0.0.1 -p "$P" +norec +noall +answer WwW.ExAmPlE.tEsT A 2>&1 | tr -s ' \t' ' ')"
contains "MX with additional" "mail.example.test. 300 IN A 192.0.2.25" "$(k example.test MX)"
contains "TXT" '"hello \"world\"" "second"' "$(k txt.example.test TXT)"
contains "SRV" "0 5 5060 www.example.test." "$(k _sip._tcp.example.test SRV)"
contains "CAA" '0 issue "letsencrypt.org"' "$(k example.test CAA)"
contains "HTTPS" 'alpn=h2,h3 port=8443 ipv4hint=192.0.2.1' "$(k svc.example.test HTTPS)"
contains "PTR" "www.example.test." "$(k ptr.example.test PTR)"
contains "unknown type" '\# 3 010203' "$(k unk.example.test TYPE65000)"
contains "CNAME chain" "www.example.test. 300 IN A 192.0.2.1" "$(k alias.example.test A)"
contains "wildcard" "zz.wild.example.test. 300 IN A 192.0.2.99" "$(k zz.wild.example.test A)"
out="$(kh nx.example.test A)"
contains "NXDOMAIN" "status: NXDOMAIN" "$out"
contains "NXDOMAIN SOA" "example.test. 60 IN SOA" "$out"
contains "NXDOMAIN is authoritative" "qr aa" "$out"
out="$(kh b.example.test A)"
contains "empty non-terminal NODATA" "status: NOERROR" "$out"
out="$(kh www.sub.example.test A)"
contains "referral NS" "sub.example.test. 300 IN NS ns.sub.example.test." "$out"
contains "referral glue" "ns.sub.example.test. 300 IN A 192.0.2.53" "$out"
lacks "referral has no AA" "qr aa" "$out"
contains "REFUSED outside" "status: REFUSED" "$(kh www.example.org A)"
contains "ANY minimal" "ANSWER: 1" "$(kh www.example.test ANY)"
contains "EDNS echoed" "UDP size: 1232" "$(kh +edns www.example.test A)"
contains "BADVERS" "BADVERS" "$(kh +edns=1 www.example.test A)"
contains "NOTIMP for NOTIFY opcode" "NOTIMP" "$(dig @127.0.0.1 -p "$P" +norec +opcode=notify example.test SOA 2>&1)"
contains "TCP" "192.0.2.1" "$(k +tcp www.example.test A)"
out="$(dig @127.0.0.1 -p "$P" +norec txt.example.test TXT +short 2>&1)"
contains "dig TXT" '"hello \"world\"" "second"' "$out"
# Truncation: a 512-octet UDP answer does not fit 40 TXT strings; dig retries over TCP by itself.
{ cat zone; for i in $(seq 1 40); do echo "big IN TXT \"record $i padding padding padding padding\""; done; } > bigzone
start big --zone example.test.=bigzone
out="$(kdig @127.0.0.1 -p "$PORT_big" +norec +noedns +ignore big.example.test TXT 2>&1)"
contains "TC without EDNS" " tc" "$out"
out="$(dig @127.0.0.1 -p "$PORT_big" +norec +noedns big.example.test TXT 2>&1)"
contains "dig falls back to TCP" "ANSWER: 40" "$out"
# TCP pipelining (RFC 7766): several queries on one connection, all answered.
out="$(kdig @127.0.0.1 -p "$P" +tcp +keepopen +norec +noall +answer www.example.test A mail.example.test A ns1.example.test A 2>&1)"
contains "pipelined 1" "192.0.2.1" "$out"
contains "pipelined 2" "192.0.2.25" "$out"
contains "pipelined 3" "127.0.0.1" "$out"
# Malformed packets do not stop the server: garbage over UDP, then a normal query still answers.
python3 - "$P" <<'PY'
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.2)
for n in range(300):
    s.sendto(os.urandom(n % 64), ("127.0.0.1", int(sys.argv[1])))
PY
contains "alive after garbage" "192.0.2.1" "$(k www.example.test A)"

# --- the printed zone is a zone file other tools read ---
"$DNS_SERVE" --zone example.test.=zone --check > printed.zone
out="$(ldns-read-zone printed.zone 2>&1)"
contains "ldns-read-zone reads the printed zone" "www.example.test.	300	IN	A	192.0.2.1" "$out"

# --- signed, ECDSA P-256 and Ed25519: delv validates with our key as the trust anchor ---
for alg in 13 15; do
  mkdir -p "keys$alg"
  start "s$alg" --zone example.test.=zone --sign "keys$alg" --algorithm "$alg" --denial compact
  port_var="PORT_s$alg"
  SP="${!port_var}"
  d() { delv @127.0.0.1 -p "$SP" -a "keys$alg/example.test.anchor" +root=example.test "$@" 2>&1; }
  contains "alg $alg positive validates" "; fully validated" "$(d www.example.test A)"
  contains "alg $alg DNSKEY validates" "; fully validated" "$(d example.test DNSKEY)"
  contains "alg $alg CNAME validates" "; fully validated" "$(d alias.example.test A)"
  out="$(d nx.example.test A)"
  contains "alg $alg NXDOMAIN (compact) validates" "negative response, fully validated" "$out"
  out="$(d www.example.test MX)"
  contains "alg $alg NODATA validates" "negative response, fully validated" "$out"
  out="$(d b.example.test A)"
  contains "alg $alg ENT NODATA validates" "negative response, fully validated" "$out"
  out="$(d x.wild.example.test A)"
  contains "alg $alg wildcard validates" "; fully validated" "$out"
  contains "alg $alg wildcard answer" "192.0.2.99" "$out"
  contains "alg $alg wildcard NODATA validates" "negative response, fully validated" "$(d x.wild.example.test MX)"
  # A CNAME chain through two wildcards (a.w1 -> x.w2): each expanded step has its own NSEC proof.
  out="$(d a.w1.example.test A)"
  contains "alg $alg two-wildcard chain validates" "; fully validated" "$out"
  contains "alg $alg two-wildcard chain answer" "192.0.2.98" "$out"
  out="$(d a.w1.example.test MX)"
  contains "alg $alg two-wildcard chain to NODATA validates" "; fully validated" "$out"
  contains "alg $alg two-wildcard chain to NODATA" "NXRRSET" "$out"
  lacks "alg $alg two-wildcard chain to NODATA: first step proved" "no valid NSEC" "$out"
  # (delv cannot follow a referral back to the same address, so the delegation is checked by its DS.)
  contains "alg $alg insecure delegation: no DS, validated" "negative response, fully validated" "$(d sub.example.test DS)"
  # A wrong anchor must fail, so the checks above can fail.
  sed 's/static-key 257 3 1[35] "\(.\)/static-key 257 3 '"$alg"' "A/' "keys$alg/example.test.anchor" > bad.anchor
  if ! cmp -s bad.anchor "keys$alg/example.test.anchor"; then
    lacks "alg $alg wrong anchor does not validate" "; fully validated" "$(delv @127.0.0.1 -p "$SP" -a bad.anchor +root=example.test www.example.test A 2>&1)"
  fi
  out="$(kdig @127.0.0.1 -p "$SP" +dnssec +norec nx.example.test A 2>&1)"
  contains "alg $alg compact denial NXNAME" "NSEC" "$out"
  contains "alg $alg compact denial NOERROR" "status: NOERROR" "$out"
  # The whole signed zone with an NSEC chain verifies with ldns-verify-zone; a changed record does not.
  "$DNS_SERVE" --zone example.test.=zone --sign "keys$alg" --algorithm "$alg" --denial compact --check > signed.zone
  contains "alg $alg ldns-verify-zone" "Zone is verified and complete" "$(ldns-verify-zone signed.zone 2>&1)"
  sed 's/^\(www.example.test. 300 IN A\) 192.0.2.1$/\1 192.0.2.2/' signed.zone > tampered.zone
  if cmp -s signed.zone tampered.zone; then fail "alg $alg: tampering did not change the zone"; fi
  lacks "alg $alg ldns-verify-zone refuses a changed record" "Zone is verified" "$(ldns-verify-zone tampered.zone 2>&1)"
  # The DS we publish matches the DNSKEY served (ldns-key2ds from the served key).
  kdig @127.0.0.1 -p "$SP" +norec +noall +answer example.test DNSKEY > served.key
  ds_ours="$(awk '{print $5, $6, $7, toupper($8)}' "keys$alg/example.test.ds")"
  ds_ldns="$(cd "$work" && ldns-key2ds -n -2 served.key 2>&1 | awk '{print $5, $6, $7, toupper($8)}')"
  contains "alg $alg DS matches ldns-key2ds" "$ds_ours" "$ds_ldns"
done

# --- online NSEC3 denial (the default; RFC 5155): the chain, each NSEC3 signed once. delv validates
# NXDOMAIN, NODATA, empty non-terminal, wildcard and insecure-delegation proofs, with and without
# opt-out; the proof of another name (served by a lying proxy) is refused.
mkdir -p keysn3
start n3 --zone example.test.=zone --sign keysn3
start n3o --zone example.test.=zone --sign keysn3 --nsec3-optout
for v in n3 n3o; do
  port_var="PORT_$v"
  SP="${!port_var}"
  d() { delv @127.0.0.1 -p "$SP" -a keysn3/example.test.anchor +root=example.test "$@" 2>&1; }
  out="$(d nx.example.test A)"
  contains "$v NXDOMAIN validates" "negative response, fully validated" "$out"
  contains "$v NXDOMAIN is NXDOMAIN" "nxdomain" "$out"
  contains "$v NXDOMAIN below a name validates" "negative response, fully validated" "$(d q.w.e.www.example.test A)"
  contains "$v NXDOMAIN below an empty non-terminal validates" "negative response, fully validated" "$(d z.b.example.test A)"
  out="$(d www.example.test MX)"
  contains "$v NODATA validates" "negative response, fully validated" "$out"
  contains "$v NODATA is NODATA" "nxrrset" "$out"
  contains "$v apex NODATA validates" "negative response, fully validated" "$(d example.test TYPE65000)"
  contains "$v ENT NODATA validates" "negative response, fully validated" "$(d b.example.test A)"
  out="$(d x.wild.example.test A)"
  contains "$v wildcard answer" "192.0.2.99" "$out"
  if [ "$v" = n3 ]; then
    contains "$v wildcard validates" "; fully validated" "$out"
  else
    # Opt-out: the cover of the next closer name cannot rule out an unsigned delegation there, so a
    # validator calls a wildcard answer insecure (RFC 5155 section 9.2), never bogus.
    contains "$v wildcard (opt-out) is insecure" "; unsigned answer" "$out"
  fi
  contains "$v wildcard NODATA validates" "negative response, fully validated" "$(d x.wild.example.test MX)"
  # A CNAME chain through two wildcards (a.w1 -> x.w2): each expanded step has its next closer cover.
  out="$(d a.w1.example.test A)"
  contains "$v two-wildcard chain answer" "192.0.2.98" "$out"
  if [ "$v" = n3 ]; then
    contains "$v two-wildcard chain validates" "; fully validated" "$out"
  else
    contains "$v two-wildcard chain (opt-out) is insecure" "; unsigned answer" "$out"
  fi
  out="$(d a.w1.example.test MX)"
  contains "$v two-wildcard chain to NODATA" "NXRRSET" "$out"
  lacks "$v two-wildcard chain to NODATA: not bogus" "resolution failed: broken" "$out"
  contains "$v NSEC3PARAM validates" "; fully validated" "$(d example.test NSEC3PARAM)"
  out="$(d sub.example.test DS)"
  if [ "$v" = n3 ]; then
    contains "$v insecure delegation: no DS, validated" "negative response, fully validated" "$out"
  else
    # Opt-out: the closest encloser proof only says the delegation may be unsigned (RFC 5155 section 9.2).
    contains "$v insecure delegation (opt-out): no DS" "nxrrset" "$out"
    lacks "$v insecure delegation (opt-out): not bogus" "resolution failed: broken" "$out"
  fi
  out="$(kdig @127.0.0.1 -p "$SP" +dnssec +norec nx.example.test A 2>&1)"
  contains "$v kdig: NXDOMAIN rcode" "status: NXDOMAIN" "$out"
  contains "$v kdig: NSEC3 in authority" "NSEC3" "$out"
  lacks "$v kdig: no compact NSEC" "NXNAME" "$out"
done
# The same NSEC3 signature answers two names (made once, not per answer).
sig_of() { kdig @127.0.0.1 -p "$PORT_n3" +dnssec +norec +noall +authority "$1" A 2>/dev/null | awk '$4=="RRSIG" && $5=="NSEC3"' | sort; }
checks=$((checks + 1))
[ -n "$(comm -12 <(sig_of nx.example.test) <(sig_of nx2.example.test))" ] || fail "NSEC3 RRSIGs are not reused across answers"
# A lying proxy: NXDOMAIN for nx gets the denial of another name (one whose proof lacks the NSEC3
# covering nx), NODATA for www MX gets that of ns1 MX. delv must not validate either.
owners() { kdig @127.0.0.1 -p "$PORT_n3" +dnssec +norec +noall +authority "$1" "$2" 2>/dev/null | awk '$4=="NSEC3"{print $1}' | sort; }
other=""
for c in aa ab ac ad ae af ag ah ai aj ak al am an ao ap aq ar as at au av aw ax ay az; do
  if [ -n "$(comm -23 <(owners nx.example.test A) <(owners "$c.example.test" A))" ]; then other="$c"; break; fi
done
[ -n "$other" ] || fail "no name with another NXDOMAIN proof than nx"
python3 "$here/swap_proxy.py" "$PORT_n3" nx.example.test "$other.example.test" \
  www.example.test ns1.example.test > proxy.port &
pids+=($!)
for _ in $(seq 1 100); do [ -s proxy.port ] && break; sleep 0.05; done
PP="$(cat proxy.port)"
dp() { delv @127.0.0.1 -p "$PP" -a keysn3/example.test.anchor +root=example.test "$@" 2>&1; }
contains "proxy passes what it does not change" "; fully validated" "$(dp mail.example.test A)"
out="$(dp nx.example.test A)"
lacks "another name's NXDOMAIN proof is refused" "fully validated" "$out"
contains "another name's NXDOMAIN proof fails" "resolution failed" "$out"
out="$(dp www.example.test MX)"
lacks "another name's NODATA proof is refused" "fully validated" "$out"
contains "another name's NODATA proof fails" "resolution failed" "$out"
# The transfer form carries the same chain, with one NSEC3PARAM; ldns-verify-zone verifies it.
"$DNS_SERVE" --zone example.test.=zone --sign keysn3 --check > n3.zone
contains "online NSEC3 zone: ldns-verify-zone" "Zone is verified and complete" "$(ldns-verify-zone n3.zone 2>&1)"
checks=$((checks + 1))
# (printed in the RFC 3597 form: NSEC3PARAM is TYPE51)
[ "$(awk '$4=="TYPE51"' n3.zone | wc -l)" = 1 ] || fail "want one NSEC3PARAM in the transfer form"

# Response rate limiting (--rrl-rate 5, slip 2): 40 identical UDP queries in a burst from one address get
# at most 5 full answers per second, about half of the rest as truncated (TC) answers, the others
# nothing; dig still gets its answer over TCP after a TC; another name is a separate bucket.
start rrl --zone example.test.=zone --rrl-rate 5 --rrl-slip 2
out="$(python3 - "$PORT_rrl" <<'PY'
import socket, struct, sys, time
port = int(sys.argv[1])
def q(name, qid):
    return struct.pack(">HHHHHH", qid, 0, 1, 0, 0, 0) + b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\x00\x00\x01\x00\x01"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.5)
start = time.time()
for i in range(40):
    s.sendto(q("www.example.test", i), ("127.0.0.1", port))
full = tc = 0
try:
    while True:
        d, _ = s.recvfrom(4096)
        if d[2] & 0x02: tc += 1
        elif struct.unpack(">H", d[6:8])[0] > 0: full += 1
except socket.timeout:
    pass
# Within one second the bucket allows 5; a burst that crossed a second boundary may allow 10.
print("full=%d tc=%d quick=%d" % (full, tc, int(time.time() - start < 1.4)))
PY
)"
full="${out#full=}"; full="${full%% *}"
tc="${out#*tc=}"; tc="${tc%% *}"
checks=$((checks + 1)); { [ "$full" -ge 5 ] && [ "$full" -le 10 ]; } || fail "RRL: $out (want 5-10 full answers)"
checks=$((checks + 1)); { [ "$tc" -ge 10 ] && [ "$tc" -le 20 ]; } || fail "RRL: $out (want 10-20 truncated answers, slip 2)"
contains "RRL: dig falls back to TCP after TC" "192.0.2.1" "$(dig @127.0.0.1 -p "$PORT_rrl" +tries=1 +time=2 www.example.test A +short 2>&1)"
contains "RRL: another name is another bucket" "2001:db8::1" "$(dig @127.0.0.1 -p "$PORT_rrl" +notcp +tries=1 +time=2 www.example.test AAAA +short 2>&1)"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
