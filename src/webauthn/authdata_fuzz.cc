// Fuzz target for the authenticator data parser: no input may crash it, and what it accepts is
// consistent with its flags (attested data iff AT, extensions iff ED).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "webauthn/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::webauthn;
  auto ad = ParseAuthenticatorData(std::span<const uint8_t>(data, size));
  if (ad.ok()) {
    if (ad->attested.has_value() != ((ad->flags & Flags::kAttestedCredentialData) != 0)) std::abort();
    if (ad->extensions.has_value() != ((ad->flags & Flags::kExtensionData) != 0)) std::abort();
    if (ad->sign_count !=
        (uint32_t{data[33]} << 24 | uint32_t{data[34]} << 16 | uint32_t{data[35]} << 8 | data[36])) {
      std::abort();
    }
  }
  return 0;
}
