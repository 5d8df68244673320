// Cedar schemas in both formats: each format is read into the same declarations (schema_parser.h), and
// one resolver turns them into the immutable Schema (names qualified, common types expanded, the
// entity and action hierarchies closed).
#include "policy/schema.h"

#include <algorithm>
#include <functional>
#include <set>

#include "policy/schema_parser.h"

namespace govern::policy {

struct Schema::Impl {
  std::map<std::string, EntityTypeDef> entity_types;
  std::vector<ActionDef> actions;
  std::map<ActionRef, size_t> action_index;
  std::set<std::string> action_types;
  std::map<std::string, std::set<std::string>> ancestor_types;  // entity type -> possible ancestor types
};

namespace {

std::string AttrsToString(const std::map<std::string, AttrType>& attrs) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, a] : attrs) {
    out += first ? "" : ", ";
    first = false;
    out += k + (a.required ? ": " : "?: ") + (a.type ? a.type->ToString() : "?");
  }
  return out + "}";
}

std::string Qualify(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "::" + name;
}

const std::map<std::string, std::pair<SchemaType::Kind, std::string>>& Builtins() {
  static const auto* m = new std::map<std::string, std::pair<SchemaType::Kind, std::string>>{
      {"Long", {SchemaType::Kind::kLong, ""}},
      {"String", {SchemaType::Kind::kString, ""}},
      {"Bool", {SchemaType::Kind::kBool, ""}},
      {"Boolean", {SchemaType::Kind::kBool, ""}},
      {"ipaddr", {SchemaType::Kind::kExtension, "ipaddr"}},
      {"decimal", {SchemaType::Kind::kExtension, "decimal"}},
      {"datetime", {SchemaType::Kind::kExtension, "datetime"}},
      {"duration", {SchemaType::Kind::kExtension, "duration"}},
  };
  return *m;
}

// Turns declarations into a Schema::Impl; every name is checked here, whichever format it came from.
class Resolver {
 public:
  explicit Resolver(const SchemaDecls& d) : d_(d) {}

  Status Run(Schema::Impl* out) {
    for (const auto& c : d_.commons) {
      std::string q = Qualify(c.ns, c.name);
      if (!commons_.emplace(q, &c).second) return Err(c.where, "duplicate common type `" + q + "`");
    }
    for (const auto& e : d_.entities) {
      std::string q = Qualify(e.ns, e.name);
      // `Action` names the namespace's action type; `__cedar` is the reference's own namespace.
      if (e.name == "Action")
        return Err(e.where, "entity type `" + q + "` may not be declared: it is the action type");
      if (q == "__cedar" || q.rfind("__cedar::", 0) == 0 || e.ns.find("__cedar") != std::string::npos)
        return Err(e.where, "use of the reserved `__cedar` namespace");
      if (entity_names_.count(q)) return Err(e.where, "duplicate entity type `" + q + "`");
      entity_names_.insert(q);
    }
    for (const auto& c : d_.commons) {
      std::string q = Qualify(c.ns, c.name);
      if (entity_names_.count(q))
        return Err(c.where, "`" + q + "` is declared as both a common type and an entity type");
    }
    // Every common type must resolve, used or not.
    for (const auto& c : d_.commons) {
      TypeRef unused;
      GOVERN_RETURN_IF_ERROR(Resolve(*c.type, c.ns, &unused));
    }
    for (const auto& e : d_.entities) {
      EntityTypeDef def;
      def.name = Qualify(e.ns, e.name);
      for (const auto& [p, where] : e.parents) {
        std::string q;
        GOVERN_RETURN_IF_ERROR(ResolveEntityName(p, e.ns, where, &q));
        if (std::find(def.parents.begin(), def.parents.end(), q) == def.parents.end())
          def.parents.push_back(q);
      }
      if (e.shape) {
        TypeRef shape;
        GOVERN_RETURN_IF_ERROR(Resolve(*e.shape, e.ns, &shape));
        if (shape->kind != SchemaType::Kind::kRecord)
          return Err(e.shape->where, "the shape of entity type `" + def.name + "` must be a record, not " +
                                         shape->ToString());
        def.attrs = shape->attrs;
        def.open_attrs = shape->open;
      }
      if (e.tags) GOVERN_RETURN_IF_ERROR(Resolve(*e.tags, e.ns, &def.tags));
      def.is_enum = e.is_enum;
      def.enum_ids = e.enum_ids;
      if (e.is_enum && e.enum_ids.empty())
        return Err(e.where, "enumerated entity type `" + def.name + "` has no ids");
      out->entity_types.emplace(def.name, std::move(def));
    }
    // Actions: uids first, so that `in` may name an action declared later.
    for (const auto& a : d_.actions) {
      ActionRef uid{Qualify(a.ns, "Action"), a.id};
      if (out->action_index.count(uid)) return Err(a.where, "duplicate action " + uid.ToString());
      out->action_index.emplace(uid, out->actions.size());
      out->action_types.insert(uid.type);
      ActionDef def;
      def.uid = uid;
      out->actions.push_back(std::move(def));
    }
    for (size_t i = 0; i < d_.actions.size(); ++i) {
      const ActionDecl& a = d_.actions[i];
      ActionDef& def = out->actions[i];
      for (const auto& p : a.parents) {
        ActionRef ref{p.type.empty() ? Qualify(a.ns, "Action") : p.type, p.id};
        if (!p.type.empty() && !out->action_index.count(ref) && ref.type.find("::") == std::string::npos &&
            !a.ns.empty()) {
          ActionRef in_ns{Qualify(a.ns, ref.type), ref.id};
          if (out->action_index.count(in_ns)) ref = in_ns;
        }
        if (!out->action_index.count(ref))
          return Err(p.where, "action " + def.uid.ToString() + " is in undeclared action " + ref.ToString());
        if (std::find(def.parents.begin(), def.parents.end(), ref) == def.parents.end())
          def.parents.push_back(ref);
      }
      def.applies = a.applies;
      for (const auto& [p, where] : a.principals) {
        std::string q;
        GOVERN_RETURN_IF_ERROR(ResolveEntityName(p, a.ns, where, &q));
        if (std::find(def.principals.begin(), def.principals.end(), q) == def.principals.end())
          def.principals.push_back(q);
      }
      for (const auto& [r, where] : a.resources) {
        std::string q;
        GOVERN_RETURN_IF_ERROR(ResolveEntityName(r, a.ns, where, &q));
        if (std::find(def.resources.begin(), def.resources.end(), q) == def.resources.end())
          def.resources.push_back(q);
      }
      if (a.context) {
        GOVERN_RETURN_IF_ERROR(Resolve(*a.context, a.ns, &def.context));
        if (def.context->kind != SchemaType::Kind::kRecord)
          return Err(a.context->where, "the context of action " + def.uid.ToString() +
                                           " must be a record, not " + def.context->ToString());
      } else {
        def.context = MakeType(SchemaType::Kind::kRecord);
      }
    }
    // The action hierarchy must be acyclic; ancestors are closed transitively.
    for (size_t i = 0; i < out->actions.size(); ++i) {
      std::set<ActionRef> seen;
      std::vector<ActionRef> stack = out->actions[i].parents;
      while (!stack.empty()) {
        ActionRef r = stack.back();
        stack.pop_back();
        if (r == out->actions[i].uid)
          return Err(d_.actions[i].where, "the action hierarchy has a cycle through " + r.ToString());
        if (!seen.insert(r).second) continue;
        for (const auto& p : out->actions[out->action_index.at(r)].parents) stack.push_back(p);
      }
      out->actions[i].ancestors.assign(seen.begin(), seen.end());
    }
    for (const auto& [name, def] : out->entity_types) {
      std::set<std::string> anc;
      std::vector<std::string> stack = def.parents;
      while (!stack.empty()) {
        std::string t = stack.back();
        stack.pop_back();
        if (!anc.insert(t).second) continue;
        auto it = out->entity_types.find(t);
        if (it != out->entity_types.end())
          for (const auto& p : it->second.parents) stack.push_back(p);
      }
      out->ancestor_types.emplace(name, std::move(anc));
    }
    return Status::Ok();
  }

 private:
  static Status Err(const std::string& where, const std::string& msg) {
    return InvalidArgument(where.empty() ? msg : where + ": " + msg);
  }

  Status ResolveEntityName(const std::string& name, const std::string& ns, const std::string& where,
                           std::string* out) {
    if (name.find("::") == std::string::npos && entity_names_.count(Qualify(ns, name))) {
      *out = Qualify(ns, name);
      return Status::Ok();
    }
    if (entity_names_.count(name)) {
      *out = name;
      return Status::Ok();
    }
    return Err(where, "unknown entity type `" + name + "`");
  }

  Status Resolve(const TypeDecl& t, const std::string& ns, TypeRef* out) {
    if (++depth_ > 200) return Err(t.where, "type nesting is too deep");
    Status s = ResolveInner(t, ns, out);
    --depth_;
    return s;
  }

  Status ResolveInner(const TypeDecl& t, const std::string& ns, TypeRef* out) {
    switch (t.kind) {
      case TypeDecl::kSet: {
        TypeRef elem;
        GOVERN_RETURN_IF_ERROR(Resolve(*t.element, ns, &elem));
        *out = MakeSetType(std::move(elem));
        return Status::Ok();
      }
      case TypeDecl::kRecord: {
        auto r = std::make_shared<SchemaType>();
        r->kind = SchemaType::Kind::kRecord;
        r->open = t.open;
        for (const auto& a : t.attrs) {
          AttrType at;
          at.required = a.required;
          GOVERN_RETURN_IF_ERROR(Resolve(*a.type, ns, &at.type));
          if (!r->attrs.emplace(a.name, std::move(at)).second)
            return Err(a.type->where, "duplicate attribute `" + a.name + "`");
        }
        *out = std::move(r);
        return Status::Ok();
      }
      case TypeDecl::kPrimitive: {
        auto it = Builtins().find(t.name);
        if (it == Builtins().end() || it->second.first == SchemaType::Kind::kExtension)
          return Err(t.where, "unknown primitive type `" + t.name + "`");
        *out = MakeType(it->second.first);
        return Status::Ok();
      }
      case TypeDecl::kExtension: {
        auto it = Builtins().find(t.name);
        if (it == Builtins().end() || it->second.first != SchemaType::Kind::kExtension)
          return Err(t.where, "unknown extension type `" + t.name + "`");
        *out = MakeType(SchemaType::Kind::kExtension, t.name);
        return Status::Ok();
      }
      case TypeDecl::kEntity: {
        std::string q;
        GOVERN_RETURN_IF_ERROR(ResolveEntityName(t.name, ns, t.where, &q));
        *out = MakeType(SchemaType::Kind::kEntity, q);
        return Status::Ok();
      }
      case TypeDecl::kName:
        return ResolveName(t, ns, out);
    }
    return Err(t.where, "bad type");
  }

  // A bare name: a common type, then an entity type, first in the current namespace and then in the
  // empty one, then a built-in type (also as __cedar::Name).
  Status ResolveName(const TypeDecl& t, const std::string& ns, TypeRef* out) {
    std::vector<std::string> candidates;
    if (t.name.find("::") == std::string::npos) {
      if (!ns.empty()) candidates.push_back(Qualify(ns, t.name));
      candidates.push_back(t.name);
    } else {
      candidates.push_back(t.name);
    }
    for (const auto& c : candidates) {
      auto ct = commons_.find(c);
      if (ct != commons_.end()) {
        if (resolving_.count(c)) return Err(t.where, "common type `" + c + "` refers to itself");
        resolving_.insert(c);
        Status s = Resolve(*ct->second->type, ct->second->ns, out);
        resolving_.erase(c);
        return s;
      }
      if (!t.no_entity && entity_names_.count(c)) {
        *out = MakeType(SchemaType::Kind::kEntity, c);
        return Status::Ok();
      }
    }
    std::string base = t.name;
    if (base.rfind("__cedar::", 0) == 0) base = base.substr(9);
    auto it = Builtins().find(base);
    if (it != Builtins().end() && (base != "Boolean" || t.json)) {
      *out = MakeType(it->second.first, it->second.second);
      return Status::Ok();
    }
    return Err(t.where,
               "failed to resolve type: `" + t.name + "` has not been declared as a common or entity type");
  }

  const SchemaDecls& d_;
  std::map<std::string, const CommonDecl*> commons_;
  std::set<std::string> entity_names_;
  std::set<std::string> resolving_;
  int depth_ = 0;
};

Result<Schema::Impl*> Build(const SchemaDecls& decls) {
  auto impl = std::make_unique<Schema::Impl>();
  Resolver r(decls);
  GOVERN_RETURN_IF_ERROR(r.Run(impl.get()));
  return impl.release();
}

}  // namespace

std::string SchemaType::ToString() const {
  switch (kind) {
    case Kind::kNever:
      return "Never";
    case Kind::kTrue:
      return "True";
    case Kind::kFalse:
      return "False";
    case Kind::kBool:
      return "Bool";
    case Kind::kLong:
      return "Long";
    case Kind::kString:
      return "String";
    case Kind::kEntity:
      return name.empty() ? "Entity" : name;
    case Kind::kSet:
      return "Set<" + (element ? element->ToString() : std::string("?")) + ">";
    case Kind::kRecord:
      return AttrsToString(attrs);
    case Kind::kExtension:
      return name;
  }
  return "?";
}

TypeRef MakeType(SchemaType::Kind kind, std::string name) {
  auto t = std::make_shared<SchemaType>();
  t->kind = kind;
  t->name = std::move(name);
  return t;
}

TypeRef MakeSetType(TypeRef element) {
  auto t = std::make_shared<SchemaType>();
  t->kind = SchemaType::Kind::kSet;
  t->element = std::move(element);
  return t;
}

std::string ActionRef::ToString() const {
  std::string out = type + "::\"";
  for (char c : id) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

Schema::Schema() : impl_(std::make_shared<Impl>()) {}

Result<Schema> Schema::Parse(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
  if (i < text.size() && text[i] == '{') return ParseJson(text);
  return ParseCedar(text);
}

Result<Schema> Schema::ParseCedar(std::string_view text) {
  SchemaDecls decls;
  GOVERN_RETURN_IF_ERROR(ParseCedarSchemaText(text, &decls));
  GOVERN_ASSIGN_OR_RETURN(Impl * impl, Build(decls));
  return Schema(std::shared_ptr<const Impl>(impl));
}

Result<Schema> Schema::ParseJson(std::string_view text) {
  SchemaDecls decls;
  GOVERN_RETURN_IF_ERROR(ParseJsonSchemaText(text, &decls));
  GOVERN_ASSIGN_OR_RETURN(Impl * impl, Build(decls));
  return Schema(std::shared_ptr<const Impl>(impl));
}

const EntityTypeDef* Schema::FindEntityType(std::string_view name) const {
  auto it = impl_->entity_types.find(std::string(name));
  return it == impl_->entity_types.end() ? nullptr : &it->second;
}

const ActionDef* Schema::FindAction(std::string_view type, std::string_view id) const {
  auto it = impl_->action_index.find(ActionRef{std::string(type), std::string(id)});
  return it == impl_->action_index.end() ? nullptr : &impl_->actions[it->second];
}

bool Schema::IsActionType(std::string_view type) const {
  return impl_->action_types.count(std::string(type)) > 0;
}

bool Schema::MayBeIn(std::string_view child, std::string_view ancestor) const {
  auto it = impl_->ancestor_types.find(std::string(child));
  return it != impl_->ancestor_types.end() && it->second.count(std::string(ancestor)) > 0;
}

const std::map<std::string, EntityTypeDef>& Schema::entity_types() const { return impl_->entity_types; }
const std::vector<ActionDef>& Schema::actions() const { return impl_->actions; }

}  // namespace govern::policy
