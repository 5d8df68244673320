// The SCIM PATCH engine (RFC 7644 section 3.5.2) with the identity providers' dialects.
//
// Operations add, replace and remove, with paths "attr", "attr.sub", "urn:...:attr", "attr[filter]" and
// "attr[filter].sub", and path-less add/replace whose value is an object of attributes. Accepted beyond
// the RFC, because Okta and Entra send them:
//  - op names in any case ("Replace", "Add", "Remove": Entra);
//  - booleans as strings ("True", "False": Entra) for boolean attributes;
//  - dotted and URN-prefixed attribute names inside a path-less value ({"name.givenName": "x"}: Entra);
//  - member removal by value: {"op":"Remove","path":"members","value":[{"value":"id"}]} (Entra);
//  - add/replace through "attr[filter].sub" that matches nothing creates the element when the filter
//    is a conjunction of eq comparisons (emails[type eq "work"].value: Entra); any other filter path
//    that matches nothing is 400 noTarget (RFC 7644 section 3.5.2.3).
// Errors: invalidSyntax (malformed body or op), invalidPath (unknown or malformed path), noTarget
// (remove without path, or a filter that selects nothing), mutability (readOnly, or changing an
// immutable value), invalidValue (wrong type, removing a required attribute).
//
// All or nothing: the resource is changed only when every operation applied. Thread-safe (no state).
#pragma once

#include <nlohmann/json.hpp>

#include "scim/error.h"
#include "scim/schema.h"

namespace govern::scim {

// The most operations one PATCH request may carry.
inline constexpr size_t kMaxPatchOperations = 1000;

// Applies a PatchOp body ({"schemas":[PatchOp], "Operations":[…]}) to `resource`, a normalized resource
// of `type` (resource.h); the result is normalized again (Tidy). `changed` (optional) says whether the
// resource differs afterwards.
Error ApplyPatch(const ResourceType& type, const nlohmann::json& request, nlohmann::json* resource,
                 bool* changed = nullptr);

}  // namespace govern::scim
