// A recursive-descent parser for the Cedar policy grammar (docs.cedarpolicy.com, "Grammar"), checked
// against the reference's accept/reject decisions, and the compiler that folds literals into the
// trees the evaluator walks.
#include "policy/parser.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "policy/extensions.h"

namespace govern::policy {
namespace {

enum class Tok : uint8_t {
  kEnd,
  kIdent,
  kInt,
  kStr,
  kLParen,
  kRParen,
  kLBrace,
  kRBrace,
  kLBracket,
  kRBracket,
  kComma,
  kSemi,
  kDot,
  kColon,
  kColon2,
  kAt,
  kQuestion,
  kEq2,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
  kBang,
  kPlus,
  kMinus,
  kStar,
  kAssign,
};

struct Token {
  Tok kind = Tok::kEnd;
  std::string_view text;  // for identifiers, integers and strings (with the quotes)
  uint32_t line = 1, col = 1;
};

struct ParseError {
  uint32_t line, col;
  std::string message;
};

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  // Fills `tokens`; returns false with `err` set on a lexical error.
  bool Run(std::vector<Token>* tokens, ParseError* err) {
    for (;;) {
      SkipSpace();
      Token t;
      t.line = line_;
      t.col = col_;
      if (pos_ >= src_.size()) {
        t.kind = Tok::kEnd;
        tokens->push_back(t);
        return true;
      }
      size_t start = pos_;
      char c = src_[pos_];
      if (IsIdentStart(c)) {
        while (pos_ < src_.size() && IsIdentChar(src_[pos_])) Advance();
        t.kind = Tok::kIdent;
      } else if (c >= '0' && c <= '9') {
        while (pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '9') Advance();
        t.kind = Tok::kInt;
      } else if (c == '"') {
        Advance();
        for (;;) {
          if (pos_ >= src_.size()) {
            *err = {t.line, t.col, "unterminated string literal"};
            return false;
          }
          char d = src_[pos_];
          Advance();
          if (d == '\\') {
            if (pos_ < src_.size()) Advance();
          } else if (d == '"') {
            break;
          }
        }
        t.kind = Tok::kStr;
      } else {
        auto two = [&](char a, char b) { return c == a && pos_ + 1 < src_.size() && src_[pos_ + 1] == b; };
        int len = 1;
        if (two('=', '='))
          t.kind = Tok::kEq2, len = 2;
        else if (two('!', '='))
          t.kind = Tok::kNe, len = 2;
        else if (two('<', '='))
          t.kind = Tok::kLe, len = 2;
        else if (two('>', '='))
          t.kind = Tok::kGe, len = 2;
        else if (two('&', '&'))
          t.kind = Tok::kAnd, len = 2;
        else if (two('|', '|'))
          t.kind = Tok::kOr, len = 2;
        else if (two(':', ':'))
          t.kind = Tok::kColon2, len = 2;
        else {
          switch (c) {
            case '(':
              t.kind = Tok::kLParen;
              break;
            case ')':
              t.kind = Tok::kRParen;
              break;
            case '{':
              t.kind = Tok::kLBrace;
              break;
            case '}':
              t.kind = Tok::kRBrace;
              break;
            case '[':
              t.kind = Tok::kLBracket;
              break;
            case ']':
              t.kind = Tok::kRBracket;
              break;
            case ',':
              t.kind = Tok::kComma;
              break;
            case ';':
              t.kind = Tok::kSemi;
              break;
            case '.':
              t.kind = Tok::kDot;
              break;
            case ':':
              t.kind = Tok::kColon;
              break;
            case '@':
              t.kind = Tok::kAt;
              break;
            case '?':
              t.kind = Tok::kQuestion;
              break;
            case '<':
              t.kind = Tok::kLt;
              break;
            case '>':
              t.kind = Tok::kGt;
              break;
            case '!':
              t.kind = Tok::kBang;
              break;
            case '+':
              t.kind = Tok::kPlus;
              break;
            case '-':
              t.kind = Tok::kMinus;
              break;
            case '*':
              t.kind = Tok::kStar;
              break;
            case '=':
              t.kind = Tok::kAssign;
              break;
            default: {
              char buf[64];
              unsigned char uc = static_cast<unsigned char>(c);
              if (uc >= 0x20 && uc < 0x7f)
                std::snprintf(buf, sizeof buf, "unexpected character `%c`", c);
              else
                std::snprintf(buf, sizeof buf, "unexpected byte 0x%02x", uc);
              *err = {t.line, t.col, buf};
              return false;
            }
          }
        }
        for (int k = 0; k < len; ++k) Advance();
      }
      t.text = src_.substr(start, pos_ - start);
      tokens->push_back(t);
    }
  }

 private:
  void Advance() {
    if (src_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else if ((static_cast<unsigned char>(src_[pos_]) & 0xC0) != 0x80) {
      ++col_;  // count characters, not UTF-8 continuation bytes
    }
    ++pos_;
  }
  // Length of the Unicode White_Space character at pos_ (0 if none): Cedar's grammar skips them all.
  size_t SpaceLen() const {
    unsigned char c = static_cast<unsigned char>(src_[pos_]);
    if (c == ' ' || (c >= 0x09 && c <= 0x0D)) return 1;
    if (c < 0xC2 || pos_ + 1 >= src_.size()) return 0;
    unsigned char c1 = static_cast<unsigned char>(src_[pos_ + 1]);
    if (c == 0xC2) return (c1 == 0x85 || c1 == 0xA0) ? 2 : 0;
    if (pos_ + 2 >= src_.size()) return 0;
    unsigned char c2 = static_cast<unsigned char>(src_[pos_ + 2]);
    uint32_t cp = ((c & 0x0Fu) << 12) | ((c1 & 0x3Fu) << 6) | (c2 & 0x3Fu);
    if ((c & 0xF0) != 0xE0 || (c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80) return 0;
    bool space = cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
                 cp == 0x202F || cp == 0x205F || cp == 0x3000;
    return space ? 3 : 0;
  }

  void SkipSpace() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (size_t n = SpaceLen(); n > 0) {
        for (size_t k = 0; k < n; ++k) Advance();
      } else if (c == '/' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '/') {
        while (pos_ < src_.size() && src_[pos_] != '\n') Advance();
      } else {
        break;
      }
    }
  }

  std::string_view src_;
  size_t pos_ = 0;
  uint32_t line_ = 1, col_ = 1;
};

bool IsReserved(std::string_view s) {
  static const char* kReserved[] = {"true", "false", "if", "then", "else", "in", "is", "like", "has"};
  for (const char* r : kReserved) {
    if (s == r) return true;
  }
  return false;
}

struct ExtInfo {
  const char* name;
  ExtFn fn;
  bool method;
  uint8_t args;  // including the receiver for methods
};

const ExtInfo kExtFns[] = {
    {"ip", ExtFn::kIp, false, 1},
    {"decimal", ExtFn::kDecimal, false, 1},
    {"datetime", ExtFn::kDatetime, false, 1},
    {"duration", ExtFn::kDuration, false, 1},
    {"isIpv4", ExtFn::kIsIpv4, true, 1},
    {"isIpv6", ExtFn::kIsIpv6, true, 1},
    {"isLoopback", ExtFn::kIsLoopback, true, 1},
    {"isMulticast", ExtFn::kIsMulticast, true, 1},
    {"isInRange", ExtFn::kIsInRange, true, 2},
    {"lessThan", ExtFn::kLessThan, true, 2},
    {"lessThanOrEqual", ExtFn::kLessThanOrEqual, true, 2},
    {"greaterThan", ExtFn::kGreaterThan, true, 2},
    {"greaterThanOrEqual", ExtFn::kGreaterThanOrEqual, true, 2},
    {"offset", ExtFn::kOffset, true, 2},
    {"durationSince", ExtFn::kDurationSince, true, 2},
    {"toDate", ExtFn::kToDate, true, 1},
    {"toTime", ExtFn::kToTime, true, 1},
    {"toDays", ExtFn::kToDays, true, 1},
    {"toHours", ExtFn::kToHours, true, 1},
    {"toMinutes", ExtFn::kToMinutes, true, 1},
    {"toSeconds", ExtFn::kToSeconds, true, 1},
    {"toMilliseconds", ExtFn::kToMilliseconds, true, 1},
};

const ExtInfo* FindExt(std::string_view name, bool method) {
  for (const ExtInfo& e : kExtFns) {
    if (e.method == method && name == e.name) return &e;
  }
  return nullptr;
}

}  // namespace

// Constant folding: literal-only sets and records, and constructors of valid literal strings,
// become literals (kids kept, `written` set, for printing). Invalid constructor arguments stay calls
// so that the error is raised when the policy is evaluated, as the reference does.
const Node* FoldLiteral(Node* n, Arena* arena) {
  if (n->op == Op::kSetLit) {
    std::vector<Value> elems;
    for (const Node* k : n->kids) {
      if (k->op != Op::kLit) return n;
      elems.push_back(k->lit);
    }
    n->lit = arena->MakeSet(std::move(elems));
    n->op = Op::kLit;
    n->written = Op::kSetLit;
    return n;
  }
  if (n->op == Op::kRecLit) {
    std::vector<Field> fields;
    for (size_t k = 0; k < n->kids.size(); ++k) {
      if (n->kids[k]->op != Op::kLit) return n;
      fields.push_back({n->keys[k], 0, n->kids[k]->lit});
    }
    n->lit = arena->MakeRecord(std::move(fields));
    n->op = Op::kLit;
    n->written = Op::kRecLit;
    return n;
  }
  if (n->op != Op::kExt) return n;
  if (n->kids.size() != 1 || n->kids[0]->op != Op::kLit || n->kids[0]->lit.kind != Kind::kString) return n;
  const std::string& s = *n->kids[0]->lit.s;
  std::string error;
  int64_t v = 0;
  switch (n->fn) {
    case ExtFn::kIp: {
      IpAddr ip;
      if (!ParseIp(s, &ip, &error)) return n;
      n->lit = Value::Ip(arena->New<IpAddr>(ip));
      break;
    }
    case ExtFn::kDecimal:
      if (!ParseDecimal(s, &v, &error)) return n;
      n->lit = Value::Scalar(Kind::kDecimal, v);
      break;
    case ExtFn::kDatetime:
      if (!ParseDatetime(s, &v, &error)) return n;
      n->lit = Value::Scalar(Kind::kDatetime, v);
      break;
    case ExtFn::kDuration:
      if (!ParseDuration(s, &v, &error)) return n;
      n->lit = Value::Scalar(Kind::kDuration, v);
      break;
    default:
      return n;
  }
  n->op = Op::kLit;
  n->written = Op::kExt;
  return n;
}

namespace {

class Parser {
 public:
  Parser(std::vector<Token> toks, CompiledPolicySet* out, std::vector<CompiledPolicy>* items)
      : t_(std::move(toks)), out_(out), items_(items) {}

  bool ParseAll(ParseError* err) {
    while (Peek().kind != Tok::kEnd) {
      if (!ParsePolicy()) {
        *err = err_;
        return false;
      }
    }
    return true;
  }

 private:
  const Token& Peek(size_t ahead = 0) const { return t_[std::min(p_ + ahead, t_.size() - 1)]; }
  const Token& Next() {
    const Token& t = t_[p_];
    if (p_ + 1 < t_.size()) ++p_;
    return t;
  }
  bool Fail(const Token& at, std::string msg) {
    if (!failed_) {
      failed_ = true;
      err_ = {at.line, at.col, std::move(msg)};
    }
    return false;
  }
  static std::string Describe(const Token& t) {
    if (t.kind == Tok::kEnd) return "end of input";
    return "`" + std::string(t.text) + "`";
  }
  bool Expect(Tok kind, const char* what) {
    if (Peek().kind != kind)
      return Fail(Peek(), std::string("expected ") + what + ", found " + Describe(Peek()));
    Next();
    return true;
  }
  bool IsIdent(const Token& t, const char* word) const { return t.kind == Tok::kIdent && t.text == word; }

  Node* NewNode(Op op, const Token& at) {
    if (out_->nodes.size() - nodes_at_policy_start_ > kMaxNodesPerPolicy) {
      Fail(at, "policy too large (more than " + std::to_string(kMaxNodesPerPolicy) + " expression nodes)");
    }
    out_->nodes.push_back(std::make_unique<Node>());
    Node* n = out_->nodes.back().get();
    n->op = op;
    n->line = at.line;
    n->col = at.col;
    return n;
  }

  // ---- policies ----

  bool ParsePolicy() {
    nodes_at_policy_start_ = out_->nodes.size();
    slot_line_ = slot_col_ = 0;
    CompiledPolicy pol;
    pol.line = Peek().line;
    pol.col = Peek().col;
    while (Peek().kind == Tok::kAt) {
      const Token& at = Next();
      if (Peek().kind != Tok::kIdent) return Fail(Peek(), "expected an annotation name after `@`");
      std::string key(Next().text);
      std::string value;
      bool bare = Peek().kind != Tok::kLParen;
      if (Peek().kind == Tok::kLParen) {
        Next();
        if (Peek().kind != Tok::kStr) return Fail(Peek(), "expected a string as the annotation value");
        if (!StringLit(Next(), &value)) return false;
        if (!Expect(Tok::kRParen, "`)`")) return false;
      }
      for (const auto& kv : pol.annotations) {
        if (kv.first == key) return Fail(at, "duplicate annotation: @" + key);
      }
      pol.annotations.emplace_back(std::move(key), std::move(value));
      pol.bare_annotation.push_back(bare ? 1 : 0);
    }
    const Token& eff = Peek();
    if (IsIdent(eff, "permit")) {
      pol.forbid = false;
    } else if (IsIdent(eff, "forbid")) {
      pol.forbid = true;
    } else {
      return Fail(eff, "expected `permit` or `forbid`, found " + Describe(eff));
    }
    pol.line = eff.line;
    pol.col = eff.col;
    Next();
    if (!Expect(Tok::kLParen, "`(`")) return false;
    if (!ParseScope("principal", &pol.principal)) return false;
    if (!Expect(Tok::kComma, "`,`")) return false;
    if (!ParseScope("action", &pol.action)) return false;
    if (!Expect(Tok::kComma, "`,`")) return false;
    if (!ParseScope("resource", &pol.resource)) return false;
    if (Peek().kind == Tok::kComma && Peek(1).kind == Tok::kRParen) Next();  // trailing comma
    if (!Expect(Tok::kRParen, "`)`")) return false;
    while (IsIdent(Peek(), "when") || IsIdent(Peek(), "unless")) {
      Condition c;
      c.when = Next().text == "when";
      clause_ = c.when ? "when" : "unless";
      if (!Expect(Tok::kLBrace, "`{`")) return false;
      if (Peek().kind == Tok::kRBrace)
        return Fail(Peek(), "a condition needs an expression between `{` and `}`");
      const Node* e = ParseExpr();
      if (!e) return false;
      c.expr = e;
      if (!Expect(Tok::kRBrace, "`}`")) return false;
      pol.conditions.push_back(c);
    }
    if (Peek().kind == Tok::kEnd) return Fail(Peek(), "unexpected end of input, expected `;`");
    if (!Expect(Tok::kSemi, "`;` or a `when`/`unless` condition")) return false;
    if (failed_) return false;
    for (const Condition& c : pol.conditions) {
      if (Depth(c.expr) > kMaxDepth) {
        // Bounds the evaluator's recursion: long operator chains nest as deep as they are long.
        return Fail(eff, "expression nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)");
      }
    }
    pol.slot_line = slot_line_;
    pol.slot_col = slot_col_;
    items_->push_back(std::move(pol));
    return true;
  }

  bool ParseScope(const char* var, ScopeConstraint* sc) {
    const Token& v = Peek();
    if (v.kind != Tok::kIdent) return Fail(v, std::string("expected `") + var + "`, found " + Describe(v));
    if (v.text != var) {
      if (v.text == "principal" || v.text == "action" || v.text == "resource") {
        return Fail(v, "found the variable `" + std::string(v.text) + "` where the variable `" + var +
                           "` must be used");
      }
      return Fail(v, std::string("expected `") + var + "`, found " + Describe(v));
    }
    Next();
    list_ = false;
    bool is_action = std::strcmp(var, "action") == 0;
    const Token& op = Peek();
    if (op.kind == Tok::kEq2) {
      Next();
      const Uid* uid = nullptr;
      if (!ScopeEntity(var, is_action, &uid, &sc->slot)) return false;
      sc->kind = ScopeConstraint::kEq;
      sc->uid = uid;
      return true;
    }
    if (IsIdent(op, "is")) {
      if (is_action) return Fail(op, "`is` cannot appear in the action scope");
      Next();
      std::string type;
      if (!ParsePath(&type)) return false;
      sc->kind = ScopeConstraint::kIs;
      sc->type = std::move(type);
      if (IsIdent(Peek(), "in")) {
        Next();
        const Uid* uid = nullptr;
        if (!ScopeEntity(var, false, &uid, &sc->slot)) return false;
        sc->kind = ScopeConstraint::kIsIn;
        sc->uid = uid;
      }
      return true;
    }
    if (IsIdent(op, "in")) {
      Next();
      list_ = true;
      if (Peek().kind == Tok::kLBracket) {
        if (!is_action)
          return Fail(Peek(), "expected single entity uid or template slot, found set of entity uids");
        Next();
        sc->kind = ScopeConstraint::kIn;
        sc->list = true;
        while (Peek().kind != Tok::kRBracket) {
          const Uid* uid = nullptr;
          if (!ScopeEntity(var, true, &uid, nullptr)) return false;
          sc->uids.push_back(uid);
          if (Peek().kind == Tok::kComma) {
            Next();
          } else if (Peek().kind != Tok::kRBracket) {
            return Fail(Peek(), "expected `,` or `]`, found " + Describe(Peek()));
          }
        }
        Next();
        return true;
      }
      const Uid* uid = nullptr;
      if (!ScopeEntity(var, is_action, &uid, &sc->slot)) return false;
      sc->kind = ScopeConstraint::kIn;
      sc->uid = uid;
      return true;
    }
    sc->kind = ScopeConstraint::kAny;
    return true;
  }

  // An entity uid, or (principal and resource, `slot` given) the matching template slot.
  bool ScopeEntity(const char* var, bool action, const Uid** out, ScopeConstraint::Slot* slot) {
    const Token& at = Peek();
    if (at.kind == Tok::kQuestion) {
      if (action || !slot) {
        return Fail(at, list_ ? "expected single entity uid or set of entity uids, found template slot"
                              : "expected single entity uid, found template slot");
      }
      Next();
      if (Peek().kind != Tok::kIdent) return Fail(Peek(), "expected a slot name after `?`");
      std::string_view name = Next().text;
      if (name != var) {
        return Fail(at, "expected an entity uid or matching template slot, found ?" + std::string(name) +
                            " instead of ?" + var);
      }
      *slot = std::strcmp(var, "principal") == 0 ? ScopeConstraint::kPrincipalSlot
                                                 : ScopeConstraint::kResourceSlot;
      if (slot_line_ == 0) {
        slot_line_ = at.line;
        slot_col_ = at.col;
      }
      *out = nullptr;
      return true;
    }
    std::string type;
    if (!ParsePath(&type)) return false;
    if (Peek().kind != Tok::kColon2 || Peek(1).kind != Tok::kStr) {
      return Fail(Peek(), "expected an entity uid like Type::\"id\", found " + Describe(Peek()));
    }
    Next();
    std::string id;
    if (!StringLit(Next(), &id)) return false;
    if (action) {
      size_t last = type.rfind("::");
      std::string_view base =
          last == std::string::npos ? std::string_view(type) : std::string_view(type).substr(last + 2);
      if (base != "Action") {
        return Fail(at,
                    "expected an entity uid with type `Action` but got `" + Uid(type, id).ToString() + "`");
      }
    }
    *out = out_->arena.MakeUid(std::move(type), std::move(id));
    return true;
  }

  // Path ::= IDENT {'::' IDENT}; stops before '::' followed by a string.
  bool ParsePath(std::string* out) {
    const Token& first = Peek();
    if (first.kind != Tok::kIdent) return Fail(first, "expected a name, found " + Describe(first));
    if (!CheckName(first)) return false;
    *out = std::string(Next().text);
    while (Peek().kind == Tok::kColon2 && Peek(1).kind == Tok::kIdent) {
      Next();
      if (!CheckName(Peek())) return false;
      *out += "::";
      *out += Next().text;
    }
    return true;
  }

  bool CheckName(const Token& t) {
    if (IsReserved(t.text))
      return Fail(t, "this identifier is reserved and cannot be used: " + std::string(t.text));
    if (t.text == "__cedar") return Fail(t, "The name `__cedar` contains `__cedar`, which is reserved");
    return true;
  }

  bool StringLit(const Token& t, std::string* out) {
    std::string error;
    if (!UnescapeCedar(t.text.substr(1, t.text.size() - 2), false, out, nullptr, &error))
      return Fail(t, error);
    return true;
  }

  // ---- expressions ----

  const Node* ParseExpr() {
    if (++depth_ > 200) {
      Fail(Peek(), "expression nested too deeply");
      return nullptr;
    }
    const Node* r = ParseExprInner();
    --depth_;
    return r;
  }

  const Node* ParseExprInner() {
    if (IsIdent(Peek(), "if")) {
      const Token& at = Next();
      const Node* c = ParseExpr();
      if (!c) return nullptr;
      if (!IsIdent(Peek(), "then")) return FailN(Peek(), "expected `then`, found " + Describe(Peek()));
      Next();
      const Node* a = ParseExpr();
      if (!a) return nullptr;
      if (!IsIdent(Peek(), "else")) return FailN(Peek(), "expected `else`, found " + Describe(Peek()));
      Next();
      const Node* b = ParseExpr();
      if (!b) return nullptr;
      Node* n = NewNode(Op::kIf, at);
      n->kids = {c, a, b};
      return n;
    }
    return ParseOr();
  }

  const Node* FailN(const Token& at, std::string msg) {
    Fail(at, std::move(msg));
    return nullptr;
  }

  const Node* ParseOr() {
    const Node* l = ParseAnd();
    while (l && Peek().kind == Tok::kOr) {
      const Token& at = Next();
      const Node* r = ParseAnd();
      if (!r) return nullptr;
      Node* n = NewNode(Op::kOr, at);
      n->kids = {l, r};
      l = n;
    }
    return l;
  }

  const Node* ParseAnd() {
    const Node* l = ParseRelation();
    while (l && Peek().kind == Tok::kAnd) {
      const Token& at = Next();
      const Node* r = ParseRelation();
      if (!r) return nullptr;
      Node* n = NewNode(Op::kAnd, at);
      n->kids = {l, r};
      l = n;
    }
    return l;
  }

  static bool IsRelOp(const Token& t) {
    switch (t.kind) {
      case Tok::kEq2:
      case Tok::kNe:
      case Tok::kLt:
      case Tok::kLe:
      case Tok::kGt:
      case Tok::kGe:
        return true;
      case Tok::kIdent:
        return t.text == "in" || t.text == "has" || t.text == "like" || t.text == "is";
      default:
        return false;
    }
  }

  const Node* ParseRelation() {
    const Node* l = ParseAdd();
    if (!l) return nullptr;
    const Token& op = Peek();
    if (!IsRelOp(op)) return l;
    Next();
    const Node* result = nullptr;
    if (op.kind == Tok::kIdent && op.text == "has") {
      result = ParseHas(l, op);
    } else if (op.kind == Tok::kIdent && op.text == "like") {
      const Token& pt = Peek();
      if (pt.kind != Tok::kStr)
        return FailN(pt, "expected a string pattern after `like`, found " + Describe(pt));
      Next();
      Node* n = NewNode(Op::kLike, op);
      std::string ignored, error;
      if (!UnescapeCedar(pt.text.substr(1, pt.text.size() - 2), true, &ignored, &n->pattern, &error)) {
        return FailN(pt, error);
      }
      n->kids = {l};
      result = n;
    } else if (op.kind == Tok::kIdent && op.text == "is") {
      std::string type;
      if (!ParsePath(&type)) return nullptr;
      Node* n = NewNode(Op::kIs, op);
      n->name = std::move(type);
      n->kids = {l};
      if (IsIdent(Peek(), "in")) {
        Next();
        const Node* r = ParseAdd();
        if (!r) return nullptr;
        n->op = Op::kIsIn;
        n->kids.push_back(r);
      }
      result = n;
    } else {
      const Node* r = ParseAdd();
      if (!r) return nullptr;
      Op o = Op::kEq;
      switch (op.kind) {
        case Tok::kEq2:
          o = Op::kEq;
          break;
        case Tok::kNe:
          o = Op::kNe;
          break;
        case Tok::kLt:
          o = Op::kLt;
          break;
        case Tok::kLe:
          o = Op::kLe;
          break;
        case Tok::kGt:
          o = Op::kGt;
          break;
        case Tok::kGe:
          o = Op::kGe;
          break;
        default:
          o = Op::kIn;
          break;
      }
      Node* n = NewNode(o, op);
      n->kids = {l, r};
      result = n;
    }
    if (result && IsRelOp(Peek())) {
      return FailN(
          Peek(),
          "multiple relational operators (>, ==, in, etc.) must be used with parentheses to make ordering "
          "explicit");
    }
    return result;
  }

  // `e has a`, `e has "a b"`, and (4.x) `e has a.b.c` = `e has a && e.a has b && e.a.b has c`.
  const Node* ParseHas(const Node* l, const Token& op) {
    std::vector<std::string> path;
    const Token& first = Peek();
    if (first.kind == Tok::kStr) {
      std::string s;
      if (!StringLit(Next(), &s)) return nullptr;
      path.push_back(std::move(s));
    } else if (first.kind == Tok::kIdent) {
      if (!CheckName(first)) return nullptr;
      path.emplace_back(Next().text);
      while (Peek().kind == Tok::kDot && Peek(1).kind == Tok::kIdent) {
        Next();
        if (!CheckName(Peek())) return nullptr;
        path.emplace_back(Next().text);
      }
    } else {
      return FailN(first, "expected an attribute name after `has`, found " + Describe(first));
    }
    const Node* result = nullptr;
    const Node* base = l;
    for (size_t k = 0; k < path.size(); ++k) {
      Node* h = NewNode(Op::kHas, op);
      h->name = path[k];
      h->hash = HashBytes(path[k]);
      h->kids = {base};
      if (result) {
        Node* a = NewNode(Op::kAnd, op);
        a->kids = {result, h};
        result = a;
      } else {
        result = h;
      }
      Node* g = NewNode(Op::kGetAttr, op);
      g->name = path[k];
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

  const Node* ParseAdd() {
    const Node* l = ParseMul();
    while (l && (Peek().kind == Tok::kPlus || Peek().kind == Tok::kMinus)) {
      const Token& at = Next();
      const Node* r = ParseMul();
      if (!r) return nullptr;
      Node* n = NewNode(at.kind == Tok::kPlus ? Op::kAdd : Op::kSub, at);
      n->kids = {l, r};
      l = n;
    }
    return l;
  }

  const Node* ParseMul() {
    const Node* l = ParseUnary();
    while (l && Peek().kind == Tok::kStar) {
      const Token& at = Next();
      const Node* r = ParseUnary();
      if (!r) return nullptr;
      Node* n = NewNode(Op::kMul, at);
      n->kids = {l, r};
      l = n;
    }
    return l;
  }

  const Node* ParseUnary() {
    const Token& first = Peek();
    if (first.kind != Tok::kBang && first.kind != Tok::kMinus) return ParseMember();
    Tok kind = first.kind;
    std::vector<Token> ops;
    while (Peek().kind == kind) ops.push_back(Next());
    if (ops.size() > 4) {
      return FailN(first, kind == Tok::kBang ? "too many occurrences of `!`" : "too many occurrences of `-`");
    }
    if (Peek().kind == Tok::kBang || Peek().kind == Tok::kMinus) {
      return FailN(Peek(), "unexpected token " + Describe(Peek()));
    }
    const Node* inner = nullptr;
    size_t remaining = ops.size();
    if (kind == Tok::kMinus && Peek().kind == Tok::kInt) {
      // The last '-' folds into the integer literal, so -9223372036854775808 is representable.
      const Token& it = Peek();
      uint64_t v = 0;
      if (!ParseUInt(it, &v)) return nullptr;
      if (v > static_cast<uint64_t>(INT64_MAX) + 1) {
        return FailN(it, "integer literal `-" + std::string(it.text) + "` is too large");
      }
      Next();
      // A member access may still follow the literal (`-1.foo`); Cedar applies it to the literal.
      Node* lit = NewNode(Op::kLit, it);
      lit->lit =
          Value::Long(v == static_cast<uint64_t>(INT64_MAX) + 1 ? INT64_MIN : -static_cast<int64_t>(v));
      inner = ParseAccessChain(lit);
      remaining -= 1;
    } else {
      inner = ParseMember();
    }
    if (!inner) return nullptr;
    for (size_t k = 0; k < remaining; ++k) {
      Node* n = NewNode(kind == Tok::kBang ? Op::kNot : Op::kNeg, ops[remaining - 1 - k]);
      n->kids = {inner};
      inner = n;
    }
    return inner;
  }

  bool ParseUInt(const Token& t, uint64_t* out) {
    uint64_t v = 0;
    for (char c : t.text) {
      if (__builtin_mul_overflow(v, 10, &v) ||
          __builtin_add_overflow(v, static_cast<uint64_t>(c - '0'), &v)) {
        return Fail(t, "integer literal `" + std::string(t.text) + "` is too large");
      }
    }
    *out = v;
    return true;
  }

  const Node* ParseMember() {
    const Node* p = ParsePrimary();
    if (!p) return nullptr;
    return ParseAccessChain(p);
  }

  const Node* ParseAccessChain(const Node* base) {
    for (;;) {
      const Token& t = Peek();
      if (t.kind == Tok::kDot) {
        Next();
        const Token& name = Peek();
        if (name.kind != Tok::kIdent)
          return FailN(name, "expected an attribute or method name, found " + Describe(name));
        Next();
        if (Peek().kind == Tok::kLParen) {
          base = ParseMethod(base, name);
          if (!base) return nullptr;
          continue;
        }
        if (!CheckName(name)) return nullptr;
        Node* n = NewNode(Op::kGetAttr, name);
        n->name = std::string(name.text);
        n->hash = HashBytes(n->name);
        n->kids = {base};
        base = n;
      } else if (t.kind == Tok::kLBracket) {
        Next();
        const Token& key = Peek();
        if (key.kind != Tok::kStr)
          return FailN(key, "expected a string literal inside `[` `]`, found " + Describe(key));
        Next();
        Node* n = NewNode(Op::kIndex, key);
        if (!StringLit(key, &n->name)) return nullptr;
        n->hash = HashBytes(n->name);
        n->kids = {base};
        if (!Expect(Tok::kRBracket, "`]`")) return nullptr;
        base = n;
      } else {
        return base;
      }
    }
  }

  bool ParseArgs(std::vector<const Node*>* args) {
    if (!Expect(Tok::kLParen, "`(`")) return false;
    while (Peek().kind != Tok::kRParen) {
      const Node* a = ParseExpr();
      if (!a) return false;
      args->push_back(a);
      if (Peek().kind == Tok::kComma) {
        Next();
      } else if (Peek().kind != Tok::kRParen) {
        return Fail(Peek(), "expected `,` or `)`, found " + Describe(Peek()));
      }
    }
    Next();
    return true;
  }

  const Node* ParseMethod(const Node* recv, const Token& name) {
    std::vector<const Node*> args;
    if (!ParseArgs(&args)) return nullptr;
    struct Builtin {
      const char* name;
      Op op;
      size_t args;
    };
    static const Builtin kBuiltins[] = {
        {"contains", Op::kContains, 1},       {"containsAll", Op::kContainsAll, 1},
        {"containsAny", Op::kContainsAny, 1}, {"isEmpty", Op::kIsEmpty, 0},
        {"hasTag", Op::kHasTag, 1},           {"getTag", Op::kGetTag, 1}};
    for (const Builtin& b : kBuiltins) {
      if (name.text == b.name) {
        if (args.size() != b.args) {
          char buf[160];
          std::snprintf(buf, sizeof buf,
                        "call to `%s` requires exactly %zu argument%s, but got %zu argument%s", b.name,
                        b.args, b.args == 1 ? "" : "s", args.size(), args.size() == 1 ? "" : "s");
          return FailN(name, buf);
        }
        Node* n = NewNode(b.op, name);
        n->kids.push_back(recv);
        for (const Node* a : args) n->kids.push_back(a);
        return n;
      }
    }
    const ExtInfo* ext = FindExt(name.text, true);
    if (!ext) return FailN(name, "`" + std::string(name.text) + "` is not a valid method");
    Node* n = NewNode(Op::kExt, name);
    n->fn = ext->fn;
    n->expected_args = ext->args;
    n->name = ext->name;
    n->kids.push_back(recv);
    for (const Node* a : args) n->kids.push_back(a);
    return n;
  }

  const Node* ParsePrimary() {
    const Token& t = Peek();
    switch (t.kind) {
      case Tok::kInt: {
        uint64_t v = 0;
        if (!ParseUInt(t, &v)) return nullptr;
        if (v > static_cast<uint64_t>(INT64_MAX)) {
          return FailN(t, "integer literal `" + std::string(t.text) + "` is too large");
        }
        Next();
        Node* n = NewNode(Op::kLit, t);
        n->lit = Value::Long(static_cast<int64_t>(v));
        return n;
      }
      case Tok::kStr: {
        Next();
        std::string s;
        if (!StringLit(t, &s)) return nullptr;
        Node* n = NewNode(Op::kLit, t);
        n->lit = Value::Str(out_->arena.Str(std::move(s)));
        return n;
      }
      case Tok::kLParen: {
        Next();
        const Node* e = ParseExpr();
        if (!e) return nullptr;
        if (!Expect(Tok::kRParen, "`)`")) return nullptr;
        return e;
      }
      case Tok::kLBracket: {
        Next();
        Node* n = NewNode(Op::kSetLit, t);
        while (Peek().kind != Tok::kRBracket) {
          const Node* e = ParseExpr();
          if (!e) return nullptr;
          n->kids.push_back(e);
          if (Peek().kind == Tok::kComma) {
            Next();
          } else if (Peek().kind != Tok::kRBracket) {
            return FailN(Peek(), "expected `,` or `]`, found " + Describe(Peek()));
          }
        }
        Next();
        return FoldLiteral(n, &out_->arena);
      }
      case Tok::kLBrace: {
        Next();
        Node* n = NewNode(Op::kRecLit, t);
        while (Peek().kind != Tok::kRBrace) {
          const Token& k = Peek();
          std::string key;
          if (k.kind == Tok::kStr) {
            if (!StringLit(Next(), &key)) return nullptr;
          } else if (k.kind == Tok::kIdent) {
            if (!CheckName(k)) return nullptr;
            key = std::string(Next().text);
          } else {
            return FailN(k, "expected a record key, found " + Describe(k));
          }
          if (std::find(n->keys.begin(), n->keys.end(), key) != n->keys.end()) {
            return FailN(k, "duplicate key `" + key + "` in record literal");
          }
          if (!Expect(Tok::kColon, "`:`")) return nullptr;
          const Node* e = ParseExpr();
          if (!e) return nullptr;
          n->keys.push_back(std::move(key));
          n->kids.push_back(e);
          if (Peek().kind == Tok::kComma) {
            Next();
          } else if (Peek().kind != Tok::kRBrace) {
            return FailN(Peek(), "expected `,` or `}`, found " + Describe(Peek()));
          }
        }
        Next();
        return FoldLiteral(n, &out_->arena);
      }
      case Tok::kIdent:
        break;
      case Tok::kQuestion:
        if (Peek(1).kind == Tok::kIdent && (Peek(1).text == "principal" || Peek(1).text == "resource")) {
          return FailN(t, "found template slot ?" + std::string(Peek(1).text) + " in a `" + clause_ +
                              "` clause (slots are only allowed in the scope)");
        }
        return FailN(t, "unexpected token " + Describe(t));
      default:
        return FailN(t, "unexpected token " + Describe(t));
    }
    // Identifiers: literals, variables, entity uids, extension function calls.
    if (t.text == "true" || t.text == "false") {
      Next();
      Node* n = NewNode(Op::kLit, t);
      n->lit = Value::Bool(t.text == "true");
      return n;
    }
    if (Peek(1).kind == Tok::kColon2) {
      std::string type;
      if (!ParsePath(&type)) return nullptr;
      if (Peek().kind == Tok::kColon2 && Peek(1).kind == Tok::kStr) {
        Next();
        std::string id;
        if (!StringLit(Next(), &id)) return nullptr;
        Node* n = NewNode(Op::kLit, t);
        n->lit = Value::Entity(out_->arena.MakeUid(std::move(type), std::move(id)));
        return n;
      }
      if (Peek().kind == Tok::kLParen) return FailN(t, "`" + type + "` is not a valid function");
      return FailN(Peek(), "expected an entity uid like Type::\"id\", found " + Describe(Peek()));
    }
    if (Peek(1).kind == Tok::kLParen) {
      const Token& name = Next();
      const ExtInfo* ext = FindExt(name.text, false);
      if (!ext) return FailN(name, "`" + std::string(name.text) + "` is not a valid function");
      std::vector<const Node*> args;
      if (!ParseArgs(&args)) return nullptr;
      Node* n = NewNode(Op::kExt, name);
      n->fn = ext->fn;
      n->expected_args = ext->args;
      n->name = ext->name;
      n->kids = std::move(args);
      return FoldLiteral(n, &out_->arena);
    }
    static const char* kVars[] = {"principal", "action", "resource", "context"};
    for (uint8_t k = 0; k < 4; ++k) {
      if (t.text == kVars[k]) {
        Next();
        Node* n = NewNode(Op::kVar, t);
        n->var = k;
        return n;
      }
    }
    if (IsReserved(t.text))
      return FailN(t, "this identifier is reserved and cannot be used: " + std::string(t.text));
    return FailN(t, "invalid variable: " + std::string(t.text));
  }

  std::vector<Token> t_;
  size_t p_ = 0;
  CompiledPolicySet* out_;
  std::vector<CompiledPolicy>* items_;
  const char* clause_ = "when";
  uint32_t slot_line_ = 0, slot_col_ = 0;
  bool list_ = false;  // inside `action in [..]`
  bool failed_ = false;
  ParseError err_{0, 0, ""};
  int depth_ = 0;
  size_t nodes_at_policy_start_ = 0;
  static constexpr size_t kMaxNodesPerPolicy = 200000;
  static constexpr size_t kMaxDepth = 1000;

  // The depth of an expression tree, without recursion (the tree may be deeper than the stack allows).
  static size_t Depth(const Node* root) {
    size_t max_depth = 0;
    std::vector<std::pair<const Node*, size_t>> stack{{root, 1}};
    while (!stack.empty()) {
      auto [n, d] = stack.back();
      stack.pop_back();
      max_depth = std::max(max_depth, d);
      if (max_depth > kMaxDepth) break;
      for (const Node* k : n->kids) stack.emplace_back(k, d + 1);
    }
    return max_depth;
  }
};

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

bool UnescapeCedar(std::string_view body, bool pattern, std::string* out, std::vector<PatternElem>* pat,
                   std::string* error) {
  out->clear();
  auto push = [&](const std::string& piece, bool wildcard) {
    if (!pat) return;
    if (wildcard) {
      // Consecutive wildcards are kept apart (they match as one) so that the policy prints as written.
      pat->push_back({true, ""});
      return;
    }
    if (pat->empty() || pat->back().wildcard) pat->push_back({false, ""});
    pat->back().text += piece;
  };
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c == '*' && pattern) {
      push("", true);
      continue;
    }
    if (c != '\\') {
      std::string one(1, c);
      *out += one;
      push(one, false);
      continue;
    }
    if (i + 1 >= body.size()) {
      *error = "the input `\\` is not a valid escape";
      return false;
    }
    char e = body[++i];
    std::string piece;
    switch (e) {
      case 'n':
        piece = "\n";
        break;
      case 'r':
        piece = "\r";
        break;
      case 't':
        piece = "\t";
        break;
      case '\\':
        piece = "\\";
        break;
      case '0':
        piece = std::string(1, '\0');
        break;
      case '\'':
        piece = "'";
        break;
      case '"':
        piece = "\"";
        break;
      case '*':
        if (!pattern) {
          *error = "the input `\\*` is not a valid escape";
          return false;
        }
        piece = "*";
        break;
      case 'x': {
        // \xHH, ASCII only (HH <= 0x7F).
        auto hex = [](char h) {
          if (h >= '0' && h <= '9') return h - '0';
          if (h >= 'a' && h <= 'f') return h - 'a' + 10;
          if (h >= 'A' && h <= 'F') return h - 'A' + 10;
          return -1;
        };
        if (i + 2 >= body.size() || hex(body[i + 1]) < 0 || hex(body[i + 2]) < 0 || hex(body[i + 1]) > 7) {
          *error = "the input `\\x` is not a valid escape";
          return false;
        }
        piece = std::string(1, static_cast<char>(hex(body[i + 1]) * 16 + hex(body[i + 2])));
        i += 2;
        break;
      }
      case 'u': {
        if (i + 1 >= body.size() || body[i + 1] != '{') {
          *error = "the input `\\u` is not a valid escape";
          return false;
        }
        size_t close = body.find('}', i + 2);
        if (close == std::string_view::npos || close == i + 2 || close - (i + 2) > 6) {
          *error = "the input `\\u` is not a valid escape";
          return false;
        }
        uint32_t cp = 0;
        for (size_t k = i + 2; k < close; ++k) {
          char h = body[k];
          int d = (h >= '0' && h <= '9')   ? h - '0'
                  : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                  : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                           : -1;
          if (d < 0) {
            *error = "the input `\\u` is not a valid escape";
            return false;
          }
          cp = cp * 16 + static_cast<uint32_t>(d);
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          *error =
              "the input `\\u{" + std::string(body.substr(i + 2, close - i - 2)) + "}` is not a valid escape";
          return false;
        }
        AppendUtf8(cp, &piece);
        i = close;
        break;
      }
      default:
        *error = std::string("the input `\\") + e + "` is not a valid escape";
        return false;
    }
    // Only `\*` is a literal star in a pattern; a star written any other way (`\x2a`, `\u{2a}`) is a
    // wildcard, as in the reference.
    if (pattern && piece == "*" && e != '*') {
      *out += piece;
      push("", true);
      continue;
    }
    *out += piece;
    push(piece, false);
  }
  return true;
}

bool LookupExtension(std::string_view name, ExtFn* fn, uint8_t* args) {
  for (const ExtInfo& e : kExtFns) {
    if (name == e.name) {
      *fn = e.fn;
      *args = e.args;
      return true;
    }
  }
  return false;
}

void CompiledPolicySet::BuildIndex() {
  by_action.clear();
  any_action.clear();
  any_approval = false;
  for (uint32_t k = 0; k < policies.size(); ++k) {
    CompiledPolicy& p = policies[k];
    p.requires_approval = false;
    if (!p.forbid) {
      for (const auto& [key, value] : p.annotations) {
        if (key == "require_approval") p.requires_approval = true;
      }
    }
    any_approval = any_approval || p.requires_approval;
    const ScopeConstraint& a = policies[k].action;
    if (a.kind == ScopeConstraint::kEq) {
      by_action[a.uid->hash].push_back(k);
    } else {
      any_action.push_back(k);
    }
  }
}

const char* SlotName(ScopeConstraint::Slot slot) {
  return slot == ScopeConstraint::kResourceSlot ? "?resource" : "?principal";
}

bool IsTemplate(const CompiledPolicy& p) {
  return p.principal.slot != ScopeConstraint::kNoSlot || p.resource.slot != ScopeConstraint::kNoSlot;
}

Status ParsePolicyText(std::string_view text, CompiledPolicySet* set, std::vector<CompiledPolicy>* out) {
  std::vector<Token> tokens;
  ParseError err{0, 0, ""};
  if (!Lexer(text).Run(&tokens, &err)) {
    return InvalidArgument(std::to_string(err.line) + ":" + std::to_string(err.col) + ": " + err.message);
  }
  Parser parser(std::move(tokens), set, out);
  if (!parser.ParseAll(&err)) {
    return InvalidArgument(std::to_string(err.line) + ":" + std::to_string(err.col) + ": " + err.message);
  }
  return OkStatus();
}

Result<std::shared_ptr<CompiledPolicySet>> ParsePolicySet(std::string_view text) {
  auto set = std::make_shared<CompiledPolicySet>();
  std::vector<CompiledPolicy> items;
  GOVERN_RETURN_IF_ERROR(ParsePolicyText(text, set.get(), &items));
  for (CompiledPolicy& p : items) {
    if (IsTemplate(p)) {
      return InvalidArgument(std::to_string(p.slot_line) + ":" + std::to_string(p.slot_col) +
                             ": static policy set includes a template");
    }
    p.id = "policy" + std::to_string(set->policies.size());
    set->policies.push_back(std::move(p));
  }
  set->BuildIndex();
  return set;
}

}  // namespace govern::policy
