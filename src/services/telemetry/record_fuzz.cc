// Fuzz target: the telemetry WAL record decoder must refuse any malformed bytes without crashing, and
// whatever it accepts must encode back to the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "services/telemetry/record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto batch = govern::telemetry::DecodeRecord(in);
  if (!batch.ok()) return 0;
  std::string again;
  govern::telemetry::EncodeRecord(batch->events, batch->received_unix_nanos, &again);
  auto second = govern::telemetry::DecodeRecord(again);
  if (!second.ok() || second->events != batch->events) std::abort();
  return 0;
}
