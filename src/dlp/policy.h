// dlp::Policy: what one organisation asks of redaction (custom patterns, disabled detectors, actions).
//
// A Policy is a plain value the caller fills (from configuration or the organisation's settings) and
// hands to RuleSet::Compile, which validates it and reports the first problem as an InvalidArgument
// Status naming the offending entry. A Policy is not used after Compile returns.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace govern::dlp {

// What happens to a finding's bytes when text is redacted.
enum class Action : uint8_t {
  kMask,         // replaced by "[REDACTED:<detector id>]"
  kPartialMask,  // every letter/digit but the last 4 (at most a third) becomes '*'; punctuation stays
  kHash,         // replaced by "[HASH:<detector id>:<16 hex of HMAC-SHA256(org key, value)>]"
  kDrop,         // the whole string (or JSON string value) is dropped and the caller is told
};

// "mask", "partial", "hash", "drop".
std::string_view ActionName(Action action);
// Inverse of ActionName; InvalidArgument for anything else.
Result<Action> ParseAction(std::string_view name);

// An organisation's own pattern, compiled into the same single-pass database as the built-ins.
struct CustomRule {
  std::string id;                   // [a-z0-9_]{1,64}; unique; not a built-in detector id
  std::string category = "custom";  // [a-z0-9_]{1,64}; may name a built-in category
  std::string pattern;              // vectorscan syntax (a PCRE subset: no lookaround, no backrefs)
  bool caseless = false;
  bool utf8 = false;  // compile with HS_FLAG_UTF8|HS_FLAG_UCP ('.' and classes match characters)
  int priority = 60;  // breaks ties between findings of equal start and length; built-ins use 10-50
};

struct Policy {
  // Built-in detector ids or categories (built-in or custom) to switch off.
  std::vector<std::string> disabled;
  std::vector<CustomRule> custom_rules;
  // Action per detector id or category. A detector id wins over its category; otherwise
  // default_action applies.
  std::vector<std::pair<std::string, Action>> actions;
  Action default_action = Action::kMask;
  // Per-organisation HMAC key; required (non-empty) when any detector's action is kHash.
  std::string hash_key;
};

// A built-in detector, as documented in docs/dlp.md. Ids and categories are stable: policies name them.
struct DetectorInfo {
  std::string_view id;
  std::string_view category;
  int priority;  // higher wins a tie (same start, same length)
};
std::span<const DetectorInfo> BuiltinDetectors();

}  // namespace govern::dlp
