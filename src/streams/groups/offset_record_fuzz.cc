// Fuzz target: the offsets-file frame parser, fed arbitrary bytes as a file body (frames one after
// another, as OffsetStore::Open reads them). It must stop at the first bad frame, never crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "streams/groups/offset_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::streams::groups;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (!rest.empty()) {
    OffsetRecord r;
    auto n = DecodeRecord(rest, &r);
    if (!n.ok()) break;
    if (*n == 0 || *n > rest.size()) __builtin_trap();
    // A decoded record encodes back to the same bytes.
    std::string again;
    if (!EncodeRecord(r, &again).ok() || again != rest.substr(0, *n)) __builtin_trap();
    rest.remove_prefix(*n);
  }
  return 0;
}
