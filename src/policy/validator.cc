// The strict validator: a type checker over the compiled policy trees (ast.h), run once per request
// environment, and the request and entity conformance checks.
#include "policy/validator.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "policy/ast.h"
#include "policy/extensions.h"
#include "policy/parser.h"

namespace govern::policy {
namespace {

using K = SchemaType::Kind;

bool IsBoolish(const TypeRef& t) {
  return t && (t->kind == K::kBool || t->kind == K::kTrue || t->kind == K::kFalse);
}

const TypeRef& TypeOf(K k) {
  static const TypeRef kTypes[] = {MakeType(K::kNever), MakeType(K::kTrue), MakeType(K::kFalse),
                                   MakeType(K::kBool),  MakeType(K::kLong), MakeType(K::kString)};
  return kTypes[static_cast<size_t>(k)];
}

TypeRef Singleton(bool v) { return TypeOf(v ? K::kTrue : K::kFalse); }

TypeRef Ext(const char* name) { return MakeType(K::kExtension, name); }

// The least upper bound of two types in strict mode, or null when there is none.
TypeRef Lub(const TypeRef& a, const TypeRef& b) {
  if (!a || !b) return nullptr;
  if (a->kind == K::kNever) return b;
  if (b->kind == K::kNever) return a;
  if (IsBoolish(a) && IsBoolish(b)) return a->kind == b->kind ? a : TypeOf(K::kBool);
  if (a->kind != b->kind) return nullptr;
  switch (a->kind) {
    case K::kLong:
    case K::kString:
      return a;
    case K::kEntity:
    case K::kExtension:
      return a->name == b->name ? a : nullptr;
    case K::kSet: {
      TypeRef e = Lub(a->element, b->element);
      return e ? MakeSetType(e) : nullptr;
    }
    case K::kRecord: {
      if (a->attrs.size() != b->attrs.size()) return nullptr;
      auto r = std::make_shared<SchemaType>();
      r->kind = K::kRecord;
      r->open = a->open || b->open;
      for (const auto& [k, at] : a->attrs) {
        auto it = b->attrs.find(k);
        if (it == b->attrs.end() || it->second.required != at.required) return nullptr;
        TypeRef t = Lub(at.type, it->second.type);
        if (!t) return nullptr;
        r->attrs[k] = AttrType{t, at.required};
      }
      return r;
    }
    default:
      return nullptr;
  }
}

// Only entity types can be known apart at type level: `principal == resource` is False when their
// types differ, but `a.long == a.string` is a type error (literals are compared by value instead).
bool Disjoint(const TypeRef& a, const TypeRef& b) {
  return a->kind == K::kEntity && b->kind == K::kEntity && a->name != b->name;
}

const char* ExtTypeName(Kind k) {
  switch (k) {
    case Kind::kDecimal:
      return "decimal";
    case Kind::kIp:
      return "ipaddr";
    case Kind::kDatetime:
      return "datetime";
    case Kind::kDuration:
      return "duration";
    default:
      return nullptr;
  }
}

// The basename of a qualified name: "NS::Action" -> "Action".
std::string_view Basename(std::string_view name) {
  size_t p = name.rfind("::");
  return p == std::string_view::npos ? name : name.substr(p + 2);
}

using Caps = std::set<std::string>;

struct Typed {
  TypeRef type;  // null: the expression failed to type-check (an error was recorded)
  Caps caps;     // attributes (and tags) known to exist when the expression is true
};

struct Env {
  std::string principal, resource;
  const ActionDef* action = nullptr;
};

class Checker {
 public:
  Checker(const Schema& schema, const CompiledPolicy& policy, std::vector<ValidationIssue>* errors)
      : schema_(schema), policy_(policy), errors_(errors), first_error_(errors->size()) {}

  // A template link's slot values (the rest of a linked policy is its template's, checked as such).
  void CheckLinkValues(const TemplateLinkData& link) {
    for (const Uid* u : {link.principal, link.resource}) {
      if (u) CheckUid(*u, policy_.line, policy_.col);
    }
  }

  // Unknown entity types, actions and enumerated ids anywhere in the policy (the reference checks these
  // before and apart from type checking).
  void CheckNames() {
    for (const ScopeConstraint* sc : {&policy_.principal, &policy_.action, &policy_.resource}) {
      if (sc->uid) CheckUid(*sc->uid, policy_.line, policy_.col);
      for (const Uid* u : sc->uids) CheckUid(*u, policy_.line, policy_.col);
      if (!sc->type.empty() && !schema_.FindEntityType(sc->type))
        Error(policy_.line, policy_.col, "unrecognized entity type `" + sc->type + "`");
    }
    for (const Condition& c : policy_.conditions) WalkNames(c.expr, 0);
  }

  void WalkNames(const Node* n, int depth) {
    if (depth > 2000) return;
    if (n->op == Op::kLit && n->lit.kind == Kind::kEntity) CheckUid(*n->lit.e, n->line, n->col);
    if ((n->op == Op::kIs || n->op == Op::kIsIn) && !schema_.FindEntityType(n->name))
      Error(n->line, n->col, "unrecognized entity type `" + n->name + "`");
    for (const Node* k : n->kids) WalkNames(k, depth + 1);
  }

  void CheckUid(const Uid& u, uint32_t line, uint32_t col) {
    if (schema_.IsActionType(u.type) || Basename(u.type) == "Action") {
      if (!schema_.FindAction(u.type, u.id) && !schema_.FindEntityType(u.type))
        Error(line, col, "unrecognized action `" + u.ToString() + "`");
      return;
    }
    const EntityTypeDef* def = schema_.FindEntityType(u.type);
    if (!def) {
      Error(line, col, "unrecognized entity type `" + u.type + "`");
    } else if (def->is_enum &&
               std::find(def->enum_ids.begin(), def->enum_ids.end(), u.id) == def->enum_ids.end()) {
      Error(line, col,
            "entity `" + u.ToString() + "` is of an enumerated entity type, but `\"" + u.id +
                "\"` is not declared as a valid eid");
    }
  }

  bool KnownUid(const Uid& u) const {
    if (schema_.FindAction(u.type, u.id)) return true;
    // An enumerated type's undeclared id is an error, but the literal still has its type.
    return schema_.FindEntityType(u.type) != nullptr;
  }

  // Whether every action the action scope names is declared.
  bool ActionScopeKnown() const {
    const ScopeConstraint& sc = policy_.action;
    if (sc.uid && !schema_.FindAction(sc.uid->type, sc.uid->id)) return false;
    for (const Uid* u : sc.uids) {
      if (!schema_.FindAction(u->type, u->id)) return false;
    }
    return true;
  }

  // Whether the scope admits an environment.
  bool ScopeAllows(const Env& env) const {
    return EntityScopeAllows(policy_.principal, env.principal) && ActionScopeAllows(*env.action) &&
           EntityScopeAllows(policy_.resource, env.resource);
  }

  // Type-checks the conditions in `env`; returns the type of the whole policy expression (null on
  // error).
  TypeRef CheckPolicy(const Env& env) {
    env_ = &env;
    TypeRef acc = TypeOf(K::kTrue);
    Caps caps;
    for (const Condition& c : policy_.conditions) {
      Typed t = Check(c.expr, caps, 0);
      if (t.type && !IsBoolish(t.type))
        Error(c.expr->line, c.expr->col, "unexpected type: expected Bool but saw " + t.type->ToString());
      TypeRef ct = AsBool(t.type);
      if (!c.when) ct = Not(ct);
      if (ct->kind == K::kFalse) return ct;  // later conditions are not reached
      if (ct->kind == K::kBool) acc = TypeOf(K::kBool);
      if (c.when) caps.insert(t.caps.begin(), t.caps.end());
    }
    return acc;
  }

 private:
  bool EntityScopeAllows(const ScopeConstraint& sc, const std::string& type) const {
    auto in = [&](const std::string& anc) { return anc == type || schema_.MayBeIn(type, anc); };
    switch (sc.kind) {
      case ScopeConstraint::kAny:
        return true;
      // A template's slot may be filled with any entity: it allows every type (`is T in ?slot`: T).
      case ScopeConstraint::kEq:
        return sc.slot != ScopeConstraint::kNoSlot || (sc.uid && sc.uid->type == type);
      case ScopeConstraint::kIn:
        return sc.slot != ScopeConstraint::kNoSlot || (sc.uid && in(sc.uid->type));
      case ScopeConstraint::kIs:
        return sc.type == type;
      case ScopeConstraint::kIsIn:
        return sc.type == type && (sc.slot != ScopeConstraint::kNoSlot || (sc.uid && in(sc.uid->type)));
    }
    return false;
  }

  bool ActionScopeAllows(const ActionDef& a) const {
    const ScopeConstraint& sc = policy_.action;
    auto is_or_in = [&](const Uid* u) {
      ActionRef r{u->type, u->id};
      return a.uid == r || std::find(a.ancestors.begin(), a.ancestors.end(), r) != a.ancestors.end();
    };
    switch (sc.kind) {
      case ScopeConstraint::kAny:
        return true;
      case ScopeConstraint::kEq:
        return sc.uid && a.uid == ActionRef{sc.uid->type, sc.uid->id};
      case ScopeConstraint::kIn:
        if (sc.list) return std::any_of(sc.uids.begin(), sc.uids.end(), is_or_in);
        return sc.uid && is_or_in(sc.uid);
      default:
        return false;
    }
  }

  static TypeRef Not(const TypeRef& t) {
    if (t->kind == K::kTrue) return TypeOf(K::kFalse);
    if (t->kind == K::kFalse) return TypeOf(K::kTrue);
    return TypeOf(K::kBool);
  }

  void Error(uint32_t line, uint32_t col, const std::string& msg) {
    std::string full = "for policy `" + policy_.id + "`, " + msg;
    // Only this policy's errors are compared (they follow first_error_).
    for (size_t i = first_error_; i < errors_->size(); ++i) {
      if ((*errors_)[i].message == full) return;
    }
    errors_->push_back({policy_.id, full, line, col});
  }
  void Error(const Node* n, const std::string& msg) { Error(n->line, n->col, msg); }

  // A key naming an expression for capabilities: attribute paths from variables and literals compare
  // structurally, anything else by identity.
  static std::string Key(const Node* n) {
    switch (n->op) {
      case Op::kVar:
        return std::string(1, static_cast<char>('0' + n->var));
      case Op::kGetAttr:
      case Op::kIndex:
        return Key(n->kids[0]) + "." + n->name;
      case Op::kLit:
        if (n->lit.kind == Kind::kEntity) return "E" + n->lit.e->ToString();
        if (n->lit.kind == Kind::kString) return "S" + *n->lit.s;
        [[fallthrough]];
      default:
        return "#" + std::to_string(reinterpret_cast<uintptr_t>(n));
    }
  }

  TypeRef Incompatible(const Node* n, const TypeRef& a, const TypeRef& b) {
    Error(n, "the types " + a->ToString() + " and " + b->ToString() + " are not compatible");
    return nullptr;
  }

  Typed Check(const Node* n, const Caps& prior, int depth) {
    if (depth > 1200) {
      Error(n, "expression is nested too deeply to validate");
      return {};
    }
    Typed out;
    out.type = CheckInner(n, prior, depth, &out.caps);
    return out;
  }

  TypeRef EntityAttrs(const TypeRef& t, const std::map<std::string, AttrType>** attrs, bool* open,
                      std::string* what) {
    if (t->kind == K::kRecord) {
      *attrs = &t->attrs;
      *open = t->open;
      *what = "record";
      return t;
    }
    const EntityTypeDef* def = schema_.FindEntityType(t->name);
    if (def) {
      *attrs = &def->attrs;
      *open = def->open_attrs;
      *what = "entity type `" + t->name + "`";
      return t;
    }
    static const std::map<std::string, AttrType> kNone;
    *attrs = &kNone;
    *open = false;
    *what = "entity type `" + t->name + "`";
    return t;
  }

  std::string AttrPlace(const Node* obj, const TypeRef& t) {
    if (obj->op == Op::kVar && obj->var == 3) return "in context for " + env_->action->uid.ToString();
    if (t->kind == K::kEntity) return "on entity type `" + t->name + "`";
    return "in record type " + t->ToString();
  }

  // The type Cedar goes on with after an error: a singleton Boolean stays, anything else is Bool.
  static TypeRef AsBool(const TypeRef& t) { return t && IsBoolish(t) ? t : TypeOf(K::kBool); }

  // Records an error when `t` is known and not of kind `want`. An unknown type (an error recorded
  // below) passes silently.
  void Want(const Node* n, const TypeRef& t, K want, const char* want_name) {
    if (!t) return;
    if (want == K::kBool ? IsBoolish(t) : t->kind == want) return;
    Error(n, std::string("unexpected type: expected ") + want_name + " but saw " + t->ToString());
  }

  // Like the reference's, type checking goes on after an error with a recovery type (the type the
  // expression would have), so that `e || true` is still True when `e` is ill-typed: the reference
  // counts such a policy as impossible too. A null type is an unknown one.
  TypeRef CheckInner(const Node* n, const Caps& prior, int depth, Caps* caps) {
    switch (n->op) {
      case Op::kLit:
        return CheckLiteral(n, prior, depth);
      case Op::kVar:
        switch (n->var) {
          case 0:
            return MakeType(K::kEntity, env_->principal);
          case 1:
            return MakeType(K::kEntity, env_->action->uid.type);
          case 2:
            return MakeType(K::kEntity, env_->resource);
          default:
            return env_->action->context;
        }
      case Op::kNot: {
        Typed a = Check(n->kids[0], prior, depth + 1);
        Want(n->kids[0], a.type, K::kBool, "Bool");
        return Not(AsBool(a.type));
      }
      case Op::kNeg: {
        Typed a = Check(n->kids[0], prior, depth + 1);
        Want(n->kids[0], a.type, K::kLong, "Long");
        return TypeOf(K::kLong);
      }
      case Op::kAnd: {
        Typed a = Check(n->kids[0], prior, depth + 1);
        Want(n->kids[0], a.type, K::kBool, "Bool");
        TypeRef at = AsBool(a.type);
        if (at->kind == K::kFalse) return at;
        Caps with = prior;
        with.insert(a.caps.begin(), a.caps.end());
        Typed b = Check(n->kids[1], with, depth + 1);
        Want(n->kids[1], b.type, K::kBool, "Bool");
        TypeRef bt = AsBool(b.type);
        *caps = a.caps;
        caps->insert(b.caps.begin(), b.caps.end());
        if (bt->kind == K::kFalse) return bt;
        if (at->kind == K::kTrue) return bt;
        return bt->kind == K::kTrue ? at : TypeOf(K::kBool);
      }
      case Op::kOr: {
        Typed a = Check(n->kids[0], prior, depth + 1);
        Want(n->kids[0], a.type, K::kBool, "Bool");
        TypeRef at = AsBool(a.type);
        if (at->kind == K::kTrue) {
          *caps = a.caps;
          return at;
        }
        Typed b = Check(n->kids[1], prior, depth + 1);
        Want(n->kids[1], b.type, K::kBool, "Bool");
        TypeRef bt = AsBool(b.type);
        if (at->kind == K::kFalse) {
          *caps = b.caps;
          return bt;
        }
        if (bt->kind == K::kTrue) {
          *caps = b.caps;
          return bt;
        }
        if (bt->kind == K::kFalse) {
          *caps = a.caps;
          return at;
        }
        for (const auto& c : a.caps) {
          if (b.caps.count(c)) caps->insert(c);
        }
        return TypeOf(K::kBool);
      }
      case Op::kIf: {
        Typed c = Check(n->kids[0], prior, depth + 1);
        Want(n->kids[0], c.type, K::kBool, "Bool");
        TypeRef ct = AsBool(c.type);
        Caps with = prior;
        with.insert(c.caps.begin(), c.caps.end());
        if (ct->kind == K::kTrue) {
          Typed t = Check(n->kids[1], with, depth + 1);
          *caps = t.caps;
          caps->insert(c.caps.begin(), c.caps.end());
          return t.type;
        }
        if (ct->kind == K::kFalse) {
          Typed e = Check(n->kids[2], prior, depth + 1);
          *caps = e.caps;
          return e.type;
        }
        Typed t = Check(n->kids[1], with, depth + 1);
        Typed e = Check(n->kids[2], prior, depth + 1);
        if (!t.type || !e.type) return nullptr;
        TypeRef l = Lub(t.type, e.type);
        if (!l) return Incompatible(n, t.type, e.type);
        for (const auto& x : t.caps) {
          if (e.caps.count(x) || c.caps.count(x)) caps->insert(x);
        }
        return l;
      }
      case Op::kEq:
      case Op::kNe: {
        Typed a = Check(n->kids[0], prior, depth + 1);
        Typed b = Check(n->kids[1], prior, depth + 1);
        TypeRef eq = EqualityType(n->kids[0], a.type, n->kids[1], b.type);
        if (eq->kind != K::kFalse && a.type && b.type && !Lub(a.type, b.type))
          Incompatible(n, a.type, b.type);
        return n->op == Op::kEq ? eq : Not(eq);
      }
      case Op::kLt:
      case Op::kLe:
      case Op::kGt:
      case Op::kGe: {
        Typed a = Check(n->kids[0], prior, depth + 1);
        Typed b = Check(n->kids[1], prior, depth + 1);
        auto comparable = [](const TypeRef& t) {
          return t->kind == K::kLong ||
                 (t->kind == K::kExtension && (t->name == "datetime" || t->name == "duration"));
        };
        bool ok = true;
        for (const auto& [kid, t] : {std::pair{n->kids[0], a.type}, std::pair{n->kids[1], b.type}}) {
          if (t && !comparable(t)) {
            Error(kid, "unexpected type: expected Long, datetime or duration but saw " + t->ToString());
            ok = false;
          }
        }
        if (ok && a.type && b.type && (a.type->kind != b.type->kind || a.type->name != b.type->name))
          Incompatible(n, a.type, b.type);
        return TypeOf(K::kBool);
      }
      case Op::kAdd:
      case Op::kSub:
      case Op::kMul: {
        Typed a = Check(n->kids[0], prior, depth + 1);
        Typed b = Check(n->kids[1], prior, depth + 1);
        Want(n->kids[0], a.type, K::kLong, "Long");
        Want(n->kids[1], b.type, K::kLong, "Long");
        return TypeOf(K::kLong);
      }
      case Op::kIn:
        return CheckIn(n, prior, depth);
      case Op::kHas: {
        Typed a = Check(n->kids[0], prior, depth + 1);
        if (!a.type) return TypeOf(K::kBool);
        if (a.type->kind != K::kEntity && a.type->kind != K::kRecord) {
          Error(n->kids[0], "unexpected type: expected an entity or a record but saw " + a.type->ToString());
          return TypeOf(K::kBool);
        }
        const std::map<std::string, AttrType>* attrs;
        bool open;
        std::string what;
        EntityAttrs(a.type, &attrs, &open, &what);
        auto it = attrs->find(n->name);
        std::string cap = Key(n->kids[0]) + "\x01" + n->name;
        if (it == attrs->end()) {
          if (!open) return TypeOf(K::kFalse);
          caps->insert(cap);
          return TypeOf(K::kBool);
        }
        if (prior.count(cap)) return TypeOf(K::kTrue);
        caps->insert(cap);
        if (it->second.required && a.type->kind == K::kRecord) return TypeOf(K::kTrue);
        return TypeOf(K::kBool);
      }
      case Op::kGetAttr:
      case Op::kIndex: {
        Typed a = Check(n->kids[0], prior, depth + 1);
        if (!a.type) return nullptr;
        if (a.type->kind != K::kEntity && a.type->kind != K::kRecord) {
          Error(n->kids[0], "unexpected type: expected an entity or a record but saw " + a.type->ToString());
          return nullptr;
        }
        const std::map<std::string, AttrType>* attrs;
        bool open;
        std::string what;
        EntityAttrs(a.type, &attrs, &open, &what);
        auto it = attrs->find(n->name);
        if (it == attrs->end()) {
          Error(n, "attribute `" + n->name + "` " + AttrPlace(n->kids[0], a.type) + " not found");
          return nullptr;
        }
        if (!it->second.required && !prior.count(Key(n->kids[0]) + "\x01" + n->name)) {
          Error(n, "unable to guarantee safety of access to optional attribute `" + n->name + "` " +
                       AttrPlace(n->kids[0], a.type));
        }
        return it->second.type;
      }
      case Op::kLike: {
        Typed a = Check(n->kids[0], prior, depth + 1);
        Want(n->kids[0], a.type, K::kString, "String");
        return TypeOf(K::kBool);
      }
      case Op::kIs:
      case Op::kIsIn: {
        Typed a = Check(n->kids[0], prior, depth + 1);
        if (a.type && a.type->kind != K::kEntity) {
          Error(n->kids[0], "unexpected type: expected an entity but saw " + a.type->ToString());
          return TypeOf(K::kBool);
        }
        TypeRef is = a.type ? Singleton(a.type->name == n->name) : TypeOf(K::kBool);
        if (n->op == Op::kIs) return is;
        TypeRef in = a.type ? InType(n->kids[0], a.type, n->kids[1], prior, depth) : TypeOf(K::kBool);
        if (is->kind == K::kFalse || in->kind == K::kFalse) return TypeOf(K::kFalse);
        return is->kind == K::kTrue ? in : TypeOf(K::kBool);
      }
      case Op::kSetLit:
        return CheckSetLiteral(n, n->kids, prior, depth);
      case Op::kRecLit:
        return CheckRecordLiteral(n, n->kids, n->keys, prior, depth);
      case Op::kContains:
      case Op::kContainsAll:
      case Op::kContainsAny: {
        Typed a = Check(n->kids[0], prior, depth + 1);
        Typed b = Check(n->kids[1], prior, depth + 1);
        Want(n->kids[0], a.type, K::kSet, "Set");
        if (n->op != Op::kContains) Want(n->kids[1], b.type, K::kSet, "Set");
        if (a.type && b.type && a.type->kind == K::kSet) {
          if (n->op == Op::kContains) {
            if (!Lub(a.type->element, b.type)) Incompatible(n, a.type->element, b.type);
          } else if (b.type->kind == K::kSet && !Lub(a.type, b.type)) {
            Incompatible(n, a.type, b.type);
          }
        }
        return TypeOf(K::kBool);
      }
      case Op::kIsEmpty: {
        Typed a = Check(n->kids[0], prior, depth + 1);
        Want(n->kids[0], a.type, K::kSet, "Set");
        return TypeOf(K::kBool);
      }
      case Op::kHasTag:
      case Op::kGetTag: {
        Typed a = Check(n->kids[0], prior, depth + 1);
        Typed b = Check(n->kids[1], prior, depth + 1);
        Want(n->kids[1], b.type, K::kString, "String");
        if (a.type && a.type->kind != K::kEntity) {
          Error(n->kids[0], "unexpected type: expected an entity but saw " + a.type->ToString());
          return n->op == Op::kHasTag ? TypeOf(K::kBool) : nullptr;
        }
        if (!a.type) return n->op == Op::kHasTag ? TypeOf(K::kBool) : nullptr;
        const EntityTypeDef* def = schema_.FindEntityType(a.type->name);
        std::string cap = Key(n->kids[0]) + "\x02" + Key(n->kids[1]);
        if (n->op == Op::kHasTag) {
          if (!def || !def->tags) return TypeOf(K::kFalse);
          if (prior.count(cap)) return TypeOf(K::kTrue);
          caps->insert(cap);
          return TypeOf(K::kBool);
        }
        if (!def || !def->tags) {
          Error(n, "`" + a.type->name + "` has no tags");
          return nullptr;
        }
        if (!prior.count(cap)) {
          std::string tag = n->kids[1]->op == Op::kLit && n->kids[1]->lit.kind == Kind::kString
                                ? "`\"" + *n->kids[1]->lit.s + "\"`"
                                : "`tag`";
          Error(n, "unable to guarantee safety of access to tag " + tag + " on entity type `" + a.type->name +
                       "`");
        }
        return def->tags;
      }
      case Op::kExt:
        return CheckExt(n, prior, depth);
    }
    return nullptr;
  }

  TypeRef EqualityType(const Node* a, const TypeRef& at, const Node* b, const TypeRef& bt) {
    if (at && bt && Disjoint(at, bt)) return TypeOf(K::kFalse);
    auto plain_lit = [](const Node* x) {
      return x->op == Op::kLit && (x->lit.kind == Kind::kBool || x->lit.kind == Kind::kLong ||
                                   x->lit.kind == Kind::kString || x->lit.kind == Kind::kEntity);
    };
    if (plain_lit(a) && plain_lit(b)) return Singleton(ValueEquals(a->lit, b->lit));
    auto action_lit = [&](const Node* v, const Node* l) -> TypeRef {
      // The reference compares the request's action with any entity literal, declared or not.
      if (v->op == Op::kVar && v->var == 1 && l->op == Op::kLit && l->lit.kind == Kind::kEntity)
        return Singleton(env_->action->uid == ActionRef{l->lit.e->type, l->lit.e->id});
      return nullptr;
    };
    if (TypeRef t = action_lit(a, b)) return t;
    if (TypeRef t = action_lit(b, a)) return t;
    return TypeOf(K::kBool);
  }

  TypeRef CheckIn(const Node* n, const Caps& prior, int depth) {
    Typed a = Check(n->kids[0], prior, depth + 1);
    if (a.type && a.type->kind != K::kEntity) {
      Error(n->kids[0], "unexpected type: expected an entity but saw " + a.type->ToString());
      Check(n->kids[1], prior, depth + 1);
      return TypeOf(K::kBool);
    }
    if (!a.type) {
      Check(n->kids[1], prior, depth + 1);
      return TypeOf(K::kBool);
    }
    return InType(n->kids[0], a.type, n->kids[1], prior, depth);
  }

  // The type of `lhs in rhs` for an entity-typed lhs.
  TypeRef InType(const Node* lhs, const TypeRef& lt, const Node* rhs, const Caps& prior, int depth) {
    Typed b = Check(rhs, prior, depth + 1);
    if (!b.type) return TypeOf(K::kBool);
    TypeRef rt = b.type;
    if (rt->kind == K::kSet) rt = rt->element;
    if (!rt || (rt->kind != K::kEntity && rt->kind != K::kNever)) {
      Error(rhs, "unexpected type: expected an entity or a set of entities but saw " + b.type->ToString());
      return TypeOf(K::kBool);
    }
    // The action variable against action literals: the hierarchy is known exactly.
    if (lhs->op == Op::kVar && lhs->var == 1) {
      std::vector<Uid> uids;
      if (rhs->op == Op::kLit && rhs->lit.kind == Kind::kEntity) {
        uids.push_back(*rhs->lit.e);
      } else if (rhs->op == Op::kLit && rhs->lit.kind == Kind::kSet) {
        for (const Value& v : rhs->lit.set->elems) {
          if (v.kind == Kind::kEntity) uids.push_back(*v.e);
        }
      }
      if (!uids.empty() || (rhs->op == Op::kLit && rhs->lit.kind == Kind::kSet)) {
        bool any = false;
        for (const Uid& u : uids) {
          ActionRef r{u.type, u.id};
          any = any || env_->action->uid == r ||
                std::find(env_->action->ancestors.begin(), env_->action->ancestors.end(), r) !=
                    env_->action->ancestors.end();
        }
        return Singleton(any);
      }
    }
    if (rt->kind == K::kNever) return TypeOf(K::kFalse);
    if (lt->name == rt->name || schema_.MayBeIn(lt->name, rt->name)) return TypeOf(K::kBool);
    return TypeOf(K::kFalse);
  }

  TypeRef CheckLiteral(const Node* n, const Caps& prior, int depth) {
    switch (n->lit.kind) {
      case Kind::kBool:
        return Singleton(n->lit.b);
      case Kind::kLong:
        return TypeOf(K::kLong);
      case Kind::kString:
        return TypeOf(K::kString);
      case Kind::kEntity:
        // An unknown type or action was reported by CheckNames; it has no type.
        if (!KnownUid(*n->lit.e)) return nullptr;
        return MakeType(K::kEntity, n->lit.e->type);
      case Kind::kSet:
        // A set literal folded by the compiler: its element expressions are still the kids.
        return CheckSetLiteral(n, n->kids, prior, depth);
      case Kind::kRecord:
        return CheckRecordLiteral(n, n->kids, n->keys, prior, depth);
      default:
        return Ext(ExtTypeName(n->lit.kind));
    }
  }

  TypeRef CheckSetLiteral(const Node* n, const std::vector<const Node*>& kids, const Caps& prior, int depth) {
    if (kids.empty()) {
      Error(n, "empty set literals are forbidden in policies");
      return nullptr;
    }
    TypeRef acc;
    bool ok = true;
    for (const Node* k : kids) {
      Typed t = Check(k, prior, depth + 1);
      if (!t.type) {
        ok = false;
        continue;
      }
      if (!acc) {
        acc = t.type;
        continue;
      }
      TypeRef l = Lub(acc, t.type);
      if (!l) {
        Incompatible(n, acc, t.type);
        ok = false;
        continue;
      }
      acc = l;
    }
    if (!ok || !acc) return nullptr;
    return MakeSetType(acc);
  }

  TypeRef CheckRecordLiteral(const Node* n, const std::vector<const Node*>& kids,
                             const std::vector<std::string>& keys, const Caps& prior, int depth) {
    (void)n;
    auto r = std::make_shared<SchemaType>();
    r->kind = K::kRecord;
    bool ok = true;
    for (size_t i = 0; i < kids.size() && i < keys.size(); ++i) {
      Typed t = Check(kids[i], prior, depth + 1);
      if (!t.type) {
        ok = false;
        continue;
      }
      r->attrs[keys[i]] = AttrType{t.type, true};
    }
    return ok ? r : nullptr;
  }

  TypeRef CheckExt(const Node* n, const Caps& prior, int depth) {
    struct Sig {
      ExtFn fn;
      std::vector<const char*> args;  // "ipaddr", ..., or "String"
      const char* result;             // an extension type, "Bool" or "Long"
    };
    static const Sig kSigs[] = {
        {ExtFn::kIp, {"String"}, "ipaddr"},
        {ExtFn::kDecimal, {"String"}, "decimal"},
        {ExtFn::kDatetime, {"String"}, "datetime"},
        {ExtFn::kDuration, {"String"}, "duration"},
        {ExtFn::kIsIpv4, {"ipaddr"}, "Bool"},
        {ExtFn::kIsIpv6, {"ipaddr"}, "Bool"},
        {ExtFn::kIsLoopback, {"ipaddr"}, "Bool"},
        {ExtFn::kIsMulticast, {"ipaddr"}, "Bool"},
        {ExtFn::kIsInRange, {"ipaddr", "ipaddr"}, "Bool"},
        {ExtFn::kLessThan, {"decimal", "decimal"}, "Bool"},
        {ExtFn::kLessThanOrEqual, {"decimal", "decimal"}, "Bool"},
        {ExtFn::kGreaterThan, {"decimal", "decimal"}, "Bool"},
        {ExtFn::kGreaterThanOrEqual, {"decimal", "decimal"}, "Bool"},
        {ExtFn::kOffset, {"datetime", "duration"}, "datetime"},
        {ExtFn::kDurationSince, {"datetime", "datetime"}, "duration"},
        {ExtFn::kToDate, {"datetime"}, "datetime"},
        {ExtFn::kToTime, {"datetime"}, "duration"},
        {ExtFn::kToDays, {"duration"}, "Long"},
        {ExtFn::kToHours, {"duration"}, "Long"},
        {ExtFn::kToMinutes, {"duration"}, "Long"},
        {ExtFn::kToSeconds, {"duration"}, "Long"},
        {ExtFn::kToMilliseconds, {"duration"}, "Long"},
    };
    const Sig* sig = nullptr;
    for (const Sig& s : kSigs) {
      if (s.fn == n->fn) sig = &s;
    }
    if (!sig) return nullptr;
    if (n->kids.size() != sig->args.size()) {
      Error(n, "wrong number of arguments in extension function application: expected " +
                   std::to_string(sig->args.size()) + ", got " + std::to_string(n->kids.size()));
      return nullptr;
    }
    bool ok = true;
    for (size_t i = 0; i < n->kids.size(); ++i) {
      Typed t = Check(n->kids[i], prior, depth + 1);
      if (!t.type) {
        ok = false;
        continue;
      }
      std::string want = sig->args[i];
      bool match = want == "String" ? t.type->kind == K::kString
                                    : t.type->kind == K::kExtension && t.type->name == want;
      if (!match) {
        Error(n->kids[i], "unexpected type: expected " + want + " but saw " + t.type->ToString());
        ok = false;
      }
    }
    bool constructor = n->fn == ExtFn::kIp || n->fn == ExtFn::kDecimal || n->fn == ExtFn::kDatetime ||
                       n->fn == ExtFn::kDuration;
    if (constructor && n->op == Op::kExt) {
      const Node* arg = n->kids[0];
      if (arg->op != Op::kLit || arg->lit.kind != Kind::kString) {
        Error(n, "extension constructors may not be called with non-literal expressions");
        ok = false;
      } else {
        // A literal the compiler did not fold is one the constructor refuses.
        Error(n, "error during extension function argument validation: failed to parse `\"" + *arg->lit.s +
                     "\"` as " + sig->result);
        ok = false;
      }
    }
    (void)ok;  // the result type is known even when an argument is wrong
    std::string r = sig->result;
    if (r == "Bool") return TypeOf(K::kBool);
    if (r == "Long") return TypeOf(K::kLong);
    return MakeType(K::kExtension, r);
  }

  const Schema& schema_;
  const CompiledPolicy& policy_;
  std::vector<ValidationIssue>* errors_;
  size_t first_error_;
  const Env* env_ = nullptr;
};

// ---- requests and entities ----

using nlohmann::json;

Status Bad(const std::string& msg) { return InvalidArgument(msg); }

bool UidOf(const json& j, std::string* type, std::string* id) {
  const json* u = &j;
  if (j.is_object() && j.contains("__entity")) u = &j["__entity"];
  if (!u->is_object() || !u->contains("type") || !u->contains("id")) return false;
  const json& t = (*u)["type"];
  const json& i = (*u)["id"];
  if (!t.is_string() || !i.is_string()) return false;
  *type = t.get<std::string>();
  *id = i.get<std::string>();
  return true;
}

std::string UidString(const std::string& type, const std::string& id) {
  return ActionRef{type, id}.ToString();
}

Status CheckEnumId(const Schema& schema, const std::string& type, const std::string& id) {
  const EntityTypeDef* def = schema.FindEntityType(type);
  if (def && def->is_enum && std::find(def->enum_ids.begin(), def->enum_ids.end(), id) == def->enum_ids.end())
    return Bad("entity `" + UidString(type, id) + "` is of an enumerated entity type, but `\"" + id +
               "\"` is not declared as a valid eid");
  return Status::Ok();
}

// Whether a JSON value (the Cedar JSON value format) conforms to `t`. `what` names the place. Rewrites
// `v` into the form the engine reads without a schema, as the reference reads JSON with one: a string
// where an extension type is expected becomes {"__extn": {"fn", "arg"}}, a bare {"type", "id"} where
// an entity is expected becomes {"__entity": {...}}.
Status Conforms(const Schema& schema, json& v, const SchemaType& t, const std::string& what, int depth) {
  if (depth > 200) return Bad(what + " is nested too deeply");
  auto mismatch = [&]() {
    return Bad(what + ": type mismatch: value was expected to have type " + t.ToString());
  };
  switch (t.kind) {
    case K::kBool:
    case K::kTrue:
    case K::kFalse:
      return v.is_boolean() ? Status::Ok() : mismatch();
    case K::kLong:
      return v.is_number_integer() ? Status::Ok() : mismatch();
    case K::kString:
      return v.is_string() ? Status::Ok() : mismatch();
    case K::kEntity: {
      std::string type, id;
      if (!UidOf(v, &type, &id) || type != t.name) return mismatch();
      if (!v.contains("__entity")) v = json{{"__entity", {{"type", type}, {"id", id}}}};
      return CheckEnumId(schema, type, id);
    }
    case K::kSet: {
      if (!v.is_array()) return mismatch();
      for (json& e : v) GOVERN_RETURN_IF_ERROR(Conforms(schema, e, *t.element, what, depth + 1));
      return Status::Ok();
    }
    case K::kRecord: {
      if (!v.is_object() || v.contains("__entity") || v.contains("__extn")) return mismatch();
      for (const auto& [k, a] : t.attrs) {
        if (!v.contains(k)) {
          if (a.required)
            return Bad(what + ": expected the record to have an attribute `" + k + "`, but it does not");
          continue;
        }
        GOVERN_RETURN_IF_ERROR(Conforms(schema, v[k], *a.type, what + ", attribute `" + k + "`", depth + 1));
      }
      if (!t.open) {
        for (const auto& [k, e] : v.items()) {
          if (!t.attrs.count(k))
            return Bad(what + ": record attribute `" + k + "` should not exist according to the schema");
        }
      }
      return Status::Ok();
    }
    case K::kExtension: {
      std::string fn, arg;
      if (v.is_string()) {
        arg = v.get<std::string>();
        fn = t.name == "ipaddr" ? "ip" : t.name;
      } else {
        const json* x = &v;
        if (v.is_object() && v.contains("__extn")) x = &v["__extn"];
        if (!x->is_object() || !x->contains("fn") || !x->contains("arg") || !(*x)["fn"].is_string() ||
            !(*x)["arg"].is_string())
          return mismatch();
        fn = (*x)["fn"].get<std::string>();
        arg = (*x)["arg"].get<std::string>();
      }
      std::string error;
      bool ok = false;
      if (t.name == "ipaddr" && (fn == "ip" || fn == "ipaddr")) {
        IpAddr ip;
        ok = ParseIp(arg, &ip, &error);
      } else {
        int64_t x = 0;
        if (t.name == "decimal" && fn == "decimal") ok = ParseDecimal(arg, &x, &error);
        if (t.name == "datetime" && fn == "datetime") ok = ParseDatetime(arg, &x, &error);
        if (t.name == "duration" && fn == "duration") ok = ParseDuration(arg, &x, &error);
      }
      if (!ok) return mismatch();
      v = json{{"__extn", {{"fn", fn == "ipaddr" ? "ip" : fn}, {"arg", arg}}}};
      return Status::Ok();
    }
    case K::kNever:
      return mismatch();
  }
  return mismatch();
}

Status ValidateRequestParts(const Schema& schema, const json& p, const json& a, const json& r, json& ctx) {
  std::string pt, pid, at, aid, rt, rid;
  if (!UidOf(p, &pt, &pid)) return Bad("request: `principal` must be an entity uid {\"type\", \"id\"}");
  if (!UidOf(a, &at, &aid)) return Bad("request: `action` must be an entity uid {\"type\", \"id\"}");
  if (!UidOf(r, &rt, &rid)) return Bad("request: `resource` must be an entity uid {\"type\", \"id\"}");
  const ActionDef* action = schema.FindAction(at, aid);
  if (!action) return Bad("action `" + UidString(at, aid) + "` does not exist in the supplied schema");
  if (std::find(action->principals.begin(), action->principals.end(), pt) == action->principals.end())
    return Bad("principal type `" + pt + "` is not valid for `" + action->uid.ToString() + "`");
  if (std::find(action->resources.begin(), action->resources.end(), rt) == action->resources.end())
    return Bad("resource type `" + rt + "` is not valid for `" + action->uid.ToString() + "`");
  GOVERN_RETURN_IF_ERROR(CheckEnumId(schema, pt, pid));
  GOVERN_RETURN_IF_ERROR(CheckEnumId(schema, rt, rid));
  if (!ctx.is_object()) return Bad("context must be a record");
  return Conforms(schema, ctx, *action->context, "context for `" + action->uid.ToString() + "`", 0);
}

Result<json> ParseJson(std::string_view text, const char* what) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string(what) + " is not valid JSON: " + e.what());
  }
}

}  // namespace

ValidationResult ValidatePolicies(const Schema& schema, const PolicySet& policies) {
  ValidationResult out;
  const CompiledPolicySet& set = policies.compiled();
  std::vector<Env> envs;
  for (const ActionDef& a : schema.actions()) {
    if (!a.applies) continue;
    for (const auto& p : a.principals) {
      for (const auto& r : a.resources) envs.push_back(Env{p, r, &a});
    }
  }
  // As the reference: static policies and templates are type-checked (a template's slots stand for any
  // entity), and of a template-linked policy only the slot values are checked, under the link's id.
  std::vector<const CompiledPolicy*> checked;
  for (const CompiledPolicy& policy : set.policies) {
    if (policy.template_index < 0) checked.push_back(&policy);
  }
  for (const CompiledPolicy& t : set.templates) checked.push_back(&t);
  for (const CompiledPolicy* p : checked) {
    const CompiledPolicy& policy = *p;
    Checker c(schema, policy, &out.errors);
    c.CheckNames();
    size_t applicable = 0, impossible = 0;
    // An undeclared action in the scope fails type checking in every environment (the reference
    // then finds no applicable action, and does not call the policy impossible).
    bool known = c.ActionScopeKnown();
    for (const Env& env : envs) {
      if (!c.ScopeAllows(env)) continue;
      ++applicable;
      TypeRef t = known ? c.CheckPolicy(env) : nullptr;
      if (t && t->kind == K::kFalse) ++impossible;
    }
    std::string prefix = "for policy `" + policy.id + "`, ";
    if (applicable == 0 || !known) {
      out.warnings.push_back(
          {policy.id, prefix + "unable to find an applicable action given the policy scope constraints",
           policy.line, policy.col});
    }
    if (impossible == applicable) {
      out.warnings.push_back({policy.id,
                              prefix +
                                  "policy is impossible: the policy expression evaluates to false for all "
                                  "valid requests",
                              policy.line, policy.col});
    }
  }
  for (const TemplateLinkData& link : set.links) {
    Checker c(schema, set.policies[link.policy], &out.errors);
    c.CheckLinkValues(link);
  }
  return out;
}

Result<std::string> ConformRequestJson(const Schema& schema, std::string_view request_json) {
  GOVERN_ASSIGN_OR_RETURN(json j, ParseJson(request_json, "request"));
  if (!j.is_object()) return Bad("request must be a JSON object");
  for (const char* k : {"principal", "action", "resource"}) {
    if (!j.contains(k)) return Bad(std::string("request lacks `") + k + "`");
  }
  if (!j.contains("context")) j["context"] = json::object();
  GOVERN_RETURN_IF_ERROR(
      ValidateRequestParts(schema, j["principal"], j["action"], j["resource"], j["context"]));
  return j.dump();
}

Status ValidateRequestJson(const Schema& schema, std::string_view request_json) {
  return ConformRequestJson(schema, request_json).status();
}

Status ValidateRequest(const Schema& schema, const EntityRef& principal, const EntityRef& action,
                       const EntityRef& resource, std::string_view context_json) {
  json ctx = json::object();
  if (!context_json.empty()) {
    GOVERN_ASSIGN_OR_RETURN(ctx, ParseJson(context_json, "context"));
  }
  auto uid = [](const EntityRef& e) { return json{{"type", e.type}, {"id", e.id}}; };
  return ValidateRequestParts(schema, uid(principal), uid(action), uid(resource), ctx);
}

Result<std::string> ConformEntitiesJson(const Schema& schema, std::string_view entities_json) {
  GOVERN_ASSIGN_OR_RETURN(json j, ParseJson(entities_json, "entities"));
  if (!j.is_array()) return Bad("entities must be a JSON array");
  for (json& e : j) {
    std::string type, id;
    if (!e.is_object() || !e.contains("uid") || !UidOf(e["uid"], &type, &id))
      return Bad("each entity must be an object with a `uid` {\"type\", \"id\"}");
    std::string name = UidString(type, id);
    if (schema.IsActionType(type)) {
      // Action entities come from the schema; one given here must be declared there.
      if (!schema.FindAction(type, id)) return Bad("action `" + name + "` is not declared in the schema");
      continue;
    }
    const EntityTypeDef* def = schema.FindEntityType(type);
    if (!def) return Bad("entity `" + name + "` has type `" + type + "` which is not declared in the schema");
    GOVERN_RETURN_IF_ERROR(CheckEnumId(schema, type, id));
    json no_attrs = json::object();  // a missing `attrs` is left for Entities::FromJson to judge
    json& attrs = e.contains("attrs") ? e["attrs"] : no_attrs;
    if (!attrs.is_object()) return Bad("attributes of `" + name + "` must be an object");
    SchemaType shape;
    shape.kind = K::kRecord;
    shape.attrs = def->attrs;
    shape.open = def->open_attrs;
    GOVERN_RETURN_IF_ERROR(Conforms(schema, attrs, shape, "attributes of `" + name + "`", 0));
    if (e.contains("parents")) {
      if (!e["parents"].is_array()) return Bad("parents of `" + name + "` must be an array");
      for (const json& p : e["parents"]) {
        std::string ptype, pid;
        if (!UidOf(p, &ptype, &pid)) return Bad("parents of `" + name + "` must be entity uids");
        if (!schema.MayBeIn(type, ptype))
          return Bad("`" + name + "` is not allowed to have an ancestor of type `" + ptype +
                     "` according to the schema");
      }
    }
    if (e.contains("tags") && !e["tags"].is_null()) {
      json& tags = e["tags"];
      if (!tags.is_object()) return Bad("tags of `" + name + "` must be an object");
      if (!tags.empty() && !def->tags) return Bad("`" + name + "` may not have tags according to the schema");
      for (auto& [k, v] : tags.items()) {
        GOVERN_RETURN_IF_ERROR(Conforms(schema, v, *def->tags, "tag `" + k + "` on `" + name + "`", 0));
      }
    }
  }
  return j.dump();
}

Status ValidateEntitiesJson(const Schema& schema, std::string_view entities_json) {
  return ConformEntitiesJson(schema, entities_json).status();
}

}  // namespace govern::policy
