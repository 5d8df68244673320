// Audit entries as they travel over HTTP: the append request parser (outside input: fuzzed) and the
// JSON form of a stored entry (also one line of the export).
//
// An append request body is one entry object or {"entries": [ ... ]} (up to max_entries):
//   {"idempotency_key": "...", "time": "2026-11-30T10:00:00Z", "actor": "alice", "action": "user.login",
//    "target": "console", "outcome": "success", "details": {...}}
// actor and action are required; target and outcome default to ""; time defaults to the time the
// service receives it; details (any JSON object) default to {} and are stored as canonical JSON text
// (keys sorted, no spaces). The idempotency key comes from the field or, for a one-entry body, the
// Idempotency-Key header; it is required: a retried append with the same key returns the original.
// Pure functions: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "services/audit/chain.h"

namespace govern::audit_service {

struct AppendInput {
  std::string idempotency_key;
  std::optional<int64_t> time_micros;  // nullopt: the service's clock at append
  std::string actor;
  std::string action;
  std::string target;
  std::string outcome;
  std::string details = "{}";  // canonical JSON text of an object
};

struct ParseLimits {
  size_t max_details_bytes = 64 * 1024;
  size_t max_entries = 1000;
};

inline constexpr size_t kMaxIdempotencyKey = 128;
inline constexpr size_t kMaxActor = 256;
inline constexpr size_t kMaxAction = 128;
inline constexpr size_t kMaxTarget = 1024;
inline constexpr size_t kMaxOutcome = 64;

// InvalidArgument naming the field (and the entry index for a batch) for anything wrong.
Result<std::vector<AppendInput>> ParseAppendRequest(std::string_view body,
                                                    std::optional<std::string_view> idempotency_header,
                                                    const ParseLimits& limits);

// Idempotency keys: 1-128 of A-Z a-z 0-9 and . _ : / + = @ -.
Status ValidateIdempotencyKey(std::string_view key);

// A stored entry.
struct StoredEntry {
  EntryFields fields;
  Hash prev_hash;
  Hash entry_hash;
  Hash leaf_hash;
};

// {"org","seq","idempotency_key","time","actor","action","target","outcome","details"(object),
//  "prev_hash","entry_hash"} with hashes in hex and time as RFC 3339 UTC with microseconds.
std::string EntryJson(const StoredEntry& e);
// The inverse of EntryJson (for the verifier, reading an export); recomputes nothing.
Result<StoredEntry> ParseEntryJson(std::string_view line);

// RFC 3339 (Z or offset, optional fraction up to microseconds kept) <-> unix microseconds.
Result<int64_t> ParseRfc3339Micros(std::string_view text);
std::string FormatRfc3339Micros(int64_t micros);

}  // namespace govern::audit_service
