// Readers of the Cedar schema syntax (docs.cedarpolicy.com, "Cedar schema format" grammar) and of the
// JSON schema format, into SchemaDecls. Both are bounded: nesting deeper than kMaxDepth is refused so
// that outside input cannot exhaust the stack.
#include "policy/schema_parser.h"

#include <nlohmann/json.hpp>
#include <set>

#include "policy/parser.h"

namespace govern::policy {
namespace {

constexpr int kMaxDepth = 128;

enum class T : uint8_t {
  kEnd,
  kIdent,
  kStr,
  kLBrace,
  kRBrace,
  kLBracket,
  kRBracket,
  kLParen,
  kRParen,
  kLt,
  kGt,
  kComma,
  kSemi,
  kColon,
  kColon2,
  kQuestion,
  kAssign,
  kAt,
};

struct Tok {
  T kind = T::kEnd;
  std::string_view text;
  uint32_t line = 1, col = 1;
};

std::string Where(const Tok& t) { return std::to_string(t.line) + ":" + std::to_string(t.col); }

std::string Describe(const Tok& t) {
  if (t.kind == T::kEnd) return "end of input";
  return "`" + std::string(t.text) + "`";
}

class CedarSchemaParser {
 public:
  CedarSchemaParser(std::string_view src, SchemaDecls* out) : src_(src), out_(out) {}

  Status Run() {
    GOVERN_RETURN_IF_ERROR(Lex());
    while (Peek().kind != T::kEnd) {
      GOVERN_RETURN_IF_ERROR(SkipAnnotations());
      if (IsKeyword(Peek(), "namespace")) {
        Next();
        std::string ns;
        GOVERN_RETURN_IF_ERROR(Path(&ns));
        GOVERN_RETURN_IF_ERROR(Expect(T::kLBrace, "`{`"));
        while (Peek().kind != T::kRBrace) {
          if (Peek().kind == T::kEnd) return Fail(Peek(), "expected `}` to close namespace `" + ns + "`");
          GOVERN_RETURN_IF_ERROR(SkipAnnotations());
          GOVERN_RETURN_IF_ERROR(Decl(ns));
        }
        Next();
      } else {
        GOVERN_RETURN_IF_ERROR(Decl(""));
      }
    }
    return Status::Ok();
  }

 private:
  Status Lex() {
    size_t i = 0;
    uint32_t line = 1, col = 1;
    auto advance = [&](size_t n) {
      for (size_t k = 0; k < n && i < src_.size(); ++k, ++i) {
        if (src_[i] == '\n') {
          ++line;
          col = 1;
        } else if ((static_cast<unsigned char>(src_[i]) & 0xC0) != 0x80) {
          ++col;
        }
      }
    };
    for (;;) {
      while (i < src_.size()) {
        char c = src_[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
          advance(1);
        } else if (c == '/' && i + 1 < src_.size() && src_[i + 1] == '/') {
          while (i < src_.size() && src_[i] != '\n') advance(1);
        } else {
          break;
        }
      }
      Tok t;
      t.line = line;
      t.col = col;
      if (i >= src_.size()) {
        toks_.push_back(t);
        return Status::Ok();
      }
      size_t start = i;
      char c = src_[i];
      auto ident_start = [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
      };
      if (ident_start(c)) {
        while (i < src_.size() && (ident_start(src_[i]) || (src_[i] >= '0' && src_[i] <= '9'))) advance(1);
        t.kind = T::kIdent;
      } else if (c == '"') {
        advance(1);
        while (i < src_.size() && src_[i] != '"') {
          if (src_[i] == '\\' && i + 1 < src_.size()) advance(1);
          advance(1);
        }
        if (i >= src_.size()) return Fail(t, "unterminated string literal");
        advance(1);
        t.kind = T::kStr;
      } else if (c == ':' && i + 1 < src_.size() && src_[i + 1] == ':') {
        advance(2);
        t.kind = T::kColon2;
      } else {
        static const std::pair<char, T> kPunct[] = {
            {'{', T::kLBrace}, {'}', T::kRBrace}, {'[', T::kLBracket}, {']', T::kRBracket},
            {'(', T::kLParen}, {')', T::kRParen}, {'<', T::kLt},       {'>', T::kGt},
            {',', T::kComma},  {';', T::kSemi},   {':', T::kColon},    {'?', T::kQuestion},
            {'=', T::kAssign}, {'@', T::kAt}};
        bool found = false;
        for (const auto& [ch, kind] : kPunct) {
          if (ch == c) {
            t.kind = kind;
            found = true;
            break;
          }
        }
        if (!found) return Fail(t, "unexpected character `" + std::string(src_.substr(start, 1)) + "`");
        advance(1);
      }
      t.text = src_.substr(start, i - start);
      toks_.push_back(t);
    }
  }

  const Tok& Peek(size_t k = 0) const { return toks_[std::min(p_ + k, toks_.size() - 1)]; }
  const Tok& Next() {
    const Tok& t = Peek();
    if (p_ < toks_.size() - 1) ++p_;
    return t;
  }
  static bool IsKeyword(const Tok& t, std::string_view kw) { return t.kind == T::kIdent && t.text == kw; }
  static Status Fail(const Tok& t, const std::string& msg) { return InvalidArgument(Where(t) + ": " + msg); }
  Status Expect(T kind, const char* what) {
    if (Peek().kind != kind)
      return Fail(Peek(), std::string("expected ") + what + ", found " + Describe(Peek()));
    Next();
    return Status::Ok();
  }

  Status Str(const Tok& t, std::string* out) {
    std::string error;
    if (!UnescapeCedar(t.text.substr(1, t.text.size() - 2), false, out, nullptr, &error))
      return Fail(t, error);
    return Status::Ok();
  }

  // Identifiers the reference reserves: not usable as names, unquoted, anywhere in a schema.
  // (`__cedar` may start a type path, `__cedar::Long`; declaring in it is refused in schema.cc.)
  static bool Reserved(std::string_view id) {
    static const char* kReserved[] = {"true", "false", "if", "then", "else", "in", "is", "like", "has"};
    for (const char* r : kReserved) {
      if (id == r) return true;
    }
    return false;
  }

  Status Ident(std::string* out, const char* what) {
    if (Peek().kind != T::kIdent)
      return Fail(Peek(), std::string("expected ") + what + ", found " + Describe(Peek()));
    if (Reserved(Peek().text))
      return Fail(Peek(), "`" + std::string(Peek().text) + "` is a reserved identifier");
    *out = std::string(Next().text);
    return Status::Ok();
  }

  Status Path(std::string* out) {
    GOVERN_RETURN_IF_ERROR(Ident(out, "a name"));
    while (Peek().kind == T::kColon2 && Peek(1).kind == T::kIdent) {
      Next();
      *out += "::" + std::string(Next().text);
    }
    return Status::Ok();
  }

  // Annotations are kept by the reference but change nothing that is checked; they are read and
  // dropped. @key or @key("value").
  Status SkipAnnotations() {
    while (Peek().kind == T::kAt) {
      Next();
      std::string key;
      GOVERN_RETURN_IF_ERROR(Ident(&key, "an annotation name"));
      if (Peek().kind == T::kLParen) {
        Next();
        if (Peek().kind != T::kStr) return Fail(Peek(), "expected a string, found " + Describe(Peek()));
        std::string v;
        GOVERN_RETURN_IF_ERROR(Str(Next(), &v));
        GOVERN_RETURN_IF_ERROR(Expect(T::kRParen, "`)`"));
      }
    }
    return Status::Ok();
  }

  Status Decl(const std::string& ns) {
    const Tok& t = Peek();
    if (IsKeyword(t, "entity")) return Entity(ns);
    if (IsKeyword(t, "action")) return Action(ns);
    if (IsKeyword(t, "type")) return Common(ns);
    return Fail(t, "expected `entity`, `action`, `type` or `namespace`, found " + Describe(t));
  }

  Status EntityTypes(std::vector<std::pair<std::string, std::string>>* out) {
    auto one = [&]() -> Status {
      std::string w = Where(Peek()), name;
      GOVERN_RETURN_IF_ERROR(Path(&name));
      out->emplace_back(std::move(name), std::move(w));
      return Status::Ok();
    };
    if (Peek().kind != T::kLBracket) return one();
    Next();
    while (Peek().kind != T::kRBracket) {
      GOVERN_RETURN_IF_ERROR(one());
      if (Peek().kind == T::kComma && Peek(1).kind != T::kRBracket) {  // no trailing comma here
        Next();
      } else if (Peek().kind != T::kRBracket) {
        return Fail(Peek(), "expected `,` or `]`, found " + Describe(Peek()));
      }
    }
    Next();
    return Status::Ok();
  }

  Status Entity(const std::string& ns) {
    const Tok& kw = Next();
    std::vector<std::pair<std::string, std::string>> names;
    for (;;) {
      std::string w = Where(Peek()), n;
      GOVERN_RETURN_IF_ERROR(Ident(&n, "an entity type name"));
      names.emplace_back(std::move(n), std::move(w));
      if (Peek().kind != T::kComma) break;
      Next();
    }
    EntityDecl d;
    d.ns = ns;
    d.where = Where(kw);
    if (IsKeyword(Peek(), "enum")) {
      Next();
      d.is_enum = true;
      GOVERN_RETURN_IF_ERROR(Expect(T::kLBracket, "`[`"));
      std::set<std::string> seen;
      while (Peek().kind != T::kRBracket) {
        if (Peek().kind != T::kStr) return Fail(Peek(), "expected a string, found " + Describe(Peek()));
        std::string id;
        GOVERN_RETURN_IF_ERROR(Str(Next(), &id));
        if (seen.insert(id).second) d.enum_ids.push_back(std::move(id));
        if (Peek().kind == T::kComma && Peek(1).kind != T::kRBracket) {
          Next();
        } else if (Peek().kind != T::kRBracket) {
          return Fail(Peek(), "expected `,` or `]`, found " + Describe(Peek()));
        }
      }
      Next();
    } else {
      if (IsKeyword(Peek(), "in")) {
        Next();
        GOVERN_RETURN_IF_ERROR(EntityTypes(&d.parents));
      }
      if (Peek().kind == T::kAssign) {
        Next();
        if (Peek().kind != T::kLBrace) return Fail(Peek(), "expected `{`, found " + Describe(Peek()));
      }
      if (Peek().kind == T::kLBrace) {
        d.shape = std::make_shared<TypeDecl>();
        GOVERN_RETURN_IF_ERROR(Type(d.shape.get(), 0));
      }
      if (IsKeyword(Peek(), "tags")) {
        Next();
        d.tags = std::make_shared<TypeDecl>();
        GOVERN_RETURN_IF_ERROR(Type(d.tags.get(), 0));
      }
    }
    GOVERN_RETURN_IF_ERROR(Expect(T::kSemi, "`;`"));
    for (auto& [n, w] : names) {
      EntityDecl e = d;
      e.name = n;
      e.where = w;
      out_->entities.push_back(std::move(e));
    }
    return Status::Ok();
  }

  Status ActionName(std::string* out) {
    if (Peek().kind == T::kStr) return Str(Next(), out);
    return Ident(out, "an action name");
  }

  // `view`, `"view"` or `NS::Action::"view"`.
  Status ActionParent(std::vector<ActionParentDecl>* out) {
    ActionParentDecl p;
    p.where = Where(Peek());
    if (Peek().kind == T::kStr) {
      GOVERN_RETURN_IF_ERROR(Str(Next(), &p.id));
    } else {
      std::string path;
      GOVERN_RETURN_IF_ERROR(Ident(&path, "an action name"));
      bool qualified = false;
      while (Peek().kind == T::kColon2) {
        Next();
        if (Peek().kind == T::kStr) {
          GOVERN_RETURN_IF_ERROR(Str(Next(), &p.id));
          p.type = path;
          qualified = true;
          break;
        }
        std::string part;
        GOVERN_RETURN_IF_ERROR(Ident(&part, "a name or a string"));
        path += "::" + part;
      }
      if (!qualified) {
        if (path.find("::") != std::string::npos)
          return Fail(Peek(), "expected `::` and an action id string");
        p.id = path;
      }
    }
    out->push_back(std::move(p));
    return Status::Ok();
  }

  Status Action(const std::string& ns) {
    const Tok& kw = Next();
    std::vector<std::pair<std::string, std::string>> names;
    for (;;) {
      std::string w = Where(Peek()), n;
      GOVERN_RETURN_IF_ERROR(ActionName(&n));
      names.emplace_back(std::move(n), std::move(w));
      if (Peek().kind != T::kComma) break;
      Next();
    }
    ActionDecl d;
    d.ns = ns;
    d.where = Where(kw);
    if (IsKeyword(Peek(), "in")) {
      Next();
      if (Peek().kind == T::kLBracket) {
        Next();
        if (Peek().kind == T::kRBracket) return Fail(Peek(), "expected an action name, found `]`");
        while (Peek().kind != T::kRBracket) {
          GOVERN_RETURN_IF_ERROR(ActionParent(&d.parents));
          if (Peek().kind == T::kComma && Peek(1).kind != T::kRBracket) {
            Next();
          } else if (Peek().kind != T::kRBracket) {
            return Fail(Peek(), "expected `,` or `]`, found " + Describe(Peek()));
          }
        }
        Next();
      } else {
        GOVERN_RETURN_IF_ERROR(ActionParent(&d.parents));
      }
    }
    if (IsKeyword(Peek(), "appliesTo")) {
      Next();
      d.applies = true;
      GOVERN_RETURN_IF_ERROR(Expect(T::kLBrace, "`{`"));
      bool seen_p = false, seen_r = false, seen_c = false;
      while (Peek().kind != T::kRBrace) {
        const Tok& key = Peek();
        if (IsKeyword(key, "principal") || IsKeyword(key, "resource")) {
          bool principal = key.text == "principal";
          bool& seen = principal ? seen_p : seen_r;
          if (seen) return Fail(key, "duplicate `" + std::string(key.text) + "` declaration");
          seen = true;
          Next();
          GOVERN_RETURN_IF_ERROR(Expect(T::kColon, "`:`"));
          auto* list = principal ? &d.principals : &d.resources;
          GOVERN_RETURN_IF_ERROR(EntityTypes(list));
          if (list->empty())
            return Fail(key, "`" + std::string(key.text) + "` must name at least one entity type");
        } else if (IsKeyword(key, "context")) {
          if (seen_c) return Fail(key, "duplicate `context` declaration");
          seen_c = true;
          Next();
          GOVERN_RETURN_IF_ERROR(Expect(T::kColon, "`:`"));
          d.context = std::make_shared<TypeDecl>();
          GOVERN_RETURN_IF_ERROR(Type(d.context.get(), 0));
        } else {
          return Fail(key, "expected `principal`, `resource` or `context`, found " + Describe(key));
        }
        if (Peek().kind == T::kComma) {
          Next();
        } else if (Peek().kind != T::kRBrace) {
          return Fail(Peek(), "expected `,` or `}`, found " + Describe(Peek()));
        }
      }
      Next();
      if (!seen_p) return Fail(kw, "`appliesTo` of action `" + names[0].first + "` lacks `principal`");
      if (!seen_r) return Fail(kw, "`appliesTo` of action `" + names[0].first + "` lacks `resource`");
    }
    GOVERN_RETURN_IF_ERROR(Expect(T::kSemi, "`;`"));
    for (auto& [n, w] : names) {
      ActionDecl a = d;
      a.id = n;
      a.where = w;
      out_->actions.push_back(std::move(a));
    }
    return Status::Ok();
  }

  Status Common(const std::string& ns) {
    Next();
    CommonDecl c;
    c.ns = ns;
    c.where = Where(Peek());
    GOVERN_RETURN_IF_ERROR(Ident(&c.name, "a type name"));
    static const char* kReserved[] = {"Bool", "Boolean", "Entity", "Extension",
                                      "Long", "Record",  "Set",    "String"};
    for (const char* r : kReserved) {
      if (c.name == r) return InvalidArgument(c.where + ": `" + c.name + "` is a reserved type name");
    }
    GOVERN_RETURN_IF_ERROR(Expect(T::kAssign, "`=`"));
    c.type = std::make_shared<TypeDecl>();
    GOVERN_RETURN_IF_ERROR(Type(c.type.get(), 0));
    GOVERN_RETURN_IF_ERROR(Expect(T::kSemi, "`;`"));
    out_->commons.push_back(std::move(c));
    return Status::Ok();
  }

  Status Type(TypeDecl* t, int depth) {
    if (depth > kMaxDepth) return Fail(Peek(), "types are nested too deeply");
    t->where = Where(Peek());
    if (Peek().kind == T::kLBrace) {
      Next();
      t->kind = TypeDecl::kRecord;
      std::set<std::string> seen;
      while (Peek().kind != T::kRBrace) {
        GOVERN_RETURN_IF_ERROR(SkipAnnotations());
        const Tok& k = Peek();
        AttrDecl a;
        if (k.kind == T::kStr) {
          GOVERN_RETURN_IF_ERROR(Str(Next(), &a.name));
        } else {
          GOVERN_RETURN_IF_ERROR(Ident(&a.name, "an attribute name"));
        }
        // A repeated attribute replaces the earlier one, as the reference reads it.
        if (!seen.insert(a.name).second) {
          for (auto it = t->attrs.begin(); it != t->attrs.end(); ++it) {
            if (it->name == a.name) {
              t->attrs.erase(it);
              break;
            }
          }
        }
        if (Peek().kind == T::kQuestion) {
          Next();
          a.required = false;
        }
        GOVERN_RETURN_IF_ERROR(Expect(T::kColon, "`:`"));
        a.type = std::make_shared<TypeDecl>();
        GOVERN_RETURN_IF_ERROR(Type(a.type.get(), depth + 1));
        t->attrs.push_back(std::move(a));
        if (Peek().kind == T::kComma) {
          Next();
        } else if (Peek().kind != T::kRBrace) {
          return Fail(Peek(), "expected `,` or `}`, found " + Describe(Peek()));
        }
      }
      Next();
      return Status::Ok();
    }
    if (IsKeyword(Peek(), "Set") && Peek(1).kind == T::kLt) {
      Next();
      Next();
      t->kind = TypeDecl::kSet;
      t->element = std::make_shared<TypeDecl>();
      GOVERN_RETURN_IF_ERROR(Type(t->element.get(), depth + 1));
      return Expect(T::kGt, "`>`");
    }
    t->kind = TypeDecl::kName;
    return Path(&t->name);
  }

  std::string_view src_;
  SchemaDecls* out_;
  std::vector<Tok> toks_;
  size_t p_ = 0;
};

// ---- JSON format ----

using nlohmann::json;

class JsonSchemaReader {
 public:
  explicit JsonSchemaReader(SchemaDecls* out) : out_(out) {}

  Status Run(const json& root) {
    if (!root.is_object()) return InvalidArgument("a JSON schema must be an object of namespaces");
    for (const auto& [ns, body] : root.items()) {
      std::string where = ns.empty() ? "\"\"" : ns;
      if (!body.is_object()) return Err(where, "a namespace must be an object");
      GOVERN_RETURN_IF_ERROR(Only(body, where, {"entityTypes", "actions", "commonTypes", "annotations"}));
      if (!body.contains("entityTypes")) return Err(where, "missing field `entityTypes`");
      if (!body.contains("actions")) return Err(where, "missing field `actions`");
      if (body.contains("commonTypes")) {
        const json& cts = body["commonTypes"];
        if (!cts.is_object()) return Err(where + ".commonTypes", "must be an object");
        for (const auto& [name, t] : cts.items()) {
          CommonDecl c;
          c.ns = ns;
          c.name = name;
          c.where = where + ".commonTypes." + name;
          c.type = std::make_shared<TypeDecl>();
          GOVERN_RETURN_IF_ERROR(Type(t, c.where, c.type.get(), 0, true));
          out_->commons.push_back(std::move(c));
        }
      }
      const json& ets = body["entityTypes"];
      if (!ets.is_object()) return Err(where + ".entityTypes", "must be an object");
      for (const auto& [name, e] : ets.items()) {
        std::string w = where + ".entityTypes." + name;
        if (!e.is_object()) return Err(w, "must be an object");
        GOVERN_RETURN_IF_ERROR(Only(e, w, {"memberOfTypes", "shape", "tags", "enum", "annotations"}));
        EntityDecl d;
        d.ns = ns;
        d.name = name;
        d.where = w;
        if (e.contains("memberOfTypes"))
          GOVERN_RETURN_IF_ERROR(Names(e["memberOfTypes"], w + ".memberOfTypes", &d.parents));
        if (e.contains("shape")) {
          d.shape = std::make_shared<TypeDecl>();
          GOVERN_RETURN_IF_ERROR(Type(e["shape"], w + ".shape", d.shape.get(), 0, true));
        }
        if (e.contains("tags")) {
          d.tags = std::make_shared<TypeDecl>();
          GOVERN_RETURN_IF_ERROR(Type(e["tags"], w + ".tags", d.tags.get(), 0, true));
        }
        if (e.contains("enum")) {
          const json& ids = e["enum"];
          if (!ids.is_array()) return Err(w + ".enum", "must be an array of strings");
          d.is_enum = true;
          std::set<std::string> seen;
          for (const json& id : ids) {
            if (!id.is_string()) return Err(w + ".enum", "must be an array of strings");
            if (seen.insert(id.get<std::string>()).second) d.enum_ids.push_back(id.get<std::string>());
          }
        }
        out_->entities.push_back(std::move(d));
      }
      const json& acts = body["actions"];
      if (!acts.is_object()) return Err(where + ".actions", "must be an object");
      for (const auto& [id, a] : acts.items()) {
        std::string w = where + ".actions." + id;
        if (!a.is_object()) return Err(w, "must be an object");
        GOVERN_RETURN_IF_ERROR(Only(a, w, {"memberOf", "appliesTo", "annotations"}));
        ActionDecl d;
        d.ns = ns;
        d.id = id;
        d.where = w;
        if (a.contains("memberOf")) {
          const json& m = a["memberOf"];
          if (!m.is_array()) return Err(w + ".memberOf", "must be an array");
          for (const json& p : m) {
            ActionParentDecl pd;
            pd.where = w + ".memberOf";
            if (!p.is_object() || !p.contains("id") || !p["id"].is_string())
              return Err(pd.where, "each parent must be an object with a string `id`");
            GOVERN_RETURN_IF_ERROR(Only(p, pd.where, {"id", "type"}));
            pd.id = p["id"].get<std::string>();
            if (p.contains("type")) {
              if (!p["type"].is_string()) return Err(pd.where, "`type` must be a string");
              pd.type = p["type"].get<std::string>();
            }
            d.parents.push_back(std::move(pd));
          }
        }
        if (a.contains("appliesTo") && !a["appliesTo"].is_null()) {
          const json& ap = a["appliesTo"];
          std::string aw = w + ".appliesTo";
          if (!ap.is_object()) return Err(aw, "must be an object");
          GOVERN_RETURN_IF_ERROR(Only(ap, aw, {"principalTypes", "resourceTypes", "context"}));
          d.applies = true;
          if (!ap.contains("principalTypes")) return Err(aw, "missing field `principalTypes`");
          if (!ap.contains("resourceTypes")) return Err(aw, "missing field `resourceTypes`");
          GOVERN_RETURN_IF_ERROR(Names(ap["principalTypes"], aw + ".principalTypes", &d.principals));
          GOVERN_RETURN_IF_ERROR(Names(ap["resourceTypes"], aw + ".resourceTypes", &d.resources));
          if (ap.contains("context")) {
            d.context = std::make_shared<TypeDecl>();
            GOVERN_RETURN_IF_ERROR(Type(ap["context"], aw + ".context", d.context.get(), 0, true));
          }
        }
        out_->actions.push_back(std::move(d));
      }
    }
    return Status::Ok();
  }

 private:
  static Status Err(const std::string& where, const std::string& msg) {
    return InvalidArgument(where + ": " + msg);
  }

  static Status Only(const json& obj, const std::string& where, std::initializer_list<const char*> allowed) {
    for (const auto& [k, v] : obj.items()) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || k == a;
      if (!ok) return Err(where, "unknown field `" + k + "`");
    }
    return Status::Ok();
  }

  static Status Names(const json& arr, const std::string& where,
                      std::vector<std::pair<std::string, std::string>>* out) {
    if (!arr.is_array()) return Err(where, "must be an array of entity type names");
    for (const json& n : arr) {
      if (!n.is_string()) return Err(where, "must be an array of entity type names");
      out->emplace_back(n.get<std::string>(), where);
    }
    return Status::Ok();
  }

  Status Type(const json& j, const std::string& where, TypeDecl* t, int depth, bool allow_required) {
    if (depth > kMaxDepth) return Err(where, "types are nested too deeply");
    t->where = where;
    t->json = true;
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
      return Err(where, "a type must be an object with a string `type`");
    (void)allow_required;
    std::string kind = j["type"].get<std::string>();
    if (kind == "Long" || kind == "String" || kind == "Boolean") {
      GOVERN_RETURN_IF_ERROR(Only(j, where, {"type", "required", "annotations"}));
      t->kind = TypeDecl::kPrimitive;
      t->name = kind;
    } else if (kind == "Set") {
      GOVERN_RETURN_IF_ERROR(Only(j, where, {"type", "element", "required", "annotations"}));
      if (!j.contains("element")) return Err(where, "missing field `element`");
      t->kind = TypeDecl::kSet;
      t->element = std::make_shared<TypeDecl>();
      GOVERN_RETURN_IF_ERROR(Type(j["element"], where + ".element", t->element.get(), depth + 1, false));
    } else if (kind == "Record") {
      GOVERN_RETURN_IF_ERROR(
          Only(j, where, {"type", "attributes", "additionalAttributes", "required", "annotations"}));
      t->kind = TypeDecl::kRecord;
      if (j.contains("additionalAttributes")) {
        if (!j["additionalAttributes"].is_boolean())
          return Err(where, "`additionalAttributes` must be a boolean");
        // The reference refuses open records outside its experimental partial validation.
        if (j["additionalAttributes"].get<bool>())
          return Err(where, "records and entities with `additionalAttributes` are not supported");
      }
      if (j.contains("attributes")) {
        const json& attrs = j["attributes"];
        if (!attrs.is_object()) return Err(where + ".attributes", "must be an object");
        for (const auto& [name, at] : attrs.items()) {
          AttrDecl a;
          a.name = name;
          std::string aw = where + ".attributes." + name;
          if (at.is_object() && at.contains("required")) {
            if (!at["required"].is_boolean()) return Err(aw, "`required` must be a boolean");
            a.required = at["required"].get<bool>();
          }
          a.type = std::make_shared<TypeDecl>();
          GOVERN_RETURN_IF_ERROR(Type(at, aw, a.type.get(), depth + 1, true));
          t->attrs.push_back(std::move(a));
        }
      }
    } else if (kind == "Entity" || kind == "Extension" || kind == "EntityOrCommon") {
      GOVERN_RETURN_IF_ERROR(Only(j, where, {"type", "name", "required", "annotations"}));
      if (!j.contains("name") || !j["name"].is_string()) return Err(where, "missing string field `name`");
      t->kind = kind == "Entity"      ? TypeDecl::kEntity
                : kind == "Extension" ? TypeDecl::kExtension
                                      : TypeDecl::kName;
      t->name = j["name"].get<std::string>();
    } else {
      GOVERN_RETURN_IF_ERROR(Only(j, where, {"type", "required", "annotations"}));
      t->kind = TypeDecl::kName;
      t->name = kind;
      t->no_entity = true;  // {"type": "Name"} names a common or built-in type, never an entity type
    }
    return Status::Ok();
  }

  SchemaDecls* out_;
};

}  // namespace

Status ParseCedarSchemaText(std::string_view text, SchemaDecls* out) {
  return CedarSchemaParser(text, out).Run();
}

Status ParseJsonSchemaText(std::string_view text, SchemaDecls* out) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("schema is not valid JSON: ") + e.what());
  }
  return JsonSchemaReader(out).Run(root);
}

}  // namespace govern::policy
