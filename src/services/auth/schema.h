// The auth service's tables (applied by the Migrator before Start, and by `govern auth ...`).
//
// Secrets are never stored in the clear: passwords and client secrets as Argon2id PHC strings,
// refresh tokens, authorization codes and admin tokens as hex SHA-256, signing key rings and TOTP
// secrets sealed with AES-256-GCM under the service's storage key (keys.h).
#pragma once

#include <vector>

#include "db/migrator.h"

namespace govern::auth_service {

std::vector<db::Migration> Migrations();

}  // namespace govern::auth_service
