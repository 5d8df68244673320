// Fuzz target: arbitrary bytes through RedactJson. Invalid JSON must give an error; when a document is
// redacted the output must still be valid JSON.
#include <simdjson.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dlp/rule_set.h"

namespace {

using govern::dlp::Action;
using govern::dlp::Policy;
using govern::dlp::RuleSet;

const RuleSet& Rules() {
  static const auto rs = [] {
    Policy p;
    p.custom_rules.push_back({.id = "anchored", .pattern = "^[A-Z]{2}[0-9]+$"});
    p.actions = {{"network", Action::kDrop}, {"financial", Action::kPartialMask}};
    return RuleSet::Compile(p).value();
  }();
  return *rs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view json(reinterpret_cast<const char*>(data), size);
  std::string out;
  auto r = Rules().RedactJson(json, &out);
  if (!r.ok() || !r->changed) return 0;
  simdjson::dom::parser parser;
  simdjson::padded_string padded(out);
  simdjson::dom::element root;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS) std::abort();
  return 0;
}
