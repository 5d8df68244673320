# Shared by the secondary tests (run.sh, ../dns_service_secondaries/run.sh): NSD and Knot configured as
# secondaries of a primary on 127.0.0.1, run without chroot or user switch from files under $work, on
# high loopback ports, stopped by pid. Expects $work, and fail/contains/equal from the caller.

# free_ports N: N loopback ports free for both TCP and UDP.
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
ports = []
while len(ports) < int(sys.argv[1]):
    t = socket.socket(); t.bind(("127.0.0.1", 0)); p = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", p))
        if p not in ports: ports.append(p)
    except OSError:
        pass
    t.close(); u.close()
print(*ports)
PY
}

# start_secondaries PRIMARY_PORT NSD_PORT KNOT_PORT NSD_SECRET_B64 KNOT_SECRET_B64 ZONE...
# NSD uses key nsd-xfr (hmac-sha256), Knot knot-xfr (hmac-sha512), for transfers and NOTIFY.
start_secondaries() {
  local primary=$1 p_nsd=$2 p_knot=$3 k256=$4 k512=$5
  shift 5
  mkdir -p "$work/nsd" "$work/knot"
  cat > "$work/nsd/nsd.conf" <<C
server:
    ip-address: 127.0.0.1
    port: $p_nsd
    server-count: 1
    username: ""
    chroot: ""
    zonesdir: "$work/nsd"
    database: ""
    zonelistfile: "$work/nsd/zone.list"
    xfrdfile: "$work/nsd/xfrd.state"
    xfrdir: "$work/nsd"
    pidfile: "$work/nsd/nsd.pid"
    logfile: "$work/nsd/nsd.log"
    verbosity: 2
    rrl-ratelimit: 0
    minimal-responses: yes
remote-control:
    control-enable: no
key:
    name: nsd-xfr
    algorithm: hmac-sha256
    secret: "$k256"
C
  cat > "$work/knot/knot.conf" <<C
server:
    rundir: "$work/knot"
    pidfile: "$work/knot/knot.pid"
    listen: 127.0.0.1@$p_knot
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
log:
  - target: "$work/knot/knot.log"
    any: info
database:
    storage: "$work/knot"
key:
  - id: knot-xfr
    algorithm: hmac-sha512
    secret: $k512
remote:
  - id: primary
    address: 127.0.0.1@$primary
    key: knot-xfr
acl:
  - id: notify_from_primary
    address: 127.0.0.1
    key: knot-xfr
    action: notify
template:
  - id: default
    storage: "$work/knot"
    file: "%s.zone"
    zonefile-sync: -1
    journal-content: changes
zone:
C
  local z
  for z in "$@"; do
    printf 'zone:\n    name: %s\n    request-xfr: 127.0.0.1@%s nsd-xfr\n    allow-notify: 127.0.0.1 nsd-xfr\n' "$z" "$primary" >> "$work/nsd/nsd.conf"
    printf '  - domain: %s\n    master: primary\n    acl: notify_from_primary\n' "$z" >> "$work/knot/knot.conf"
  done
  "${NSD:-/usr/sbin/nsd}" -c "$work/nsd/nsd.conf"
  "${KNOTD:-/usr/sbin/knotd}" -c "$work/knot/knot.conf" -d
}

stop_secondaries() {
  [ -f "$work/nsd/nsd.pid" ] && kill "$(cat "$work/nsd/nsd.pid")" 2>/dev/null || true
  [ -f "$work/knot/knot.pid" ] && kill "$(cat "$work/knot/knot.pid")" 2>/dev/null || true
}

# serial PORT ZONE: the SOA serial a server answers (empty if none)
serial() { kdig -p "$1" @127.0.0.1 "$2" SOA +short +time=1 +retry=0 2>/dev/null | awk '{print $3}'; }
# wait_serial NSD_PORT KNOT_PORT ZONE SERIAL: until both secondaries serve it (10 s at most)
wait_serial() {
  local i
  for i in $(seq 1 400); do
    [ "$(serial "$1" "$3")" = "$4" ] && [ "$(serial "$2" "$3")" = "$4" ] && return 0
    sleep 0.025
  done
  fail "$3 serial $4 not reached: nsd=$(serial "$1" "$3") knot=$(serial "$2" "$3")"
}
# same_answers PRIMARY NSD KNOT "QNAME TYPE"...: both secondaries answer as the primary (RRSIG and
# NSEC left out: signatures are per server)
same_answers() {
  local primary=$1 p_nsd=$2 p_knot=$3 q p ours theirs
  shift 3
  for q in "$@"; do
    # shellcheck disable=SC2086
    ours="$(kdig -p "$primary" @127.0.0.1 $q +noall +answer +authority 2>&1 | { grep -v -e RRSIG -e NSEC || true; } | sort)"
    for p in "$p_nsd" "$p_knot"; do
      # shellcheck disable=SC2086
      theirs="$(kdig -p "$p" @127.0.0.1 $q +noall +answer +authority 2>&1 | { grep -v -e RRSIG -e NSEC || true; } | sort)"
      equal "answer to $q from port $p" "$ours" "$theirs"
    done
  done
}
