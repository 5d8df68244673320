// SCIM error values and their JSON form.
#include "scim/error.h"

#include <utility>

namespace govern::scim {

nlohmann::json Error::ToJson() const {
  nlohmann::json out = {{"schemas", {kErrorSchema}}, {"status", std::to_string(status)}};
  if (!scim_type.empty()) out["scimType"] = scim_type;
  if (!detail.empty()) out["detail"] = detail;
  return out;
}

namespace {
Error Make(int status, const char* type, std::string detail) {
  return Error{status, type, std::move(detail)};
}
}  // namespace

Error InvalidFilter(std::string d) { return Make(400, "invalidFilter", std::move(d)); }
Error TooMany(std::string d) { return Make(400, "tooMany", std::move(d)); }
Error UniquenessError(std::string d) { return Make(409, "uniqueness", std::move(d)); }
Error MutabilityError(std::string d) { return Make(400, "mutability", std::move(d)); }
Error InvalidSyntax(std::string d) { return Make(400, "invalidSyntax", std::move(d)); }
Error InvalidPath(std::string d) { return Make(400, "invalidPath", std::move(d)); }
Error NoTarget(std::string d) { return Make(400, "noTarget", std::move(d)); }
Error InvalidValue(std::string d) { return Make(400, "invalidValue", std::move(d)); }
Error InvalidVersion(std::string d) { return Make(400, "invalidVers", std::move(d)); }
Error Sensitive(std::string d) { return Make(403, "sensitive", std::move(d)); }
Error NotFoundError(std::string d) { return Make(404, "", std::move(d)); }
Error PreconditionFailed(std::string d) { return Make(412, "", std::move(d)); }
Error PayloadTooLarge(std::string d) { return Make(413, "", std::move(d)); }
Error Unauthorized(std::string d) { return Make(401, "", std::move(d)); }
Error ServerError(std::string d) { return Make(500, "", std::move(d)); }
Error Unavailable503(std::string d) { return Make(503, "", std::move(d)); }

}  // namespace govern::scim
