// The SCIM schemas Govern serves (RFC 7643): core User, the enterprise User extension and Group, with
// every attribute's characteristics (type, multiValued, caseExact, mutability, returned, uniqueness), and
// the resource types that combine them.
//
// The schemas are built once and never change: every function returns references to immutable static
// data, so they are thread-safe. Attribute names are matched case-insensitively everywhere (RFC 7643
// section 2.1); the canonical spelling is the one in the schema.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace govern::scim {

inline constexpr const char* kUserSchema = "urn:ietf:params:scim:schemas:core:2.0:User";
inline constexpr const char* kGroupSchema = "urn:ietf:params:scim:schemas:core:2.0:Group";
inline constexpr const char* kEnterpriseSchema = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
inline constexpr const char* kPatchOpSchema = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
inline constexpr const char* kListResponseSchema = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
inline constexpr const char* kSearchRequestSchema = "urn:ietf:params:scim:api:messages:2.0:SearchRequest";
inline constexpr const char* kBulkRequestSchema = "urn:ietf:params:scim:api:messages:2.0:BulkRequest";
inline constexpr const char* kBulkResponseSchema = "urn:ietf:params:scim:api:messages:2.0:BulkResponse";

enum class Type { kString, kBoolean, kDecimal, kInteger, kDateTime, kReference, kBinary, kComplex };
enum class Mutability { kReadWrite, kReadOnly, kImmutable, kWriteOnly };
enum class Returned { kDefault, kAlways, kNever, kRequest };
enum class Uniqueness { kNone, kServer, kGlobal };

struct Attribute {
  std::string name;
  Type type = Type::kString;
  bool multi_valued = false;
  bool required = false;
  bool case_exact = false;
  Mutability mutability = Mutability::kReadWrite;
  Returned returned = Returned::kDefault;
  Uniqueness uniqueness = Uniqueness::kNone;
  std::vector<std::string> canonical_values;
  std::vector<std::string> reference_types;
  std::vector<Attribute> sub_attributes;  // only for kComplex
  std::string description;

  // The sub-attribute called `name` (case-insensitive), or nullptr.
  const Attribute* Sub(std::string_view name) const;
};

struct Schema {
  std::string id;  // the URN
  std::string name;
  std::string description;
  std::vector<Attribute> attributes;

  const Attribute* Find(std::string_view name) const;
  // RFC 7643 section 7 representation (for GET /Schemas).
  nlohmann::json ToJson(std::string_view base_url) const;
};

struct ResourceType {
  std::string name;      // "User"
  std::string endpoint;  // "/Users"
  std::string description;
  const Schema* core = nullptr;
  std::vector<const Schema*> extensions;
  // id, externalId, meta (RFC 7643 section 3.1): not in any schema's attribute list, but every resource
  // has them.
  const std::vector<Attribute>* common = nullptr;

  // The attribute `name` of the core schema or the common attributes (case-insensitive), or nullptr.
  const Attribute* FindCore(std::string_view name) const;
  // The schema (core or an extension) whose id equals `urn` case-insensitively, or nullptr.
  const Schema* FindSchema(std::string_view urn) const;
  // RFC 7643 section 6 representation (for GET /ResourceTypes).
  nlohmann::json ToJson(std::string_view base_url) const;
};

const Schema& UserSchema();
const Schema& EnterpriseUserSchema();
const Schema& GroupSchema();
const std::vector<Attribute>& CommonAttributes();
const ResourceType& UserResourceType();
const ResourceType& GroupResourceType();

// ASCII case-insensitive equality and lower-casing (attribute names, keywords, caseExact=false values).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
std::string Lower(std::string_view s);

// The member of `object` named `name` case-insensitively (exact spelling preferred), or nullptr.
const nlohmann::json* FindMember(const nlohmann::json& object, std::string_view name);
nlohmann::json* FindMember(nlohmann::json& object, std::string_view name);
// Removes every member named `name` case-insensitively; true when one was removed.
bool EraseMember(nlohmann::json& object, std::string_view name);

}  // namespace govern::scim
