# `govern up`: a private PostgreSQL, every service, ports printed, clean shutdown on SIGTERM; a
# second `govern up` on the same data directory reuses the running cluster; data survives restarts.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pg.sh"
chmod 755 "$work"  # the private cluster runs as the postgres user when we are root
data="$work/var"
pids=()
cleanup_up() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 1
  pg_stop_private "$data"
  rm -rf "$work"
}
trap cleanup_up EXIT

# http_get HOST PORT PATH: prints the status code, then the body, using bash's /dev/tcp (no curl).
http_get() {
  local host="$1" port="$2" path="$3" resp
  exec 9<>"/dev/tcp/$host/$port" || return 1
  printf 'GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$path" "$host" >&9
  resp="$(cat <&9)"
  exec 9<&-
  echo "${resp}" | head -1 | awk '{print $2}'
  echo "${resp#*$'\r\n\r\n'}"
}

# start_up NAME: starts govern up in the background, waits for its banner, sets ADMIN_PORT.
start_up() {
  local name="$1"
  # Each instance gets its own ports and telemetry WAL (one WAL has one writer: its lock).
  "$GOVERN" up --data-dir "$data" --set admin.listen=127.0.0.1:0 --set telemetry.listen=127.0.0.1:0 \
    --set policy.server.listen=127.0.0.1:0 --set auth.listen=127.0.0.1:0 --set audit.listen=127.0.0.1:0 --set scim.listen=127.0.0.1:0 \
    --set streams.listen=127.0.0.1:0 --set streams.data_dir="$work/$name-streams" \
    --set telemetry.wal_dir="$work/$name-wal" >"$work/$name.out" 2>"$work/$name.log" &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 1 600); do
    if grep -q "is up" "$work/$name.out" 2>/dev/null; then break; fi
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  LAST_PID=$pid
  ADMIN_PORT="$(awk '$1 == "admin" {split($3, a, ":"); print a[2]}' "$work/$name.out")"
}

start_up first
checks=$((checks + 1))
if [ -z "$ADMIN_PORT" ]; then
  fail "first govern up did not come up: $(cat "$work/first.out" "$work/first.log")"
  finish
  exit 1
fi
first_pid=$LAST_PID
expect "banner lists postgres" 0 "postgres" cat "$work/first.out"
expect "healthz" 0 "200" http_get 127.0.0.1 "$ADMIN_PORT" /healthz
expect "readyz (database answers)" 0 "200" http_get 127.0.0.1 "$ADMIN_PORT" /readyz
expect "status lists admin" 0 '"service":"admin"' http_get 127.0.0.1 "$ADMIN_PORT" /v1/status
expect "metrics" 0 "# TYPE" http_get 127.0.0.1 "$ADMIN_PORT" /metrics
expect "unknown path is problem+json 404" 0 '"status":404' http_get 127.0.0.1 "$ADMIN_PORT" /nope

pg_port="$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/first.out" | head -1)"
psql_cmd=(psql -X -q -t -A -h "$data/postgres" -p "$pg_port" -U postgres -d govern)
expect "write a marker row" 0 "" "${psql_cmd[@]}" -c "CREATE TABLE marker(v text); INSERT INTO marker VALUES ('kept')"

# A second govern up on the same data directory reuses the running cluster, and keeps it when the
# first one (which started it) exits; the last one to exit stops it.
first_admin=$ADMIN_PORT
start_up second
second_pid=$LAST_PID
second_admin=$ADMIN_PORT
expect "second up reuses the cluster" 0 "already running" cat "$work/second.out"
expect "second up serves" 0 "200" http_get 127.0.0.1 "$second_admin" /healthz
kill -TERM "$first_pid"
wait "$first_pid" && rc=0 || rc=$?
checks=$((checks + 1))
[ "$rc" -eq 0 ] || fail "govern up exited $rc on SIGTERM: $(tail -5 "$work/first.log")"
expect "stop is logged" 0 'msg="stopped"' cat "$work/first.log"
expect "first leaves the cluster to the second" 0 "another govern process uses it" cat "$work/first.log"
expect "cluster still up after the first stops" 0 "kept" "${psql_cmd[@]}" -c "SELECT v FROM marker"
sleep 1.5  # the admin service re-checks the database once a second
expect "second still ready" 0 "200" http_get 127.0.0.1 "$second_admin" /readyz

# The last user stops the cluster govern started.
kill -TERM "$second_pid"
wait "$second_pid" && rc=0 || rc=$?
checks=$((checks + 1))
[ "$rc" -eq 0 ] || fail "second govern up exited $rc on SIGTERM"
checks=$((checks + 1))
[ ! -f "$data/postgres/postmaster.pid" ] || fail "private PostgreSQL still running after the last govern up stopped"

# Restart: the data is kept.
start_up third
checks=$((checks + 1))
[ -n "$ADMIN_PORT" ] || fail "third govern up did not come up: $(cat "$work/third.log")"
pg_port="$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/third.out" | head -1)"
psql_cmd=(psql -X -q -t -A -h "$data/postgres" -p "$pg_port" -U postgres -d govern)
expect "data kept across restarts" 0 "kept" "${psql_cmd[@]}" -c "SELECT v FROM marker"
kill -INT "$LAST_PID"
wait "$LAST_PID" && rc=0 || rc=$?
checks=$((checks + 1))
[ "$rc" -eq 0 ] || fail "govern up exited $rc on SIGINT"

# Bad usage is refused with a reason.
expect "unknown service" 2 "unknown service 'nosuch' (this binary holds: admin" "$GOVERN" serve nosuch --data-dir "$data"
expect "bad listen address refused before anything starts" 2 "admin.listen: 'nonsense' is not host:port" \
  "$GOVERN" up --data-dir "$work/never" --set admin.listen=nonsense
checks=$((checks + 1))
[ ! -d "$work/never/postgres" ] || fail "a bad configuration still created a cluster"
expect "contradictory limits refused" 1 "limits.min (500) is above limits.max (100)" \
  "$GOVERN" up --data-dir "$work/never" --set limits.min=500 --set limits.max=100
finish
