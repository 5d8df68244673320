// Online DNSSEC signing (RFC 4033-4035, 6840): zone keys, DNSKEY/DS records, key tags, and RRSIGs over
// RRsets in canonical form (RFC 4034 section 6).
//
// A SigningKey is immutable once made and Sign() is const: safe to call from many threads at once
// (P-256 signs with ECDSA_do_sign on a read-only EC_KEY: a hedged nonce, see dnssec.cc. The EVP fallback
// keeps a context per thread).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::dns {

enum class Algorithm : uint8_t { kEcdsaP256Sha256 = 13, kEd25519 = 15 };

class SigningKey {
 public:
  // flags: 257 for a KSK or CSK (SEP bit), 256 for a ZSK.
  static Result<SigningKey> Generate(Algorithm alg, uint16_t flags);
  // Private key in the form Private() writes: PKCS#8 PEM (P-256) or the 32-byte seed in base64 (Ed25519).
  static Result<SigningKey> FromPrivate(Algorithm alg, uint16_t flags, std::string_view text);
  SigningKey(SigningKey&&) noexcept;
  SigningKey& operator=(SigningKey&&) noexcept;
  ~SigningKey();

  Result<std::string> Private() const;  // for storage (the caller keeps it encrypted at rest)
  Algorithm algorithm() const;
  uint16_t flags() const;
  uint16_t key_tag() const;                 // RFC 4034 appendix B
  const std::string& dnskey_rdata() const;  // flags, protocol 3, algorithm, public key
  // RFC 4509 DS RDATA (digest type 2, SHA-256) for this key at `owner` (wire).
  std::string DsRdata(std::string_view owner) const;
  // Raw signature (r||s for P-256, 64 bytes for Ed25519) over `data`.
  Result<std::string> Sign(std::string_view data) const;
  // The same, appended to `out` (no allocation when `out` has room): the online denial path.
  Status SignAppend(std::string_view data, std::string* out) const;

 private:
  friend struct SigningKeyBuilder;
  struct Impl;
  explicit SigningKey(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

uint16_t KeyTag(std::string_view dnskey_rdata);
// DS RDATA (SHA-256, digest type 2) for a DNSKEY RDATA at `owner` (wire).
std::string DsRdataFor(std::string_view owner, std::string_view dnskey_rdata);

// RRSIG RDATA over the RRset (owner wire, type, original TTL, rdatas). `labels` is the owner's label
// count without a leading '*' (RFC 4034 section 3.1.3). SignRRset puts the RDATA in canonical form and
// order itself. SignOneInto is SignRRset over a one-record RRset into `rrsig` (replacing its contents,
// reusing its capacity): what online denial signs per query, without allocating once the caller's and
// this thread's buffers have grown. Both go through one function (dnssec.cc SignCanonical).
Status SignOneInto(const SigningKey& key, std::string_view signer, std::string_view owner, uint16_t type,
                   uint32_t ttl, std::string_view rdata, uint32_t inception, uint32_t expiration,
                   std::string* rrsig);
Result<std::string> SignRRset(const SigningKey& key, std::string_view signer, std::string_view owner,
                              uint16_t type, uint32_t ttl, std::span<const std::string> rdatas,
                              uint32_t inception, uint32_t expiration);
Result<std::string> SignRRset(const SigningKey& key, std::string_view signer, std::string_view owner,
                              uint16_t type, uint32_t ttl, std::span<const std::string_view> rdatas,
                              uint32_t inception, uint32_t expiration);

}  // namespace govern::dns
