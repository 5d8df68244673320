// WebAuthn Level 2 relying-party ceremonies: registering a credential (§7.1) and verifying an
// authentication assertion (§7.2), with attestation formats "none" and "packed" (§8.2, §8.7).
//
// The functions are pure: no database, no clock, no network. The auth service issues a challenge
// (NewChallenge in options.h), keeps it server-side, single use and expiring, and passes it back here
// with the browser's response; it stores the Credential a registration returns and hands it back (as
// StoredCredential) at each sign-in, then stores the new sign count. Every check of the spec is made in
// the spec's order and each refusal is its own Error (errors.h). Trust in attestation certificates
// (roots, metadata service) is not judged here: a packed full attestation is verified against its
// leaf certificate and §8.2.1's offline-checkable certificate rules, and the chain is returned for a
// policy to look at. Thread-safe: the functions share no state.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "webauthn/cose.h"
#include "webauthn/errors.h"
#include "webauthn/parse.h"

namespace govern::webauthn {

// The relying party's identity, the same for both ceremonies.
struct RelyingParty {
  std::string id;                    // the RP ID, a registrable domain such as "example.com" or "localhost"
  std::vector<std::string> origins;  // exact origins accepted ("https://example.com"); never a pattern
  bool allow_cross_origin = false;   // accept clientData.crossOrigin = true (an iframe on another site)
};

enum class AttestationType { kNone, kSelf, kBasic };

struct RegistrationOptions {
  RelyingParty rp;
  std::vector<uint8_t> challenge;  // the one issued for this ceremony
  bool require_user_verification = false;
  // The algorithms offered in pubKeyCredParams; the credential's key must use one of them.
  std::vector<Algorithm> algorithms = {Algorithm::kEs256, Algorithm::kEdDsa, Algorithm::kRs256};
  bool allow_none_attestation = true;  // fmt "none" (what browsers send unless attestation is asked for)
  bool allow_self_attestation = true;  // packed without a certificate
  // When non-zero, packed certificates must be valid at this time (seconds since the Unix epoch).
  int64_t now_unix_seconds = 0;
};

// What the service stores for a registered credential (and gives back as StoredCredential).
struct Credential {
  std::vector<uint8_t> id;               // unique: the service refuses one already registered (§7.1 step 24)
  std::vector<uint8_t> public_key_cose;  // COSE_Key as the authenticator encoded it
  Algorithm algorithm = Algorithm::kEs256;
  uint32_t sign_count = 0;
  std::array<uint8_t, 16> aaguid{};
  bool user_verified = false;  // UV at registration
  bool backup_eligible = false;
  bool backup_state = false;
  std::vector<std::string> transports;  // from the response, for allowCredentials hints later
  std::string attestation_format;       // "none" or "packed"
  AttestationType attestation_type = AttestationType::kNone;
  std::vector<std::vector<uint8_t>> attestation_certificates;  // x5c, DER, leaf first (kBasic only)
};

Result<Credential> VerifyRegistration(const RegistrationOptions& options,
                                      const RegistrationResponse& response);

struct AssertionOptions {
  RelyingParty rp;
  std::vector<uint8_t> challenge;
  bool require_user_verification = false;
  // The credential ids offered in allowCredentials. Empty: a discoverable-credential sign-in, where the
  // user was not identified first and the response must carry the userHandle.
  std::vector<std::vector<uint8_t>> allow_credentials;
  // When false (the default) a counter that does not move forward is refused (kSignCountNotIncreased).
  // When true it is accepted and reported in AssertionResult::possible_clone for the service's policy.
  bool tolerate_sign_count_regression = false;
};

// The service's record of the credential the response names (looked up by response.raw_id).
struct StoredCredential {
  std::vector<uint8_t> id;
  std::vector<uint8_t> public_key_cose;
  std::vector<uint8_t> user_handle;  // the owner's WebAuthn user.id (PublicKeyCredentialUserEntity.id)
  uint32_t sign_count = 0;
  bool backup_eligible = false;
};

struct AssertionResult {
  uint32_t sign_count = 0;  // store this as the credential's new sign count
  bool user_verified = false;
  bool backup_state = false;  // store: the credential may have been synced
  bool possible_clone = false;
};

Result<AssertionResult> VerifyAssertion(const AssertionOptions& options, const StoredCredential& credential,
                                        const AssertionResponse& response);

}  // namespace govern::webauthn
