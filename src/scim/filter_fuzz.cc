// Fuzz target: any bytes as a filter. It must parse or be refused with invalidFilter, never crash; a
// parsed filter evaluates, and its normal form parses again to the same normal form.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "scim/filter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::scim;
  static const nlohmann::json* resource = new nlohmann::json(nlohmann::json::parse(R"({
    "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "id": "1", "userName": "bjensen",
    "name": {"familyName": "Jensen", "givenName": "Barbara"}, "active": true,
    "emails": [{"value": "b@example.com", "type": "work", "primary": true}],
    "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"employeeNumber": "7"}})"));
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<Filter> filter;
  Error e = ParseFilter(UserResourceType(), text, &filter);
  if (!e.ok()) {
    if (e.status != 400 || e.scim_type != "invalidFilter") std::abort();
    return 0;
  }
  (void)Matches(*filter, *resource);
  std::string normal = filter->ToString();
  std::unique_ptr<Filter> again;
  if (!ParseFilter(UserResourceType(), normal, &again).ok() || again->ToString() != normal) std::abort();
  return 0;
}
