// Fuzz target: the decision record decoder must refuse any malformed bytes with an error, never crash
// or allocate past the input, and whatever it accepts must encode back to exactly the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "policy/decisions/decision_record.h"
#include "policy/decisions/shipper.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto rec = govern::policy::DecodeDecision(in);
  if (!rec.ok()) return 0;
  std::string again;
  govern::policy::EncodeDecision(*rec, &again);
  if (again != in) std::abort();
  // The shipper's event line for whatever decodes (escaping, UTF-8 repair, context handling).
  std::string line;
  govern::policy::AppendDecisionEvent(*rec, "policy.decision", 1u << 20, &line);
  if (line.empty() || line.front() != '{' || line.back() != '}') std::abort();
  return 0;
}
