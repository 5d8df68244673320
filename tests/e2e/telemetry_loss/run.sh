#!/usr/bin/env bash
# Zero data loss under failure: `run.sh SCENARIO` runs `govern serve telemetry` (private PostgreSQL in a
# temporary data dir) under steady load from telemetry_loadgen, breaks something, and then proves with
# telemetry_loss_check that every acknowledged event is stored exactly once, with the content sent,
# across PostgreSQL and the Parquet archive.
#
# Scenarios:
#   kill_intake     kill -9 the server twice under load; restart it each time
#   kill_ingest     the server dies (exit 137) right after ingest's COPY, before COMMIT, then right
#                   after COMMIT (before the WAL cursor moves); restarted each time
#   terminate_pg    pg_terminate_backend every govern connection, every 0.5 s for 8 s
#   wal_full        the WAL on a small tmpfs; fill the disk, keep sending (503s), then free it
#   restart_pg      restart PostgreSQL (fast shutdown, start again) under load
#   kill_compaction the server dies in the middle of writing a Parquet file, then after uploading one
#                   but before the manifest commit; restarted each time; events must end up archived
#   change_workers  under load: 2 ingest workers, kill -9, restart with 3, stop, restart with 1, then
#                   3 again dying right after a COMMIT under a second load of its own (every other
#                   scenario runs the default, 2)
#
# Expects $GOVERN, $LOADGEN and $CHECK (paths of govern, telemetry_loadgen, telemetry_loss_check).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
scenario="${1:?usage: run.sh SCENARIO}"
: "${GOVERN:?}" "${LOADGEN:?}" "${CHECK:?}"

work="$(mktemp -d /tmp/govern-loss-XXXXXX)"
chmod 755 "$work"  # the private cluster runs as the postgres user when we are root
data="$work/data"
mkdir -p "$data"
log="$work/govern.log"
org=acme
# Below the kernel's ephemeral range (32768-60999), so no bind(0) or outgoing connection of a
# test running beside this one can take the port between the pick and govern's listen.
port=$((20000 + RANDOM % 12000))
server_pid=""
loadgen_pid=""
mounted=""

pg_dir() { echo "$data/postgres"; }

cleanup() {
  local rc=$?
  [ -n "$loadgen_pid" ] && kill -9 "$loadgen_pid" 2>/dev/null || true
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null || true
  [ -n "${GOVERN_KEEP_WORK:-}" ] || pg_stop_private "$data"
  [ -n "$mounted" ] && umount "$mounted" 2>/dev/null || true
  if [ $rc -ne 0 ]; then
    echo "--- last lines of the govern log ($log)"
    tail -40 "$log" 2>/dev/null || true
  fi
  [ -n "${GOVERN_KEEP_WORK:-}" ] && echo "kept $work" || rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

common=(--set "data_dir=$data" --set "telemetry.listen=127.0.0.1:$port" --set log.format=text
        --set telemetry.key_cache_ttl=1s)
extra=()

start_server() {  # [CRASH_POINT]
  GOVERN_TELEMETRY_CRASH_AT="${1:-}" "$GOVERN" serve telemetry "${common[@]}" "${extra[@]}" >>"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
      # A crash point may have fired before the port was probed: that is the scenario, not a failure.
      [ -n "${1:-}" ] && return 0
      echo "govern exited during start"; return 1
    fi
    sleep 0.1
  done
  echo "govern did not listen on $port"; return 1
}

# Waits for the server process to exit by itself (a crash point) and checks its status.
wait_server_exit() {  # EXPECTED_STATUS TIMEOUT_S
  local want="$1" deadline=$((SECONDS + $2)) rc=0
  while kill -0 "$server_pid" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ]; then echo "govern did not reach its crash point"; return 1; fi
    sleep 0.2
  done
  wait "$server_pid" || rc=$?
  server_pid=""
  if [ "$rc" != "$want" ]; then echo "govern exited with $rc, expected $want"; return 1; fi
}

kill9_server() { kill -9 "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""; }

stop_server() { kill -TERM "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""; }

make_key() {
  "$GOVERN" telemetry keys create --org "$org" "${common[@]}" "${extra[@]}" 2>>"$log"
}

start_load() {  # SECONDS RATE [extra loadgen args]
  local secs="$1" rate="$2"
  shift 2
  "$LOADGEN" --url "http://127.0.0.1:$port" --org "$org" --key "$key" --connections 4 --batch 200 \
    --rate "$rate" --duration "$secs" --acked "$work/acked" --summary "$work/summary.json" "$@" \
    >>"$work/loadgen.log" 2>&1 &
  loadgen_pid=$!
}

wait_load() {
  wait "$loadgen_pid" || { echo "loadgen failed:"; cat "$work/loadgen.log"; return 1; }
  loadgen_pid=""
  cat "$work/loadgen.log" | tail -3
}

check() {  # [extra check args]
  "$CHECK" --pg "$(pg_conninfo_of "$data")" --archive-dir "$data/telemetry/archive" --org "$org" \
    --acked "$work/acked" --wait 90 "$@"
}

psql_run() { psql_in "$data" "$1"; }

case "$scenario" in
  kill_intake)
    start_server
    key="$(make_key)"
    start_load 16 4000
    sleep 4; kill9_server; sleep 1; start_server
    sleep 4; kill9_server; sleep 1; start_server
    wait_load
    check
    ;;
  kill_ingest)
    start_server
    key="$(make_key)"
    stop_server
    start_server ingest.after_copy
    start_load 14 4000
    wait_server_exit 137 60; sleep 1; start_server
    sleep 3; stop_server
    start_server ingest.after_commit
    wait_server_exit 137 60; sleep 1; start_server
    wait_load
    check
    ;;
  terminate_pg)
    start_server
    key="$(make_key)"
    start_load 14 4000
    sleep 3
    for _ in $(seq 1 16); do
      psql_run "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE datname = 'govern' AND pid <> pg_backend_pid()" >/dev/null || true
      sleep 0.5
    done
    wait_load
    check
    ;;
  wal_full)
    [ "$(id -u)" = 0 ] || { echo "wal_full needs root (mount -t tmpfs)"; exit 1; }
    wal="$work/wal"
    mkdir -p "$wal"
    mount -t tmpfs -o size=24m tmpfs "$wal"
    mounted="$wal"
    extra=(--set "telemetry.wal_dir=$wal" --set telemetry.wal_segment_size=4MiB)
    start_server
    key="$(make_key)"
    start_load 18 4000
    sleep 3
    # Fill the disk: the WAL's next segment cannot be allocated, appends fail, intake answers 503.
    dd if=/dev/zero of="$wal/filler" bs=1M count=64 2>/dev/null || true
    sleep 6
    rm -f "$wal/filler"
    wait_load
    refused=$(sed -n 's/.*"refused":\([0-9]*\).*/\1/p' "$work/summary.json")
    echo "refused while the disk was full: $refused"
    [ "${refused:-0}" -gt 0 ] || { echo "the disk never filled: nothing was refused"; exit 1; }
    check
    ;;
  restart_pg)
    start_server
    key="$(make_key)"
    start_load 16 4000
    sleep 4
    as_pg_owner "$(pg_bin_dir)/pg_ctl" -D "$(pg_dir)" -m fast -w restart >>"$log" 2>&1
    sleep 2
    as_pg_owner "$(pg_bin_dir)/pg_ctl" -D "$(pg_dir)" -m immediate -w restart >>"$log" 2>&1
    wait_load
    check
    ;;
  kill_compaction)
    # Events from three hours ago, so their hour is old enough to archive at once.
    start_ns=$(( ($(date +%s) - 3 * 3600) * 1000000000 ))
    extra=(--set telemetry.compaction.interval=1s --set telemetry.compaction.age=1s)
    start_server
    key="$(make_key)"
    stop_server
    start_load 14 4000 --start-unix-nanos "$start_ns"
    start_server compaction.mid_file
    wait_server_exit 137 40; start_server
    sleep 1; stop_server
    start_server compaction.after_upload
    wait_server_exit 137 40; start_server
    wait_load
    # Let compaction archive what is left, then count: most events must be in the archive.
    sleep 4
    check --min-archived 1000
    ;;
  change_workers)
    extra=(--set telemetry.ingest.workers=2)
    start_server
    key="$(make_key)"
    start_load 16 4000
    sleep 3; kill9_server
    extra=(--set telemetry.ingest.workers=3)
    start_server
    sleep 3; stop_server
    extra=(--set telemetry.ingest.workers=1)
    start_server
    sleep 3; stop_server
    # A second load of its own for the crash: on a loaded machine the restarts above can outlast the
    # first one, and with nothing left to store no COMMIT would reach the crash point.
    wait_load
    mv "$work/acked" "$work/acked.1"
    extra=(--set telemetry.ingest.workers=3)
    start_server ingest.after_commit
    start_load 10 4000 --seed 2
    wait_server_exit 137 60
    start_server
    wait_load
    cat "$work/acked.1" >>"$work/acked"
    grep -q "ingest workers changed" "$log" || { echo "no layout change was logged"; exit 1; }
    check
    ;;
  *)
    echo "unknown scenario $scenario"; exit 2 ;;
esac
stop_server
