// Fuzz target: the Cedar JSON policy format (PolicySet::FromJson) and links.json. Reading must never
// crash; a set that reads is evaluated against a small fixed request, and printing it back
// (ToJson) must read again to a set that prints the same: JSON out is a fixed point.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "policy/cedar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::policy;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)PolicySet::ParseLinks(text);
  auto set = PolicySet::FromJson(text);
  if (!set.ok()) return 0;
  static const Entities* entities = [] {
    auto e = Entities::FromJson(R"([
      {"uid": {"type": "User", "id": "alice"}, "attrs": {"age": 30, "tags": ["a", "b"], "r": {"x": 1}},
       "parents": [{"type": "Team", "id": "t"}], "tags": {"k": "v"}},
      {"uid": {"type": "Team", "id": "t"}, "attrs": {}, "parents": [{"type": "Org", "id": "o"}]}])");
    return new Entities(std::move(*e));
  }();
  static const Request* request = [] {
    auto r = Request::Make({"User", "alice"}, {"Action", "view"}, {"Doc", "d"}, R"({"n": 5, "s": "text"})");
    return new Request(std::move(*r));
  }();
  Outcome out;
  Authorize(*set, *entities, *request, &out);
  std::string printed = set->ToJson();
  auto again = PolicySet::FromJson(printed);
  if (!again.ok() || again->ToJson() != printed || again->size() != set->size()) std::abort();
  return 0;
}
