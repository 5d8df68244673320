// COSE_Key to verifying key: OKP through crypto/signature.h, EC2 and RSA through OpenSSL's EVP here.
#include "webauthn/cose.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <algorithm>
#include <string>
#include <variant>

#include "crypto/signature.h"
#include "webauthn/openssl_verify.h"

namespace govern::webauthn {

namespace internal {

void ClearOpensslErrors() { ERR_clear_error(); }

Status VerifyEvp(EVP_PKEY* key, Algorithm alg, std::span<const uint8_t> message,
                 std::span<const uint8_t> signature, std::string_view what) {
  const char* digest = "SHA256";
  switch (alg) {
    case Algorithm::kEs256: {
      if (!EVP_PKEY_is_a(key, "EC"))
        return Unauthenticated(std::string(what) + ": ES256 with a key that is not EC");
      // ES256 is ECDSA on P-256 only (RFC 9053 section 2.1); SHA-256 on another curve is not ES256.
      char group[64] = {};
      size_t len = 0;
      if (EVP_PKEY_get_group_name(key, group, sizeof group, &len) != 1 ||
          (std::string_view(group, len) != "prime256v1" && std::string_view(group, len) != "P-256")) {
        ClearOpensslErrors();
        return Unauthenticated(std::string(what) + ": ES256 with a key not on P-256");
      }
      break;
    }
    case Algorithm::kEdDsa:
      if (!EVP_PKEY_is_a(key, "ED25519")) {
        return Unauthenticated(std::string(what) + ": EdDSA with a key that is not Ed25519");
      }
      digest = nullptr;
      break;
    case Algorithm::kRs256:
      if (!EVP_PKEY_is_a(key, "RSA"))
        return Unauthenticated(std::string(what) + ": RS256 with a key that is not RSA");
      break;
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) return Internal(std::string(what) + ": out of memory");
  int rc = EVP_DigestVerifyInit_ex(ctx, nullptr, digest, nullptr, nullptr, key, nullptr);
  if (rc == 1) rc = EVP_DigestVerify(ctx, signature.data(), signature.size(), message.data(), message.size());
  EVP_MD_CTX_free(ctx);
  if (rc == 1) return OkStatus();
  ClearOpensslErrors();
  return Unauthenticated(std::string(what) + ": signature does not verify");
}

}  // namespace internal

namespace {
struct EvpDeleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using EvpPtr = std::unique_ptr<EVP_PKEY, EvpDeleter>;
}  // namespace

struct PublicKey::Impl {
  std::variant<std::monostate, crypto::EcdsaP256PublicKey, crypto::Ed25519PublicKey, EvpPtr> key;
};

PublicKey::PublicKey(Algorithm alg, std::unique_ptr<Impl> impl) : alg_(alg), impl_(std::move(impl)) {}
PublicKey::~PublicKey() = default;
PublicKey::PublicKey(PublicKey&&) noexcept = default;
PublicKey& PublicKey::operator=(PublicKey&&) noexcept = default;

namespace {

// COSE labels (RFC 9052 section 7.1, RFC 9053 section 7, RFC 8230 section 4).
constexpr int64_t kKty = 1, kAlg = 3, kCrv = -1, kX = -2, kY = -3, kD = -4;
constexpr int64_t kRsaN = -1, kRsaE = -2, kRsaD = -3;
constexpr int64_t kKtyOkp = 1, kKtyEc2 = 2, kKtyRsa = 3;
constexpr int64_t kCrvP256 = 1, kCrvEd25519 = 6;

Status Bad(const std::string& what) { return InvalidArgument("cose key: " + what); }

Result<int64_t> IntField(const cbor::Value& key, int64_t label, const char* name) {
  const cbor::Value* v = key.Find(label);
  if (v == nullptr) return Bad(std::string("missing ") + name);
  auto i = v->AsInt();
  if (!i) return Bad(std::string(name) + " is not an integer");
  return *i;
}

Result<const std::vector<uint8_t>*> BytesField(const cbor::Value& key, int64_t label, const char* name) {
  const cbor::Value* v = key.Find(label);
  if (v == nullptr) return Bad(std::string("missing ") + name);
  if (v->type() != cbor::Value::Type::kBytes) return Bad(std::string(name) + " is not a byte string");
  return &v->bytes();
}

// An uncompressed P-256 point (0x04 || X || Y) as a verifying key. EVP_PKEY_fromdata already refuses
// coordinates outside the field and a point off the curve (EC_POINT_oct2point sets affine coordinates,
// which checks the curve equation); EVP_PKEY_public_check_quick checks again that the point is on the
// curve and not the point at infinity. The full EVP_PKEY_public_check (what
// crypto::EcdsaP256PublicKey::FromUncompressed runs) adds n·Q = O, a scalar multiplication of about
// 60 µs that P-256 does not need: its cofactor is 1, so every finite point on the curve has order n.
Result<EvpPtr> P256Key(std::span<const uint8_t> point) {
  char group[] = "prime256v1";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
                         OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY,
                                                           const_cast<uint8_t*>(point.data()), point.size()),
                         OSSL_PARAM_construct_end()};
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr);
  EVP_PKEY* raw = nullptr;
  bool made = ctx != nullptr && EVP_PKEY_fromdata_init(ctx) == 1 &&
              EVP_PKEY_fromdata(ctx, &raw, EVP_PKEY_PUBLIC_KEY, params) == 1;
  EVP_PKEY_CTX_free(ctx);
  EvpPtr key(raw);
  if (!made) {
    internal::ClearOpensslErrors();
    return Bad("P-256 point refused: not a point on the curve");
  }
  EVP_PKEY_CTX* check = EVP_PKEY_CTX_new_from_pkey(nullptr, key.get(), nullptr);
  bool valid = check != nullptr && EVP_PKEY_public_check_quick(check) == 1;
  EVP_PKEY_CTX_free(check);
  if (!valid) {
    internal::ClearOpensslErrors();
    return Bad("P-256 point refused: not a valid public key");
  }
  return key;
}

Result<EvpPtr> RsaKey(const std::vector<uint8_t>& n, const std::vector<uint8_t>& e) {
  // Leading zero bytes would hide the real modulus size; a canonical unsigned big-endian has none.
  if (n.empty() || n[0] == 0) return Bad("RSA modulus has leading zero bytes");
  size_t bits = n.size() * 8;
  for (uint8_t top = n[0]; (top & 0x80) == 0; top <<= 1) --bits;
  if (bits < 2048 || bits > 8192)
    return Bad("RSA modulus of " + std::to_string(bits) + " bits (2048 to 8192)");
  if (e.empty() || e.size() > 8 || e[0] == 0 || (e.back() & 1) == 0)
    return Bad("RSA exponent is not a small odd number");
  uint64_t ev = 0;
  for (uint8_t b : e) ev = (ev << 8) | b;
  if (ev < 3) return Bad("RSA exponent below 3");

  BIGNUM* bn_n = BN_bin2bn(n.data(), static_cast<int>(n.size()), nullptr);
  BIGNUM* bn_e = BN_bin2bn(e.data(), static_cast<int>(e.size()), nullptr);
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  OSSL_PARAM* params = nullptr;
  EVP_PKEY_CTX* ctx = nullptr;
  EVP_PKEY* pkey = nullptr;
  bool ok = bn_n != nullptr && bn_e != nullptr && bld != nullptr &&
            OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) == 1 &&
            OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) == 1 &&
            (params = OSSL_PARAM_BLD_to_param(bld)) != nullptr &&
            (ctx = EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr)) != nullptr &&
            EVP_PKEY_fromdata_init(ctx) == 1 &&
            EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) == 1;
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  OSSL_PARAM_BLD_free(bld);
  BN_free(bn_n);
  BN_free(bn_e);
  if (!ok) {
    EVP_PKEY_free(pkey);
    internal::ClearOpensslErrors();
    return Bad("RSA key refused by OpenSSL");
  }
  return EvpPtr(pkey);
}

}  // namespace

Result<PublicKey> PublicKey::FromCose(std::span<const uint8_t> cose) {
  cbor::Limits limits;
  limits.max_depth = 2;
  limits.max_items = 64;
  GOVERN_ASSIGN_OR_RETURN(cbor::Value v, cbor::Decode(cose, limits));
  return FromCbor(v);
}

Result<PublicKey> PublicKey::FromCbor(const cbor::Value& key) {
  if (key.type() != cbor::Value::Type::kMap) return Bad("not a map");
  GOVERN_ASSIGN_OR_RETURN(int64_t kty, IntField(key, kKty, "kty (1)"));
  // WebAuthn requires alg in the credential public key (§6.5.1.1).
  GOVERN_ASSIGN_OR_RETURN(int64_t alg, IntField(key, kAlg, "alg (3)"));
  auto impl = std::make_unique<Impl>();
  if (kty == kKtyEc2) {
    if (alg != static_cast<int64_t>(Algorithm::kEs256))
      return Bad("EC2 key with alg " + std::to_string(alg) + " (only -7 ES256)");
    if (key.Find(kD) != nullptr) return Bad("holds a private key part");
    GOVERN_ASSIGN_OR_RETURN(int64_t crv, IntField(key, kCrv, "crv (-1)"));
    if (crv != kCrvP256) return Bad("EC2 curve " + std::to_string(crv) + " (only 1 P-256)");
    GOVERN_ASSIGN_OR_RETURN(auto x, BytesField(key, kX, "x (-2)"));
    GOVERN_ASSIGN_OR_RETURN(auto y, BytesField(key, kY, "y (-3)"));
    if (x->size() != 32 || y->size() != 32) return Bad("P-256 coordinates must be 32 bytes each");
    std::vector<uint8_t> point;
    point.reserve(65);
    point.push_back(0x04);
    point.insert(point.end(), x->begin(), x->end());
    point.insert(point.end(), y->begin(), y->end());
    GOVERN_ASSIGN_OR_RETURN(auto k, P256Key(point));
    impl->key = std::move(k);
    return PublicKey(Algorithm::kEs256, std::move(impl));
  }
  if (kty == kKtyOkp) {
    if (alg != static_cast<int64_t>(Algorithm::kEdDsa))
      return Bad("OKP key with alg " + std::to_string(alg) + " (only -8 EdDSA)");
    if (key.Find(kD) != nullptr) return Bad("holds a private key part");
    GOVERN_ASSIGN_OR_RETURN(int64_t crv, IntField(key, kCrv, "crv (-1)"));
    if (crv != kCrvEd25519) return Bad("OKP curve " + std::to_string(crv) + " (only 6 Ed25519)");
    GOVERN_ASSIGN_OR_RETURN(auto x, BytesField(key, kX, "x (-2)"));
    if (x->size() != 32) return Bad("Ed25519 key must be 32 bytes");
    auto k = crypto::Ed25519PublicKey::FromRaw(*x);
    if (!k.ok()) return Bad("Ed25519 key refused: " + k.status().message());
    impl->key = std::move(*k);
    return PublicKey(Algorithm::kEdDsa, std::move(impl));
  }
  if (kty == kKtyRsa) {
    if (alg != static_cast<int64_t>(Algorithm::kRs256))
      return Bad("RSA key with alg " + std::to_string(alg) + " (only -257 RS256)");
    if (key.Find(kRsaD) != nullptr) return Bad("holds a private key part");
    GOVERN_ASSIGN_OR_RETURN(auto n, BytesField(key, kRsaN, "n (-1)"));
    GOVERN_ASSIGN_OR_RETURN(auto e, BytesField(key, kRsaE, "e (-2)"));
    GOVERN_ASSIGN_OR_RETURN(auto k, RsaKey(*n, *e));
    impl->key = std::move(k);
    return PublicKey(Algorithm::kRs256, std::move(impl));
  }
  return Bad("key type " + std::to_string(kty) + " (only 1 OKP, 2 EC2, 3 RSA)");
}

Status PublicKey::Verify(std::span<const uint8_t> message, std::span<const uint8_t> signature) const {
  Status s;
  if (auto* ed = std::get_if<crypto::Ed25519PublicKey>(&impl_->key)) {
    s = ed->Verify(message, signature);
  } else if (auto* evp = std::get_if<EvpPtr>(&impl_->key); evp != nullptr && alg_ == Algorithm::kEs256) {
    // Only canonical DER, so a signature has exactly one valid encoding (no malleability).
    auto raw = crypto::EcdsaDerToRaw(signature);
    auto canonical = raw.ok() ? crypto::EcdsaRawToDer(*raw) : Result<std::vector<uint8_t>>(raw.status());
    if (!canonical.ok() || canonical->size() != signature.size() ||
        !std::equal(canonical->begin(), canonical->end(), signature.begin()))
      return Unauthenticated("es256: signature is not canonical DER");
    s = internal::VerifyEvp(evp->get(), Algorithm::kEs256, message, signature, "es256");
  } else if (evp != nullptr) {
    s = internal::VerifyEvp(evp->get(), Algorithm::kRs256, message, signature, "rs256");
  } else {
    return Internal("cose key: empty");
  }
  if (s.ok()) return s;
  // A malformed signature is as much a failed proof as a wrong one.
  return Unauthenticated(s.message());
}

}  // namespace govern::webauthn
