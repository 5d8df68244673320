#!/usr/bin/env bash
# govern-streams-serve against real Kafka clients. Expects $STREAMS_SERVE and $STREAMS_PRODUCER (ctest
# sets them), kcat and python3 on PATH. Each check prints FAIL with what it saw; the exit status counts
# failures.
set -euo pipefail
: "${STREAMS_SERVE:?STREAMS_SERVE must point at govern-streams-serve}"
: "${STREAMS_PRODUCER:?STREAMS_PRODUCER must point at streams_idempotent_producer}"
: "${STREAMS_GROUP_CONSUMER:?STREAMS_GROUP_CONSUMER must point at streams_group_consumer}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STREAMS_SERVE="$(realpath "$STREAMS_SERVE")"
STREAMS_PRODUCER="$(realpath "$STREAMS_PRODUCER")"
STREAMS_GROUP_CONSUMER="$(realpath "$STREAMS_GROUP_CONSUMER")"
command -v kcat >/dev/null || { echo "missing kcat" >&2; exit 1; }
work="$(mktemp -d /tmp/govern-streams-XXXXXX)"
broker_pid=""
cleanup() {
  [ -n "$broker_pid" ] && kill "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
contains() { [[ "$3" == *"$2"* ]] || fail "$1: lacks '$2'"; }

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
B="127.0.0.1:$port"

start_broker() {
  "$STREAMS_SERVE" --listen "$B" --data-dir "$work/data" --partitions 3 --segment-bytes 1048576 \
    --group-initial-delay-ms 1000 \
    >>"$work/broker.log" 2>&1 &
  broker_pid=$!
  for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && return 0
    sleep 0.05
  done
  fail "broker did not start"; cat "$work/broker.log" >&2; exit 1
}
start_broker

# 1. Byte-identical records through kcat, uncompressed and compressed, in order on one partition.
python3 - <<'PY'
import random
r = random.Random(8)
with open("lines", "w") as f:
    for i in range(500):
        f.write("".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789 ~!@#$%^&*()_+=-{}[]|:;<>,.?/") for _ in range(r.randint(1, 300))) + "\n")
with open("blob", "wb") as f:
    f.write(bytes(r.getrandbits(8) for _ in range(200000)))
PY
for codec in none zstd lz4 gzip snappy; do
  kcat -b "$B" -P -t "bytes-$codec" -p 0 -z "$codec" < lines
  kcat -b "$B" -P -t "bytes-$codec" -p 1 -z "$codec" blob  # one message: the whole file
  kcat -b "$B" -C -t "bytes-$codec" -p 0 -o beginning -e -q -X check.crcs=true -f '%s\n' > "out-$codec"
  cmp -s lines "out-$codec" || fail "kcat round trip ($codec): records differ"
  kcat -b "$B" -C -t "bytes-$codec" -p 1 -o beginning -c 1 -q -X check.crcs=true -f '%s' > "blob-$codec"
  cmp -s blob "blob-$codec" || fail "kcat round trip ($codec): 200 kB binary record differs"
done

# 2. Feature negotiation as librdkafka sees it.
features="$(kcat -b "$B" -L -d feature 2>&1 || true)"
for f in MsgVer2 IdempotentProducer BrokerBalancedConsumer ZSTD LZ4; do
  contains "kcat -d feature" "Enabling feature $f" "$features"
done
meta="$(kcat -b "$B" -L -t bytes-none)"
contains "metadata" "3 partitions" "$meta"

# 2b. kcat -G (a balanced consumer group) consumes every record once, and after a broker restart resumes
# from the offsets it committed: a second run sees exactly the records produced after the first.
keyed() { python3 -c "import sys
for i in range(int(sys.argv[1]), int(sys.argv[2])): print(f'k{i}:{sys.argv[3]}-{i}')" "$@"; }
keyed 0 300 first > g-first
kcat -b "$B" -P -t grouped -K: < g-first
kcat -b "$B" -G kcat-group grouped -X auto.offset.reset=earliest -e -q -f '%s\n' > g-out1 2> g-err1 ||
  fail "kcat -G: $(tail -3 g-err1)"
kill "$broker_pid"; wait "$broker_pid" 2>/dev/null || true
start_broker
keyed 300 500 second > g-second
kcat -b "$B" -P -t grouped -K: < g-second
kcat -b "$B" -G kcat-group grouped -X auto.offset.reset=earliest -e -q -f '%s\n' > g-out2 2> g-err2 ||
  fail "kcat -G after restart: $(tail -3 g-err2)"
[ "$(cut -d: -f2 g-first | sort)" == "$(sort g-out1)" ] || fail "kcat -G: first run did not consume the 300 records once each ($(wc -l < g-out1) lines)"
[ "$(cut -d: -f2 g-second | sort)" == "$(sort g-out2)" ] || fail "kcat -G: after restart, not exactly the 200 new records ($(wc -l < g-out2) lines, $(grep -c first g-out2 || true) old)"

# 2c. A librdkafka consumer group of three: one member leaves after 200 records, the group rebalances,
# and every record is consumed exactly once, in order per partition, byte-identical.
python3 - <<'PY'
import random
r = random.Random(3)
with open("c3-in", "w") as f:
    for i in range(3000):
        f.write(f"k{r.randint(0, 99)}:{i:05d}-" + "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789 ~!@#$%^&*()_+={}[]|;<>,.?/") for _ in range(r.randint(1, 200))) + "\n")
PY
kcat -b "$B" -P -t three -K: < c3-in
"$STREAMS_GROUP_CONSUMER" "$B" three c-group 3000 200 > c3-out 2> c3-err || fail "group of three: $(tail -3 c3-err)"
grep -q "member 2 left" c3-err || fail "group of three: member 2 never left"
grep -Eq "assignments [1-9]" c3-err || fail "group of three: no rebalance after the leave: $(tail -1 c3-err)"
python3 - c3-in c3-out <<'PY' || fail "group of three: records not consumed exactly once in order"
import sys, collections
produced = [l.rstrip("\n").split(":", 1)[1] for l in open(sys.argv[1])]
by_part = collections.defaultdict(list)
for l in open(sys.argv[2]):
    p, o, v = l.rstrip("\n").split(" ", 2)
    by_part[int(p)].append((int(o), v))
seen = []
for p, recs in by_part.items():
    offs = [o for o, _ in recs]
    if offs != list(range(len(offs))):
        sys.exit(f"partition {p}: offsets not 0..n-1 once each in order: {offs[:20]}")
    seen += [v for _, v in recs]
    # Per partition, the order the records were produced in.
    pos = {v: i for i, v in enumerate(produced)}
    idx = [pos.get(v, -1) for _, v in recs]
    if idx != sorted(idx) or -1 in idx:
        sys.exit(f"partition {p}: out of order or unknown records")
if sorted(seen) != sorted(produced):
    sys.exit(f"consumed {len(seen)} records, produced {len(produced)}, or contents differ")
PY

# 3. An idempotent librdkafka producer: every record acknowledged, stored once at its offset.
"$STREAMS_PRODUCER" "$B" idem 3000 idem > acked-idem 2> producer-idem.log || { fail "idempotent producer"; cat producer-idem.log >&2; }
kcat -b "$B" -C -t idem -o beginning -e -q -f '%p %o %s\n' > consumed-idem
python3 "$here/check_acked.py" acked-idem consumed-idem idem- || fail "idempotent producer: acknowledged records"

# 4. Bad input: protocol errors or closed connections; other clients unaffected.
python3 "$here/bad_input.py" "$port" || fail "bad input"
kill -0 "$broker_pid" 2>/dev/null || fail "broker died on bad input"
kcat -b "$B" -L >/dev/null 2>&1 || fail "kcat after bad input"

# 5. SIGKILL under load, several times: every acknowledged record present at its offset, none twice.
# Paced (50,000 records a second, no catching up after a stall): unpaced, the records queued while the
# broker was down came back acknowledged in one burst of hundreds of thousands, and the producer
# finished before the third kill.
"$STREAMS_PRODUCER" "$B" killed 500000 kill 50000 > acked-kill 2> producer-kill.log &
producer_pid=$!
# Each kill waits for fresh acknowledgements since the last restart, so every kill lands under load.
last=0
kills=0
for i in 1 2 3 4 5; do
  for _ in $(seq 400); do
    n="$(grep -c '^acked' acked-kill || true)"
    [ "$n" -ge $((last + 15000)) ] && break
    kill -0 "$producer_pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -0 "$producer_pid" 2>/dev/null || { echo "note: producer finished before kill $i"; break; }
  kill -9 "$broker_pid"; wait "$broker_pid" 2>/dev/null || true
  echo "SIGKILL $i after $n acknowledgements"
  start_broker
  last="$n"
  kills=$((kills + 1))
done
[ "$kills" -ge 3 ] || fail "SIGKILL under load: only $kills kills landed while the producer ran"
wait "$producer_pid" || echo "note: producer reported unacknowledged records ($(tail -1 producer-kill.log))"
kcat -b "$B" -C -t killed -o beginning -e -q -X check.crcs=true -f '%p %o %s\n' > consumed-kill
python3 "$here/check_acked.py" acked-kill consumed-kill kill- || fail "SIGKILL under load: acknowledged records"
grep -q "acked 500000 failed 0" producer-kill.log || fail "SIGKILL under load: not every record acknowledged: $(tail -1 producer-kill.log)"

if [ "$failures" -ne 0 ]; then
  echo "--- broker log (tail)" >&2; tail -30 "$work/broker.log" >&2
fi
echo "e2e_streams: $failures failures"
exit "$failures"
