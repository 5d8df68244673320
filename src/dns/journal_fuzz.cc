// Fuzz target for DecodeVersion (journal versions read back from the database): no input may crash it;
// whatever it accepts encodes back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dns/xfr.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::dns;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto v = DecodeVersion(in);
  if (!v.ok()) return 0;
  if (EncodeVersion(**v) != in) std::abort();
  if ((*v)->keys.size() != (*v)->records.size()) std::abort();
  return 0;
}
