// AES-256-GCM authenticated encryption with associated data.
//
// Seal() draws a fresh 12-byte nonce from the CSPRNG for every message and returns
// nonce (12) || ciphertext || tag (16); Open() takes that form back. Random 96-bit nonces are safe for
// up to about 2^32 messages under one key (NIST SP 800-38D section 8.3): rotate keys well before that.
// A wrong key, a changed byte anywhere or different AAD makes Open() fail with kUnauthenticated and
// return no plaintext. The *WithNonce forms exist for known-answer tests and for protocols that fix
// the nonce; never reuse a nonce under one key. An Aes256GcmKey is immutable: safe to share between threads.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "crypto/bytes.h"

namespace govern::crypto {

class Aes256GcmKey {
 public:
  static constexpr size_t kKeySize = 32;
  static constexpr size_t kNonceSize = 12;
  static constexpr size_t kTagSize = 16;
  static constexpr size_t kOverhead = kNonceSize + kTagSize;

  static Result<Aes256GcmKey> Create(std::span<const uint8_t> key32);
  static Result<Aes256GcmKey> Generate();

  Result<std::vector<uint8_t>> Seal(std::span<const uint8_t> plaintext,
                                    std::span<const uint8_t> aad = {}) const;
  // Plaintext in a SecretBytes, since what was worth encrypting is usually worth wiping.
  Result<SecretBytes> Open(std::span<const uint8_t> sealed, std::span<const uint8_t> aad = {}) const;

  // ciphertext || tag, under the given 12-byte nonce.
  Result<std::vector<uint8_t>> SealWithNonce(std::span<const uint8_t> nonce,
                                             std::span<const uint8_t> plaintext,
                                             std::span<const uint8_t> aad) const;
  Result<SecretBytes> OpenWithNonce(std::span<const uint8_t> nonce,
                                    std::span<const uint8_t> ciphertext_and_tag,
                                    std::span<const uint8_t> aad) const;

  const SecretBytes& key() const { return key_; }

 private:
  explicit Aes256GcmKey(SecretBytes key) : key_(std::move(key)) {}
  SecretBytes key_;
};

}  // namespace govern::crypto
