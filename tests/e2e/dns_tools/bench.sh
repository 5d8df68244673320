#!/usr/bin/env bash
# dnsperf against govern-dns-serve pinned to CPU0 (dnsperf on CPU1), as in /work/shared/notes/dns.md
# section 2: 10 s per row, 8 clients, 400 outstanding. Rows: simple A, signed A with DO, NXDOMAIN with
# a fresh random name per query (unsigned and signed). Prints qps and the server's CPU share.
#   bash tests/e2e/dns_tools/bench.sh build/release/src/dns/govern-dns-serve [seconds]
set -euo pipefail
serve="$(realpath "${1:?path to govern-dns-serve}")"
secs="${2:-10}"
command -v dnsperf >/dev/null || { echo "needs dnsperf (apt-get install dnsperf)" >&2; exit 1; }
D="$(mktemp -d /tmp/govern-dnsbench-XXXXXX)"
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$D"' EXIT
cd "$D"
mkzone() { z=$1; { echo "\$ORIGIN $z."; echo '$TTL 300'
  echo '@ 3600 IN SOA ns1 hostmaster 1 3600 900 604800 300'; echo '@ IN NS ns1'
  echo 'ns1 IN A 127.0.0.1'; echo 'www IN A 192.0.2.1'; echo 'www IN AAAA 2001:db8::1'
  echo '@ IN MX 10 mail'; echo 'mail IN A 192.0.2.25'
  for i in $(seq 0 999); do echo "h$i IN A 10.0.$((i/256)).$((i%256))"; done; } > $2; }
mkzone plain.test plain.zone
mkzone signed.test signed.zone
mkdir keys
taskset -c 0 "$serve" --port 15360 --zone plain.test.=plain.zone --zone signed.test.=signed.zone --sign keys > out 2>&1 &
pid=$!
for _ in $(seq 1 100); do grep -q listening out 2>/dev/null && break; sleep 0.05; done
# --sign signs every zone given; plain.test is only queried without DO.
for z in plain signed; do for i in $(seq 0 999); do echo "h$i.$z.test A"; done > "$z.a"; done
python3 - <<'PY'
import random, string
for z in ("plain", "signed"):
    with open(z + ".nx", "w") as f:
        for _ in range(1000000):
            f.write("".join(random.choices(string.ascii_lowercase + string.digits, k=14)) + "." + z + ".test A\n")
PY
tck=$(getconf CLK_TCK)
cpu() { sed "s/.*) //" /proc/$pid/stat | awk '{print $12+$13}'; }
row() {
  local label=$1 qf=$2; shift 2
  local c0 t0 out c1 t1 qps frac
  c0=$(cpu); t0=$(date +%s.%N)
  out=$(taskset -c 1 dnsperf -s 127.0.0.1 -p 15360 -d "$qf" -l "$secs" -c 8 -T 1 -q 400 "$@" 2>&1)
  c1=$(cpu); t1=$(date +%s.%N)
  qps=$(echo "$out" | awk '/Queries per second/{printf "%.0f",$4}')
  lost=$(echo "$out" | awk '/Queries lost/{print $3}')
  frac=$(echo "($c1-$c0)/$tck/($t1-$t0)" | bc -l)
  printf "%-28s qps=%-8s lost=%-6s server_cpu=%.0f%% qps_per_busy_core=%.0f\n" "$label" "$qps" "$lost" \
    "$(echo "$frac*100" | bc -l)" "$(echo "$qps/$frac" | bc -l)"
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
row "A" plain.a
row "A +DO signed" signed.a -D
row "NX unsigned (fresh names)" plain.nx
row "NX +DO signed (fresh names)" signed.nx -D
