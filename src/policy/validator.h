// Checks Cedar policies, requests and entities against a Schema, the way the reference's strict
// validator (cedar-policy 4.x as @cedar-policy/cedar-wasm 4.13 runs it) does.
//
// Policies: each policy is type-checked once per request environment its scope allows (an action of
// the schema with one of its principal and resource types), with Cedar's type system: Bool with the
// singleton types True and False (so `false && e` and `principal has x && principal.x` type-check as
// the reference's do), Long, String, sets, closed records, entity types, and the extension types.
// Errors: unknown entity types and actions, enumerated entity ids not declared, attributes that do not
// exist or are optional and not guarded by `has` (tags by `hasTag`), operands of the wrong type,
// incompatible types in `==`, set literals and `contains*`, empty set literals, extension
// constructors not called with a valid string literal. Warnings (the reference's too): no request
// environment matches the scope, and an impossible policy (False in every environment).
//
// Requests and entities: the action exists and applies to the principal and resource types, the
// context has exactly the declared attributes with the declared types, every entity's type is
// declared, its attributes and tags conform and its parents are of types it may be a member of.
//
// Thread-safety: pure functions over immutable inputs; any number of threads may call them at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "policy/cedar.h"
#include "policy/schema.h"

namespace govern::policy {

struct ValidationIssue {
  std::string policy_id;
  std::string message;         // "for policy `policy0`, ..." as the reference words them, where we know it
  uint32_t line = 0, col = 0;  // of the offending expression (or the policy)
};

struct ValidationResult {
  std::vector<ValidationIssue> errors;    // a policy with an error fails validation
  std::vector<ValidationIssue> warnings;  // the policy is valid but suspicious (impossible, no action)
  bool ok() const { return errors.empty(); }
};

// Validates every policy of `policies`. Each distinct message is reported once per policy, in policy
// order.
ValidationResult ValidatePolicies(const Schema& schema, const PolicySet& policies);

// Validates a request (the JSON form of Request::FromJson) against the schema. Ok or InvalidArgument
// naming the first problem.
Status ValidateRequestJson(const Schema& schema, std::string_view request_json);
// The same from parts; `context_json` is a JSON object ("" means {}).
Status ValidateRequest(const Schema& schema, const EntityRef& principal, const EntityRef& action,
                       const EntityRef& resource, std::string_view context_json);

// Validates the Cedar JSON entity format (the input of Entities::FromJson) against the schema. Ok or
// InvalidArgument naming the first entity that does not conform and why.
Status ValidateEntitiesJson(const Schema& schema, std::string_view entities_json);

// The same checks, returning the input rewritten the way the reference reads JSON with a schema, for
// Request::FromJson and Entities::FromJson: a string where the schema expects an extension type
// ("10.0.0.1" for an ipaddr) becomes {"__extn": {"fn", "arg"}}, and a bare {"type", "id"} where it
// expects an entity becomes {"__entity": {...}}. Without this the engine would see a string.
Result<std::string> ConformRequestJson(const Schema& schema, std::string_view request_json);
Result<std::string> ConformEntitiesJson(const Schema& schema, std::string_view entities_json);

}  // namespace govern::policy
