// Fuzz target: arbitrary bytes through ParseAppendRequest (and, for accepted requests, the entry JSON
// round trip). Errors must be InvalidArgument; accepted entries must satisfy every documented limit.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "services/audit/entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::audit_service;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  ParseLimits limits{.max_details_bytes = 256, .max_entries = 8};
  auto r = ParseAppendRequest(body, std::string_view("hdr-key"), limits);
  if (!r.ok()) {
    if (r.status().code() != govern::Code::kInvalidArgument || r.status().message().empty()) std::abort();
    return 0;
  }
  if (r->empty() || r->size() > limits.max_entries) std::abort();
  for (const AppendInput& in : *r) {
    if (!ValidateIdempotencyKey(in.idempotency_key).ok()) std::abort();
    if (in.actor.empty() || in.action.empty() || in.details.size() > limits.max_details_bytes) std::abort();
    StoredEntry e;
    e.fields = EntryFields{.org = "o",
                           .seq = 1,
                           .idempotency_key = in.idempotency_key,
                           .time_micros = in.time_micros.value_or(0),
                           .actor = in.actor,
                           .action = in.action,
                           .target = in.target,
                           .outcome = in.outcome,
                           .details = in.details};
    e.prev_hash = ZeroHash();
    e.entry_hash = ChainHash(e.prev_hash, CanonicalEncoding(e.fields));
    auto back = ParseEntryJson(EntryJson(e));
    if (!back.ok() || CanonicalEncoding(back->fields) != CanonicalEncoding(e.fields)) std::abort();
  }
  return 0;
}
