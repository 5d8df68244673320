// SCIM errors (RFC 7644 section 3.12): an HTTP status, a scimType and a detail, and their JSON form.
//
// Every function of govern_scim that can refuse its input returns an Error (ok() when status == 0), so
// a handler turns any refusal into the SCIM error response without guessing. Plain value; thread-safe
// like any value.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace govern::scim {

inline constexpr const char* kErrorSchema = "urn:ietf:params:scim:api:messages:2.0:Error";

struct Error {
  int status = 0;         // HTTP status; 0 means no error
  std::string scim_type;  // RFC 7644 table 9 (invalidFilter, mutability, ...); empty when none fits
  std::string detail;     // for people

  bool ok() const { return status == 0; }
  static Error Ok() { return {}; }

  // RFC 7644 section 3.12: {"schemas":[Error], "status":"400", "scimType":..., "detail":...}; status is
  // a string, as the RFC's examples and Entra expect.
  nlohmann::json ToJson() const;
};

// The errors of RFC 7644 table 9, all 400 except uniqueness (409) and tooMany / sensitive.
Error InvalidFilter(std::string detail);
Error TooMany(std::string detail);
Error UniquenessError(std::string detail);  // 409
Error MutabilityError(std::string detail);
Error InvalidSyntax(std::string detail);
Error InvalidPath(std::string detail);
Error NoTarget(std::string detail);
Error InvalidValue(std::string detail);
Error InvalidVersion(std::string detail);
Error Sensitive(std::string detail);  // 403
// Errors without a scimType.
Error NotFoundError(std::string detail);       // 404
Error PreconditionFailed(std::string detail);  // 412
Error PayloadTooLarge(std::string detail);     // 413
Error Unauthorized(std::string detail);        // 401
Error ServerError(std::string detail);         // 500
Error Unavailable503(std::string detail);      // 503

}  // namespace govern::scim
