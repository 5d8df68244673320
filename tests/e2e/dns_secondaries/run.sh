#!/usr/bin/env bash
# NSD and Knot follow govern-dns-serve as secondaries (see CMakeLists.txt). Expects $DNS_SERVE; runs
# nsd and knotd unprivileged-style (no chroot, no user switch, high loopback ports, files in a scratch
# directory) and stops them by pid. Each check prints FAIL with what it saw; the exit status counts them.
set -euo pipefail
: "${DNS_SERVE:?DNS_SERVE must point at govern-dns-serve}"
DNS_SERVE="$(realpath "$DNS_SERVE")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
NSD="${NSD:-/usr/sbin/nsd}"
KNOTD="${KNOTD:-/usr/sbin/knotd}"
for t in "$NSD" "$KNOTD" kdig delv ldns-verify-zone python3; do
  command -v "$t" >/dev/null || { echo "missing $t (install nsd knot knot-dnsutils bind9-dnsutils ldnsutils)" >&2; exit 1; }
done
work="$(mktemp -d /tmp/govern-dns-sec-XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  stop_secondaries
  sleep 0.2
  if [ "${KEEP:-}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
failures=0
checks=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
contains() { checks=$((checks + 1)); [[ "$3" == *"$2"* ]] || fail "$1: lacks '$2' in: $3"; }
equal() { checks=$((checks + 1)); [ "$2" == "$3" ] || fail "$1: '$2' != '$3'"; }

read -r P_NSD P_KNOT < <(free_ports 2)
K256="$(head -c 32 /dev/urandom | base64)"
K512="$(head -c 64 /dev/urandom | base64 -w0)"

mkzone() {  # NAME SERIAL WWW: a zone of ~2,000 names so a transfer spans several messages
  { echo "\$ORIGIN $1."; echo '$TTL 300'
    echo "@ 3600 IN SOA ns1 hostmaster $2 3600 900 604800 60"; echo '@ IN NS ns1'
    echo 'ns1 IN A 127.0.0.1'; echo "www IN A $3"; echo 'www IN AAAA 2001:db8::1'
    echo '*.wild IN TXT "wild"'; echo 'sub IN NS ns.sub'; echo 'ns.sub IN A 192.0.2.53'
    [ "$2" = 1 ] && echo 'old IN TXT "goes away"'
    [ "$2" != 1 ] && echo 'new IN TXT "came with serial 2"'
    for i in $(seq 0 1999); do echo "h$i IN A 10.0.$((i / 256)).$((i % 256))"; done; } > "$1.zone"
}
mkzone plain.test 1 192.0.2.1
mkzone signed.test 1 192.0.2.1
mkdir keys
"$DNS_SERVE" --port 0 --zone plain.test.=plain.test.zone --zone signed.test.=signed.test.zone \
  --sign keys --unsigned plain.test. --nsec3-optout \
  --tsig "nsd-xfr:hmac-sha256:$K256" --tsig "knot-xfr:hmac-sha512:$K512" \
  --allow-transfer "* 127.0.0.1 key=nsd-xfr key=knot-xfr" \
  --notify "* 127.0.0.1:$P_NSD key=nsd-xfr" --notify "* 127.0.0.1:$P_KNOT key=knot-xfr" > serve.out 2> serve.err &
serve_pid=$!
pids+=("$serve_pid")
for _ in $(seq 1 100); do grep -q listening serve.out 2>/dev/null && break; sleep 0.05; done
P="$(awk '/listening on/{print $3}' serve.out)"
[ -n "$P" ] || { echo "govern-dns-serve did not start: $(cat serve.err)" >&2; exit 1; }

start_secondaries "$P" "$P_NSD" "$P_KNOT" "$K256" "$K512" plain.test signed.test

wait_serial "$P_NSD" "$P_KNOT" plain.test 1
wait_serial "$P_NSD" "$P_KNOT" signed.test 1

# ---- transfers refused and badly signed ----
out="$(kdig -p "$P" @127.0.0.1 plain.test AXFR 2>&1 || true)"
contains "unsigned AXFR refused" "REFUSED" "$out"
out="$(kdig -p "$P" @127.0.0.1 -y "hmac-sha256:nsd-xfr:$(head -c 32 /dev/urandom | base64)" plain.test AXFR 2>&1 || true)"
contains "wrong secret" "BADSIG" "$out"
out="$(kdig -p "$P" @127.0.0.1 -y "hmac-sha256:nobody:$K256" plain.test AXFR 2>&1 || true)"
contains "unknown key" "BADKEY" "$out"
out="$(kdig -p "$P" @127.0.0.1 -y "hmac-sha256:nsd-xfr:$K256" other.test AXFR 2>&1 || true)"
contains "zone not served" "NOTAUTH" "$out"
out="$(kdig -p "$P" @127.0.0.1 -y "hmac-sha256:nsd-xfr:$K256" signed.test SOA 2>&1)"
contains "signed SOA query answered signed" "TSIG	hmac-sha256." "$out"
contains "signed SOA query answered signed" "NOERROR 0" "$out"

# ---- our AXFR of the signed zone: several messages, running MAC checked by kdig, zone valid ----
kdig -p "$P" @127.0.0.1 -y "hmac-sha512:knot-xfr:$K512" signed.test AXFR > axfr.txt
contains "signed AXFR spans messages" "messages" "$(grep 'Received' axfr.txt)"
msgs="$(awk '/Received/{gsub("\\(","",$5); print $5}' axfr.txt)"
checks=$((checks + 1)); [ "${msgs:-0}" -gt 1 ] || fail "signed AXFR in $msgs message(s)"
grep -v '^;' axfr.txt | grep -v 'TSIG' | grep -v '^$' > axfr.zone
out="$(ldns-verify-zone axfr.zone 2>&1 || true)"
contains "ldns-verify-zone on our AXFR (NSEC3, opt-out)" "Zone is verified and complete" "$out"
contains "our AXFR carries NSEC3PARAM 1 0 0 -" "NSEC3PARAM	1 0 0 -" "$(cat axfr.txt)"
contains "our AXFR carries opt-out NSEC3" "NSEC3	1 1 0 -" "$(cat axfr.txt)"

# ---- a change: NOTIFY, then IXFR ----
mkzone plain.test 2 192.0.2.2
mkzone signed.test 2 192.0.2.2
kill -HUP "$serve_pid"
wait_serial "$P_NSD" "$P_KNOT" plain.test 2
wait_serial "$P_NSD" "$P_KNOT" signed.test 2
for z in plain.test signed.test; do
  contains "NSD got our NOTIFY for $z" "notify for $z. from 127.0.0.1 serial 2" "$(cat nsd/nsd.log)"
  contains "Knot got our NOTIFY for $z" "[$z.] notify, incoming" "$(cat knot/knot.log)"
  contains "Knot took $z by IXFR" "[$z.] IXFR, incoming, remote 127.0.0.1@$P, finished" "$(cat knot/knot.log)"
done
# NSD logs the size of each transfer: the IXFR is small next to the first AXFR.
nsd_sizes="$(grep -o 'received update to serial 2 at [^ ]* from [^ ]* TSIG verified with key nsd-xfr of [0-9]* bytes' nsd/nsd.log | awk '{print $(NF-1)}' | sort -n | tail -1)"
checks=$((checks + 1)); [ -n "$nsd_sizes" ] && [ "$nsd_sizes" -lt 5000 ] || fail "NSD's serial-2 transfers are not small IXFRs: ${nsd_sizes:-none}"
out="$(kdig -p "$P" @127.0.0.1 -y "hmac-sha256:nsd-xfr:$K256" plain.test IXFR=1 +tcp)"
contains "IXFR from the journal: old record deleted" "old.plain.test." "$out"
contains "IXFR from the journal: new record" "new.plain.test." "$out"
out="$(kdig -p "$P" @127.0.0.1 -y "hmac-sha256:nsd-xfr:$K256" plain.test IXFR=2 +tcp)"
equal "IXFR when up to date: one SOA" "1" "$(grep -c 'IN	SOA' <<< "$out")"
out="$(kdig -p "$P" @127.0.0.1 -y "hmac-sha256:nsd-xfr:$K256" plain.test IXFR=0 +tcp)"
contains "IXFR from an unknown serial: AXFR form" "h1999.plain.test." "$out"

# ---- the secondaries answer as we do ----
for z in plain.test signed.test; do
  same_answers "$P" "$P_NSD" "$P_KNOT" "www.$z A" "www.$z AAAA" "new.$z TXT" "old.$z TXT" "x.wild.$z TXT" \
    "h1234.$z A" "ns.sub.$z A" "$z NS"
done
sed -n '/trust-anchors/,$p' keys/signed.test.anchor > ta.conf
for p in "$P_NSD" "$P_KNOT"; do
  out="$(delv @127.0.0.1 -p "$p" -a ta.conf +root=signed.test www.signed.test A 2>&1 || true)"
  contains "delv through port $p: positive" "; fully validated" "$out"
  contains "delv through port $p: new address" "192.0.2.2" "$out"
  out="$(delv @127.0.0.1 -p "$p" -a ta.conf +root=signed.test old.signed.test TXT 2>&1 || true)"
  contains "delv through port $p: deleted name (NSEC3)" "negative response, fully validated" "$out"
  out="$(kdig -p "$p" @127.0.0.1 nothere.signed.test A +dnssec 2>&1)"
  contains "port $p denies with NSEC3" "NSEC3	1 1 0 -" "$out"
  contains "port $p: NXDOMAIN" "NXDOMAIN" "$out"
done

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
