// JOSE for Govern's tokens: compact JWS (RFC 7515) carrying JWT claims (RFC 7519), and JWK/JWKS
// (RFC 7517/7518, RFC 8037 for Ed25519) with RFC 7638 thumbprints.
//
// The rules that keep a verifier safe live here, once:
// - the key decides the algorithm: a token is verified only by a key whose algorithm equals the
//   header's "alg" (an HS256 key never verifies an asymmetric token, a public key never checks a MAC);
// - "alg": "none", unknown algorithms, any "crit" header, empty signatures, non-canonical base64url and
//   tokens longer than kMaxTokenBytes are refused before any key is touched;
// - headers that point at keys ("jku", "x5u", "jwk", "x5c") are ignored: keys come only from a KeySet.
// Parsing never throws and never crashes on outside input (fuzzed: tokens_jws_fuzz, tokens_jwks_fuzz).
//
// VerifyKey and SigningKey are immutable handles (copying shares the key): Verify() and Sign() are safe
// from many threads at once. Everything else here is a value or a pure function.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "crypto/bytes.h"

namespace govern::tokens {

// Tokens longer than this are refused unparsed (a Govern access token is ~350 bytes; an ID token with
// a long actor chain under 2 KiB).
inline constexpr size_t kMaxTokenBytes = 8192;

enum class Alg { kHS256, kEdDSA, kES256, kRS256 };
std::string_view AlgName(Alg alg);
// "none" and every name not listed above is kInvalidArgument.
Result<Alg> ParseAlg(std::string_view name);
inline bool IsSymmetric(Alg alg) { return alg == Alg::kHS256; }

// One actor of an RFC 8693 "act" chain: actors[0] is the party acting now, actors[1] the one it acts
// for's previous actor ("act" nested inside "act"), and so on.
struct Actor {
  std::string sub;
  std::string client_id;
  friend bool operator==(const Actor&, const Actor&) = default;
};

// The claims Govern reads and writes. Times are NumericDate seconds; 0 means absent.
struct Claims {
  std::string iss;
  std::string sub;
  std::vector<std::string> aud;  // written as a string when it has one element
  int64_t exp = 0;
  int64_t nbf = 0;
  int64_t iat = 0;
  std::string jti;
  // Govern's own.
  std::string org;                 // organisation id
  std::vector<std::string> scope;  // "scope": space-separated in JSON (RFC 8693 section 4.2)
  std::vector<Actor> actors;       // "act" (RFC 8693 section 4.1), outermost first
  std::string client_id;           // RFC 8693 section 4.3 / RFC 9068
  std::string sid;                 // the refresh-token family (session) this token belongs to
  // ID tokens (OIDC Core section 2).
  std::string nonce;
  std::string at_hash;
  int64_t auth_time = 0;

  bool HasAudience(std::string_view a) const;
  bool HasScope(std::string_view s) const;
  friend bool operator==(const Claims&, const Claims&) = default;
};

// Compact JSON of the claims (only the present ones). Deterministic: same claims, same bytes.
std::string ClaimsToJson(const Claims& c);
// Parses a JWT claims set. Refuses non-objects, duplicate names, wrong types (e.g. "exp" as a string),
// "act" nested deeper than 8. Unknown claims are ignored.
Result<Claims> ClaimsFromJson(std::string_view json);

struct JwsHeader {
  Alg alg = Alg::kHS256;
  std::string kid;
  std::string typ;
};

// A compact JWS split and decoded, not yet verified.
struct ParsedJws {
  JwsHeader header;
  std::string_view signing_input;  // "<header>.<payload>" as received (a view into the token)
  std::string payload;             // decoded payload bytes
  std::vector<uint8_t> signature;  // decoded signature
};
// Splits and decodes; refuses everything the header comment lists with kInvalidArgument.
Result<ParsedJws> ParseCompact(std::string_view token, size_t max_bytes = kMaxTokenBytes);

// A public (or, for HS256, shared secret) key that verifies signatures of exactly one algorithm.
class VerifyKey {
 public:
  // 32 bytes or more (RFC 7518 section 3.2: at least the hash size).
  static Result<VerifyKey> Hs256(std::string kid, std::span<const uint8_t> secret);
  static Result<VerifyKey> Ed25519(std::string kid, std::span<const uint8_t> raw32);
  // 0x04 || X || Y.
  static Result<VerifyKey> EcP256(std::string kid, std::span<const uint8_t> uncompressed);
  // Big-endian modulus and exponent; at least 2048 bits.
  static Result<VerifyKey> Rsa(std::string kid, std::span<const uint8_t> n, std::span<const uint8_t> e);

  Alg alg() const;
  const std::string& kid() const;
  // ok, kUnauthenticated for a wrong signature, kInvalidArgument for a malformed one.
  Status Verify(std::string_view signing_input, std::span<const uint8_t> signature) const;

  // Internal to src/tokens (the type is defined in jose.cc only).
  struct Impl;
  explicit VerifyKey(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

// A private (or HS256 secret) key that signs one algorithm.
class SigningKey {
 public:
  // A fresh key; an empty kid becomes the RFC 7638 thumbprint (HS256: a random id, the secret is never
  // hashed into a public name).
  static Result<SigningKey> Generate(Alg alg, std::string kid = "");
  static Result<SigningKey> Hs256(std::string kid, std::span<const uint8_t> secret);

  Alg alg() const;
  const std::string& kid() const;
  Result<std::vector<uint8_t>> Sign(std::string_view signing_input) const;
  // The key that verifies this key's signatures (HS256: the same secret).
  const VerifyKey& verify_key() const;

  // The key with its private part as a small JSON object (a private JWK). Secret: the caller stores it
  // encrypted (vault/keys) and never logs it.
  Result<crypto::SecretBytes> ExportPrivate() const;
  static Result<SigningKey> ImportPrivate(std::span<const uint8_t> bytes);

  // Internal to src/tokens (the type is defined in jose.cc only).
  struct Impl;
  explicit SigningKey(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

// "<b64url(header)>.<b64url(payload)>.<b64url(signature)>" with header {"alg","kid","typ"} (typ
// omitted when empty).
Result<std::string> SignCompact(const SigningKey& key, std::string_view payload, std::string_view typ);
// The encoded header part (with its trailing '.'), for issuers that sign many tokens under one key.
std::string EncodedHeader(Alg alg, std::string_view kid, std::string_view typ);

// A public JWK (RFC 7517). Members are kept as their base64url text.
struct Jwk {
  std::string kty;  // "OKP", "EC", "RSA", ("oct" is refused: secrets are never published)
  std::string crv;  // "Ed25519", "P-256"
  std::string x, y, n, e;
  std::string kid, use, alg;

  std::string ToJson() const;
  // RFC 7638 thumbprint: base64url(SHA-256 of the required members in lexical order).
  Result<std::string> Thumbprint() const;
  // The verifying key; the algorithm follows from kty/crv, and a present "alg" must agree with it.
  Result<VerifyKey> ToKey() const;
  friend bool operator==(const Jwk&, const Jwk&) = default;
};
// The public JWK of a verify key; HS256 keys are kFailedPrecondition.
Result<Jwk> ToJwk(const VerifyKey& key);
Result<Jwk> ParseJwk(std::string_view json);
// {"keys":[...]}; keys of unknown kty/crv are skipped (RFC 7517 section 5), malformed ones refused.
Result<std::vector<Jwk>> ParseJwks(std::string_view json);
std::string JwksToJson(std::span<const Jwk> keys);

}  // namespace govern::tokens
