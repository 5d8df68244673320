// SecretBytes (key material that is wiped when it dies) and constant-time comparison.
//
// SecretBytes owns a fixed-size heap buffer: it never grows, so no stale copy of a key is left behind by a
// reallocation, and OPENSSL_cleanse wipes it on destruction and on move-from. It is move-only; Clone() makes
// an explicit copy. Like any value it is not synchronised: share it read-only or give each thread its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

namespace govern::crypto {

class SecretBytes {
 public:
  SecretBytes() = default;
  // `size` zero bytes.
  explicit SecretBytes(size_t size);
  // A copy of `bytes` (the caller wipes its own copy if it must).
  explicit SecretBytes(std::span<const uint8_t> bytes);
  static SecretBytes FromString(std::string_view s);
  ~SecretBytes();

  SecretBytes(SecretBytes&& other) noexcept;
  SecretBytes& operator=(SecretBytes&& other) noexcept;
  SecretBytes(const SecretBytes&) = delete;
  SecretBytes& operator=(const SecretBytes&) = delete;

  SecretBytes Clone() const { return SecretBytes(span()); }

  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::span<uint8_t> span() { return {data_.get(), size_}; }
  std::span<const uint8_t> span() const { return {data_.get(), size_}; }

 private:
  void Wipe();

  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
};

// True when a and b hold the same bytes. The time taken depends only on the lengths, never on where the
// first difference is (CRYPTO_memcmp), so comparing a MAC or token leaks nothing. Lengths are not secret.
bool ConstantTimeEquals(std::span<const uint8_t> a, std::span<const uint8_t> b);
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// A view of a string's bytes, for the span-taking functions of this folder.
inline std::span<const uint8_t> AsBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
inline std::string_view AsString(std::span<const uint8_t> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

}  // namespace govern::crypto
