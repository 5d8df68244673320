// Fuzz target: limits.json. Parsing must never crash; limits that parse are applied to a fixed
// allowed request twice (the counters' paths run too).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "policy/cedar.h"
#include "policy/limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::policy;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  static govern::ManualClock clock;
  LimitOptions options;
  options.clock = &clock;
  options.max_counters = 4;
  auto limits = Limits::Parse(text, options);
  if (!limits.ok()) return 0;
  static const Entities* entities = [] {
    auto e = Entities::FromJson(R"([{"uid": {"type": "Agent", "id": "a1"}, "attrs": {},
      "parents": [{"type": "Team", "id": "t"}]}])");
    return new Entities(std::move(*e));
  }();
  auto request = Request::Make({"Agent", "a1"}, {"Action", "call_tool"}, {"Tool", "search"},
                               R"({"cost_cents": 7, "args": {"n": 2}})");
  for (int k = 0; k < 2; ++k) {
    Outcome out;
    out.decision = Decision::kAllow;
    limits->Apply(*entities, request->data(), &out);
  }
  return 0;
}
