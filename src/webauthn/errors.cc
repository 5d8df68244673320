// Error names: stable, since the service maps them and logs them.
#include "webauthn/errors.h"

#include <array>

namespace govern::webauthn {

namespace {
constexpr std::array<std::string_view, 26> kNames = {
    "none",
    "malformed",
    "wrong_type",
    "challenge_mismatch",
    "origin_not_allowed",
    "cross_origin_not_allowed",
    "rp_id_hash_mismatch",
    "user_not_present",
    "user_not_verified",
    "backup_flags_invalid",
    "no_credential_data",
    "credential_id_mismatch",
    "credential_id_too_long",
    "algorithm_not_allowed",
    "unsupported_key",
    "unsupported_attestation",
    "attestation_not_allowed",
    "invalid_attestation",
    "unknown_credential",
    "credential_not_allowed",
    "user_handle_missing",
    "user_handle_mismatch",
    "bad_signature",
    "sign_count_not_increased",
    "wrong_code",
    "code_reused",
};
static_assert(static_cast<size_t>(Error::kCodeReused) + 1 == kNames.size());
constexpr std::string_view kPrefix = "webauthn.";
}  // namespace

std::string_view ErrorName(Error e) {
  auto i = static_cast<size_t>(e);
  return i < kNames.size() ? kNames[i] : "unknown";
}

Error ErrorOf(const Status& s) {
  if (s.ok()) return Error::kNone;
  std::string_view m = s.message();
  if (m.substr(0, kPrefix.size()) != kPrefix) return Error::kNone;
  m.remove_prefix(kPrefix.size());
  auto colon = m.find(':');
  if (colon == std::string_view::npos) return Error::kNone;
  m = m.substr(0, colon);
  for (size_t i = 1; i < kNames.size(); ++i) {
    if (kNames[i] == m) return static_cast<Error>(i);
  }
  return Error::kNone;
}

Status MakeError(Error e, std::string_view detail) {
  std::string msg = std::string(kPrefix) + std::string(ErrorName(e)) + ": " + std::string(detail);
  bool input = e == Error::kMalformed || e == Error::kUnsupportedKey || e == Error::kUnsupportedAttestation;
  return Status(input ? Code::kInvalidArgument : Code::kUnauthenticated, std::move(msg));
}

}  // namespace govern::webauthn
