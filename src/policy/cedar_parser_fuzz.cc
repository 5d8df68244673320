// Fuzz target: Cedar policy text. Parsing must never crash; a policy set that parses is also
// evaluated against a small fixed request, so the compiled trees are exercised too.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "policy/cedar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::policy;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto set = PolicySet::Parse(text);
  if (!set.ok()) return 0;
  static const Entities* entities = [] {
    auto e = Entities::FromJson(R"([
      {"uid": {"type": "User", "id": "alice"}, "attrs": {"age": 30, "tags": ["a", "b"], "r": {"x": 1}},
       "parents": [{"type": "Team", "id": "t"}], "tags": {"k": "v"}},
      {"uid": {"type": "Team", "id": "t"}, "attrs": {}, "parents": [{"type": "Org", "id": "o"}]},
      {"uid": {"type": "Action", "id": "view"}, "attrs": {}, "parents": [{"type": "Action", "id": "all"}]}])");
    return new Entities(std::move(*e));
  }();
  static const Request* request = [] {
    auto r = Request::Make({"User", "alice"}, {"Action", "view"}, {"Doc", "d"},
                           R"({"n": 5, "s": "text", "ip": {"__extn": {"fn": "ip", "arg": "10.0.0.1"}},
                               "set": [1, 2], "rec": {"a": {"b": true}}})");
    return new Request(std::move(*r));
  }();
  Outcome out;
  Authorize(*set, *entities, *request, &out);
  Response r = Authorize(*set, *entities, *request);
  (void)r;
  return 0;
}
