// Internal to src/webauthn: signature checks over an OpenSSL EVP_PKEY (RSA keys, X.509 attestation
// certificates), which crypto/signature.h does not cover. Keeps OpenSSL types out of public headers.
#pragma once

#include <openssl/evp.h>

#include <cstdint>
#include <span>
#include <string_view>

#include "base/status.h"
#include "webauthn/cose.h"

namespace govern::webauthn::internal {

// Verifies under `alg` (ES256: DER ECDSA with SHA-256; EdDSA; RS256: PKCS#1 v1.5 with SHA-256), after
// checking that the key's type fits the algorithm. kUnauthenticated when the signature does not verify.
Status VerifyEvp(EVP_PKEY* key, Algorithm alg, std::span<const uint8_t> message,
                 std::span<const uint8_t> signature, std::string_view what);

// Empties OpenSSL's per-thread error queue (after an expected failure).
void ClearOpensslErrors();

}  // namespace govern::webauthn::internal
