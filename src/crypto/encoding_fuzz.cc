// Fuzz target for the hex and base64 decoders: no input may crash them, and whatever they accept must
// re-encode to exactly the input (they accept only canonical encodings).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "crypto/encoding.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  using namespace govern::crypto;
  if (auto r = HexDecode(in); r.ok()) {
    auto again = HexDecode(HexEncode(*r));
    if (!again.ok() || *again != *r) std::abort();
  }
  if (auto r = Base64Decode(in); r.ok() && Base64Encode(*r) != in) std::abort();
  if (auto r = Base64UrlDecode(in); r.ok() && Base64UrlEncode(*r) != in) std::abort();
  return 0;
}
