// Ed25519 and ECDSA P-256 over EVP_PKEY (no deprecated EC_KEY calls). Each Sign/Verify makes its own
// EVP_MD_CTX, so a shared key is only read, which OpenSSL 3 allows from many threads.
#include "crypto/signature.h"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstring>

#include "crypto/openssl_error.h"

namespace govern::crypto {

struct PKey {
  explicit PKey(EVP_PKEY* k) : p(k) {}
  ~PKey() { EVP_PKEY_free(p); }
  PKey(const PKey&) = delete;
  PKey& operator=(const PKey&) = delete;
  EVP_PKEY* p;
};

namespace {

using internal::OpensslError;
using MdCtx = internal::Ptr<EVP_MD_CTX, EVP_MD_CTX_free>;
using PkeyCtx = internal::Ptr<EVP_PKEY_CTX, EVP_PKEY_CTX_free>;
using Bio = internal::Ptr<BIO, BIO_free_all>;
using EcdsaSig = internal::Ptr<ECDSA_SIG, ECDSA_SIG_free>;
using Bignum = internal::Ptr<BIGNUM, BN_free>;

Result<std::unique_ptr<PKey>> Wrap(EVP_PKEY* k, std::string_view what, Code code = Code::kInternal) {
  if (k == nullptr) return OpensslError(what, code);
  return std::make_unique<PKey>(k);
}

// Signs `message` with a fresh context. `digest` is null for Ed25519 (which hashes internally).
Result<std::vector<uint8_t>> SignWith(EVP_PKEY* key, const char* digest, std::span<const uint8_t> message,
                                      std::string_view what) {
  MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestSignInit_ex(ctx.get(), nullptr, digest, nullptr, nullptr, key, nullptr) != 1) {
    return OpensslError(std::string(what) + " sign init");
  }
  size_t len = 0;
  if (EVP_DigestSign(ctx.get(), nullptr, &len, message.data(), message.size()) != 1) {
    return OpensslError(std::string(what) + " sign");
  }
  std::vector<uint8_t> sig(len);
  if (EVP_DigestSign(ctx.get(), sig.data(), &len, message.data(), message.size()) != 1) {
    return OpensslError(std::string(what) + " sign");
  }
  sig.resize(len);
  return sig;
}

Status VerifyWith(EVP_PKEY* key, const char* digest, std::span<const uint8_t> message,
                  std::span<const uint8_t> sig, std::string_view what) {
  MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit_ex(ctx.get(), nullptr, digest, nullptr, nullptr, key, nullptr) != 1) {
    return OpensslError(std::string(what) + " verify init");
  }
  int rc = EVP_DigestVerify(ctx.get(), sig.data(), sig.size(), message.data(), message.size());
  if (rc == 1) return OkStatus();
  internal::ClearOpensslErrors();  // a bad signature is an answer, not an internal error
  return Unauthenticated(std::string(what) + ": signature does not verify");
}

Result<std::vector<uint8_t>> BioContents(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  if (n < 0) return OpensslError("BIO_get_mem_data");
  return std::vector<uint8_t>(data, data + n);
}

// Refuses any key that is not an EC key on P-256 (a PEM may hold RSA, or another curve).
Status CheckP256(EVP_PKEY* key) {
  if (!EVP_PKEY_is_a(key, "EC")) return InvalidArgument("ecdsa-p256: not an EC key");
  char group[64] = {};
  size_t len = 0;
  if (EVP_PKEY_get_group_name(key, group, sizeof group, &len) != 1) {
    return OpensslError("ecdsa-p256: key has no curve", Code::kInvalidArgument);
  }
  std::string_view g(group, len);
  if (g != "prime256v1" && g != "P-256")
    return InvalidArgument("ecdsa-p256: key is on curve " + std::string(g));
  return OkStatus();
}

}  // namespace

// --- Ed25519 ---------------------------------------------------------------------------------------

Ed25519PublicKey::Ed25519PublicKey(std::unique_ptr<PKey> key) : key_(std::move(key)) {}
Ed25519PublicKey::~Ed25519PublicKey() = default;
Ed25519PublicKey::Ed25519PublicKey(Ed25519PublicKey&&) noexcept = default;
Ed25519PublicKey& Ed25519PublicKey::operator=(Ed25519PublicKey&&) noexcept = default;

Result<Ed25519PublicKey> Ed25519PublicKey::FromRaw(std::span<const uint8_t> raw32) {
  if (raw32.size() != kSize) return InvalidArgument("ed25519: public key must be 32 bytes");
  GOVERN_ASSIGN_OR_RETURN(
      auto key, Wrap(EVP_PKEY_new_raw_public_key_ex(nullptr, "ED25519", nullptr, raw32.data(), raw32.size()),
                     "ed25519: import public key", Code::kInvalidArgument));
  return Ed25519PublicKey(std::move(key));
}

std::array<uint8_t, 32> Ed25519PublicKey::Raw() const {
  std::array<uint8_t, 32> out{};
  size_t len = out.size();
  // Cannot fail for a key that was constructed: it is an Ed25519 key with a public part.
  if (EVP_PKEY_get_raw_public_key(key_->p, out.data(), &len) != 1) internal::ClearOpensslErrors();
  return out;
}

Status Ed25519PublicKey::Verify(std::span<const uint8_t> message, std::span<const uint8_t> signature) const {
  if (signature.size() != kSignatureSize) return InvalidArgument("ed25519: signature must be 64 bytes");
  return VerifyWith(key_->p, nullptr, message, signature, "ed25519");
}

Ed25519PrivateKey::Ed25519PrivateKey(std::unique_ptr<PKey> key) : key_(std::move(key)) {}
Ed25519PrivateKey::~Ed25519PrivateKey() = default;
Ed25519PrivateKey::Ed25519PrivateKey(Ed25519PrivateKey&&) noexcept = default;
Ed25519PrivateKey& Ed25519PrivateKey::operator=(Ed25519PrivateKey&&) noexcept = default;

Result<Ed25519PrivateKey> Ed25519PrivateKey::Generate() {
  GOVERN_ASSIGN_OR_RETURN(auto key, Wrap(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"), "ed25519 keygen"));
  return Ed25519PrivateKey(std::move(key));
}

Result<Ed25519PrivateKey> Ed25519PrivateKey::FromRaw(std::span<const uint8_t> seed32) {
  if (seed32.size() != kSize) return InvalidArgument("ed25519: private key must be 32 bytes");
  GOVERN_ASSIGN_OR_RETURN(auto key, Wrap(EVP_PKEY_new_raw_private_key_ex(nullptr, "ED25519", nullptr,
                                                                         seed32.data(), seed32.size()),
                                         "ed25519: import private key", Code::kInvalidArgument));
  return Ed25519PrivateKey(std::move(key));
}

Result<SecretBytes> Ed25519PrivateKey::Raw() const {
  SecretBytes out(kSize);
  size_t len = out.size();
  if (EVP_PKEY_get_raw_private_key(key_->p, out.data(), &len) != 1 || len != kSize) {
    return OpensslError("ed25519: export private key");
  }
  return out;
}

Result<Ed25519PublicKey> Ed25519PrivateKey::PublicKey() const {
  uint8_t raw[32];
  size_t len = sizeof raw;
  if (EVP_PKEY_get_raw_public_key(key_->p, raw, &len) != 1) return OpensslError("ed25519: public key");
  return Ed25519PublicKey::FromRaw(raw);
}

Result<std::array<uint8_t, 64>> Ed25519PrivateKey::Sign(std::span<const uint8_t> message) const {
  GOVERN_ASSIGN_OR_RETURN(auto sig, SignWith(key_->p, nullptr, message, "ed25519"));
  if (sig.size() != 64) return Internal("ed25519: unexpected signature length");
  std::array<uint8_t, 64> out;
  std::memcpy(out.data(), sig.data(), 64);
  return out;
}

// --- ECDSA P-256 -----------------------------------------------------------------------------------

EcdsaP256PublicKey::EcdsaP256PublicKey(std::unique_ptr<PKey> key) : key_(std::move(key)) {}
EcdsaP256PublicKey::~EcdsaP256PublicKey() = default;
EcdsaP256PublicKey::EcdsaP256PublicKey(EcdsaP256PublicKey&&) noexcept = default;
EcdsaP256PublicKey& EcdsaP256PublicKey::operator=(EcdsaP256PublicKey&&) noexcept = default;

Result<EcdsaP256PublicKey> EcdsaP256PublicKey::FromUncompressed(std::span<const uint8_t> point) {
  if (point.size() != kUncompressedSize || point[0] != 0x04) {
    return InvalidArgument("ecdsa-p256: public key must be a 65-byte uncompressed point (0x04 || X || Y)");
  }
  char group[] = "prime256v1";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
                         OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY,
                                                           const_cast<uint8_t*>(point.data()), point.size()),
                         OSSL_PARAM_construct_end()};
  PkeyCtx ctx(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params) != 1) {
    return OpensslError("ecdsa-p256: import public key", Code::kInvalidArgument);
  }
  auto key = std::make_unique<PKey>(raw);
  // The point must lie on the curve (an off-curve point is the classic invalid-curve attack).
  PkeyCtx check(EVP_PKEY_CTX_new_from_pkey(nullptr, raw, nullptr));
  if (!check || EVP_PKEY_public_check(check.get()) != 1) {
    return OpensslError("ecdsa-p256: public key is not a valid point", Code::kInvalidArgument);
  }
  return EcdsaP256PublicKey(std::move(key));
}

Result<EcdsaP256PublicKey> EcdsaP256PublicKey::FromPem(std::string_view pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return OpensslError("BIO_new_mem_buf");
  GOVERN_ASSIGN_OR_RETURN(auto key,
                          Wrap(PEM_read_bio_PUBKEY_ex(bio.get(), nullptr, nullptr, nullptr, nullptr, nullptr),
                               "ecdsa-p256: read PEM public key", Code::kInvalidArgument));
  GOVERN_RETURN_IF_ERROR(CheckP256(key->p));
  return EcdsaP256PublicKey(std::move(key));
}

Result<EcdsaP256PublicKey> EcdsaP256PublicKey::FromSpkiDer(std::span<const uint8_t> der) {
  const unsigned char* p = der.data();
  GOVERN_ASSIGN_OR_RETURN(auto key,
                          Wrap(d2i_PUBKEY_ex(nullptr, &p, static_cast<long>(der.size()), nullptr, nullptr),
                               "ecdsa-p256: read DER public key", Code::kInvalidArgument));
  if (p != der.data() + der.size()) return InvalidArgument("ecdsa-p256: trailing bytes after public key");
  GOVERN_RETURN_IF_ERROR(CheckP256(key->p));
  return EcdsaP256PublicKey(std::move(key));
}

Result<std::vector<uint8_t>> EcdsaP256PublicKey::Uncompressed() const {
  std::vector<uint8_t> out(kUncompressedSize);
  size_t len = 0;
  if (EVP_PKEY_get_octet_string_param(key_->p, OSSL_PKEY_PARAM_PUB_KEY, out.data(), out.size(), &len) != 1 ||
      len != kUncompressedSize || out[0] != 0x04) {
    return OpensslError("ecdsa-p256: export public key");
  }
  return out;
}

Result<std::string> EcdsaP256PublicKey::Pem() const {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), key_->p) != 1) return OpensslError("ecdsa-p256: write PEM");
  GOVERN_ASSIGN_OR_RETURN(auto bytes, BioContents(bio.get()));
  return std::string(bytes.begin(), bytes.end());
}

Result<std::vector<uint8_t>> EcdsaP256PublicKey::SpkiDer() const {
  int len = i2d_PUBKEY(key_->p, nullptr);
  if (len <= 0) return OpensslError("ecdsa-p256: write DER");
  std::vector<uint8_t> out(static_cast<size_t>(len));
  unsigned char* p = out.data();
  if (i2d_PUBKEY(key_->p, &p) != len) return OpensslError("ecdsa-p256: write DER");
  return out;
}

Status EcdsaP256PublicKey::VerifyDer(std::span<const uint8_t> message,
                                     std::span<const uint8_t> der_signature) const {
  // Only canonical DER is accepted, so a signature has exactly one valid encoding (no malleability).
  GOVERN_ASSIGN_OR_RETURN(auto raw, EcdsaDerToRaw(der_signature));
  GOVERN_ASSIGN_OR_RETURN(auto canonical, EcdsaRawToDer(raw));
  if (canonical.size() != der_signature.size() ||
      std::memcmp(canonical.data(), der_signature.data(), canonical.size()) != 0) {
    return InvalidArgument("ecdsa-p256: signature is not canonical DER");
  }
  return VerifyWith(key_->p, "SHA256", message, der_signature, "ecdsa-p256");
}

Status EcdsaP256PublicKey::VerifyRaw(std::span<const uint8_t> message,
                                     std::span<const uint8_t> raw_signature) const {
  GOVERN_ASSIGN_OR_RETURN(auto der, EcdsaRawToDer(raw_signature));
  return VerifyWith(key_->p, "SHA256", message, der, "ecdsa-p256");
}

EcdsaP256PrivateKey::EcdsaP256PrivateKey(std::unique_ptr<PKey> key) : key_(std::move(key)) {}
EcdsaP256PrivateKey::~EcdsaP256PrivateKey() = default;
EcdsaP256PrivateKey::EcdsaP256PrivateKey(EcdsaP256PrivateKey&&) noexcept = default;
EcdsaP256PrivateKey& EcdsaP256PrivateKey::operator=(EcdsaP256PrivateKey&&) noexcept = default;

Result<EcdsaP256PrivateKey> EcdsaP256PrivateKey::Generate() {
  GOVERN_ASSIGN_OR_RETURN(auto key,
                          Wrap(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), "ecdsa-p256 keygen"));
  return EcdsaP256PrivateKey(std::move(key));
}

Result<EcdsaP256PrivateKey> EcdsaP256PrivateKey::FromPkcs8Pem(std::string_view pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return OpensslError("BIO_new_mem_buf");
  GOVERN_ASSIGN_OR_RETURN(
      auto key, Wrap(PEM_read_bio_PrivateKey_ex(bio.get(), nullptr, nullptr, nullptr, nullptr, nullptr),
                     "ecdsa-p256: read PEM private key", Code::kInvalidArgument));
  GOVERN_RETURN_IF_ERROR(CheckP256(key->p));
  return EcdsaP256PrivateKey(std::move(key));
}

Result<SecretBytes> EcdsaP256PrivateKey::Pkcs8Pem() const {
  // A secure-memory BIO wipes its buffer when freed.
  Bio bio(BIO_new(BIO_s_secmem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key_->p, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpensslError("ecdsa-p256: write private key");
  }
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  if (n < 0) return OpensslError("BIO_get_mem_data");
  return SecretBytes(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data), static_cast<size_t>(n)));
}

Result<EcdsaP256PublicKey> EcdsaP256PrivateKey::PublicKey() const {
  uint8_t point[EcdsaP256PublicKey::kUncompressedSize];
  size_t len = 0;
  if (EVP_PKEY_get_octet_string_param(key_->p, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point, &len) != 1 ||
      len != sizeof point) {
    return OpensslError("ecdsa-p256: public key");
  }
  return EcdsaP256PublicKey::FromUncompressed(point);
}

Result<std::vector<uint8_t>> EcdsaP256PrivateKey::SignDer(std::span<const uint8_t> message) const {
  return SignWith(key_->p, "SHA256", message, "ecdsa-p256");
}

Result<std::array<uint8_t, 64>> EcdsaP256PrivateKey::SignRaw(std::span<const uint8_t> message) const {
  GOVERN_ASSIGN_OR_RETURN(auto der, SignDer(message));
  return EcdsaDerToRaw(der);
}

Result<std::array<uint8_t, 64>> EcdsaDerToRaw(std::span<const uint8_t> der) {
  const unsigned char* p = der.data();
  EcdsaSig sig(d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size())));
  if (!sig) return OpensslError("ecdsa-p256: malformed DER signature", Code::kInvalidArgument);
  if (p != der.data() + der.size()) return InvalidArgument("ecdsa-p256: trailing bytes after signature");
  const BIGNUM* r = nullptr;
  const BIGNUM* s = nullptr;
  ECDSA_SIG_get0(sig.get(), &r, &s);
  std::array<uint8_t, 64> out{};
  if (BN_is_negative(r) || BN_is_negative(s) || BN_bn2binpad(r, out.data(), 32) != 32 ||
      BN_bn2binpad(s, out.data() + 32, 32) != 32) {
    internal::ClearOpensslErrors();
    return InvalidArgument("ecdsa-p256: signature values out of range");
  }
  return out;
}

Result<std::vector<uint8_t>> EcdsaRawToDer(std::span<const uint8_t> raw64) {
  if (raw64.size() != 64) return InvalidArgument("ecdsa-p256: raw signature must be 64 bytes (r || s)");
  Bignum r(BN_bin2bn(raw64.data(), 32, nullptr));
  Bignum s(BN_bin2bn(raw64.data() + 32, 32, nullptr));
  EcdsaSig sig(ECDSA_SIG_new());
  if (!r || !s || !sig || ECDSA_SIG_set0(sig.get(), r.get(), s.get()) != 1) {
    return OpensslError("ecdsa-p256: build signature");
  }
  static_cast<void>(r.release());  // owned by sig now
  static_cast<void>(s.release());
  int len = i2d_ECDSA_SIG(sig.get(), nullptr);
  if (len <= 0) return OpensslError("ecdsa-p256: encode signature");
  std::vector<uint8_t> out(static_cast<size_t>(len));
  unsigned char* p = out.data();
  if (i2d_ECDSA_SIG(sig.get(), &p) != len) return OpensslError("ecdsa-p256: encode signature");
  return out;
}

}  // namespace govern::crypto
