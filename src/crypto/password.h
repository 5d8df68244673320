// Password hashing with Argon2id (RFC 9106), stored as a PHC string:
// $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt b64>$<hash b64>.
//
// HashPassword() draws a 16-byte salt and uses the given cost (defaults per the OWASP password storage
// cheat sheet: 19 MiB, 2 passes, 1 lane: roughly 20-40 ms on one core). VerifyPassword() reads the cost
// from the stored string, so raising the defaults later keeps old hashes valid (NeedsRehash() tells when to
// re-hash at the next sign-in). A stored string whose cost is beyond kMax* is refused rather than run, so
// a planted hash cannot make sign-in allocate gigabytes. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::crypto {

struct Argon2Params {
  uint32_t memory_kib = 19 * 1024;
  uint32_t passes = 2;
  uint32_t lanes = 1;

  static constexpr uint32_t kMaxMemoryKib = 1024 * 1024;  // 1 GiB
  static constexpr uint32_t kMaxPasses = 64;
  static constexpr uint32_t kMaxLanes = 64;
};

// The PHC string for `password`. kInvalidArgument for parameters out of range.
Result<std::string> HashPassword(std::string_view password, const Argon2Params& params = {});

// ok when `password` matches; kUnauthenticated when it does not; kInvalidArgument when `encoded` is not a
// well-formed argon2id PHC string (or its cost is beyond the limits above).
Status VerifyPassword(std::string_view password, std::string_view encoded);

// The parameters stored in an argon2id PHC string.
Result<Argon2Params> ParsePasswordHashParams(std::string_view encoded);

// True when `encoded` was made with a lower cost than `params` (or cannot be parsed).
bool NeedsRehash(std::string_view encoded, const Argon2Params& params = {});

}  // namespace govern::crypto
