// Bundle signing keys: an Ed25519 key pair with a key id, and the text files they are kept in.
//
// Both files are PEM-like text (docs/bundles.md has the exact form):
//
//   -----BEGIN GOVERN BUNDLE PRIVATE KEY-----      -----BEGIN GOVERN BUNDLE PUBLIC KEY-----
//   Key-Id: 8c1f0a9d2b3e4f50                       Key-Id: 8c1f0a9d2b3e4f50
//   Algorithm: ed25519                             Algorithm: ed25519
//
//   <base64 of the 32-byte RFC 8032 seed>          <base64 of the 32-byte public key>
//   -----END GOVERN BUNDLE PRIVATE KEY-----        -----END GOVERN BUNDLE PUBLIC KEY-----
//
// A key id names the key inside signatures.json and the trust store: 1 to 64 characters of [A-Za-z0-9._-].
// Unless one is given it is DefaultKeyId(): the first 16 hex digits of SHA-256(public key). Parsers refuse
// anything else (a wrong header, a missing or malformed field, a key of the wrong length) with
// kInvalidArgument. The types are immutable after creation; their const methods are thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "crypto/bytes.h"
#include "crypto/signature.h"

namespace govern::bundle {

// ok when `id` is a valid key id (see above).
Status ValidateKeyId(std::string_view id);

// The first 16 lower-case hex digits of SHA-256 of the raw 32-byte public key.
std::string DefaultKeyId(const std::array<uint8_t, 32>& public_key);

class PublicKey {
 public:
  static Result<PublicKey> Create(std::string key_id, std::span<const uint8_t> raw32);
  static Result<PublicKey> Parse(std::string_view text);

  const std::string& key_id() const { return key_id_; }
  const crypto::Ed25519PublicKey& key() const { return key_; }
  std::array<uint8_t, 32> Raw() const { return key_.Raw(); }
  // The public key file.
  std::string Text() const;

 private:
  friend class SigningKey;
  PublicKey(std::string id, crypto::Ed25519PublicKey key) : key_id_(std::move(id)), key_(std::move(key)) {}
  std::string key_id_;
  crypto::Ed25519PublicKey key_;
};

class SigningKey {
 public:
  // A fresh random key; an empty `key_id` means DefaultKeyId().
  static Result<SigningKey> Generate(std::string key_id = "");
  // From a 32-byte seed; an empty `key_id` means DefaultKeyId().
  static Result<SigningKey> FromSeed(std::span<const uint8_t> seed32, std::string key_id = "");
  static Result<SigningKey> Parse(std::string_view text);

  const std::string& key_id() const { return key_id_; }
  Result<PublicKey> Public() const;
  Result<std::array<uint8_t, 64>> Sign(std::span<const uint8_t> message) const { return key_.Sign(message); }
  // The private key file (holds the secret: write it with mode 0600).
  Result<crypto::SecretBytes> Text() const;

 private:
  SigningKey(std::string id, crypto::Ed25519PrivateKey key) : key_id_(std::move(id)), key_(std::move(key)) {}
  std::string key_id_;
  crypto::Ed25519PrivateKey key_;
};

}  // namespace govern::bundle
