// Audit entries as they travel over HTTP and through the service: the append request parser (outside
// input: fuzzed), the stored form of an entry, and the bytes of hashes in bytea columns. The entry
// itself, its canonical encoding and its hashes are the core library's (audit/entry.h).
//
// An append request body is one entry object or {"entries": [ ... ]} (up to max_entries):
//   {"idempotency_key": "...", "time": "2026-11-30T10:00:00Z", "actor": "alice", "action": "user.login",
//    "target": "console", "outcome": "success", "details": {...}}
// actor and action are required; target and outcome default to ""; time (RFC 3339, any offset,
// microseconds kept) defaults to the time the service appends it; details (a JSON object) default to
// {} and are stored as their RFC 8785 canonical text. The idempotency key comes from the field or, for
// a one-entry body, the Idempotency-Key header; it is required: a retried append with the same key
// returns the original entry. Pure functions: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/entry.h"
#include "base/status.h"

namespace govern::audit_service {

struct AppendInput {
  std::string idempotency_key;
  std::optional<int64_t> time_micros;  // nullopt: the service's clock at append
  std::string actor;
  std::string action;
  std::string target;
  std::string outcome;
  std::string details = "{}";  // RFC 8785 text of an object
};

struct ParseLimits {
  size_t max_details_bytes = audit::kDefaultMaxDetailsBytes;
  size_t max_entries = 1000;
};

struct ParsedAppend {
  std::vector<AppendInput> entries;
  bool batch = false;  // the body was {"entries": [...]}
};

// InvalidArgument naming the field (and the entry index for a batch) for anything wrong.
Result<ParsedAppend> ParseAppendRequest(std::string_view body,
                                        std::optional<std::string_view> idempotency_header,
                                        const ParseLimits& limits);

namespace internal {
// ParseAppendRequest without its fast path for plain one-entry bodies: the reference it must agree
// with (tests and the fuzz target compare them).
Result<ParsedAppend> ParseAppendRequestTree(std::string_view body,
                                            std::optional<std::string_view> idempotency_header,
                                            const ParseLimits& limits);
}  // namespace internal

// Idempotency keys: 1-128 of A-Z a-z 0-9 and . _ : / + = @ - (a subset of what the core allows, so
// they travel in URLs, headers and SQL array literals as they are).
Status ValidateIdempotencyKey(std::string_view key);

// A stored entry: the core entry (with prev_hash and entry_hash) and its Merkle leaf hash.
struct StoredEntry {
  audit::Entry entry;
  audit::Hash leaf_hash{};
};

// RFC 3339 with any offset and up to microseconds (further digits dropped) -> unix microseconds.
Result<int64_t> ParseRfc3339Micros(std::string_view text);

// A hash as the bytes of a bytea value, and back (InvalidArgument unless 32 bytes).
inline std::string_view HashBytes(const audit::Hash& h) {
  return std::string_view(reinterpret_cast<const char*>(h.data()), h.size());
}
Result<audit::Hash> HashFromBytes(std::string_view bytes);

}  // namespace govern::audit_service
