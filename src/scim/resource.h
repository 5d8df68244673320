// Resources as JSON: checking a client's body against the schemas, projection with `attributes` and
// `excludedAttributes`, and sorting (RFC 7643 section 2, RFC 7644 sections 3.4.2.3, 3.9 and 3.3).
//
// A normalized resource has the schema's spelling of every attribute name, values of the attribute's
// type, no nulls or empty values, an extension's attributes under its URN member, and "schemas" naming
// the core schema and every extension present. Free functions over immutable schemas: thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "scim/error.h"
#include "scim/filter.h"
#include "scim/schema.h"

namespace govern::scim {

// Checks and normalizes a body sent by a client in POST or PUT. Attribute names match
// case-insensitively; booleans may be the strings "True"/"False" (Entra); readOnly attributes (id, meta,
// groups) are ignored, as RFC 7643 section 7 asks. Refuses with 400: invalidSyntax (not an object,
// unknown attribute or schema), invalidValue (wrong type, missing required attribute, two primaries).
Error NormalizeResource(const ResourceType& type, const nlohmann::json& in, nlohmann::json* out);

// Normalizes one value of `attr` (an element when `element`, else the whole value). readOnly
// sub-attributes are dropped when `drop_read_only`. Used by the PATCH engine.
Error NormalizeValue(const Attribute& attr, const nlohmann::json& in, bool element, bool drop_read_only,
                     nlohmann::json* out);

// Removes empty values and empty extensions and sets "schemas" from what is present.
void Tidy(const ResourceType& type, nlohmann::json* resource);

// 400 invalidValue when a required attribute is missing.
Error CheckRequired(const ResourceType& type, const nlohmann::json& resource);

// A comma-separated attribute list ("userName,name.givenName,urn:...:User:department"). Unknown names
// are skipped (an IdP asking for an attribute we do not have gets the rest).
std::vector<AttrPath> ParseAttributeList(const ResourceType& type, std::string_view list);

// The resource as returned: `returned: never` attributes always removed, `always` always kept; with
// `attributes` only those (and `always`), else everything `default` minus `excluded`.
nlohmann::json Project(const ResourceType& type, const nlohmann::json& resource,
                       const std::vector<AttrPath>& attributes, const std::vector<AttrPath>& excluded);

// Sorts resources by one attribute (for a multi-valued one, its primary value, else the first).
// Resources without a value come last in both orders. Stable. 400 invalidPath for an unknown sortBy.
Error ParseSortBy(const ResourceType& type, std::string_view sort_by, AttrPath* out);
void SortResources(const AttrPath& by, bool descending, std::vector<nlohmann::json>* resources);

}  // namespace govern::scim
