# `govern <service> keys create` (cli/service_keys_cmd.h) refuses a malformed organisation as bad usage
# (exit 2) before it starts a database: the same for the gateway, telemetry, audit, policy-server and
# scim keys (`govern scim key`, `keys` being its alias).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# service, the keys command, create's other arguments, the error's prefix
check_service() {
  local service="$1" keys="$2" extra="$3" prefix="$4"
  # shellcheck disable=SC2086 # $extra is empty or words
  expect "$service $keys create, bad org" 2 "${prefix}organisation" \
    "$GOVERN" --data-dir "$work/$service" $service $keys create --org "Not An Org!" $extra
  if [ -e "$work/$service/postgres" ]; then
    fail "$service $keys create started a database for a malformed organisation"
  fi
  expect "$service $keys help" 0 "create" "$GOVERN" $service $keys --help
}

for service in gateway telemetry audit; do
  check_service $service keys "" "govern: "
done
check_service policy-server keys "--scope publish" "govern: policy-server: "
check_service scim key "" "govern: "
expect "scim keys (the alias) help" 0 "create" "$GOVERN" scim keys --help

finish
