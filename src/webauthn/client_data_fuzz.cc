// Fuzz target for clientDataJSON and the browser's response JSON: no input may crash the parsers.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "webauthn/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::webauthn;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto cd = ParseClientData(in); cd.ok() && cd->origin.size() > size) std::abort();
  (void)ParseRegistrationResponseJson(in);
  (void)ParseAssertionResponseJson(in);
  return 0;
}
