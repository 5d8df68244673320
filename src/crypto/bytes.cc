// SecretBytes and constant-time comparison over OpenSSL's cleanse and memcmp.
#include "crypto/bytes.h"

#include <openssl/crypto.h>

#include <cstring>
#include <utility>

namespace govern::crypto {

SecretBytes::SecretBytes(size_t size) : data_(size ? new uint8_t[size]() : nullptr), size_(size) {}

SecretBytes::SecretBytes(std::span<const uint8_t> bytes) : SecretBytes(bytes.size()) {
  if (!bytes.empty()) std::memcpy(data_.get(), bytes.data(), bytes.size());
}

SecretBytes SecretBytes::FromString(std::string_view s) { return SecretBytes(AsBytes(s)); }

SecretBytes::~SecretBytes() { Wipe(); }

SecretBytes::SecretBytes(SecretBytes&& other) noexcept
    : data_(std::move(other.data_)), size_(std::exchange(other.size_, 0)) {}

SecretBytes& SecretBytes::operator=(SecretBytes&& other) noexcept {
  if (this != &other) {
    Wipe();
    data_ = std::move(other.data_);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void SecretBytes::Wipe() {
  if (data_) OPENSSL_cleanse(data_.get(), size_);
  data_.reset();
  size_ = 0;
}

bool ConstantTimeEquals(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  return ConstantTimeEquals(AsBytes(a), AsBytes(b));
}

}  // namespace govern::crypto
