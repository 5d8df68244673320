// Fuzz target: the intake's own parsers of outside input. Arbitrary bytes as a gzip body (InflateGzip
// must stay within its limit and fail cleanly) and as a presented API key (ParseKey: a key or
// Unauthenticated, nothing else).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "services/telemetry/api_keys.h"
#include "services/telemetry/intake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  constexpr size_t kLimit = 1 << 16;
  auto inflated = govern::telemetry::InflateGzip(in, kLimit);
  if (inflated.ok()) {
    if (inflated->size() > kLimit) std::abort();
  } else if (inflated.status().code() != govern::Code::kInvalidArgument &&
             inflated.status().code() != govern::Code::kResourceExhausted) {
    std::abort();
  }
  auto key = govern::service_keys::ParseKey(govern::telemetry::IngestKeys(), in);
  if (key.ok()) {
    if (key->key_id.size() != govern::service_keys::kKeyIdLength) std::abort();
    if (key->secret.size() != 2 * govern::service_keys::kKeySecretBytes) std::abort();
  } else if (key.status().code() != govern::Code::kUnauthenticated) {
    std::abort();
  }
  return 0;
}
