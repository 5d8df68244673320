// Fuzz target for the master-file parser: no input may crash it; whatever it accepts must print to a
// zone file that parses back to the same records, and building a Zone from it must not crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dns/zone.h"
#include "dns/zonefile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::dns;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto recs = ParseZoneFile(in, "fuzz.test.");
  if (!recs.ok()) return 0;
  auto again = ParseZoneFile(PrintZoneFile(*recs), "fuzz.test.");
  if (!again.ok() || again->size() != recs->size()) std::abort();
  for (size_t i = 0; i < recs->size(); ++i) {
    const auto& a = (*recs)[i];
    const auto& b = (*again)[i];
    if (a.owner != b.owner || a.type != b.type || a.ttl != b.ttl || a.rdata != b.rdata) std::abort();
  }
  auto z = Zone::Build("fuzz.test.", std::move(*recs));
  (void)z;
  return 0;
}
