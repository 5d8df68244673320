// SCIM attribute paths and filters (RFC 7644 section 3.4.2.2 and 3.5.2): parsing, checking against a
// resource type's schemas, and evaluation over resources held as JSON.
//
// The whole grammar: attribute operators eq ne co sw ew gt ge lt le pr; "and", "or", "not ( )" and
// grouping with the RFC's precedence (not, then and, then or); value filters on multi-valued attributes
// (emails[type eq "work" and primary eq true]); sub-attributes (name.familyName); schema-URN prefixes
// (urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber). Keywords, operators and
// attribute names are case-insensitive. Entra's `emails[type eq "work"].value eq "x"` (a value filter
// followed by a sub-attribute) is accepted and means emails[type eq "work" and value eq "x"].
//
// String comparisons follow the attribute's caseExact (userName: case-insensitive). A filter that does
// not parse, names an unknown attribute, or applies an operator to a type it does not fit (co on a
// boolean, gt on a binary) is refused with 400 invalidFilter.
//
// A compiled Filter is immutable and thread-safe to evaluate; it points into the static schemas.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "scim/error.h"
#include "scim/schema.h"

namespace govern::scim {

// A resolved attribute path: attr (and sub) of the resource type's core schema, of the common attributes,
// or of an extension (then stored under the extension's URN member).
struct AttrPath {
  const Schema* extension = nullptr;  // set when the attribute lives in an extension object
  const Attribute* attr = nullptr;    // nullptr only for a path naming a whole extension
  const Attribute* sub = nullptr;

  // The attribute whose type and case rules apply at the leaf: sub, else attr.
  const Attribute* Leaf() const { return sub != nullptr ? sub : attr; }
  std::string ToString() const;
};

// Where a path is resolved: at the top of a resource, or inside one complex (multi-valued) attribute, as
// in the brackets of a value filter.
struct PathScope {
  const ResourceType* type = nullptr;
  const Attribute* parent = nullptr;
};

// Parses one attribute path without filter ("name.givenName", "urn:...:User:manager.value", or a whole
// extension URN). Errors are invalidPath with a detail, or invalidFilter when `for_filter`.
Error ResolvePath(const PathScope& scope, std::string_view text, AttrPath* out, bool for_filter = false);

enum class CompareOp { kEq, kNe, kCo, kSw, kEw, kGt, kGe, kLt, kLe };

struct Filter {
  enum class Kind { kCompare, kPresent, kAnd, kOr, kNot, kValuePath };
  Kind kind = Kind::kCompare;
  CompareOp op = CompareOp::kEq;
  AttrPath path;                  // kCompare, kPresent, kValuePath (the multi-valued attribute)
  nlohmann::json value;           // kCompare: the comparison value (string, number, boolean or null)
  std::unique_ptr<Filter> left;   // kAnd, kOr, kNot, kValuePath (the filter inside the brackets)
  std::unique_ptr<Filter> right;  // kAnd, kOr

  // Normal form, for tests and logs: (a and b), not (x), attr[f], operators lower case.
  std::string ToString() const;
};

// The longest filter accepted (bytes) and the deepest nesting: bounded so a hostile filter cannot
// exhaust the stack.
inline constexpr size_t kMaxFilterLength = 64 * 1024;
inline constexpr int kMaxFilterDepth = 64;

// Parses and checks `text` against the resource type's schemas. 400 invalidFilter on any problem.
Error ParseFilter(const ResourceType& type, std::string_view text, std::unique_ptr<Filter>* out);
// Parses a filter inside the brackets of a path, relative to the complex attribute `parent`.
Error ParseValueFilter(const ResourceType& type, const Attribute& parent, std::string_view text,
                       std::unique_ptr<Filter>* out);

// True when `resource` (a resource of the type the filter was parsed for) matches.
bool Matches(const Filter& filter, const nlohmann::json& resource);
// True when one element of a multi-valued complex attribute matches a value filter (ParseValueFilter).
bool MatchesElement(const Filter& filter, const nlohmann::json& element);

// The values at `path` in `resource` (several for a multi-valued attribute; a complex multi-valued
// attribute without sub-attribute yields its elements' "value"). Pointers into `resource`.
std::vector<const nlohmann::json*> ValuesAt(const AttrPath& path, const nlohmann::json& resource);

// Orders two values of `attr` for sorting and gt/lt: <0, 0, >0. Strings follow caseExact.
int CompareValues(const Attribute& attr, const nlohmann::json& a, const nlohmann::json& b);

}  // namespace govern::scim
