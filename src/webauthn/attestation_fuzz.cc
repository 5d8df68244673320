// Fuzz target for the CBOR decoder and the attestation object parser: no input may crash them; CBOR
// the decoder accepts must re-encode to exactly the input (it accepts only shortest-form heads); a COSE
// key found in an accepted attestation object must parse or be refused cleanly.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "webauthn/cbor.h"
#include "webauthn/cose.h"
#include "webauthn/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::webauthn;
  std::span<const uint8_t> in(data, size);
  if (auto v = cbor::Decode(in); v.ok()) {
    auto again = cbor::Encode(*v);
    if (again.size() != size || !std::equal(again.begin(), again.end(), data)) std::abort();
  }
  if (auto ao = ParseAttestationObject(in); ao.ok() && ao->auth_data.attested) {
    auto key = PublicKey::FromCose(ao->auth_data.attested->public_key_cose);
    if (key.ok()) {
      uint8_t sig[64] = {};
      if (key->Verify(in, sig).ok()) std::abort();  // an all-zero signature never verifies
    }
  }
  return 0;
}
