// HMAC-SHA256 for the hash action, through OpenSSL's EVP_MAC interface.
// TODO(crypto): switch to govern_crypto's HMAC once src/crypto lands; it is built in parallel.
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <string>

#include "dlp/engine.h"

namespace govern::dlp::internal {

std::string HmacHex16(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  size_t mac_len = 0;
  // EVP_Q_mac fetches HMAC and SHA-256 from the default provider; a hash is computed only for a finding
  // whose action is hash, so the fetch is not on the no-match path.
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(),
                reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, sizeof mac,
                &mac_len) == nullptr ||
      mac_len < 8) {
    return "0000000000000000";  // never leak the value, even if OpenSSL fails
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (size_t i = 0; i < 8; ++i) {
    out[2 * i] = kHex[mac[i] >> 4];
    out[2 * i + 1] = kHex[mac[i] & 0xF];
  }
  return out;
}

}  // namespace govern::dlp::internal
