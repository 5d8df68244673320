# Sourced by the e2e scripts: the private PostgreSQL that `govern` starts under its data directory
# (<data>/postgres, owned by the postgres user when the tests run as root), and a free loopback port.

# The newest installed PostgreSQL's bin directory (Debian's layout), else the one of pg_ctl on PATH.
pg_bin_dir() {
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
  [ -n "$d" ] || d="$(dirname "$(command -v pg_ctl || echo /usr/bin/pg_ctl)")"
  echo "$d"
}

# Runs a command as the cluster's owner: the postgres user when we are root, else ourselves.
as_pg_owner() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# pg_stop_private DATA...: stops, without waiting for clients, the cluster of each govern data
# directory that has one running. For cleanup traps: never fails.
pg_stop_private() {
  local d
  for d in "$@"; do
    [ -f "$d/postgres/postmaster.pid" ] || continue
    as_pg_owner "$(pg_bin_dir)/pg_ctl" -D "$d/postgres" -m immediate stop >/dev/null 2>&1 || true
  done
}

# pg_conninfo_of DATA: libpq connection string of the govern database in that data directory.
pg_conninfo_of() { echo "host=$1/postgres port=$(cat "$1/postgres/govern.port") user=postgres dbname=govern"; }

# psql_in DATA SQL: runs SQL there, unaligned tuples only, stopping at the first error.
psql_in() { as_pg_owner "$(pg_bin_dir)/psql" -X -q -t -A -v ON_ERROR_STOP=1 -d "$(pg_conninfo_of "$1")" -c "$2"; }

# A TCP port free on 127.0.0.1 now (the kernel's choice).
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
