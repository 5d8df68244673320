// AES-256-GCM over EVP_CIPHER. The cipher is fetched once; each call makes its own context (a context
// holds the expanded key, so keeping one per key would need a lock or one per thread; measure first).
#include "crypto/aead.h"

#include <openssl/evp.h>

#include <climits>
#include <cstring>

#include "crypto/openssl_error.h"
#include "crypto/random.h"

namespace govern::crypto {
namespace {

using internal::OpensslError;
using CipherCtx = internal::Ptr<EVP_CIPHER_CTX, EVP_CIPHER_CTX_free>;

const EVP_CIPHER* Aes256Gcm() {
  static const EVP_CIPHER* cipher = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
  return cipher;
}

Status CheckSizes(std::span<const uint8_t> nonce, size_t text, size_t aad) {
  if (nonce.size() != Aes256GcmKey::kNonceSize) return InvalidArgument("aes-256-gcm: nonce must be 12 bytes");
  if (text > INT_MAX || aad > INT_MAX) return InvalidArgument("aes-256-gcm: message too large");
  return OkStatus();
}

}  // namespace

Result<Aes256GcmKey> Aes256GcmKey::Create(std::span<const uint8_t> key32) {
  if (key32.size() != kKeySize) return InvalidArgument("aes-256-gcm: key must be 32 bytes");
  return Aes256GcmKey(SecretBytes(key32));
}

Result<Aes256GcmKey> Aes256GcmKey::Generate() {
  GOVERN_ASSIGN_OR_RETURN(SecretBytes key, RandomSecret(kKeySize));
  return Aes256GcmKey(std::move(key));
}

Result<std::vector<uint8_t>> Aes256GcmKey::SealWithNonce(std::span<const uint8_t> nonce,
                                                         std::span<const uint8_t> plaintext,
                                                         std::span<const uint8_t> aad) const {
  GOVERN_RETURN_IF_ERROR(CheckSizes(nonce, plaintext.size(), aad.size()));
  const EVP_CIPHER* cipher = Aes256Gcm();
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  if (cipher == nullptr || !ctx ||
      EVP_EncryptInit_ex2(ctx.get(), cipher, key_.data(), nonce.data(), nullptr) != 1) {
    return OpensslError("aes-256-gcm: encrypt init");
  }
  int len = 0;
  if (!aad.empty() &&
      EVP_EncryptUpdate(ctx.get(), nullptr, &len, aad.data(), static_cast<int>(aad.size())) != 1) {
    return OpensslError("aes-256-gcm: aad");
  }
  std::vector<uint8_t> out(plaintext.size() + kTagSize);
  int written = 0;
  if (!plaintext.empty()) {
    if (EVP_EncryptUpdate(ctx.get(), out.data(), &len, plaintext.data(),
                          static_cast<int>(plaintext.size())) != 1) {
      return OpensslError("aes-256-gcm: encrypt");
    }
    written = len;
  }
  if (EVP_EncryptFinal_ex(ctx.get(), out.data() + written, &len) != 1)
    return OpensslError("aes-256-gcm: final");
  written += len;
  if (static_cast<size_t>(written) != plaintext.size() ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagSize, out.data() + written) != 1) {
    return OpensslError("aes-256-gcm: tag");
  }
  return out;
}

Result<SecretBytes> Aes256GcmKey::OpenWithNonce(std::span<const uint8_t> nonce,
                                                std::span<const uint8_t> ciphertext_and_tag,
                                                std::span<const uint8_t> aad) const {
  if (ciphertext_and_tag.size() < kTagSize) return InvalidArgument("aes-256-gcm: input shorter than the tag");
  size_t ct_len = ciphertext_and_tag.size() - kTagSize;
  GOVERN_RETURN_IF_ERROR(CheckSizes(nonce, ct_len, aad.size()));
  const EVP_CIPHER* cipher = Aes256Gcm();
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  if (cipher == nullptr || !ctx ||
      EVP_DecryptInit_ex2(ctx.get(), cipher, key_.data(), nonce.data(), nullptr) != 1) {
    return OpensslError("aes-256-gcm: decrypt init");
  }
  int len = 0;
  if (!aad.empty() &&
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, aad.data(), static_cast<int>(aad.size())) != 1) {
    return OpensslError("aes-256-gcm: aad");
  }
  SecretBytes out(ct_len);
  if (ct_len > 0 && EVP_DecryptUpdate(ctx.get(), out.data(), &len, ciphertext_and_tag.data(),
                                      static_cast<int>(ct_len)) != 1) {
    return OpensslError("aes-256-gcm: decrypt");
  }
  uint8_t tag[kTagSize];
  std::memcpy(tag, ciphertext_and_tag.data() + ct_len, kTagSize);
  if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagSize, tag) != 1) {
    return OpensslError("aes-256-gcm: set tag");
  }
  uint8_t final_block[16];
  if (EVP_DecryptFinal_ex(ctx.get(), final_block, &len) != 1) {
    // `out` is wiped as it goes out of scope: no unauthenticated plaintext escapes.
    internal::ClearOpensslErrors();
    return Unauthenticated("aes-256-gcm: authentication failed (wrong key, nonce, AAD, or tampered data)");
  }
  return out;
}

Result<std::vector<uint8_t>> Aes256GcmKey::Seal(std::span<const uint8_t> plaintext,
                                                std::span<const uint8_t> aad) const {
  uint8_t nonce[kNonceSize];
  GOVERN_RETURN_IF_ERROR(RandomBytes(nonce));
  GOVERN_ASSIGN_OR_RETURN(auto body, SealWithNonce(nonce, plaintext, aad));
  std::vector<uint8_t> out;
  out.reserve(kNonceSize + body.size());
  out.insert(out.end(), nonce, nonce + kNonceSize);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

Result<SecretBytes> Aes256GcmKey::Open(std::span<const uint8_t> sealed, std::span<const uint8_t> aad) const {
  if (sealed.size() < kOverhead) return InvalidArgument("aes-256-gcm: sealed message too short");
  return OpenWithNonce(sealed.first(kNonceSize), sealed.subspan(kNonceSize), aad);
}

}  // namespace govern::crypto
