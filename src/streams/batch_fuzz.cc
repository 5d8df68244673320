// Fuzz target: the record batch parser and the produce record-set splitter on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "streams/batch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)govern::streams::ForEachBatch(in, [](std::string_view b) {
    auto h = govern::streams::ParseBatch(b);
    if (h.ok()) (void)h->last_sequence();
    return govern::OkStatus();
  });
  return 0;
}
