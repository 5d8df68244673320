// Fuzz target: RequestBuilder::ContextJson against Request::Make on the same text. The builder's own
// JSON reader must agree with the general path exactly: both accept with equal contexts, or both
// refuse. A disagreement aborts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "policy/cedar.h"
#include "policy/entity_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::policy;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  static RequestBuilder* builder = [] {
    auto* b = new RequestBuilder;
    b->Principal("A", "1").Action("Action", "x").Resource("R", "r");
    return b;
  }();
  govern::Status fast = builder->ContextJson(text);
  auto general = Request::Make({"A", "1"}, {"Action", "x"}, {"R", "r"}, text);
  if (fast.ok() != general.ok()) std::abort();
  if (fast.ok() && !ValueEquals(builder->data().context, general->data().context)) std::abort();
  if (fast.ok()) {
    auto copy = builder->Build();
    if (!copy.ok() || !ValueEquals(copy->data().context, general->data().context)) std::abort();
  }
  return 0;
}
