// Argon2id via libargon2 (the reference implementation, Debian's libargon2).
#include "crypto/password.h"

#include <argon2.h>
#include <openssl/crypto.h>

#include <charconv>
#include <vector>

#include "crypto/random.h"

namespace govern::crypto {
namespace {

constexpr size_t kSaltSize = 16;
constexpr size_t kHashSize = 32;

Status CheckParams(const Argon2Params& p) {
  if (p.memory_kib < 8 * p.lanes || p.memory_kib > Argon2Params::kMaxMemoryKib) {
    return InvalidArgument("argon2id: memory must be between 8*lanes KiB and 1 GiB");
  }
  if (p.passes < 1 || p.passes > Argon2Params::kMaxPasses)
    return InvalidArgument("argon2id: passes out of range");
  if (p.lanes < 1 || p.lanes > Argon2Params::kMaxLanes)
    return InvalidArgument("argon2id: lanes out of range");
  return OkStatus();
}

// Reads "<name>=<digits>" at the front of `s` and advances past it.
bool ReadField(std::string_view& s, std::string_view name, uint32_t& out) {
  if (s.substr(0, name.size()) != name || s.size() <= name.size() || s[name.size()] != '=') return false;
  s.remove_prefix(name.size() + 1);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || ptr == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(ptr - s.data()));
  return true;
}

}  // namespace

Result<Argon2Params> ParsePasswordHashParams(std::string_view encoded) {
  std::string_view s = encoded;
  constexpr std::string_view kPrefix = "$argon2id$v=19$";
  if (s.substr(0, kPrefix.size()) != kPrefix) {
    return InvalidArgument("argon2id: not an argon2id v=19 PHC string");
  }
  s.remove_prefix(kPrefix.size());
  Argon2Params p;
  if (!ReadField(s, "m", p.memory_kib) || s.empty() || s[0] != ',') {
    return InvalidArgument("argon2id: bad m= field");
  }
  s.remove_prefix(1);
  if (!ReadField(s, "t", p.passes) || s.empty() || s[0] != ',')
    return InvalidArgument("argon2id: bad t= field");
  s.remove_prefix(1);
  if (!ReadField(s, "p", p.lanes) || s.empty() || s[0] != '$')
    return InvalidArgument("argon2id: bad p= field");
  GOVERN_RETURN_IF_ERROR(CheckParams(p));
  return p;
}

Result<std::string> HashPassword(std::string_view password, const Argon2Params& params) {
  GOVERN_RETURN_IF_ERROR(CheckParams(params));
  uint8_t salt[kSaltSize];
  GOVERN_RETURN_IF_ERROR(RandomBytes(salt));
  size_t len =
      argon2_encodedlen(params.passes, params.memory_kib, params.lanes, kSaltSize, kHashSize, Argon2_id);
  std::string encoded(len, '\0');
  int rc = argon2id_hash_encoded(params.passes, params.memory_kib, params.lanes, password.data(),
                                 password.size(), salt, kSaltSize, kHashSize, encoded.data(), encoded.size());
  OPENSSL_cleanse(salt, sizeof salt);
  if (rc != ARGON2_OK) return Internal(std::string("argon2id: ") + argon2_error_message(rc));
  if (size_t nul = encoded.find('\0'); nul != std::string::npos) encoded.resize(nul);
  return encoded;
}

Status VerifyPassword(std::string_view password, std::string_view encoded) {
  GOVERN_RETURN_IF_ERROR(ParsePasswordHashParams(encoded).status());
  std::string z(encoded);  // libargon2 wants a NUL-terminated string
  int rc = argon2id_verify(z.c_str(), password.data(), password.size());
  if (rc == ARGON2_OK) return OkStatus();
  if (rc == ARGON2_VERIFY_MISMATCH) return Unauthenticated("argon2id: password does not match");
  if (rc == ARGON2_MEMORY_ALLOCATION_ERROR) return ResourceExhausted("argon2id: out of memory");
  return InvalidArgument(std::string("argon2id: ") + argon2_error_message(rc));
}

bool NeedsRehash(std::string_view encoded, const Argon2Params& params) {
  auto p = ParsePasswordHashParams(encoded);
  if (!p.ok()) return true;
  return p->memory_kib < params.memory_kib || p->passes < params.passes || p->lanes < params.lanes;
}

}  // namespace govern::crypto
