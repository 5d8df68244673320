// Fuzz target: Cedar schemas in either format. Parsing must never crash; a schema that parses is then
// used to validate a small fixed policy set, a request and entities, so the checks walk its types too.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "policy/cedar.h"
#include "policy/schema.h"
#include "policy/validator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::policy;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto schema = Schema::Parse(text);
  if (!schema.ok()) return 0;
  static const PolicySet* policies = [] {
    auto p = PolicySet::Parse(R"(
      permit(principal, action, resource) when { principal has name && principal.name like "a*" };
      permit(principal in Team::"t", action == Action::"view", resource) when { context.n > 1 };
      forbid(principal, action in [Action::"view", Action::"edit"], resource is Doc)
        unless { resource.owner == principal || principal.hasTag("x") && principal.getTag("x") == "y" };
      permit(principal, action, resource) when { [1, 2].contains(context.n) && context.ip.isInRange(ip("10.0.0.0/8")) };
      permit(principal, action, resource) when { if context.b then {a: 1} == {a: 2} else decimal("1.0").lessThan(context.d) };)");
    return new PolicySet(std::move(*p));
  }();
  ValidationResult r = ValidatePolicies(*schema, *policies);
  (void)r;
  (void)ValidateRequestJson(
      *schema, R"({"principal": {"type": "User", "id": "a"}, "action": {"type": "Action", "id": "view"},
      "resource": {"type": "Doc", "id": "d"}, "context": {"n": 1, "ip": "10.0.0.1", "s": {"x": [1]}}})");
  (void)ValidateEntitiesJson(*schema,
                             R"([{"uid": {"type": "User", "id": "a"}, "attrs": {"name": "a", "age": 3},
      "parents": [{"type": "Team", "id": "t"}], "tags": {"x": "y"}}, {"uid": {"type": "Doc", "id": "d"},
      "attrs": {"owner": {"__entity": {"type": "User", "id": "a"}}}, "parents": []}])");
  return 0;
}
