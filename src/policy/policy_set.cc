// Policy templates and their links, and the Cedar JSON policy format (the "EST" the reference's
// policyToJson prints and its PolicySet accepts): JSON -> the same compiled policies the text parser
// makes, and compiled policies -> JSON, printed as the reference prints them.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "policy/ast.h"
#include "policy/cedar.h"
#include "policy/entity_store.h"
#include "policy/parser.h"

namespace govern::policy {
namespace {

using json = nlohmann::json;

constexpr int kMaxEstDepth = 1000;  // the text parser's tree depth bound

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

const std::string& SlotKey(ScopeConstraint::Slot s) {
  static const std::string kPrincipal = "?principal", kResource = "?resource";
  return s == ScopeConstraint::kResourceSlot ? kResource : kPrincipal;
}

// ---- JSON (EST) -> compiled policy ----

class EstReader {
 public:
  explicit EstReader(CompiledPolicySet* set) : set_(set) {}

  Status Policy(const json& j, CompiledPolicy* out) {
    if (!j.is_object()) return Bad("a policy must be a JSON object");
    for (auto it = j.begin(); it != j.end(); ++it) {
      static const char* kKeys[] = {"effect", "principal", "action", "resource", "conditions", "annotations"};
      if (std::none_of(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return it.key() == k; }))
        return Bad("unknown field `" + it.key() + "`");
    }
    for (const char* k : {"effect", "principal", "action", "resource", "conditions"}) {
      if (!j.contains(k)) return Bad(std::string("missing field `") + k + "`");
    }
    const json& effect = j["effect"];
    if (!effect.is_string() || (effect != "permit" && effect != "forbid"))
      return Bad("`effect` must be \"permit\" or \"forbid\"");
    out->forbid = effect == "forbid";
    GOVERN_RETURN_IF_ERROR(Scope(j["principal"], "principal", &out->principal));
    GOVERN_RETURN_IF_ERROR(Scope(j["action"], "action", &out->action));
    GOVERN_RETURN_IF_ERROR(Scope(j["resource"], "resource", &out->resource));
    if (!j["conditions"].is_array()) return Bad("`conditions` must be an array");
    for (const json& c : j["conditions"]) {
      if (!c.is_object() || !c.contains("kind") || !c.contains("body") || c.size() != 2)
        return Bad("a condition must be {\"kind\": \"when\"|\"unless\", \"body\": <expr>}");
      const json& kind = c["kind"];
      if (!kind.is_string() || (kind != "when" && kind != "unless"))
        return Bad("a condition's `kind` must be \"when\" or \"unless\"");
      Condition cond;
      cond.when = kind == "when";
      clause_ = cond.when ? "when" : "unless";
      cond.expr = Expr(c["body"], 0);
      if (!cond.expr) return error_;
      out->conditions.push_back(cond);
    }
    if (j.contains("annotations")) {
      const json& a = j["annotations"];
      if (!a.is_object()) return Bad("`annotations` must be an object");
      for (auto it = a.begin(); it != a.end(); ++it) {
        if (!ValidIdent(it.key())) return Bad("`" + it.key() + "` is not a valid annotation name");
        if (it->is_null()) {
          out->annotations.emplace_back(it.key(), "");
          out->bare_annotation.push_back(1);
        } else if (it->is_string()) {
          out->annotations.emplace_back(it.key(), it->get<std::string>());
          out->bare_annotation.push_back(0);
        } else {
          return Bad("annotation `" + it.key() + "` must be a string or null");
        }
      }
    }
    return OkStatus();
  }

 private:
  Status Bad(std::string msg) {
    error_ = InvalidArgument(std::move(msg));
    return error_;
  }
  const Node* BadN(std::string msg) {
    error_ = InvalidArgument(std::move(msg));
    return nullptr;
  }

  static bool ValidIdent(std::string_view s) {
    return ValidEntityTypeName(s) && s.find(':') == std::string_view::npos;
  }

  Status EntityUid(const json& j, const Uid** out) {
    const json* u = &j;
    if (j.is_object() && j.contains("__entity")) {
      if (j.size() != 1) return Bad("an `__entity` escape has one key");
      u = &j["__entity"];
    }
    if (!u->is_object() || u->size() != 2 || !u->contains("type") || !u->contains("id") ||
        !(*u)["type"].is_string() || !(*u)["id"].is_string()) {
      return Bad("expected an entity uid {\"type\": ..., \"id\": ...}, found " + Dump(j));
    }
    const std::string& type = (*u)["type"].get_ref<const std::string&>();
    if (!ValidEntityTypeName(type)) return Bad("`" + type + "` is not a valid entity type name");
    *out = set_->arena.MakeUid(type, (*u)["id"].get<std::string>());
    return OkStatus();
  }

  // {"entity": uid} or {"slot": "?principal"} (the slot only where `slot_var` allows one).
  Status EntityOrSlot(const json& j, const char* var, ScopeConstraint* sc) {
    if (j.contains("slot")) {
      const json& s = j["slot"];
      std::string want = std::string("?") + var;
      if (!s.is_string() || s != want)
        return Bad("expected the slot " + want + " in the " + var + " scope, found " + Dump(s));
      sc->slot = std::string_view(var) == "principal" ? ScopeConstraint::kPrincipalSlot
                                                      : ScopeConstraint::kResourceSlot;
      return OkStatus();
    }
    if (!j.contains("entity")) return Bad(std::string("the ") + var + " scope needs `entity` or `slot`");
    return EntityUid(j["entity"], &sc->uid);
  }

  Status Scope(const json& j, const char* var, ScopeConstraint* sc) {
    bool action = std::string_view(var) == "action";
    if (!j.is_object() || !j.contains("op") || !j["op"].is_string())
      return Bad(std::string("the ") + var + " scope must be an object with `op`");
    const std::string& op = j["op"].get_ref<const std::string&>();
    auto only = [&](std::initializer_list<const char*> keys) {
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (it.key() == "op") continue;
        if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; }))
          return Bad(std::string("unknown field `") + it.key() + "` in the " + var + " scope");
      }
      return OkStatus();
    };
    if (op == "All") {
      GOVERN_RETURN_IF_ERROR(only({}));
      sc->kind = ScopeConstraint::kAny;
      return OkStatus();
    }
    if (op == "==") {
      GOVERN_RETURN_IF_ERROR(only({"entity", "slot"}));
      sc->kind = ScopeConstraint::kEq;
      if (action && j.contains("slot")) return Bad("expected single entity uid, found template slot");
      GOVERN_RETURN_IF_ERROR(EntityOrSlot(j, var, sc));
      return action ? CheckAction(sc->uid) : OkStatus();
    }
    if (op == "in") {
      sc->kind = ScopeConstraint::kIn;
      if (action) {
        GOVERN_RETURN_IF_ERROR(only({"entity", "entities"}));
        if (j.contains("entities")) {
          if (!j["entities"].is_array()) return Bad("`entities` must be an array");
          sc->list = true;
          for (const json& e : j["entities"]) {
            const Uid* u = nullptr;
            GOVERN_RETURN_IF_ERROR(EntityUid(e, &u));
            GOVERN_RETURN_IF_ERROR(CheckAction(u));
            sc->uids.push_back(u);
          }
          return OkStatus();
        }
        if (!j.contains("entity")) return Bad("the action scope needs `entity` or `entities`");
        GOVERN_RETURN_IF_ERROR(EntityUid(j["entity"], &sc->uid));
        return CheckAction(sc->uid);
      }
      GOVERN_RETURN_IF_ERROR(only({"entity", "slot"}));
      return EntityOrSlot(j, var, sc);
    }
    if (op == "is" && !action) {
      GOVERN_RETURN_IF_ERROR(only({"entity_type", "in"}));
      if (!j.contains("entity_type") || !j["entity_type"].is_string() ||
          !ValidEntityTypeName(j["entity_type"].get_ref<const std::string&>()))
        return Bad(std::string("the ") + var + " scope's `entity_type` must be an entity type name");
      sc->type = j["entity_type"].get<std::string>();
      sc->kind = ScopeConstraint::kIs;
      if (j.contains("in")) {
        const json& in = j["in"];
        if (!in.is_object() || in.size() != 1)
          return Bad("`in` must be {\"entity\": ...} or {\"slot\": ...}");
        sc->kind = ScopeConstraint::kIsIn;
        return EntityOrSlot(in, var, sc);
      }
      return OkStatus();
    }
    return Bad("unknown " + std::string(var) + " scope operator `" + op + "`");
  }

  Status CheckAction(const Uid* u) {
    size_t last = u->type.rfind("::");
    std::string_view base =
        last == std::string::npos ? std::string_view(u->type) : std::string_view(u->type).substr(last + 2);
    if (base != "Action")
      return Bad("expected an entity uid with type `Action` but got `" + u->ToString() + "`");
    return OkStatus();
  }

  Node* New(Op op) {
    set_->nodes.push_back(std::make_unique<Node>());
    Node* n = set_->nodes.back().get();
    n->op = op;
    return n;
  }

  // A JSON value as an expression: literals, and sets/records/escapes built from their parts.
  const Node* ValueExpr(const json& v, int depth) {
    if (depth > kMaxEstDepth) return BadN("expression nested too deeply");
    Node* n = nullptr;
    switch (v.type()) {
      case json::value_t::boolean:
        n = New(Op::kLit);
        n->lit = Value::Bool(v.get<bool>());
        return n;
      case json::value_t::number_integer:
        n = New(Op::kLit);
        n->lit = Value::Long(v.get<int64_t>());
        return n;
      case json::value_t::number_unsigned:
        if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
          return BadN("integer " + Dump(v) + " is too large");
        n = New(Op::kLit);
        n->lit = Value::Long(static_cast<int64_t>(v.get<uint64_t>()));
        return n;
      case json::value_t::string:
        n = New(Op::kLit);
        n->lit = Value::Str(set_->arena.Str(v.get<std::string>()));
        return n;
      case json::value_t::array:
        n = New(Op::kSetLit);
        for (const json& e : v) {
          const Node* k = ValueExpr(e, depth + 1);
          if (!k) return nullptr;
          n->kids.push_back(k);
        }
        return FoldLiteral(n, &set_->arena);
      case json::value_t::object: {
        if (v.size() == 1 && v.contains("__entity")) {
          const Uid* u = nullptr;
          if (!EntityUid(v, &u).ok()) return nullptr;
          n = New(Op::kLit);
          n->lit = Value::Entity(u);
          return n;
        }
        if (v.size() == 1 && v.contains("__extn")) {
          const json& x = v["__extn"];
          if (!x.is_object() || !x.contains("fn") || !x["fn"].is_string() || x.size() != 2 ||
              !(x.contains("arg") || (x.contains("args") && x["args"].is_array())))
            return BadN("an `__extn` escape must be {\"fn\": F, \"arg\": A} or {\"fn\": F, \"args\": [..]}");
          json args = x.contains("arg") ? json::array({x["arg"]}) : x["args"];
          return ExtCall(x["fn"].get<std::string>(), args, depth, /*values=*/true);
        }
        n = New(Op::kRecLit);
        for (auto it = v.begin(); it != v.end(); ++it) {
          const Node* k = ValueExpr(*it, depth + 1);
          if (!k) return nullptr;
          n->keys.push_back(it.key());
          n->kids.push_back(k);
        }
        return FoldLiteral(n, &set_->arena);
      }
      case json::value_t::null:
        return BadN("found a `null`; JSON nulls are not allowed in Cedar");
      default:
        return BadN("found " + Dump(v) + "; fractional numbers are not allowed in Cedar");
    }
  }

  const Node* ExtCall(const std::string& name, const json& args, int depth, bool values) {
    ExtFn fn;
    uint8_t arity = 0;
    if (!LookupExtension(name, &fn, &arity)) return BadN("unknown extension function `" + name + "`");
    Node* n = New(Op::kExt);
    n->fn = fn;
    n->expected_args = arity;
    n->name = name;
    for (const json& a : args) {
      const Node* k = values ? ValueExpr(a, depth + 1) : Expr(a, depth + 1);
      if (!k) return nullptr;
      n->kids.push_back(k);
    }
    return FoldLiteral(n, &set_->arena);
  }

  const Node* Expr(const json& j, int depth) {
    if (depth > kMaxEstDepth) return BadN("expression nested too deeply");
    if (!j.is_object()) return BadN("an expression must be a JSON object, found " + Dump(j));
    if (j.size() != 1) return BadN("a JSON object representing an expression has exactly one key");
    const std::string& key = j.begin().key();
    const json& v = j.begin().value();
    auto obj = [&](std::initializer_list<const char*> keys) {
      if (!v.is_object() || v.size() != keys.size()) return false;
      for (const char* k : keys) {
        if (!v.contains(k)) return false;
      }
      return true;
    };
    auto shape = [&](const char* what) { return BadN("`" + key + "` takes " + what + ", found " + Dump(v)); };
    if (key == "Value") return ValueExpr(v, depth);
    if (key == "Var") {
      static const char* kVars[] = {"principal", "action", "resource", "context"};
      for (uint8_t k = 0; k < 4; ++k) {
        if (v.is_string() && v == kVars[k]) {
          Node* n = New(Op::kVar);
          n->var = k;
          return n;
        }
      }
      return BadN("unknown variable " + Dump(v));
    }
    if (key == "Slot") {
      return BadN("found template slot " + (v.is_string() ? v.get<std::string>() : Dump(v)) + " in a `" +
                  clause_ + "` clause (slots are only allowed in the scope)");
    }
    struct Unary {
      const char* name;
      Op op;
    };
    static const Unary kUnary[] = {{"!", Op::kNot}, {"neg", Op::kNeg}, {"isEmpty", Op::kIsEmpty}};
    for (const Unary& u : kUnary) {
      if (key != u.name) continue;
      if (!obj({"arg"})) return shape("{\"arg\": <expr>}");
      const Node* a = Expr(v["arg"], depth + 1);
      if (!a) return nullptr;
      Node* n = New(u.op);
      n->kids = {a};
      return n;
    }
    static const Unary kBinary[] = {{"==", Op::kEq},
                                    {"!=", Op::kNe},
                                    {"in", Op::kIn},
                                    {"<", Op::kLt},
                                    {"<=", Op::kLe},
                                    {">", Op::kGt},
                                    {">=", Op::kGe},
                                    {"&&", Op::kAnd},
                                    {"||", Op::kOr},
                                    {"+", Op::kAdd},
                                    {"-", Op::kSub},
                                    {"*", Op::kMul},
                                    {"contains", Op::kContains},
                                    {"containsAll", Op::kContainsAll},
                                    {"containsAny", Op::kContainsAny},
                                    {"getTag", Op::kGetTag},
                                    {"hasTag", Op::kHasTag}};
    for (const Unary& b : kBinary) {
      if (key != b.name) continue;
      if (!obj({"left", "right"})) return shape("{\"left\": <expr>, \"right\": <expr>}");
      const Node* l = Expr(v["left"], depth + 1);
      if (!l) return nullptr;
      const Node* r = Expr(v["right"], depth + 1);
      if (!r) return nullptr;
      Node* n = New(b.op);
      n->kids = {l, r};
      return n;
    }
    if (key == ".") {
      if (!obj({"left", "attr"}) || !v["attr"].is_string())
        return shape("{\"left\": <expr>, \"attr\": <string>}");
      const Node* l = Expr(v["left"], depth + 1);
      if (!l) return nullptr;
      Node* n = New(Op::kGetAttr);
      n->name = v["attr"].get<std::string>();
      n->hash = HashBytes(n->name);
      n->kids = {l};
      return n;
    }
    if (key == "has") {
      std::vector<std::string> path;
      if (obj({"left", "attr"}) && v["attr"].is_string()) {
        path.push_back(v["attr"].get<std::string>());
      } else if (obj({"left", "attr"}) && v["attr"].is_array() && !v["attr"].empty()) {
        for (const json& a : v["attr"]) {
          if (!a.is_string())
            return shape("{\"left\": <expr>, \"attr\": <string or non-empty array of strings>}");
          path.push_back(a.get<std::string>());
        }
      } else {
        return shape("{\"left\": <expr>, \"attr\": <string or non-empty array of strings>}");
      }
      const Node* base = Expr(v["left"], depth + 1);
      if (!base) return nullptr;
      // As the text parser: `e has a.b` = `e has a && e.a has b`.
      const Node* result = nullptr;
      for (const std::string& attr : path) {
        Node* h = New(Op::kHas);
        h->name = attr;
        h->hash = HashBytes(attr);
        h->kids = {base};
        if (result) {
          Node* a = New(Op::kAnd);
          a->kids = {result, h};
          result = a;
        } else {
          result = h;
        }
        Node* g = New(Op::kGetAttr);
        g->name = attr;
        g->hash = h->hash;
        g->kids = {base};
        base = g;
      }
      if (path.size() > 1) {
        Node* top = const_cast<Node*>(result);
        top->written = Op::kHas;
        top->keys = std::move(path);
      }
      return result;
    }
    if (key == "like") {
      if (!obj({"left", "pattern"}) || !v["pattern"].is_array())
        return shape("{\"left\": <expr>, \"pattern\": [..]}");
      const Node* l = Expr(v["left"], depth + 1);
      if (!l) return nullptr;
      Node* n = New(Op::kLike);
      for (const json& e : v["pattern"]) {
        if (e.is_string() && e == "Wildcard") {
          n->pattern.push_back({true, ""});
        } else if (e.is_object() && e.size() == 1 && e.contains("Literal") && e["Literal"].is_string()) {
          if (n->pattern.empty() || n->pattern.back().wildcard) n->pattern.push_back({false, ""});
          n->pattern.back().text += e["Literal"].get<std::string>();
        } else {
          return BadN("a pattern element is \"Wildcard\" or {\"Literal\": <string>}, found " + Dump(e));
        }
      }
      n->kids = {l};
      return n;
    }
    if (key == "is") {
      if (!v.is_object() || !v.contains("left") || !v.contains("entity_type") ||
          !v["entity_type"].is_string() || v.size() != (v.contains("in") ? 3u : 2u))
        return shape("{\"left\": <expr>, \"entity_type\": <name>, \"in\": <expr> (optional)}");
      const std::string& type = v["entity_type"].get_ref<const std::string&>();
      if (!ValidEntityTypeName(type)) return BadN("`" + type + "` is not a valid entity type name");
      const Node* l = Expr(v["left"], depth + 1);
      if (!l) return nullptr;
      Node* n = New(Op::kIs);
      n->name = type;
      n->kids = {l};
      if (v.contains("in")) {
        const Node* r = Expr(v["in"], depth + 1);
        if (!r) return nullptr;
        n->op = Op::kIsIn;
        n->kids.push_back(r);
      }
      return n;
    }
    if (key == "if-then-else") {
      if (!obj({"if", "then", "else"})) return shape("{\"if\", \"then\", \"else\"}");
      Node* n = New(Op::kIf);
      for (const char* part : {"if", "then", "else"}) {
        const Node* k = Expr(v[part], depth + 1);
        if (!k) return nullptr;
        n->kids.push_back(k);
      }
      return n;
    }
    if (key == "Set") {
      if (!v.is_array()) return shape("an array of expressions");
      Node* n = New(Op::kSetLit);
      for (const json& e : v) {
        const Node* k = Expr(e, depth + 1);
        if (!k) return nullptr;
        n->kids.push_back(k);
      }
      return FoldLiteral(n, &set_->arena);
    }
    if (key == "Record") {
      if (!v.is_object()) return shape("an object of expressions");
      Node* n = New(Op::kRecLit);
      for (auto it = v.begin(); it != v.end(); ++it) {
        const Node* k = Expr(*it, depth + 1);
        if (!k) return nullptr;
        n->keys.push_back(it.key());
        n->kids.push_back(k);
      }
      return FoldLiteral(n, &set_->arena);
    }
    if (!v.is_array()) return BadN("unknown expression `" + key + "`");
    return ExtCall(key, v, depth, /*values=*/false);
  }

  CompiledPolicySet* set_;
  const char* clause_ = "when";
  Status error_;
};

// ---- compiled policy -> JSON (EST) ----

json UidJson(const Uid& u) { return json{{"type", u.type}, {"id", u.id}}; }

json ValueJson(const Value& v) {
  switch (v.kind) {
    case Kind::kBool:
      return v.b;
    case Kind::kLong:
      return v.i;
    case Kind::kString:
      return *v.s;
    case Kind::kEntity:
      return json{{"__entity", UidJson(*v.e)}};
    case Kind::kSet: {
      json a = json::array();
      for (const Value& e : v.set->elems) a.push_back(ValueJson(e));
      return a;
    }
    case Kind::kRecord: {
      json o = json::object();
      for (const Field& f : v.rec->fields) o[f.key] = ValueJson(f.value);
      return o;
    }
    default:
      // Extension values are printed as the calls that made them (Node::written); a value without one
      // does not come out of either parser.
      return ValueToString(v);
  }
}

const char* OpKey(Op op) {
  switch (op) {
    case Op::kEq:
      return "==";
    case Op::kNe:
      return "!=";
    case Op::kIn:
      return "in";
    case Op::kLt:
      return "<";
    case Op::kLe:
      return "<=";
    case Op::kGt:
      return ">";
    case Op::kGe:
      return ">=";
    case Op::kAnd:
      return "&&";
    case Op::kOr:
      return "||";
    case Op::kAdd:
      return "+";
    case Op::kSub:
      return "-";
    case Op::kMul:
      return "*";
    case Op::kContains:
      return "contains";
    case Op::kContainsAll:
      return "containsAll";
    case Op::kContainsAny:
      return "containsAny";
    case Op::kGetTag:
      return "getTag";
    case Op::kHasTag:
      return "hasTag";
    default:
      return nullptr;
  }
}

// The reference prints a pattern one character per literal element.
json PatternJson(const std::vector<PatternElem>& pattern) {
  json a = json::array();
  for (const PatternElem& e : pattern) {
    if (e.wildcard) {
      a.push_back("Wildcard");
      continue;
    }
    for (size_t i = 0; i < e.text.size();) {
      size_t len = 1;
      unsigned char c = static_cast<unsigned char>(e.text[i]);
      if (c >= 0xF0)
        len = 4;
      else if (c >= 0xE0)
        len = 3;
      else if (c >= 0xC0)
        len = 2;
      len = std::min(len, e.text.size() - i);
      a.push_back(json{{"Literal", e.text.substr(i, len)}});
      i += len;
    }
  }
  return a;
}

json ExprJson(const Node* n) {
  if (n->written == Op::kHas) {
    const Node* h = n;
    while (h->op == Op::kAnd) h = h->kids[0];
    return json{{"has", {{"left", ExprJson(h->kids[0])}, {"attr", n->keys}}}};
  }
  auto kids = [&]() {
    json a = json::array();
    for (const Node* k : n->kids) a.push_back(ExprJson(k));
    return a;
  };
  switch (n->op) {
    case Op::kLit:
      if (n->written == Op::kSetLit) return json{{"Set", kids()}};
      if (n->written == Op::kExt) return json{{n->name, kids()}};
      if (n->written == Op::kRecLit) {
        json o = json::object();
        for (size_t k = 0; k < n->kids.size(); ++k) o[n->keys[k]] = ExprJson(n->kids[k]);
        return json{{"Record", o}};
      }
      return json{{"Value", ValueJson(n->lit)}};
    case Op::kVar: {
      static const char* kVars[] = {"principal", "action", "resource", "context"};
      return json{{"Var", kVars[n->var & 3]}};
    }
    case Op::kNot:
      return json{{"!", {{"arg", ExprJson(n->kids[0])}}}};
    case Op::kNeg:
      return json{{"neg", {{"arg", ExprJson(n->kids[0])}}}};
    case Op::kIsEmpty:
      return json{{"isEmpty", {{"arg", ExprJson(n->kids[0])}}}};
    case Op::kIf:
      return json{
          {"if-then-else",
           {{"if", ExprJson(n->kids[0])}, {"then", ExprJson(n->kids[1])}, {"else", ExprJson(n->kids[2])}}}};
    case Op::kHas:
      return json{{"has", {{"left", ExprJson(n->kids[0])}, {"attr", n->name}}}};
    case Op::kLike:
      return json{{"like", {{"left", ExprJson(n->kids[0])}, {"pattern", PatternJson(n->pattern)}}}};
    case Op::kIs:
    case Op::kIsIn: {
      json o{{"left", ExprJson(n->kids[0])}, {"entity_type", n->name}};
      if (n->op == Op::kIsIn) o["in"] = ExprJson(n->kids[1]);
      return json{{"is", o}};
    }
    case Op::kGetAttr:
    case Op::kIndex:
      return json{{".", {{"left", ExprJson(n->kids[0])}, {"attr", n->name}}}};
    case Op::kSetLit:
      return json{{"Set", kids()}};
    case Op::kRecLit: {
      json o = json::object();
      for (size_t k = 0; k < n->kids.size(); ++k) o[n->keys[k]] = ExprJson(n->kids[k]);
      return json{{"Record", o}};
    }
    case Op::kExt:
      return json{{n->name, kids()}};
    default:
      break;
  }
  const char* key = OpKey(n->op);
  return json{{key ? key : "?", {{"left", ExprJson(n->kids[0])}, {"right", ExprJson(n->kids[1])}}}};
}

json ScopeJson(const ScopeConstraint& sc, bool action) {
  auto target = [&](json* o) {
    if (sc.slot != ScopeConstraint::kNoSlot) {
      (*o)["slot"] = SlotKey(sc.slot);
    } else {
      (*o)["entity"] = UidJson(*sc.uid);
    }
  };
  json o;
  switch (sc.kind) {
    case ScopeConstraint::kAny:
      o["op"] = "All";
      break;
    case ScopeConstraint::kEq:
      o["op"] = "==";
      target(&o);
      break;
    case ScopeConstraint::kIn:
      o["op"] = "in";
      if (action && sc.list && sc.uids.size() == 1) {
        o["entity"] = UidJson(*sc.uids[0]);  // the reference prints `in [A]` as `in A`
      } else if (action && sc.list) {
        json a = json::array();
        for (const Uid* u : sc.uids) a.push_back(UidJson(*u));
        o["entities"] = a;
      } else {
        target(&o);
      }
      break;
    case ScopeConstraint::kIs:
      o["op"] = "is";
      o["entity_type"] = sc.type;
      break;
    case ScopeConstraint::kIsIn: {
      o["op"] = "is";
      o["entity_type"] = sc.type;
      json in;
      target(&in);
      o["in"] = in;
      break;
    }
  }
  return o;
}

json PolicyJson(const CompiledPolicy& p) {
  json o;
  o["effect"] = p.forbid ? "forbid" : "permit";
  o["principal"] = ScopeJson(p.principal, false);
  o["action"] = ScopeJson(p.action, true);
  o["resource"] = ScopeJson(p.resource, false);
  json conds = json::array();
  for (const Condition& c : p.conditions) {
    conds.push_back(json{{"kind", c.when ? "when" : "unless"}, {"body", ExprJson(c.expr)}});
  }
  o["conditions"] = conds;
  if (!p.annotations.empty()) {
    json a = json::object();
    for (size_t k = 0; k < p.annotations.size(); ++k) {
      bool bare = k < p.bare_annotation.size() && p.bare_annotation[k];
      a[p.annotations[k].first] = bare ? json(nullptr) : json(p.annotations[k].second);
    }
    o["annotations"] = a;
  }
  return o;
}

// ---- assembling a set ----

class SetBuilder {
 public:
  SetBuilder() : set_(std::make_shared<CompiledPolicySet>()) {}

  // A policy or template given as text (exactly one) or JSON, with its id.
  Status AddOne(const json& j, const std::string& id, bool want_template) {
    const char* what = want_template ? "template" : "policy";
    CompiledPolicy p;
    if (j.is_string()) {
      std::vector<CompiledPolicy> items;
      Status s = ParsePolicyText(j.get_ref<const std::string&>(), set_.get(), &items);
      if (!s.ok()) return s.WithContext(std::string(what) + " `" + id + "`");
      if (items.size() != 1) {
        return InvalidArgument(std::string(what) + " `" + id + "`: expected exactly one policy, found " +
                               std::to_string(items.size()));
      }
      p = std::move(items[0]);
    } else {
      EstReader reader(set_.get());
      Status s = reader.Policy(j, &p);
      if (!s.ok()) return s.WithContext(std::string(what) + " `" + id + "`");
    }
    return Add(std::move(p), id, want_template);
  }

  Status Add(CompiledPolicy p, const std::string& id, bool want_template) {
    if (want_template && !IsTemplate(p)) {
      return InvalidArgument("template `" + id +
                             "`: expected a template, got a static policy (no ?principal or ?resource)");
    }
    if (!want_template && IsTemplate(p)) {
      return InvalidArgument(
          "policy `" + id + "`: expected a static policy, got a template containing the slot " +
          std::string(
              SlotName(p.principal.slot != ScopeConstraint::kNoSlot ? p.principal.slot : p.resource.slot)));
    }
    if (!ids_.insert(id).second) return InvalidArgument("duplicate template or policy id `" + id + "`");
    p.id = id;
    (want_template ? set_->templates : set_->policies).push_back(std::move(p));
    return OkStatus();
  }

  // Text of policies and templates numbered together.
  Status AddText(std::string_view text, bool allow_templates) {
    std::vector<CompiledPolicy> items;
    GOVERN_RETURN_IF_ERROR(ParsePolicyText(text, set_.get(), &items));
    size_t n = 0;
    for (CompiledPolicy& p : items) {
      std::string id = "policy" + std::to_string(n++);
      bool t = IsTemplate(p);
      if (t && !allow_templates) {
        return InvalidArgument(std::to_string(p.slot_line) + ":" + std::to_string(p.slot_col) +
                               ": static policy set includes a template");
      }
      GOVERN_RETURN_IF_ERROR(Add(std::move(p), id, t));
    }
    return OkStatus();
  }

  Status Link(const TemplateLink& link) {
    const CompiledPolicy* tmpl = nullptr;
    uint32_t index = 0;
    for (uint32_t k = 0; k < set_->templates.size(); ++k) {
      if (set_->templates[k].id == link.template_id) {
        tmpl = &set_->templates[k];
        index = k;
      }
    }
    std::string what = "template link `" + link.link_id + "`: ";
    if (!tmpl) {
      for (const CompiledPolicy& p : set_->policies) {
        if (p.id == link.template_id)
          return InvalidArgument(what + "expected a template, but `" + link.template_id +
                                 "` is a static policy");
      }
      return InvalidArgument(what + "failed to find a template with id `" + link.template_id + "`");
    }
    if (ids_.count(link.link_id)) {
      return InvalidArgument(what + "the id conflicts with an existing policy, template or link id");
    }
    const Uid* values[2] = {nullptr, nullptr};
    for (const auto& [slot, ref] : link.values) {
      int k = slot == "?principal" ? 0 : slot == "?resource" ? 1 : -1;
      if (k < 0)
        return InvalidArgument(what + "unknown slot `" + slot + "` (slots are ?principal and ?resource)");
      if (values[k]) return InvalidArgument(what + "the slot " + slot + " is given twice");
      if (!ValidEntityTypeName(ref.type))
        return InvalidArgument(what + slot + ": `" + ref.type + "` is not a valid entity type name");
      values[k] = set_->arena.MakeUid(ref.type, ref.id);
    }
    bool has[2] = {tmpl->principal.slot != ScopeConstraint::kNoSlot,
                   tmpl->resource.slot != ScopeConstraint::kNoSlot};
    for (int k = 0; k < 2; ++k) {
      const char* name = k == 0 ? "?principal" : "?resource";
      if (has[k] && !values[k])
        return InvalidArgument(what + "the following slots were not provided as arguments: " + name);
    }
    for (int k = 0; k < 2; ++k) {
      const char* name = k == 0 ? "?principal" : "?resource";
      if (!has[k] && values[k])
        return InvalidArgument(
            what +
            "the following slots were provided as arguments, but did not exist in the template: " + name);
    }
    CompiledPolicy p = *tmpl;  // conditions point at the template's nodes, owned by the same set
    p.id = link.link_id;
    p.template_index = static_cast<int32_t>(index);
    if (has[0]) {
      p.principal.uid = values[0];
      p.principal.slot = ScopeConstraint::kNoSlot;
    }
    if (has[1]) {
      p.resource.uid = values[1];
      p.resource.slot = ScopeConstraint::kNoSlot;
    }
    ids_.insert(link.link_id);
    TemplateLinkData d;
    d.id = link.link_id;
    d.template_index = index;
    d.policy = static_cast<uint32_t>(set_->policies.size());
    d.principal = values[0];
    d.resource = values[1];
    set_->links.push_back(std::move(d));
    set_->policies.push_back(std::move(p));
    return OkStatus();
  }

  std::shared_ptr<CompiledPolicySet> Finish() {
    set_->BuildIndex();
    return std::move(set_);
  }

 private:
  std::shared_ptr<CompiledPolicySet> set_;
  std::set<std::string> ids_;
};

Status LinksFromJson(const json& j, std::vector<TemplateLink>* out) {
  if (!j.is_array()) return InvalidArgument("template links: expected a JSON array");
  for (size_t k = 0; k < j.size(); ++k) {
    const json& l = j[k];
    std::string at = "template link #" + std::to_string(k + 1) + ": ";
    if (!l.is_object()) return InvalidArgument(at + "expected an object");
    for (auto it = l.begin(); it != l.end(); ++it) {
      if (it.key() != "templateId" && it.key() != "newId" && it.key() != "values")
        return InvalidArgument(at + "unknown field `" + it.key() + "`");
    }
    if (!l.contains("templateId") || !l["templateId"].is_string() || !l.contains("newId") ||
        !l["newId"].is_string() || !l.contains("values") || !l["values"].is_object()) {
      return InvalidArgument(at +
                             "expected {\"templateId\": string, \"newId\": string, \"values\": {slot: uid}}");
    }
    TemplateLink link;
    link.template_id = l["templateId"].get<std::string>();
    link.link_id = l["newId"].get<std::string>();
    for (auto it = l["values"].begin(); it != l["values"].end(); ++it) {
      const json* u = &*it;
      if (u->is_object() && u->size() == 1 && u->contains("__entity")) u = &(*u)["__entity"];
      if (!u->is_object() || u->size() != 2 || !u->contains("type") || !u->contains("id") ||
          !(*u)["type"].is_string() || !(*u)["id"].is_string()) {
        return InvalidArgument(at + it.key() + ": expected an entity uid {\"type\": ..., \"id\": ...}");
      }
      link.values.emplace_back(it.key(),
                               EntityRef{(*u)["type"].get<std::string>(), (*u)["id"].get<std::string>()});
    }
    out->push_back(std::move(link));
  }
  return OkStatus();
}

Result<json> ParseJsonText(std::string_view text, const char* what) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string(what) + ": invalid JSON: " + e.what());
  }
}

}  // namespace

Result<PolicySet> PolicySet::ParseWithTemplates(std::string_view text,
                                                const std::vector<TemplateLink>& links) {
  SetBuilder b;
  GOVERN_RETURN_IF_ERROR(b.AddText(text, true));
  for (const TemplateLink& l : links) GOVERN_RETURN_IF_ERROR(b.Link(l));
  PolicySet ps;
  ps.impl_ = b.Finish();
  return ps;
}

Result<PolicySet> PolicySet::FromJson(std::string_view text) {
  GOVERN_ASSIGN_OR_RETURN(json j, ParseJsonText(text, "policy set"));
  SetBuilder b;
  if (!j.is_object()) return InvalidArgument("a JSON policy set must be an object");
  if (j.contains("effect")) {  // one policy's JSON form
    json body = j;
    bool t = false;
    {
      // A single JSON policy may be a template (it is then not evaluated).
      CompiledPolicySet scratch;
      CompiledPolicy p;
      EstReader r(&scratch);
      GOVERN_RETURN_IF_ERROR(r.Policy(j, &p).WithContext("policy `policy0`"));
      t = IsTemplate(p);
    }
    GOVERN_RETURN_IF_ERROR(b.AddOne(body, "policy0", t));
  } else {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() != "staticPolicies" && it.key() != "templates" && it.key() != "templateLinks")
        return InvalidArgument("unknown field `" + it.key() +
                               "` in a JSON policy set (staticPolicies, templates, templateLinks)");
    }
    if (j.contains("staticPolicies")) {
      const json& s = j["staticPolicies"];
      if (s.is_string()) {
        GOVERN_RETURN_IF_ERROR(b.AddText(s.get_ref<const std::string&>(), false));
      } else if (s.is_object()) {
        for (auto it = s.begin(); it != s.end(); ++it) GOVERN_RETURN_IF_ERROR(b.AddOne(*it, it.key(), false));
      } else if (s.is_array()) {
        // The reference names array elements "policy0" (text) and "JSON policy" (JSON), so two of a kind
        // collide; kept for compatibility.
        for (const json& p : s)
          GOVERN_RETURN_IF_ERROR(b.AddOne(p, p.is_string() ? "policy0" : "JSON policy", false));
      } else {
        return InvalidArgument("`staticPolicies` must be a string, an object or an array");
      }
    }
    if (j.contains("templates")) {
      const json& t = j["templates"];
      if (!t.is_object()) return InvalidArgument("`templates` must be an object of id: template");
      for (auto it = t.begin(); it != t.end(); ++it) GOVERN_RETURN_IF_ERROR(b.AddOne(*it, it.key(), true));
    }
    if (j.contains("templateLinks")) {
      std::vector<TemplateLink> links;
      GOVERN_RETURN_IF_ERROR(LinksFromJson(j["templateLinks"], &links));
      for (const TemplateLink& l : links) GOVERN_RETURN_IF_ERROR(b.Link(l));
    }
  }
  PolicySet ps;
  ps.impl_ = b.Finish();
  return ps;
}

Result<PolicySet> PolicySet::FromFile(std::string_view name, std::string_view content,
                                      std::string_view links_json) {
  bool is_json = name.size() >= 5 && name.substr(name.size() - 5) == ".json";
  if (is_json) {
    if (!links_json.empty()) return InvalidArgument("a JSON policy set carries its links in templateLinks");
    return FromJson(content);
  }
  std::vector<TemplateLink> links;
  if (!links_json.empty()) {
    auto parsed = ParseLinks(links_json);
    if (!parsed.ok()) return parsed.status();
    links = std::move(*parsed);
  }
  return ParseWithTemplates(content, links);
}

Result<std::vector<TemplateLink>> PolicySet::ParseLinks(std::string_view text) {
  GOVERN_ASSIGN_OR_RETURN(json j, ParseJsonText(text, "links"));
  std::vector<TemplateLink> links;
  GOVERN_RETURN_IF_ERROR(LinksFromJson(j, &links));
  return links;
}

std::string PolicySet::ToJson() const {
  const CompiledPolicySet& c = *impl_;
  json out;
  json statics = json::object();
  for (const CompiledPolicy& p : c.policies) {
    if (p.template_index < 0) statics[p.id] = PolicyJson(p);
  }
  out["staticPolicies"] = statics;
  if (!c.templates.empty()) {
    json t = json::object();
    for (const CompiledPolicy& p : c.templates) t[p.id] = PolicyJson(p);
    out["templates"] = t;
  }
  if (!c.links.empty()) {
    json links = json::array();
    for (const TemplateLinkData& l : c.links) {
      json values = json::object();
      if (l.principal) values["?principal"] = UidJson(*l.principal);
      if (l.resource) values["?resource"] = UidJson(*l.resource);
      links.push_back(
          json{{"templateId", c.templates[l.template_index].id}, {"newId", l.id}, {"values", values}});
    }
    out["templateLinks"] = links;
  }
  return Dump(out);
}

size_t PolicySet::template_count() const { return impl_->templates.size(); }
const std::string& PolicySet::template_id(size_t index) const { return impl_->templates[index].id; }
const std::string& PolicySet::template_of(size_t index) const {
  static const std::string kNone;
  int32_t t = impl_->policies[index].template_index;
  return t < 0 ? kNone : impl_->templates[t].id;
}

}  // namespace govern::policy
