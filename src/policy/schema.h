// Cedar schemas: the entity types, their attributes, parents and tags, and the actions with the
// principal and resource types they apply to and their context, as cedar-policy 4.x defines them and
// @cedar-policy/cedar-wasm 4.13 reads them. Both formats the reference accepts are read: the
// human-readable Cedar schema syntax (namespaces, `entity`, `action`, `type`, annotations, enumerated
// entities) and the JSON schema format. A Schema is what validator.h checks policies, requests and
// entities against.
//
// Thread-safety: a Schema is an immutable value that shares its resolved state; copying one is cheap
// and any number of threads may read it at once.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::policy {

struct SchemaType;
using TypeRef = std::shared_ptr<const SchemaType>;

// An attribute of a record or entity type.
struct AttrType {
  TypeRef type;
  bool required = true;
};

// A Cedar type. Schemas only produce kBool..kExtension; the validator also uses kNever (the type of
// an expression that cannot produce a value) and the singleton Booleans kTrue and kFalse, which let it
// follow short-circuiting (`false && e` is False without looking at `e`).
struct SchemaType {
  enum class Kind : uint8_t {
    kNever,
    kTrue,
    kFalse,
    kBool,
    kLong,
    kString,
    kEntity,
    kSet,
    kRecord,
    kExtension
  };
  Kind kind = Kind::kNever;
  std::string name;                       // kEntity: the qualified entity type; kExtension: "ipaddr", ...
  TypeRef element;                        // kSet
  std::map<std::string, AttrType> attrs;  // kRecord
  bool open = false;                      // kRecord: attributes beyond `attrs` may exist

  // Cedar's display form ("Long", "Set<String>", "{a: Long, b?: String}", "User").
  std::string ToString() const;
};

TypeRef MakeType(SchemaType::Kind kind, std::string name = {});
TypeRef MakeSetType(TypeRef element);

struct EntityTypeDef {
  std::string name;                       // qualified, "NS::User"
  std::vector<std::string> parents;       // memberOfTypes, qualified
  std::map<std::string, AttrType> attrs;  // the shape
  bool open_attrs = false;                // shape with additionalAttributes
  TypeRef tags;                           // null: the type has no tags
  bool is_enum = false;
  std::vector<std::string> enum_ids;  // the only ids an enumerated type allows
};

struct ActionRef {
  std::string type;  // qualified, "NS::Action"
  std::string id;
  bool operator==(const ActionRef& o) const { return type == o.type && id == o.id; }
  bool operator<(const ActionRef& o) const { return type != o.type ? type < o.type : id < o.id; }
  std::string ToString() const;  // Action::"view"
};

struct ActionDef {
  ActionRef uid;
  std::vector<ActionRef> parents;                  // direct `in [..]`
  std::vector<ActionRef> ancestors;                // transitive, sorted
  bool applies = false;                            // has appliesTo; without it no request may use the action
  std::vector<std::string> principals, resources;  // qualified entity types
  TypeRef context;                                 // a record (empty when not declared)
};

class Schema {
 public:
  Schema();  // empty: no entity types, no actions

  // Reads either format: JSON when the first character that is not white space is '{', the Cedar
  // schema syntax otherwise. Errors: InvalidArgument; Cedar syntax errors start with "line:column: ",
  // JSON syntax errors name the byte offset, and JSON content errors the path of the bad member.
  static Result<Schema> Parse(std::string_view text);
  static Result<Schema> ParseCedar(std::string_view text);
  static Result<Schema> ParseJson(std::string_view text);

  const EntityTypeDef* FindEntityType(std::string_view name) const;
  const ActionDef* FindAction(std::string_view type, std::string_view id) const;
  // Whether `type` names an action entity type of the schema ("Action", "NS::Action").
  bool IsActionType(std::string_view type) const;
  // Whether an entity of type `child` may have an ancestor of type `ancestor` (memberOfTypes,
  // transitively). A type is not its own ancestor unless the schema says so.
  bool MayBeIn(std::string_view child, std::string_view ancestor) const;

  const std::map<std::string, EntityTypeDef>& entity_types() const;
  const std::vector<ActionDef>& actions() const;

  struct Impl;

 private:
  explicit Schema(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace govern::policy
