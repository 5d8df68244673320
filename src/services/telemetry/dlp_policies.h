// Per-organisation DLP policies for telemetry query results: stored as JSON in PostgreSQL, compiled
// into dlp::RuleSets and cached, and applied to every string of an event a query returns.
//
// Policy JSON (docs/telemetry-query.md; every member optional, unknown members refused):
//   {"disabled":       ["ip_address", "contact"],          built-in detector ids or categories to switch off
//    "custom_rules":   [{"id": "employee_id", "category": "hr", "pattern": "EMP-[0-9]{6}",
//                        "caseless": false, "utf8": false, "priority": 60}],
//    "actions":        {"email": "hash", "secret": "drop"}, detector id or category -> mask|partial|hash|drop
//    "default_action": "mask",
//    "hash_key":       "..."}                                HMAC key for "hash"; write-only
// An organisation with no stored policy gets the built-in detectors, every one masking.
//
// The functions on a Connection are as thread-safe as the Connection (one thread at a time);
// DlpPolicyCache is thread-safe; RedactEvent is pure and thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "db/connection.h"
#include "db/migrator.h"
#include "dlp/policy.h"
#include "dlp/rule_set.h"
#include "services/telemetry/query_types.h"

namespace govern::telemetry {

// Largest policy document accepted (bytes) and most custom rules: a policy is compiled into one
// vectorscan database, and compile time grows with the patterns.
inline constexpr size_t kMaxDlpPolicyBytes = 64 * 1024;
inline constexpr size_t kMaxDlpCustomRules = 256;

// Parses a policy document. InvalidArgument names the offending entry ("custom_rules[2].pattern: must
// be a string", "actions.email: unknown DLP action ..."). Does not compile the patterns: use
// ValidateDlpPolicy for everything a PUT must check.
Result<dlp::Policy> ParseDlpPolicy(std::string_view json);
// ParseDlpPolicy, then RuleSet::Compile (bad patterns, unknown detector names, hash without a key).
Result<std::shared_ptr<const dlp::RuleSet>> CompileDlpPolicy(std::string_view json);

// The policy as JSON in the shape above, members in a fixed order. With include_hash_key false the
// key itself is left out and "hash_key_set": true|false says whether there is one.
std::string DlpPolicyJson(const dlp::Policy& policy, bool include_hash_key);

// Validates `json` (as CompileDlpPolicy) and stores it as the organisation's policy, replacing any
// earlier one. When the document has no "hash_key", the stored policy's key (if any) is kept, so a
// document read with GetDlpPolicy can be edited and written back. Returns the stored policy as
// GetDlpPolicy shows it. updated_at always moves forward, so caches notice every change.
Result<std::string> SetDlpPolicy(db::Connection& conn, std::string_view org, std::string_view json);

// The organisation's stored policy without its hash key (see DlpPolicyJson) plus "updated_at" (RFC
// 3339), or nullopt when it has none (the built-in default applies).
Result<std::optional<std::string>> GetDlpPolicy(db::Connection& conn, std::string_view org);

// Removes the organisation's policy (back to the built-in default). True when there was one.
Result<bool> DeleteDlpPolicy(db::Connection& conn, std::string_view org);

// The compiled rule set of each organisation, read from telemetry_dlp_policies on first use and
// re-checked at most every `recheck` (one indexed lookup); recompiled only when updated_at changed.
// A stored policy that no longer parses or compiles fails closed: Get returns Internal (no result is
// returned unredacted) until it is fixed. Thread-safe; the database is read outside the lock.
class DlpPolicyCache {
 public:
  explicit DlpPolicyCache(const Clock* clock = &Clock::Real(),
                          std::chrono::milliseconds recheck = std::chrono::seconds(2));

  Result<std::shared_ptr<const dlp::RuleSet>> Get(db::Connection& conn, const std::string& org);
  // Forgets an organisation's entry, so the next Get reads it (after this process changed it).
  void Invalidate(const std::string& org);

 private:
  struct Entry {
    std::shared_ptr<const dlp::RuleSet> rules;
    std::string updated_at;  // "" when the organisation has no row
    int64_t checked_ns = 0;  // monotonic
  };
  const Clock* clock_;
  int64_t recheck_ns_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

// An event after redaction, as the query API returns it.
struct RedactedEvent {
  // Every redactable string replaced by its redacted form, except the attributes: those were moved
  // out (the vectors are empty) into the two JSON objects below.
  StoredEvent stored;
  // {"key": value, ...} in the event's attribute order, redacted as one document each, so a value
  // under a secret-like key ("db_password") is redacted whole.
  std::string attributes_json;
  std::string resource_attributes_json;
  // Fields whose whole value was dropped (a finding with action drop): they are returned as null.
  enum Field : uint32_t {
    kBody = 1,
    kType = 2,
    kSeverityText = 4,
    kServiceName = 8,
    kScopeName = 16,
    kScopeVersion = 32,
  };
  uint32_t null_fields = 0;
  // Something was dropped: a field above, or a string inside an attribute value or a JSON body (which
  // RedactJson turns into null).
  bool redacted = false;
};

// Redacts every string of `event` that carries content: the body (a string with Redact, JSON with
// RedactJson), the attributes and the resource attributes (each set as one JSON object through
// RedactJson: every string inside a value, and whole values under secret-like keys), type, severity
// text, service name, scope name and version. Identifiers are not redacted: the event id ([A-Za-z0-9._:-],
// the page cursor's key), trace and span ids (hex), and attribute keys (as RedactJson keeps object keys). An
// attribute value or JSON body that is not valid JSON becomes null (fail closed).
RedactedEvent RedactEvent(const dlp::RuleSet& rules, StoredEvent event);

}  // namespace govern::telemetry
