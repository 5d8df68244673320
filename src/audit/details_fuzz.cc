// Fuzz target for CanonicalizeDetails: no input may crash it, and what it returns is canonical (a fixed
// point: canonicalizing it again gives the same bytes).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "audit/entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto out = govern::audit::CanonicalizeDetails(in, 1 << 20);
  if (out.ok()) {
    auto again = govern::audit::CanonicalizeDetails(*out, 1 << 20);
    if (!again.ok() || *again != *out) std::abort();
  }
  return 0;
}
