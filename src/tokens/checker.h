// The checking side every Govern service uses: is this bearer token one of ours, for me, still valid?
//
// A Checker verifies a compact JWS access token against a KeySet (the trusted keys: the internal HS256
// keys shared among Govern services, and/or the auth service's public keys), checks issuer, audience,
// expiry and not-before (with a clock skew allowance), and consults a RevocationList. It needs no
// network and no database.
//
// Verified tokens go into a bounded cache keyed by SHA-256 of the token text, holding the parsed claims:
// a repeat check costs one hash, one lookup and the time/audience/revocation checks, whatever the
// signature algorithm; a first check costs one parse and one signature check (a MAC for Govern's own
// access tokens, an Ed25519/ECDSA/RSA verify for tokens signed with the public keys). Time, audience and
// revocation are checked on every call, never cached. Failures are never cached.
//
// Keys and the revocation list are swapped atomically (SetKeys, SetRevocations) while checks run; a key
// swap invalidates the cache, so a key removed at the end of its overlap window stops verifying at once.
//
// Thread-safe: Check, SetKeys and SetRevocations may be called from any number of threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "tokens/jose.h"

namespace govern::tokens {

// The trusted verification keys, looked up by kid. Immutable once built; share it by shared_ptr.
class KeySet {
 public:
  KeySet() = default;
  explicit KeySet(std::vector<VerifyKey> keys);
  // Public keys from a JWKS document (the auth service's /.well-known/jwks.json).
  static Result<KeySet> FromJwks(std::string_view jwks_json);

  // The key that may verify a token with this header: same kid and same algorithm. A header without a
  // kid matches only when exactly one key has the algorithm. kUnauthenticated when none fits.
  Result<const VerifyKey*> Find(const JwsHeader& header) const;
  const std::vector<VerifyKey>& keys() const { return keys_; }

 private:
  std::vector<VerifyKey> keys_;
};

// Revoked token ids (jti) and revoked families (sid), each with the expiry after which the entry can be
// dropped (a token cannot outlive its exp anyway). Immutable; the auth service publishes a new version
// on every change and services swap it in whole. Serialised as JSON:
// {"version":7,"jti":{"<jti>":<exp>,...},"sid":{"<sid>":<exp>,...}}.
class RevocationList {
 public:
  RevocationList() = default;
  using Entries = std::unordered_map<std::string, int64_t>;  // id -> expiry (seconds)
  RevocationList(uint64_t version, Entries jtis, Entries sids)
      : version_(version), jti_(std::move(jtis)), sid_(std::move(sids)) {}
  static Result<RevocationList> FromJson(std::string_view json);
  std::string ToJson() const;

  uint64_t version() const { return version_; }
  bool Revoked(const Claims& c) const;
  size_t size() const { return jti_.size() + sid_.size(); }
  const Entries& jtis() const { return jti_; }
  const Entries& sids() const { return sid_; }
  // A copy without the entries whose expiry (plus `leeway_s`) is before `now_s`, under `version`.
  RevocationList Pruned(int64_t now_s, int64_t leeway_s, uint64_t version) const;

 private:
  uint64_t version_ = 0;
  Entries jti_, sid_;
};

// Why a token was refused. The HTTP layer answers 401 with WWW-Authenticate: Bearer
// error="invalid_token", error_description=<Describe(reject)> for all of them (RFC 6750 section 3.1).
enum class Reject {
  kMalformed,     // not a well-formed compact JWS / JWT, alg none, crit, oversize
  kUnknownKey,    // no trusted key has this kid and algorithm (also: algorithm confusion)
  kBadSignature,  // the signature does not verify
  kWrongIssuer,
  kWrongAudience,
  kExpired,
  kNotYetValid,
  kRevoked,
};
std::string_view RejectName(Reject r);  // "malformed", "expired", ...
// A short description safe to send to the client (no key material, no claim values).
std::string_view Describe(Reject r);
// The reason behind a Status returned by Checker::Check (its message starts with RejectName()).
// kMalformed for a Status that did not come from Check.
Reject RejectOf(const Status& s);

struct CheckerOptions {
  std::string issuer;                   // "iss" must equal it
  std::chrono::seconds clock_skew{30};  // allowed on exp and nbf
  size_t cache_entries = 100'000;       // bound on cached verified tokens (about 500 B each)
  size_t max_token_bytes = kMaxTokenBytes;
  bool require_exp = true;  // an access token without exp is refused
};

using ClaimsPtr = std::shared_ptr<const Claims>;

class Checker {
 public:
  Checker(CheckerOptions options, std::shared_ptr<const KeySet> keys, const Clock& clock = Clock::Real());
  ~Checker();
  Checker(const Checker&) = delete;
  Checker& operator=(const Checker&) = delete;

  // The claims of a valid token for `audience`, or a kUnauthenticated Status whose reason is RejectOf()
  // (kMalformed ones are kInvalidArgument). The claims are shared and immutable.
  Result<ClaimsPtr> Check(std::string_view token, std::string_view audience) const;

  // Replace the trusted keys (rotation: the new set holds next, current and still-overlapping keys).
  void SetKeys(std::shared_ptr<const KeySet> keys);
  void SetRevocations(std::shared_ptr<const RevocationList> list);
  // Installs `list` unless the one in place has a higher version (atomically: of two lists set at
  // once, the newer stays). For writers that read the list concurrently, such as a periodic reload
  // beside a request that just revoked something: the reload that read before the revocation
  // committed must not replace the list holding it. Returns whether `list` was installed.
  bool SetRevocationsIfNotOlder(std::shared_ptr<const RevocationList> list);
  uint64_t revocation_version() const;

  size_t CachedForTesting() const;

 private:
  struct Cache;
  Result<ClaimsPtr> VerifyCold(std::string_view token, const KeySet& keys) const;
  Status CheckTimeAndAudience(const Claims& c, std::string_view audience, int64_t now_s) const;

  CheckerOptions options_;
  const Clock& clock_;
  std::atomic<std::shared_ptr<const KeySet>> keys_;
  std::atomic<std::shared_ptr<const RevocationList>> revocations_;
  // Bumped after every key swap; cache entries carry the generation they were verified under.
  std::atomic<uint64_t> key_generation_{0};
  std::unique_ptr<Cache> cache_;
};

}  // namespace govern::tokens
