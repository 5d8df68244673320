// Fuzz target: arbitrary bytes through DecodeOtlpLogsProto. Errors must be InvalidArgument with a message;
// accepted batches must hold well-formed events (fuzz_checks.h).
#include <cstdint>
#include <string_view>

#include "services/telemetry/fuzz_checks.h"
#include "services/telemetry/otlp_proto.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto r = govern::telemetry::DecodeOtlpLogsProto(body, "org");
  govern::telemetry::fuzz::CheckBatch(r);
  return 0;
}
