// COSE_Key (RFC 9052/9053, RFC 8230) credential public keys, as WebAuthn authenticators return them.
//
// Three key types are accepted, each tied to the one algorithm it is used with here:
//   EC2 (kty 2), crv P-256 (1), alg -7 ES256: ECDSA over SHA-256, DER signature (WebAuthn §6.5.6);
//   OKP (kty 1), crv Ed25519 (6), alg -8 EdDSA: 64-byte signature;
//   RSA (kty 3), alg -257 RS256: RSASSA-PKCS1-v1_5 with SHA-256, modulus of 2048 to 8192 bits.
// Anything else (another curve, a key without alg, a point not on the curve, a private key part) is
// kInvalidArgument with a message saying which. A PublicKey is immutable: Verify() is const and safe
// from many threads at once. Move-only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "webauthn/cbor.h"

namespace govern::webauthn {

enum class Algorithm : int64_t { kEs256 = -7, kEdDsa = -8, kRs256 = -257 };

class PublicKey {
 public:
  // `cose` is the CBOR-encoded COSE_Key (what the service stores).
  static Result<PublicKey> FromCose(std::span<const uint8_t> cose);
  static Result<PublicKey> FromCbor(const cbor::Value& key);
  ~PublicKey();
  PublicKey(PublicKey&&) noexcept;
  PublicKey& operator=(PublicKey&&) noexcept;

  Algorithm algorithm() const { return alg_; }

  // ok when `signature` is a valid signature of `message` by this key under its algorithm;
  // kUnauthenticated when it does not verify (malformed signatures included).
  Status Verify(std::span<const uint8_t> message, std::span<const uint8_t> signature) const;

 private:
  struct Impl;
  PublicKey(Algorithm alg, std::unique_ptr<Impl> impl);
  Algorithm alg_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::webauthn
