// Challenges and the options JSON the browser's navigator.credentials.create()/get() take.
//
// The JSON is PublicKeyCredentialCreationOptionsJSON / PublicKeyCredentialRequestOptionsJSON (WebAuthn
// Level 3 §5.1.10, §5.1.11): binary members are base64url without padding, so a page passes it to
// PublicKeyCredential.parseCreationOptionsFromJSON() / parseRequestOptionsFromJSON() (or decodes the
// few binary members itself) unchanged. Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "webauthn/cose.h"

namespace govern::webauthn {

inline constexpr size_t kChallengeSize = 32;

// 32 bytes from the CSPRNG. The service keeps it server-side, single use and short-lived.
Result<std::vector<uint8_t>> NewChallenge();

struct CredentialDescriptor {
  std::vector<uint8_t> id;
  std::vector<std::string> transports;  // as stored from registration; may be empty
};

struct CreationOptions {
  std::string rp_id;
  std::string rp_name;
  std::vector<uint8_t> user_id;  // the user handle: opaque, at most 64 bytes, no personal data
  std::string user_name;
  std::string user_display_name;
  std::vector<uint8_t> challenge;
  std::vector<Algorithm> algorithms = {Algorithm::kEs256, Algorithm::kEdDsa, Algorithm::kRs256};
  uint32_t timeout_ms = 300000;
  std::vector<CredentialDescriptor> exclude_credentials;  // the user's existing credentials
  std::string resident_key = "preferred";                 // "discouraged" | "preferred" | "required"
  std::string user_verification = "preferred";            // "discouraged" | "preferred" | "required"
  std::string attestation = "none";                       // "none" | "indirect" | "direct"
};
std::string CreationOptionsJson(const CreationOptions& options);

struct RequestOptions {
  std::string rp_id;
  std::vector<uint8_t> challenge;
  uint32_t timeout_ms = 300000;
  std::vector<CredentialDescriptor> allow_credentials;  // empty: discoverable credentials
  std::string user_verification = "preferred";
};
std::string RequestOptionsJson(const RequestOptions& options);

}  // namespace govern::webauthn
