// The issuing side's pure parts: rotating signing key rings, access/ID token minting, refresh tokens.
//
// The auth service owns storage (it keeps KeyRing::Serialize() encrypted, and refresh-token hashes in
// PostgreSQL); everything here is computation, with time passed in, so rotation is tested without sleeping.
//
// KeyRing is an immutable value: the schedule (PlanAt/Rotate) returns a new ring. Issuer is thread-safe:
// Issue* may run on many threads while SetRings swaps the rings.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "crypto/bytes.h"
#include "tokens/checker.h"
#include "tokens/jose.h"

namespace govern::tokens {

// When keys are introduced, used and dropped. Every key signs for `rotate_every`; its successor is in
// the published key set `publish_ahead` before it starts signing (so every verifier has fetched it in
// time: at least the JWKS cache time and the services' key refresh period); a key that stopped signing
// still verifies for `keep_after` (at least the longest token lifetime plus clock skew).
struct RotationPolicy {
  std::chrono::seconds rotate_every{std::chrono::hours(24)};
  std::chrono::seconds publish_ahead{std::chrono::hours(1)};
  std::chrono::seconds keep_after{std::chrono::hours(2)};
};

// One key of a ring with its schedule (Unix seconds): pending before activate_at, signing in
// [activate_at, retire_at), verifying only in [retire_at, drop_at), gone after.
struct RingKey {
  SigningKey key;
  int64_t activate_at = 0;
  int64_t retire_at = 0;
  int64_t drop_at = 0;
};

enum class KeyState { kPending, kActive, kRetired, kDropped };
KeyState StateAt(const RingKey& k, int64_t now_s);

// What the schedule asks for at a moment (pure; see KeyRing::PlanAt).
struct RotationPlan {
  bool introduce = false;         // make a new key...
  int64_t new_activate_at = 0;    // ...that starts signing at this time
  std::vector<std::string> drop;  // kids past their drop time
  bool changed() const { return introduce || !drop.empty(); }
};

class KeyRing {
 public:
  // A ring with one key of `alg` that signs from `now_s`.
  static Result<KeyRing> Create(Alg alg, const RotationPolicy& policy, int64_t now_s);
  // Round-trips Serialize(); kInvalidArgument for anything else.
  static Result<KeyRing> Deserialize(std::span<const uint8_t> bytes);
  // Every key with its private part and schedule, as JSON. Secret: store it encrypted.
  Result<crypto::SecretBytes> Serialize() const;

  // The schedule at `now_s`: introduce a successor when the signing key retires within publish_ahead
  // (or when no key signs at all: the ring lapsed while the service was down), drop keys past drop_at.
  RotationPlan PlanAt(const RotationPolicy& policy, int64_t now_s) const;
  // The ring after carrying out PlanAt (new keys generated with the ring's algorithm). Returns a copy
  // equal to *this when nothing is due.
  Result<KeyRing> Rotate(const RotationPolicy& policy, int64_t now_s) const;

  // The key that signs at `now_s` (the latest activated one not yet retired); kFailedPrecondition when
  // none does (call Rotate first).
  Result<const RingKey*> SignerAt(int64_t now_s) const;
  // Every key not yet dropped (pending, active, retired): what verifiers must trust now.
  KeySet VerifyKeysAt(int64_t now_s) const;
  // The public JWKS document of the keys not yet dropped; kFailedPrecondition for an HS256 ring.
  Result<std::string> JwksAt(int64_t now_s) const;

  Alg alg() const { return alg_; }
  const std::vector<RingKey>& keys() const { return keys_; }

 private:
  Alg alg_ = Alg::kEdDSA;
  std::vector<RingKey> keys_;  // by activate_at, oldest first
};

// The verification keys a Govern service trusts from a serialised ring (the internal HS256 ring reaches
// services through key configuration in this form).
Result<KeySet> KeySetFromRing(std::span<const uint8_t> serialized_ring, int64_t now_s);

// An opaque refresh token "gvr_<43 base64url chars>" (256 random bits). The service stores `hash`
// (hex SHA-256 of `token`) with `family`, never the token; a rotated token keeps its family, and a
// reused one lets the service revoke the family (RevocationList sid entries).
struct RefreshToken {
  std::string token;
  std::string family;
  std::string hash;
};
// A new refresh token in `family`, or in a new family when it is empty.
Result<RefreshToken> NewRefreshToken(std::string_view family = "");
// Hex SHA-256 of a presented token, to look it up; kInvalidArgument when it is not of the gvr_ form.
Result<std::string> HashRefreshToken(std::string_view token);

// OIDC at_hash / c_hash: base64url of the left half of the hash of `value` (SHA-256 for HS256, ES256 and
// RS256; SHA-512 for EdDSA with Ed25519, as OIDC libraries do).
Result<std::string> HalfHash(Alg alg, std::string_view value);

struct IssuerOptions {
  std::string issuer;  // "iss" of every token
};

struct TokenPair {
  std::string access;
  RefreshToken refresh;
  int64_t access_expires_at = 0;
};

class Issuer {
 public:
  // `access_ring` signs access tokens (Govern's format: the internal HS256 ring; an asymmetric ring for
  // audiences outside Govern); `id_ring` signs ID tokens (asymmetric; may be null if unused).
  Issuer(IssuerOptions options, std::shared_ptr<const KeyRing> access_ring,
         std::shared_ptr<const KeyRing> id_ring, const Clock& clock = Clock::Real());

  // Signs `claims` as an access token (typ at+jwt) valid for `lifetime` from now: sets iss, iat, exp
  // and a fresh jti; the caller fills sub, aud, org, scope, actors, client_id, sid.
  Result<std::string> IssueAccess(Claims claims, std::chrono::seconds lifetime) const;
  // An access token and a refresh token of the same family (claims.sid names an existing family on
  // refresh; empty starts a new one). Nothing is stored here.
  Result<TokenPair> IssuePair(Claims claims, std::chrono::seconds access_lifetime) const;
  // An ID token (typ JWT) from the ID ring: the caller sets sub, aud (the client), nonce, auth_time; the
  // at_hash of `access_token` is added when it is not empty.
  Result<std::string> IssueId(Claims claims, std::chrono::seconds lifetime,
                              std::string_view access_token) const;

  void SetRings(std::shared_ptr<const KeyRing> access_ring, std::shared_ptr<const KeyRing> id_ring);

 private:
  Result<std::string> Sign(const KeyRing& ring, Claims& claims, std::chrono::seconds lifetime,
                           std::string_view typ) const;

  IssuerOptions options_;
  std::atomic<std::shared_ptr<const KeyRing>> access_ring_;
  std::atomic<std::shared_ptr<const KeyRing>> id_ring_;
  const Clock& clock_;
};

}  // namespace govern::tokens
