# `govern <service> keys create` (cli/service_keys_cmd.h) refuses a malformed organisation as bad usage
# (exit 2) before it starts a database: the same for the gateway, telemetry and audit keys.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

for service in gateway telemetry audit; do
  expect "$service keys create, bad org" 2 "govern: organisation" \
    "$GOVERN" --data-dir "$work/$service" $service keys create --org "Not An Org!"
  if [ -e "$work/$service/postgres" ]; then
    fail "$service keys create started a database for a malformed organisation"
  fi
  expect "$service keys help" 0 "create" "$GOVERN" $service keys --help
done

finish
