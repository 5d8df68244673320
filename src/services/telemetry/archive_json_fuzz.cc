// Fuzz target: the JSON object splitter that turns an archive file's attributes column back into
// Attributes (a damaged or foreign file can hold any bytes there). Any input: no crash; an accepted
// object re-encodes to text that splits into the same attributes.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "services/telemetry/archive.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::telemetry;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)CompactJson(text);
  auto attrs = AttributesFromJson(text);
  if (!attrs.ok()) return 0;
  auto again = AttributesFromJson(AttributesToJson(*attrs));
  if (!again.ok() || *again != *attrs) std::abort();
  return 0;
}
