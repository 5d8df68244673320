// SHA-256 (one-shot and incremental) and HMAC-SHA256 with a pre-keyed, reusable key.
//
// HmacSha256Key does the key schedule once (the hashed-in inner and outer pads) and then computes
// each MAC from copies of those two states, so a service that MACs many messages under one key (token
// checks, request signing) pays two compressions less per MAC and no key handling. A HmacSha256Key is
// immutable after creation: Mac() is const and safe to call from many threads at once. Sha256Hasher
// is a value: one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "base/status.h"
#include "crypto/bytes.h"

namespace govern::crypto {

using Sha256Digest = std::array<uint8_t, 32>;

Result<Sha256Digest> Sha256(std::span<const uint8_t> data);
inline Result<Sha256Digest> Sha256(std::string_view data) { return Sha256(AsBytes(data)); }

// Incremental SHA-256: Update() any number of times, then Finish() once (after which it is reset and
// can be used for a new message).
class Sha256Hasher {
 public:
  static Result<Sha256Hasher> Create();
  ~Sha256Hasher();
  Sha256Hasher(Sha256Hasher&&) noexcept;
  Sha256Hasher& operator=(Sha256Hasher&&) noexcept;

  Status Update(std::span<const uint8_t> data);
  Status Update(std::string_view data) { return Update(AsBytes(data)); }
  Result<Sha256Digest> Finish();

 private:
  struct Impl;
  explicit Sha256Hasher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class HmacSha256Key {
 public:
  // Any key length (RFC 2104: keys longer than 64 bytes are hashed first). An empty key is refused:
  // it is always a configuration mistake here.
  static Result<HmacSha256Key> Create(std::span<const uint8_t> key);
  static Result<HmacSha256Key> Create(const SecretBytes& key) { return Create(key.span()); }
  ~HmacSha256Key();
  HmacSha256Key(HmacSha256Key&&) noexcept;
  HmacSha256Key& operator=(HmacSha256Key&&) noexcept;

  Result<Sha256Digest> Mac(std::span<const uint8_t> data) const;
  Result<Sha256Digest> Mac(std::string_view data) const { return Mac(AsBytes(data)); }
  // ok when `mac` is the MAC of `data`, kUnauthenticated otherwise (compared in constant time).
  Status Verify(std::span<const uint8_t> data, std::span<const uint8_t> mac) const;

 private:
  struct Impl;
  explicit HmacSha256Key(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One-shot HMAC-SHA256 (keys once; prefer HmacSha256Key when the key is used more than once).
Result<Sha256Digest> HmacSha256(std::span<const uint8_t> key, std::span<const uint8_t> data);

}  // namespace govern::crypto
