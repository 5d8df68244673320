// SHA-256 and HMAC-SHA256 over EVP. The digest is fetched once per process (an implicit fetch on each
// init costs a lookup under a lock), and one-shot hashing reuses a per-thread EVP_MD_CTX.
#include "crypto/sha256.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstring>

#include "crypto/openssl_error.h"

namespace govern::crypto {
namespace {

using MdCtx = internal::Ptr<EVP_MD_CTX, EVP_MD_CTX_free>;
constexpr size_t kBlockSize = 64;

// Fetched once and kept for the life of the process (freeing it at exit would race other statics).
const EVP_MD* Sha256Md() {
  static const EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

Status DigestInit(EVP_MD_CTX* ctx) {
  const EVP_MD* md = Sha256Md();
  if (md == nullptr) return internal::OpensslError("fetch SHA256");
  if (EVP_DigestInit_ex2(ctx, md, nullptr) != 1) return internal::OpensslError("sha256 init");
  return OkStatus();
}

Status DigestUpdate(EVP_MD_CTX* ctx, std::span<const uint8_t> data) {
  if (!data.empty() && EVP_DigestUpdate(ctx, data.data(), data.size()) != 1) {
    return internal::OpensslError("sha256 update");
  }
  return OkStatus();
}

Result<Sha256Digest> DigestFinal(EVP_MD_CTX* ctx) {
  Sha256Digest out;
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx, out.data(), &len) != 1 || len != out.size()) {
    return internal::OpensslError("sha256 final");
  }
  return out;
}

// A per-thread context for one-shot hashes; reinitialising it keeps its allocation.
Result<EVP_MD_CTX*> ThreadCtx() {
  thread_local MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx) return internal::OpensslError("EVP_MD_CTX_new");
  return ctx.get();
}

}  // namespace

Result<Sha256Digest> Sha256(std::span<const uint8_t> data) {
  GOVERN_ASSIGN_OR_RETURN(EVP_MD_CTX * ctx, ThreadCtx());
  GOVERN_RETURN_IF_ERROR(DigestInit(ctx));
  GOVERN_RETURN_IF_ERROR(DigestUpdate(ctx, data));
  return DigestFinal(ctx);
}

struct Sha256Hasher::Impl {
  MdCtx ctx;
};

Sha256Hasher::Sha256Hasher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Sha256Hasher::~Sha256Hasher() = default;
Sha256Hasher::Sha256Hasher(Sha256Hasher&&) noexcept = default;
Sha256Hasher& Sha256Hasher::operator=(Sha256Hasher&&) noexcept = default;

Result<Sha256Hasher> Sha256Hasher::Create() {
  auto impl = std::make_unique<Impl>();
  impl->ctx.reset(EVP_MD_CTX_new());
  if (!impl->ctx) return internal::OpensslError("EVP_MD_CTX_new");
  GOVERN_RETURN_IF_ERROR(DigestInit(impl->ctx.get()));
  return Sha256Hasher(std::move(impl));
}

Status Sha256Hasher::Update(std::span<const uint8_t> data) { return DigestUpdate(impl_->ctx.get(), data); }

Result<Sha256Digest> Sha256Hasher::Finish() {
  GOVERN_ASSIGN_OR_RETURN(Sha256Digest d, DigestFinal(impl_->ctx.get()));
  GOVERN_RETURN_IF_ERROR(DigestInit(impl_->ctx.get()));
  return d;
}

// HMAC(K, m) = H((K0 ^ opad) || H((K0 ^ ipad) || m)). The two padded key blocks are hashed once, at
// Create(); Mac() copies those states (no key material is touched again). Measured against duplicating
// a keyed EVP_MAC_CTX in crypto_benchmark.cc: see src/crypto/README.md.
struct HmacSha256Key::Impl {
  MdCtx inner;  // state after absorbing K0 ^ ipad
  MdCtx outer;  // state after absorbing K0 ^ opad
};

HmacSha256Key::HmacSha256Key(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HmacSha256Key::~HmacSha256Key() = default;
HmacSha256Key::HmacSha256Key(HmacSha256Key&&) noexcept = default;
HmacSha256Key& HmacSha256Key::operator=(HmacSha256Key&&) noexcept = default;

Result<HmacSha256Key> HmacSha256Key::Create(std::span<const uint8_t> key) {
  if (key.empty()) return InvalidArgument("hmac-sha256: empty key");
  uint8_t k0[kBlockSize] = {};
  if (key.size() > kBlockSize) {
    GOVERN_ASSIGN_OR_RETURN(Sha256Digest hk, Sha256(key));
    std::memcpy(k0, hk.data(), hk.size());
    OPENSSL_cleanse(hk.data(), hk.size());
  } else {
    std::memcpy(k0, key.data(), key.size());
  }
  uint8_t pad[kBlockSize];
  auto impl = std::make_unique<Impl>();
  impl->inner.reset(EVP_MD_CTX_new());
  impl->outer.reset(EVP_MD_CTX_new());
  Status st;
  if (!impl->inner || !impl->outer) st = internal::OpensslError("EVP_MD_CTX_new");
  if (st.ok()) {
    for (size_t i = 0; i < kBlockSize; ++i) pad[i] = k0[i] ^ 0x36;
    st = DigestInit(impl->inner.get());
    if (st.ok()) st = DigestUpdate(impl->inner.get(), pad);
  }
  if (st.ok()) {
    for (size_t i = 0; i < kBlockSize; ++i) pad[i] = k0[i] ^ 0x5c;
    st = DigestInit(impl->outer.get());
    if (st.ok()) st = DigestUpdate(impl->outer.get(), pad);
  }
  OPENSSL_cleanse(k0, sizeof k0);
  OPENSSL_cleanse(pad, sizeof pad);
  if (!st.ok()) return st;
  return HmacSha256Key(std::move(impl));
}

Result<Sha256Digest> HmacSha256Key::Mac(std::span<const uint8_t> data) const {
  thread_local MdCtx scratch(EVP_MD_CTX_new());
  if (!scratch) return internal::OpensslError("EVP_MD_CTX_new");
  EVP_MD_CTX* ctx = scratch.get();
  if (EVP_MD_CTX_copy_ex(ctx, impl_->inner.get()) != 1) return internal::OpensslError("hmac copy inner");
  GOVERN_RETURN_IF_ERROR(DigestUpdate(ctx, data));
  GOVERN_ASSIGN_OR_RETURN(Sha256Digest inner, DigestFinal(ctx));
  if (EVP_MD_CTX_copy_ex(ctx, impl_->outer.get()) != 1) return internal::OpensslError("hmac copy outer");
  GOVERN_RETURN_IF_ERROR(DigestUpdate(ctx, inner));
  return DigestFinal(ctx);
}

Status HmacSha256Key::Verify(std::span<const uint8_t> data, std::span<const uint8_t> mac) const {
  GOVERN_ASSIGN_OR_RETURN(Sha256Digest expected, Mac(data));
  if (!ConstantTimeEquals(expected, mac)) return Unauthenticated("hmac-sha256: MAC mismatch");
  return OkStatus();
}

Result<Sha256Digest> HmacSha256(std::span<const uint8_t> key, std::span<const uint8_t> data) {
  GOVERN_ASSIGN_OR_RETURN(HmacSha256Key k, HmacSha256Key::Create(key));
  return k.Mac(data);
}

}  // namespace govern::crypto
