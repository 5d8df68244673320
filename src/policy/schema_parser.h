// The two schema formats read into one set of declarations, before names are resolved (schema.cc
// resolves them). Internal to src/policy. `where` in each declaration is "line:column" for the Cedar
// schema syntax and the JSON path of the member for the JSON format, for error messages.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace govern::policy {

struct TypeDecl;

struct AttrDecl {
  std::string name;
  bool required = true;
  std::shared_ptr<TypeDecl> type;
};

struct TypeDecl {
  // kName: a name to resolve (common type, entity type or built-in); kEntity / kExtension /
  // kPrimitive: the JSON format's explicit "Entity", "Extension", "Long"/"String"/"Boolean".
  enum Kind { kName, kSet, kRecord, kEntity, kExtension, kPrimitive } kind = kName;
  std::string name;
  std::shared_ptr<TypeDecl> element;  // kSet
  std::vector<AttrDecl> attrs;        // kRecord
  bool open = false;                  // kRecord: additionalAttributes
  bool json = false;                  // from the JSON format ("Boolean" is a built-in name only there)
  bool no_entity = false;             // kName that may not resolve to an entity type
  std::string where;
};

struct EntityDecl {
  std::string ns, name;
  std::vector<std::pair<std::string, std::string>> parents;  // name, where
  std::shared_ptr<TypeDecl> shape, tags;
  bool is_enum = false;
  std::vector<std::string> enum_ids;
  std::string where;
};

struct ActionParentDecl {
  std::string type;  // empty: the Action type of the declaring namespace
  std::string id;
  std::string where;
};

struct ActionDecl {
  std::string ns, id;
  std::vector<ActionParentDecl> parents;
  bool applies = false;
  std::vector<std::pair<std::string, std::string>> principals, resources;  // name, where
  std::shared_ptr<TypeDecl> context;
  std::string where;
};

struct CommonDecl {
  std::string ns, name;
  std::shared_ptr<TypeDecl> type;
  std::string where;
};

struct SchemaDecls {
  std::vector<EntityDecl> entities;
  std::vector<ActionDecl> actions;
  std::vector<CommonDecl> commons;
};

// The Cedar schema syntax. Errors: InvalidArgument "line:column: message".
Status ParseCedarSchemaText(std::string_view text, SchemaDecls* out);
// The JSON schema format. Errors: InvalidArgument naming the byte offset or the member's path.
Status ParseJsonSchemaText(std::string_view text, SchemaDecls* out);

}  // namespace govern::policy
