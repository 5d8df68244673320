// The internal ring file: how the HS256 ring that signs Govern's own access tokens reaches every Govern
// service that checks them ("key configuration", docs/tokens.md).
//
// The auth service keeps the ring sealed in PostgreSQL (shared by its replicas) and writes it here, as
// KeyRing::Serialize() JSON, whenever it changes (and at every start): a whole-file durable replace, mode
// 0600, so a reader sees the old ring or the new one, never a mix. Checking services read it through
// TrustSources::ring_file (trust_refresher.h), which re-reads it every period and swaps keys only when
// the set of keys to trust changed. The ring carries pending keys ahead of their use and retired keys
// through their overlap (RotationPolicy), so a reader that lags by less than publish_ahead never meets
// a token it cannot check.
//
// The file holds secrets that can mint tokens: owner-only, never world-readable. Functions are
// thread-safe (no shared state).
#pragma once

#include <string>

#include "base/status.h"
#include "crypto/bytes.h"
#include "tokens/issuer.h"

namespace govern::tokens {

// Replaces `path` with the serialised ring (0600, fsync'd file and directory).
Status WriteRingFile(const std::string& path, const KeyRing& ring);

// The file's bytes; kNotFound when it does not exist, kPermissionDenied / kUnavailable on other read
// errors, kInvalidArgument past 1 MiB (a ring is a few KiB).
Result<crypto::SecretBytes> ReadRingFile(const std::string& path);

// The keys a checking service trusts from the file at `now_s` (pending, active and retired in overlap).
Result<KeySet> LoadRingFile(const std::string& path, int64_t now_s);

}  // namespace govern::tokens
