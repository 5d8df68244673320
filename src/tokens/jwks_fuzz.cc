// Fuzz target: the JWKS / JWK parser and the key import each key goes through, and RevocationList JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokens/checker.h"
#include "tokens/jose.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::tokens;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto jwks = ParseJwks(text);
  if (jwks.ok()) {
    for (const auto& jwk : *jwks) {
      (void)jwk.ToKey();
      (void)jwk.Thumbprint();
      (void)ParseJwk(jwk.ToJson());
    }
  }
  (void)KeySet::FromJwks(text);
  (void)ParseJwk(text);
  (void)RevocationList::FromJson(text);
  return 0;
}
