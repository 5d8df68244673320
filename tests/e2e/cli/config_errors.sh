# A user's mistakes in configuration are refused at start with the file, line and reason.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

expect "version" 0 "govern " "$GOVERN" version
expect "help lists up" 0 "up" "$GOVERN" --help
expect "serve help" 0 "service" "$GOVERN" serve --help
expect "config docs" 0 '| `log.level` | `GOVERN_LOG_LEVEL` |' "$GOVERN" config docs

cat > bad-key.toml <<'TOML'
data_dir = "/tmp/x"

[log]
levl = "debug"
TOML
expect "unknown key" 2 "bad-key.toml:4: unknown key 'log.levl' (did you mean log.level?)" \
  "$GOVERN" --config bad-key.toml config check

cat > bad-value.toml <<'TOML'
[http]
workers = -3
TOML
expect "out of range" 2 "bad-value.toml:2: http.workers: value -3 is out of range" \
  "$GOVERN" --config bad-value.toml config check

printf '[log\nlevel = "x"\n' > broken.toml
expect "syntax error" 2 "broken.toml:1:" "$GOVERN" --config broken.toml config check
expect "missing file" 2 "cannot read configuration file /nonexistent.toml" \
  "$GOVERN" --config /nonexistent.toml config check
expect "bad env" 2 "GOVERN_LOG_LEVEL: log.level: 'loud' must be one of" \
  env GOVERN_LOG_LEVEL=loud "$GOVERN" config check
expect "bad --set" 2 "--set: unknown key 'nope'" "$GOVERN" config check --set nope=1
expect "set without =" 2 "expected key=value" "$GOVERN" config check --set log.level

cat > good.toml <<'TOML'
[log]
level = "warn"
TOML
expect "file applies" 0 'log.level = "warn"  # good.toml:2' "$GOVERN" --config good.toml config show
expect "env beats file" 0 'log.level = "error"  # GOVERN_LOG_LEVEL' \
  env GOVERN_LOG_LEVEL=error "$GOVERN" --config good.toml config show
expect "flag beats env" 0 'log.level = "debug"  # --set log.level' \
  env GOVERN_LOG_LEVEL=error "$GOVERN" --config good.toml config show --log-level debug
expect "secret masked" 0 'database.url = ********' \
  "$GOVERN" config show --set 'database.url=postgres://u:hunter2@h/db'
out="$("$GOVERN" config show --set 'database.url=postgres://u:hunter2@h/db')"
checks=$((checks + 1))
[[ "$out" != *hunter2* ]] || fail "password printed by config show"
finish
