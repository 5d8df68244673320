// dlp::RuleSet: one organisation's compiled redaction rules; scans and redacts text in one pass.
//
// Compile once per policy, then share the RuleSet (it is immutable) and call Scan/Redact/RedactJson
// from any number of threads at once: every method is const and thread-safe. All patterns of a rule set
// live in one vectorscan database, so a text is read once whatever the number of detectors. Per-thread
// scan state (vectorscan scratch, match buffers) comes from a pool owned by the compiled database and is
// reused, so a text with no finding costs one scan and no allocation.
//
// Findings are resolved leftmost-longest: candidates are ordered by start, then by length (longer first),
// then by priority (higher first), then by detector order, and taken greedily, dropping any candidate that
// overlaps one already taken. Findings never split a UTF-8 character: spans are widened to character
// boundaries. Invalid UTF-8 input is scanned byte-wise and never crashes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "dlp/policy.h"

namespace govern::dlp {

// One detected value. The string_views of a built-in detector point at static storage; those of a custom
// rule point into the RuleSet and are valid as long as it lives.
struct Finding {
  std::string_view detector;  // stable id: "email", "card_number", or a custom rule's id
  std::string_view category;  // "contact", "financial", "secret", ... or a custom category
  size_t begin = 0;           // byte offsets into the scanned text, [begin, end)
  size_t end = 0;
  Action action = Action::kMask;  // what Redact would do with it under this policy
};

struct DetectorCount {
  std::string_view detector;  // as Finding::detector
  uint32_t count = 0;
};

struct Outcome {
  bool changed = false;               // the output differs from the input (false: *out was not touched)
  bool dropped = false;               // a finding's action was kDrop: the text (or JSON value) was dropped
  std::vector<DetectorCount> counts;  // findings per detector, in detector order; empty when none
  uint32_t total() const {
    uint32_t n = 0;
    for (const auto& c : counts) n += c.count;
    return n;
  }
};

class RuleSet {
 public:
  // Validates the policy and compiles the built-in detectors plus its custom rules into one database.
  // A bad custom pattern gives InvalidArgument naming the rule's index and id and carrying
  // vectorscan's message. Policies without custom rules share one built-in database compiled once per
  // process, so compiling them is cheap.
  static Result<std::shared_ptr<const RuleSet>> Compile(const Policy& policy);

  ~RuleSet();
  RuleSet(const RuleSet&) = delete;
  RuleSet& operator=(const RuleSet&) = delete;

  // Every finding in `text`, ordered by begin, non-overlapping. Returns an empty vector (no allocation)
  // when nothing matches. A text that cannot be scanned (over 4 GiB, or no memory for scan state) fails
  // closed: one finding "unscannable" (category "error", action kDrop) covering all of it.
  std::vector<Finding> Scan(std::string_view text) const;
  // As above, appending to *out (cleared first) so a caller can reuse its buffer.
  void Scan(std::string_view text, std::vector<Finding>* out) const;

  // Redacts `text` into *out according to each finding's action. When nothing is found, returns
  // changed=false and leaves *out untouched (the caller keeps using `text`). When a finding's action is
  // kDrop, *out is cleared and dropped=true. A text that cannot be scanned is dropped the same way (counted
  // as "unscannable").
  Outcome Redact(std::string_view text, std::string* out) const;

  // Redacts every string value of a JSON document; object keys, numbers, literals and the document's
  // layout are copied byte for byte. A value whose key names a secret ("password", "api_key",
  // "client_secret", ...) is redacted whole as generic_secret. A dropped value becomes null.
  // Invalid JSON (or invalid UTF-8) gives InvalidArgument, a failed scan ResourceExhausted. *out is
  // touched only when changed=true.
  Result<Outcome> RedactJson(std::string_view json, std::string* out) const;

  // The detectors this rule set runs (built-ins not disabled, then custom rules), in detector order.
  std::vector<DetectorInfo> Detectors() const;

  struct Impl;

 private:
  explicit RuleSet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::dlp
