// Digital signatures: Ed25519 (RFC 8032) and ECDSA over P-256 with SHA-256 (JWS "ES256").
//
// Private keys live inside OpenSSL (which wipes them when freed); raw exports come back as SecretBytes.
// Verify() returns ok for a valid signature, kUnauthenticated for a signature that does not verify and
// kInvalidArgument for one that is malformed. Key objects are immutable after creation: Sign() and
// Verify() are const and safe to call from many threads at once. Keys are move-only.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "crypto/bytes.h"

namespace govern::crypto {

struct PKey;  // an owned EVP_PKEY (internal)

class Ed25519PublicKey {
 public:
  static constexpr size_t kSize = 32;
  static constexpr size_t kSignatureSize = 64;

  static Result<Ed25519PublicKey> FromRaw(std::span<const uint8_t> raw32);
  ~Ed25519PublicKey();
  Ed25519PublicKey(Ed25519PublicKey&&) noexcept;
  Ed25519PublicKey& operator=(Ed25519PublicKey&&) noexcept;

  std::array<uint8_t, kSize> Raw() const;
  Status Verify(std::span<const uint8_t> message, std::span<const uint8_t> signature) const;

 private:
  friend class Ed25519PrivateKey;
  explicit Ed25519PublicKey(std::unique_ptr<PKey> key);
  std::unique_ptr<PKey> key_;
};

class Ed25519PrivateKey {
 public:
  static constexpr size_t kSize = 32;

  static Result<Ed25519PrivateKey> Generate();
  // The 32-byte seed of RFC 8032 (what RFC 8032 calls the secret key).
  static Result<Ed25519PrivateKey> FromRaw(std::span<const uint8_t> seed32);
  ~Ed25519PrivateKey();
  Ed25519PrivateKey(Ed25519PrivateKey&&) noexcept;
  Ed25519PrivateKey& operator=(Ed25519PrivateKey&&) noexcept;

  Result<SecretBytes> Raw() const;
  Result<Ed25519PublicKey> PublicKey() const;
  Result<std::array<uint8_t, 64>> Sign(std::span<const uint8_t> message) const;

 private:
  explicit Ed25519PrivateKey(std::unique_ptr<PKey> key);
  std::unique_ptr<PKey> key_;
};

class EcdsaP256PublicKey {
 public:
  // 0x04 || X || Y, as in JWK "x"/"y" and X9.62.
  static constexpr size_t kUncompressedSize = 65;
  static constexpr size_t kRawSignatureSize = 64;

  static Result<EcdsaP256PublicKey> FromUncompressed(std::span<const uint8_t> point);
  // A "-----BEGIN PUBLIC KEY-----" block (SubjectPublicKeyInfo); refuses keys other than P-256.
  static Result<EcdsaP256PublicKey> FromPem(std::string_view pem);
  // DER SubjectPublicKeyInfo.
  static Result<EcdsaP256PublicKey> FromSpkiDer(std::span<const uint8_t> der);
  ~EcdsaP256PublicKey();
  EcdsaP256PublicKey(EcdsaP256PublicKey&&) noexcept;
  EcdsaP256PublicKey& operator=(EcdsaP256PublicKey&&) noexcept;

  Result<std::vector<uint8_t>> Uncompressed() const;
  Result<std::string> Pem() const;
  Result<std::vector<uint8_t>> SpkiDer() const;

  // The signature is over SHA-256(message). DER is the X9.62 ECDSA-Sig-Value; raw is r || s, each 32
  // bytes big-endian, as JWS ES256 (RFC 7518 section 3.4) carries it.
  Status VerifyDer(std::span<const uint8_t> message, std::span<const uint8_t> der_signature) const;
  Status VerifyRaw(std::span<const uint8_t> message, std::span<const uint8_t> raw_signature) const;

 private:
  friend class EcdsaP256PrivateKey;
  explicit EcdsaP256PublicKey(std::unique_ptr<PKey> key);
  std::unique_ptr<PKey> key_;
};

class EcdsaP256PrivateKey {
 public:
  static Result<EcdsaP256PrivateKey> Generate();
  // An unencrypted PKCS#8 "-----BEGIN PRIVATE KEY-----" block; refuses keys other than P-256.
  static Result<EcdsaP256PrivateKey> FromPkcs8Pem(std::string_view pem);
  ~EcdsaP256PrivateKey();
  EcdsaP256PrivateKey(EcdsaP256PrivateKey&&) noexcept;
  EcdsaP256PrivateKey& operator=(EcdsaP256PrivateKey&&) noexcept;

  // Unencrypted PKCS#8 PEM, for storing the key where it is protected otherwise (vault).
  Result<SecretBytes> Pkcs8Pem() const;
  Result<EcdsaP256PublicKey> PublicKey() const;

  Result<std::vector<uint8_t>> SignDer(std::span<const uint8_t> message) const;
  Result<std::array<uint8_t, 64>> SignRaw(std::span<const uint8_t> message) const;

 private:
  explicit EcdsaP256PrivateKey(std::unique_ptr<PKey> key);
  std::unique_ptr<PKey> key_;
};

// Converts between the two ECDSA P-256 signature forms. Malformed input is kInvalidArgument.
Result<std::array<uint8_t, 64>> EcdsaDerToRaw(std::span<const uint8_t> der);
Result<std::vector<uint8_t>> EcdsaRawToDer(std::span<const uint8_t> raw64);

}  // namespace govern::crypto
