// The auth service's signing keys: two tokens::KeyRing values kept in PostgreSQL, sealed with
// AES-256-GCM under the storage key, and rotated on the schedule of tokens::RotationPolicy.
//
// Rings: "access" (HS256, Govern's own access tokens; services receive it as the ring file the service
// writes, tokens/ring_file.h) and "id" (asymmetric: ID tokens and the published JWKS). The storage key
// comes from auth.storage_key (64 hex digits) or from <data_dir>/auth/storage.key, made on first start
// (0600). Losing it loses the rings: the service then refuses to start rather than silently minting new keys
// (delete the auth_signing_keys rows to start over; every issued token then stops verifying). Not thread-safe
// by itself: the service calls these from one thread (start, then its rotation timer).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "crypto/aead.h"
#include "tokens/issuer.h"

namespace govern::db {
class Connection;
}  // namespace govern::db

namespace govern::auth_service {

Result<crypto::Aes256GcmKey> LoadStorageKey(std::string_view configured_hex, const std::string& dir);

struct Rings {
  std::shared_ptr<const tokens::KeyRing> access;
  std::shared_ptr<const tokens::KeyRing> id;
  bool changed = false;  // created or rotated by this call
};

// Reads both rings (creating them the first time), rotates them when due at `now_s`, and stores what
// changed, in one transaction holding the rows' locks, so replicas starting together agree.
Result<Rings> LoadAndRotate(db::Connection& c, const crypto::Aes256GcmKey& key, tokens::Alg id_alg,
                            const tokens::RotationPolicy& policy, int64_t now_s);

// Seals and opens small secrets (TOTP seeds) with the storage key; `aad` binds them to their row.
Result<std::string> Seal(const crypto::Aes256GcmKey& key, std::string_view plaintext, std::string_view aad);
Result<std::string> Open(const crypto::Aes256GcmKey& key, std::string_view sealed, std::string_view aad);

}  // namespace govern::auth_service
