// Filter parsing (a small lexer and a recursive-descent parser with RFC 7644's precedence) and evaluation.
#include "scim/filter.h"

#include <cmath>
#include <utility>

// Returns the Error of `expr` when it is not ok.
#define GOVERN_SCIM_TRY(expr) \
  do {                        \
    Error e_ = (expr);        \
    if (!e_.ok()) return e_;  \
  } while (false)

namespace govern::scim {

std::string AttrPath::ToString() const {
  std::string out;
  if (extension != nullptr) {
    out = extension->id;
    if (attr != nullptr) out += ":";
  }
  if (attr != nullptr) out += attr->name;
  if (sub != nullptr) out += "." + sub->name;
  return out;
}

Error ResolvePath(const PathScope& scope, std::string_view text, AttrPath* out, bool for_filter) {
  auto fail = [&](std::string detail) {
    return for_filter ? InvalidFilter(std::move(detail)) : InvalidPath(std::move(detail));
  };
  *out = AttrPath{};
  if (text.empty()) return fail("empty attribute path");
  if (scope.parent != nullptr) {
    // Inside brackets: a sub-attribute of the parent, optionally written with the parent's name.
    std::string_view name = text;
    size_t dot = text.find('.');
    if (dot != std::string_view::npos && EqualsIgnoreCase(text.substr(0, dot), scope.parent->name)) {
      name = text.substr(dot + 1);
    }
    const Attribute* a = scope.parent->Sub(name);
    if (a == nullptr)
      return fail("unknown sub-attribute \"" + std::string(text) + "\" of " + scope.parent->name);
    out->attr = a;
    return Error::Ok();
  }
  const ResourceType& rt = *scope.type;
  std::string_view rest = text;
  const Schema* schema = nullptr;
  if (text.find(':') != std::string_view::npos) {
    if (const Schema* whole = rt.FindSchema(text)) {
      if (whole == rt.core) return fail("a path cannot name the whole core schema");
      out->extension = whole;
      return Error::Ok();
    }
    size_t colon = text.rfind(':');
    schema = rt.FindSchema(text.substr(0, colon));
    if (schema == nullptr) return fail("unknown schema in \"" + std::string(text) + "\"");
    rest = text.substr(colon + 1);
  }
  std::string_view name = rest, sub;
  size_t dot = rest.find('.');
  if (dot != std::string_view::npos) {
    name = rest.substr(0, dot);
    sub = rest.substr(dot + 1);
    if (sub.empty() || sub.find('.') != std::string_view::npos) {
      return fail("malformed attribute path \"" + std::string(text) + "\"");
    }
  }
  const Attribute* a = nullptr;
  if (schema == nullptr || schema == rt.core) {
    a = rt.FindCore(name);
  } else {
    a = schema->Find(name);
    out->extension = schema;
  }
  if (a == nullptr) return fail("unknown attribute \"" + std::string(text) + "\"");
  out->attr = a;
  if (!sub.empty()) {
    if (a->type != Type::kComplex) return fail(a->name + " has no sub-attributes");
    out->sub = a->Sub(sub);
    if (out->sub == nullptr) return fail("unknown sub-attribute \"" + std::string(text) + "\"");
  }
  return Error::Ok();
}

namespace {

const char* OpName(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return "eq";
    case CompareOp::kNe:
      return "ne";
    case CompareOp::kCo:
      return "co";
    case CompareOp::kSw:
      return "sw";
    case CompareOp::kEw:
      return "ew";
    case CompareOp::kGt:
      return "gt";
    case CompareOp::kGe:
      return "ge";
    case CompareOp::kLt:
      return "lt";
    case CompareOp::kLe:
      return "le";
  }
  return "eq";
}

bool ParseOp(std::string_view word, CompareOp* op) {
  static const std::pair<const char*, CompareOp> kOps[] = {
      {"eq", CompareOp::kEq}, {"ne", CompareOp::kNe}, {"co", CompareOp::kCo},
      {"sw", CompareOp::kSw}, {"ew", CompareOp::kEw}, {"gt", CompareOp::kGt},
      {"ge", CompareOp::kGe}, {"lt", CompareOp::kLt}, {"le", CompareOp::kLe}};
  for (const auto& [name, value] : kOps) {
    if (EqualsIgnoreCase(word, name)) {
      *op = value;
      return true;
    }
  }
  return false;
}

struct Token {
  enum Kind { kEnd, kOpen, kClose, kOpenBracket, kCloseBracket, kString, kWord } kind = kEnd;
  std::string_view text;  // kWord: the word; kString: the literal with its quotes
  size_t pos = 0;
};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class Parser {
 public:
  Parser(const ResourceType& type, std::string_view text) : type_(type), text_(text) {}

  Error Tokenize() {
    size_t i = 0;
    while (i < text_.size()) {
      char c = text_[i];
      if (IsSpace(c)) {
        ++i;
        continue;
      }
      Token t;
      t.pos = i;
      if (c == '(' || c == ')' || c == '[' || c == ']') {
        t.kind = c == '('   ? Token::kOpen
                 : c == ')' ? Token::kClose
                 : c == '[' ? Token::kOpenBracket
                            : Token::kCloseBracket;
        t.text = text_.substr(i, 1);
        ++i;
      } else if (c == '"') {
        size_t j = i + 1;
        while (j < text_.size() && text_[j] != '"') j += text_[j] == '\\' ? 2 : 1;
        if (j >= text_.size()) return InvalidFilter("unterminated string at offset " + std::to_string(i));
        t.kind = Token::kString;
        t.text = text_.substr(i, j + 1 - i);
        i = j + 1;
      } else {
        size_t j = i;
        while (j < text_.size() && !IsSpace(text_[j]) && text_[j] != '(' && text_[j] != ')' &&
               text_[j] != '[' && text_[j] != ']' && text_[j] != '"') {
          ++j;
        }
        t.kind = Token::kWord;
        t.text = text_.substr(i, j - i);
        i = j;
      }
      tokens_.push_back(t);
    }
    tokens_.push_back(Token{Token::kEnd, {}, text_.size()});
    return Error::Ok();
  }

  Error ParseAll(const Attribute* parent, std::unique_ptr<Filter>* out) {
    GOVERN_SCIM_TRY(ParseOr(parent, out, 0));
    if (Peek().kind != Token::kEnd) return Unexpected("end of filter");
    return Error::Ok();
  }

 private:
  const Token& Peek() const { return tokens_[pos_]; }
  const Token& Next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  bool PeekWord(const char* word) const {
    return Peek().kind == Token::kWord && EqualsIgnoreCase(Peek().text, word);
  }

  Error Unexpected(const char* wanted) const {
    const Token& t = Peek();
    std::string got = t.kind == Token::kEnd ? "end of filter" : "\"" + std::string(t.text) + "\"";
    return InvalidFilter("expected " + std::string(wanted) + " at offset " + std::to_string(t.pos) +
                         ", found " + got);
  }

  Error ParseOr(const Attribute* parent, std::unique_ptr<Filter>* out, int depth) {
    if (depth > kMaxFilterDepth) return InvalidFilter("filter nested too deeply");
    GOVERN_SCIM_TRY(ParseAnd(parent, out, depth));
    while (PeekWord("or")) {
      Next();
      std::unique_ptr<Filter> right;
      GOVERN_SCIM_TRY(ParseAnd(parent, &right, depth));
      auto node = std::make_unique<Filter>();
      node->kind = Filter::Kind::kOr;
      node->left = std::move(*out);
      node->right = std::move(right);
      *out = std::move(node);
    }
    return Error::Ok();
  }

  Error ParseAnd(const Attribute* parent, std::unique_ptr<Filter>* out, int depth) {
    GOVERN_SCIM_TRY(ParseUnary(parent, out, depth));
    while (PeekWord("and")) {
      Next();
      std::unique_ptr<Filter> right;
      GOVERN_SCIM_TRY(ParseUnary(parent, &right, depth));
      auto node = std::make_unique<Filter>();
      node->kind = Filter::Kind::kAnd;
      node->left = std::move(*out);
      node->right = std::move(right);
      *out = std::move(node);
    }
    return Error::Ok();
  }

  Error ParseUnary(const Attribute* parent, std::unique_ptr<Filter>* out, int depth) {
    if (PeekWord("not")) {
      Next();
      if (Peek().kind != Token::kOpen) return Unexpected("\"(\" after not");
      Next();
      std::unique_ptr<Filter> inner;
      GOVERN_SCIM_TRY(ParseOr(parent, &inner, depth + 1));
      if (Peek().kind != Token::kClose) return Unexpected("\")\"");
      Next();
      auto node = std::make_unique<Filter>();
      node->kind = Filter::Kind::kNot;
      node->left = std::move(inner);
      *out = std::move(node);
      return Error::Ok();
    }
    if (Peek().kind == Token::kOpen) {
      Next();
      GOVERN_SCIM_TRY(ParseOr(parent, out, depth + 1));
      if (Peek().kind != Token::kClose) return Unexpected("\")\"");
      Next();
      return Error::Ok();
    }
    return ParseAttrExp(parent, out, depth);
  }

  Error ParseAttrExp(const Attribute* parent, std::unique_ptr<Filter>* out, int depth) {
    if (Peek().kind != Token::kWord) return Unexpected("an attribute path");
    std::string_view path_text = Next().text;
    if (Peek().kind == Token::kOpenBracket) {
      if (parent != nullptr) return InvalidFilter("value filters cannot nest");
      Next();
      AttrPath path;
      GOVERN_SCIM_TRY(ResolvePath(PathScope{&type_, nullptr}, path_text, &path, true));
      if (path.attr == nullptr || path.sub != nullptr || path.attr->type != Type::kComplex) {
        return InvalidFilter("\"" + std::string(path_text) +
                             "\" is not a complex attribute: it cannot take [filter]");
      }
      std::unique_ptr<Filter> inner;
      GOVERN_SCIM_TRY(ParseOr(path.attr, &inner, depth + 1));
      if (Peek().kind != Token::kCloseBracket) return Unexpected("\"]\"");
      Next();
      // Entra's form: attr[filter].sub op value == attr[filter and sub op value].
      if (Peek().kind == Token::kWord && !Peek().text.empty() && Peek().text[0] == '.') {
        std::string_view sub_name = Next().text.substr(1);
        std::unique_ptr<Filter> leaf;
        GOVERN_SCIM_TRY(ParseOperator(PathScope{&type_, path.attr}, sub_name, &leaf));
        auto both = std::make_unique<Filter>();
        both->kind = Filter::Kind::kAnd;
        both->left = std::move(inner);
        both->right = std::move(leaf);
        inner = std::move(both);
      }
      auto node = std::make_unique<Filter>();
      node->kind = Filter::Kind::kValuePath;
      node->path = path;
      node->left = std::move(inner);
      *out = std::move(node);
      return Error::Ok();
    }
    return ParseOperator(PathScope{&type_, parent}, path_text, out);
  }

  // attrPath SP "pr" / attrPath SP compareOp SP compValue, with the path already read.
  Error ParseOperator(const PathScope& scope, std::string_view path_text, std::unique_ptr<Filter>* out) {
    AttrPath path;
    GOVERN_SCIM_TRY(ResolvePath(scope, path_text, &path, true));
    if (path.attr == nullptr) return InvalidFilter("a filter cannot compare a whole extension");
    if (path.sub == nullptr && path.attr->type == Type::kComplex) {
      if (!path.attr->multi_valued || path.attr->Sub("value") == nullptr) {
        // pr on a complex attribute is fine; comparisons need a sub-attribute.
        if (!PeekWord("pr"))
          return InvalidFilter(path.attr->name + " is complex: compare one of its sub-attributes");
      } else {
        path.sub = path.attr->Sub("value");
      }
    }
    if (Peek().kind != Token::kWord) return Unexpected("an operator");
    auto node = std::make_unique<Filter>();
    node->path = path;
    if (PeekWord("pr")) {
      Next();
      node->kind = Filter::Kind::kPresent;
      *out = std::move(node);
      return Error::Ok();
    }
    CompareOp op;
    if (!ParseOp(Peek().text, &op)) return Unexpected("an operator (eq ne co sw ew gt ge lt le pr)");
    Next();
    node->kind = Filter::Kind::kCompare;
    node->op = op;
    const Token& v = Peek();
    if (v.kind == Token::kString) {
      node->value = nlohmann::json::parse(v.text, nullptr, false);
      if (node->value.is_discarded() || !node->value.is_string())
        return InvalidFilter("malformed string " + std::string(v.text));
    } else if (v.kind == Token::kWord) {
      if (EqualsIgnoreCase(v.text, "true")) {
        node->value = true;
      } else if (EqualsIgnoreCase(v.text, "false")) {
        node->value = false;
      } else if (EqualsIgnoreCase(v.text, "null")) {
        node->value = nullptr;
      } else {
        node->value = nlohmann::json::parse(v.text, nullptr, false);
        if (node->value.is_discarded() || !node->value.is_number()) {
          return InvalidFilter("expected a value (\"string\", number, true, false, null) at offset " +
                               std::to_string(v.pos));
        }
      }
    } else {
      return Unexpected("a comparison value");
    }
    Next();
    GOVERN_SCIM_TRY(CheckTypes(*path.Leaf(), op, &node->value));
    *out = std::move(node);
    return Error::Ok();
  }

  static Error CheckTypes(const Attribute& leaf, CompareOp op, nlohmann::json* value) {
    bool ordering =
        op == CompareOp::kGt || op == CompareOp::kGe || op == CompareOp::kLt || op == CompareOp::kLe;
    bool substring = op == CompareOp::kCo || op == CompareOp::kSw || op == CompareOp::kEw;
    if (value->is_null()) {
      if (op != CompareOp::kEq && op != CompareOp::kNe)
        return InvalidFilter("only eq and ne compare with null");
      return Error::Ok();
    }
    switch (leaf.type) {
      case Type::kBoolean:
        if (ordering || substring)
          return InvalidFilter(std::string(OpName(op)) + " does not apply to boolean " + leaf.name);
        // Entra and others write booleans as strings.
        if (value->is_string() && EqualsIgnoreCase(value->get<std::string>(), "true")) *value = true;
        if (value->is_string() && EqualsIgnoreCase(value->get<std::string>(), "false")) *value = false;
        if (!value->is_boolean()) return InvalidFilter(leaf.name + " is boolean: compare with true or false");
        return Error::Ok();
      case Type::kBinary:
        if (ordering)
          return InvalidFilter(std::string(OpName(op)) + " does not apply to binary " + leaf.name);
        [[fallthrough]];
      case Type::kString:
      case Type::kReference:
      case Type::kDateTime:
        if (!value->is_string()) return InvalidFilter(leaf.name + " is a string: compare with a \"string\"");
        return Error::Ok();
      case Type::kDecimal:
      case Type::kInteger:
        if (substring)
          return InvalidFilter(std::string(OpName(op)) + " does not apply to number " + leaf.name);
        if (!value->is_number()) return InvalidFilter(leaf.name + " is a number");
        return Error::Ok();
      case Type::kComplex:
        return InvalidFilter(leaf.name + " is complex: compare one of its sub-attributes");
    }
    return Error::Ok();
  }

  const ResourceType& type_;
  std::string_view text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

Error Parse(const ResourceType& type, const Attribute* parent, std::string_view text,
            std::unique_ptr<Filter>* out) {
  if (text.size() > kMaxFilterLength)
    return InvalidFilter("filter longer than " + std::to_string(kMaxFilterLength) + " bytes");
  Parser p(type, text);
  Error e = p.Tokenize();
  if (!e.ok()) return e;
  return p.ParseAll(parent, out);
}

bool IsPresent(const nlohmann::json& v) {
  if (v.is_null()) return false;
  if (v.is_string()) return !v.get_ref<const std::string&>().empty();
  if (v.is_array() || v.is_object()) return !v.empty();
  return true;
}

bool CompareOne(const Attribute& leaf, CompareOp op, const nlohmann::json& have, const nlohmann::json& want) {
  if (have.is_null()) return false;
  if (op == CompareOp::kEq || op == CompareOp::kNe) {
    if (have.is_boolean() || want.is_boolean()) return have == want;
    if (have.is_number() && want.is_number()) return have.get<double>() == want.get<double>();
    return have.is_string() && want.is_string() && CompareValues(leaf, have, want) == 0;
  }
  if (op == CompareOp::kCo || op == CompareOp::kSw || op == CompareOp::kEw) {
    if (!have.is_string() || !want.is_string()) return false;
    std::string h = have.get<std::string>(), w = want.get<std::string>();
    if (!leaf.case_exact) {
      h = Lower(h);
      w = Lower(w);
    }
    if (op == CompareOp::kCo) return h.find(w) != std::string::npos;
    if (op == CompareOp::kSw) return h.compare(0, w.size(), w) == 0 && h.size() >= w.size();
    return h.size() >= w.size() && h.compare(h.size() - w.size(), w.size(), w) == 0;
  }
  if ((have.is_number() != want.is_number()) || (have.is_string() != want.is_string())) return false;
  if (!have.is_number() && !have.is_string()) return false;
  int c = CompareValues(leaf, have, want);
  switch (op) {
    case CompareOp::kGt:
      return c > 0;
    case CompareOp::kGe:
      return c >= 0;
    case CompareOp::kLt:
      return c < 0;
    case CompareOp::kLe:
      return c <= 0;
    default:
      return false;
  }
}

void AppendOp(std::string* out, const Filter& f);

}  // namespace

std::vector<const nlohmann::json*> ValuesAt(const AttrPath& path, const nlohmann::json& resource) {
  std::vector<const nlohmann::json*> out;
  const nlohmann::json* container = &resource;
  if (path.extension != nullptr) {
    container = FindMember(resource, path.extension->id);
    if (container == nullptr) return out;
    if (path.attr == nullptr) {
      out.push_back(container);
      return out;
    }
  }
  const nlohmann::json* v = FindMember(*container, path.attr->name);
  if (v == nullptr || v->is_null()) return out;
  const Attribute* sub = path.sub;
  if (sub == nullptr && path.attr->type == Type::kComplex && path.attr->multi_valued)
    sub = path.attr->Sub("value");
  auto take = [&](const nlohmann::json& element) {
    if (sub != nullptr && element.is_object()) {
      const nlohmann::json* s = FindMember(element, sub->name);
      if (s != nullptr && !s->is_null()) out.push_back(s);
    } else if (sub == nullptr) {
      out.push_back(&element);
    }
  };
  if (v->is_array()) {
    for (const nlohmann::json& element : *v) take(element);
  } else {
    take(*v);
  }
  return out;
}

int CompareValues(const Attribute& attr, const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number() && b.is_number()) {
    double x = a.get<double>(), y = b.get<double>();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_boolean() && b.is_boolean())
    return static_cast<int>(a.get<bool>()) - static_cast<int>(b.get<bool>());
  if (a.is_string() && b.is_string()) {
    const std::string& x = a.get_ref<const std::string&>();
    const std::string& y = b.get_ref<const std::string&>();
    int c = attr.case_exact ? x.compare(y) : Lower(x).compare(Lower(y));
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  // Mixed types: order by JSON type so sorting is at least total.
  return static_cast<int>(a.type()) - static_cast<int>(b.type());
}

bool Matches(const Filter& f, const nlohmann::json& resource) {
  switch (f.kind) {
    case Filter::Kind::kAnd:
      return Matches(*f.left, resource) && Matches(*f.right, resource);
    case Filter::Kind::kOr:
      return Matches(*f.left, resource) || Matches(*f.right, resource);
    case Filter::Kind::kNot:
      return !Matches(*f.left, resource);
    case Filter::Kind::kPresent: {
      AttrPath p = f.path;
      for (const nlohmann::json* v : ValuesAt(p, resource)) {
        if (IsPresent(*v)) return true;
      }
      return false;
    }
    case Filter::Kind::kValuePath: {
      const nlohmann::json* container = &resource;
      if (f.path.extension != nullptr) container = FindMember(resource, f.path.extension->id);
      if (container == nullptr) return false;
      const nlohmann::json* v = FindMember(*container, f.path.attr->name);
      if (v == nullptr) return false;
      if (v->is_object()) return Matches(*f.left, *v);
      if (!v->is_array()) return false;
      for (const nlohmann::json& element : *v) {
        if (element.is_object() && Matches(*f.left, element)) return true;
      }
      return false;
    }
    case Filter::Kind::kCompare: {
      std::vector<const nlohmann::json*> values = ValuesAt(f.path, resource);
      if (f.value.is_null()) {
        bool any = false;
        for (const nlohmann::json* v : values) any = any || IsPresent(*v);
        return f.op == CompareOp::kEq ? !any : any;
      }
      const Attribute& leaf = *f.path.Leaf();
      if (f.op == CompareOp::kNe) {
        // ne is "not equal": true when no value equals (an absent attribute included).
        for (const nlohmann::json* v : values) {
          if (CompareOne(leaf, CompareOp::kEq, *v, f.value)) return false;
        }
        return true;
      }
      for (const nlohmann::json* v : values) {
        if (CompareOne(leaf, f.op, *v, f.value)) return true;
      }
      return false;
    }
  }
  return false;
}

bool MatchesElement(const Filter& filter, const nlohmann::json& element) { return Matches(filter, element); }

Error ParseFilter(const ResourceType& type, std::string_view text, std::unique_ptr<Filter>* out) {
  return Parse(type, nullptr, text, out);
}

Error ParseValueFilter(const ResourceType& type, const Attribute& parent, std::string_view text,
                       std::unique_ptr<Filter>* out) {
  return Parse(type, &parent, text, out);
}

namespace {
void AppendOp(std::string* out, const Filter& f) {
  switch (f.kind) {
    case Filter::Kind::kAnd:
    case Filter::Kind::kOr:
      *out += "(";
      AppendOp(out, *f.left);
      *out += f.kind == Filter::Kind::kAnd ? " and " : " or ";
      AppendOp(out, *f.right);
      *out += ")";
      return;
    case Filter::Kind::kNot:
      *out += "not (";
      AppendOp(out, *f.left);
      *out += ")";
      return;
    case Filter::Kind::kPresent:
      *out += f.path.ToString() + " pr";
      return;
    case Filter::Kind::kValuePath:
      *out += f.path.ToString() + "[";
      AppendOp(out, *f.left);
      *out += "]";
      return;
    case Filter::Kind::kCompare:
      *out += f.path.ToString() + " " + OpName(f.op) + " " + f.value.dump();
      return;
  }
}
}  // namespace

std::string Filter::ToString() const {
  std::string out;
  AppendOp(&out, *this);
  return out;
}

}  // namespace govern::scim
