// Fuzz target: arbitrary bytes through ParseAppendRequest (compared with the tree parser it must agree
// with, and, for accepted requests, the entry JSON round trip). Errors must be InvalidArgument; accepted
// entries must satisfy every documented limit.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "audit/export.h"
#include "services/audit/entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::audit_service;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  ParseLimits limits{.max_details_bytes = 256, .max_entries = 8};
  auto r = ParseAppendRequest(body, std::string_view("hdr-key"), limits);
  // The fast path for plain one-entry bodies must agree with the tree parser exactly.
  auto tree = internal::ParseAppendRequestTree(body, std::string_view("hdr-key"), limits);
  if (r.ok() != tree.ok()) std::abort();
  if (!r.ok() && r.status().message() != tree.status().message()) std::abort();
  if (r.ok()) {
    if (r->batch != tree->batch || r->entries.size() != tree->entries.size()) std::abort();
    for (size_t i = 0; i < r->entries.size(); ++i) {
      const AppendInput& a = r->entries[i];
      const AppendInput& b = tree->entries[i];
      if (a.idempotency_key != b.idempotency_key || a.time_micros != b.time_micros || a.actor != b.actor ||
          a.action != b.action || a.target != b.target || a.outcome != b.outcome || a.details != b.details)
        std::abort();
    }
  }
  if (!r.ok()) {
    if (r.status().code() != govern::Code::kInvalidArgument || r.status().message().empty()) std::abort();
    return 0;
  }
  if (r->entries.empty() || r->entries.size() > limits.max_entries) std::abort();
  uint64_t seq = 1;
  govern::audit::Hash prev = govern::audit::kGenesisHash;
  for (const AppendInput& in : r->entries) {
    if (!ValidateIdempotencyKey(in.idempotency_key).ok()) std::abort();
    if (in.actor.empty() || in.action.empty() || in.details.size() > limits.max_details_bytes) std::abort();
    // What the batcher would store must satisfy the core's rules, and survive the export line.
    govern::audit::Entry e{.org = "o",
                           .seq = seq++,
                           .time_us = in.time_micros.value_or(0),
                           .actor = in.actor,
                           .action = in.action,
                           .target = in.target,
                           .outcome = in.outcome,
                           .details = in.details,
                           .idempotency_key = in.idempotency_key};
    govern::audit::Seal(e, prev);
    prev = e.entry_hash;
    if (!govern::audit::ValidateEntryFields(e).ok()) std::abort();
    auto line = govern::audit::ParseExportLine(govern::audit::FormatEntryLine(e));
    if (!line.ok() || !(line->entry == e)) std::abort();
  }
  return 0;
}
