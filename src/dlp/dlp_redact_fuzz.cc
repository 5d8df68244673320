// Fuzz target: arbitrary bytes through Scan and Redact with the built-in rules (and a policy using every
// action and a UTF-8 custom rule). Checks the findings' invariants, not just the absence of crashes.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dlp/rule_set.h"

namespace {

using govern::dlp::Action;
using govern::dlp::Policy;
using govern::dlp::RuleSet;

const RuleSet& Builtins() {
  static const auto rs = RuleSet::Compile(Policy{}).value();
  return *rs;
}

const RuleSet& Mixed() {
  static const auto rs = [] {
    Policy p;
    p.custom_rules.push_back({.id = "ticket", .pattern = "TICKET-[0-9]+"});
    p.custom_rules.push_back({.id = "accented", .pattern = "[a-z]+[é-ü]", .utf8 = true});
    p.actions = {{"financial", Action::kPartialMask},
                 {"contact", Action::kHash},
                 {"ticket", Action::kPartialMask},
                 {"jwt", Action::kDrop}};
    p.hash_key = "fuzz";
    return RuleSet::Compile(p).value();
  }();
  return *rs;
}

void Check(const RuleSet& rs, std::string_view text) {
  size_t prev_end = 0;
  for (const auto& f : rs.Scan(text)) {
    if (f.begin >= f.end || f.end > text.size() || f.begin < prev_end) std::abort();
    if (f.begin > 0 && (static_cast<unsigned char>(text[f.begin]) & 0xC0) == 0x80) std::abort();
    if (f.end < text.size() && (static_cast<unsigned char>(text[f.end]) & 0xC0) == 0x80) std::abort();
    prev_end = f.end;
  }
  std::string out;
  auto o = rs.Redact(text, &out);
  if (!o.changed && (o.dropped || !o.counts.empty())) std::abort();
  if (o.dropped && !out.empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Check(Builtins(), text);
  Check(Mixed(), text);
  return 0;
}
