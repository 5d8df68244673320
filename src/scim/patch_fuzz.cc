// Fuzz target: any bytes as a PATCH body applied to a user. It must apply or be refused with a 4xx SCIM
// error, never crash; a refused PATCH leaves the resource unchanged and an applied one leaves a
// resource that still has its required attributes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "scim/patch.h"
#include "scim/resource.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::scim;
  nlohmann::json request = nlohmann::json::parse(data, data + size, nullptr, false);
  if (request.is_discarded()) return 0;
  static const nlohmann::json* user = new nlohmann::json(nlohmann::json::parse(R"({
    "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User", "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
    "id": "1", "userName": "bjensen", "name": {"familyName": "Jensen", "givenName": "Barbara"}, "active": true,
    "emails": [{"value": "b@example.com", "type": "work", "primary": true}, {"value": "b@home.org", "type": "home"}],
    "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"employeeNumber": "7"}})"));
  nlohmann::json resource = *user;
  Error e = ApplyPatch(UserResourceType(), request, &resource);
  if (!e.ok()) {
    if (e.status < 400 || e.status > 499 || resource != *user) std::abort();
    return 0;
  }
  if (!CheckRequired(UserResourceType(), resource).ok()) std::abort();
  return 0;
}
