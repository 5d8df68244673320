// Fuzz target: Cedar JSON entities (and the same bytes as a request). Loading must never crash; a
// store that loads is queried by a fixed policy set that reads attributes, tags and ancestors.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "policy/cedar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::policy;
  std::string_view json(reinterpret_cast<const char*>(data), size);
  static const PolicySet* policies = [] {
    auto p = PolicySet::Parse(R"(
      permit(principal in Team::"t", action, resource) when { principal has age && principal.age > 1 };
      forbid(principal, action, resource) when { principal.hasTag("k") && principal.getTag("k") == "v" };
      permit(principal, action, resource) when { principal.ip.isInRange(ip("10.0.0.0/8")) };
      permit(principal, action, resource) when { principal.d.lessThan(decimal("1.5")) };
      permit(principal, action, resource) when { principal.s.contains(principal) || principal in principal.p };
      permit(principal, action, resource) when { context.t < datetime("2024-01-01") };)");
    return new PolicySet(std::move(*p));
  }();
  auto request = Request::FromJson(json);
  auto entities = Entities::FromJson(json);
  if (!entities.ok()) return 0;
  for (const char* id : {"a", "alice", "1", ""}) {
    auto req = Request::Make({"User", id}, {"Action", "view"}, {"Doc", "d"}, "{}");
    if (!req.ok()) continue;
    Outcome out;
    Authorize(*policies, *entities, *req, &out);
    if (request.ok()) Authorize(*policies, *entities, *request, &out);
  }
  return 0;
}
