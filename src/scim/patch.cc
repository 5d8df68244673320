// The PATCH engine: one operation at a time on a copy, committed when all succeeded.
#include "scim/patch.h"

#include <memory>
#include <string>
#include <utility>

#include "scim/filter.h"
#include "scim/resource.h"

namespace govern::scim {

namespace {

enum class Op { kAdd, kReplace, kRemove };

struct Target {
  AttrPath path;                          // attr (and sub) or a whole extension
  std::unique_ptr<Filter> filter;         // attr[filter]
  const Attribute* filter_sub = nullptr;  // attr[filter].sub
};

Error ParseTarget(const ResourceType& type, std::string_view text, Target* out) {
  size_t open = text.find('[');
  if (open == std::string_view::npos) return ResolvePath(PathScope{&type, nullptr}, text, &out->path);
  size_t close = text.rfind(']');
  if (close == std::string_view::npos || close < open)
    return InvalidPath("unbalanced [ in path \"" + std::string(text) + "\"");
  Error e = ResolvePath(PathScope{&type, nullptr}, text.substr(0, open), &out->path);
  if (!e.ok()) return e;
  const Attribute* attr = out->path.attr;
  if (attr == nullptr || out->path.sub != nullptr || attr->type != Type::kComplex || !attr->multi_valued) {
    return InvalidPath("a value filter needs a multi-valued complex attribute: \"" + std::string(text) +
                       "\"");
  }
  e = ParseValueFilter(type, *attr, text.substr(open + 1, close - open - 1), &out->filter);
  if (!e.ok()) return InvalidPath("path \"" + std::string(text) + "\": " + e.detail);
  std::string_view rest = text.substr(close + 1);
  if (!rest.empty()) {
    if (rest.size() < 2 || rest[0] != '.') return InvalidPath("malformed path \"" + std::string(text) + "\"");
    out->filter_sub = attr->Sub(rest.substr(1));
    if (out->filter_sub == nullptr)
      return InvalidPath("unknown sub-attribute in \"" + std::string(text) + "\"");
  }
  return Error::Ok();
}

// The object holding the target attribute: the resource, or its extension object (made when `create`).
nlohmann::json* Container(const AttrPath& path, nlohmann::json* resource, bool create) {
  if (path.extension == nullptr) return resource;
  nlohmann::json* ext = FindMember(*resource, path.extension->id);
  if (ext == nullptr || !ext->is_object()) {
    if (!create) return nullptr;
    (*resource)[path.extension->id] = nlohmann::json::object();
    ext = &(*resource)[path.extension->id];
  }
  return ext;
}

// Collects "a eq v" terms of a conjunction; false when the filter is anything else.
bool EqualityTerms(const Filter& f, nlohmann::json* into) {
  if (f.kind == Filter::Kind::kAnd) return EqualityTerms(*f.left, into) && EqualityTerms(*f.right, into);
  if (f.kind != Filter::Kind::kCompare || f.op != CompareOp::kEq || f.value.is_null()) return false;
  (*into)[f.path.attr->name] = f.value;
  return true;
}

bool SameValue(const Attribute& attr, const nlohmann::json& a, const nlohmann::json& b) {
  if (!a.is_object() || !b.is_object()) return a == b;
  const Attribute* value = attr.Sub("value");
  const nlohmann::json* x = FindMember(a, "value");
  const nlohmann::json* y = FindMember(b, "value");
  if (value == nullptr || x == nullptr || y == nullptr) return a == b;
  if (CompareValues(*value, *x, *y) != 0) return false;
  const nlohmann::json* tx = FindMember(a, "type");
  const nlohmann::json* ty = FindMember(b, "type");
  if (tx == nullptr || ty == nullptr) return true;
  return *tx == *ty;
}

// When `element` became primary, the others stop being primary (RFC 7643 section 2.4).
void OnePrimary(nlohmann::json* list, const nlohmann::json* keep) {
  for (nlohmann::json& e : *list) {
    if (&e != keep && e.is_object() && e.contains("primary")) e["primary"] = false;
  }
}

bool IsPrimary(const nlohmann::json& e) {
  return e.is_object() && e.contains("primary") && e["primary"].is_boolean() && e["primary"].get<bool>();
}

class Patcher {
 public:
  Patcher(const ResourceType& type, nlohmann::json* resource) : type_(type), res_(resource) {}

  Error Apply(Op op, const nlohmann::json* path, const nlohmann::json* value) {
    if (path == nullptr || (path->is_string() && path->get_ref<const std::string&>().empty())) {
      if (op == Op::kRemove) return NoTarget("remove needs a path");
      if (value == nullptr || !value->is_object())
        return InvalidValue("add and replace without a path need an object value");
      return ApplyObject(op, nullptr, *value);
    }
    if (!path->is_string()) return InvalidPath("path must be a string");
    Target t;
    Error e = ParseTarget(type_, path->get<std::string>(), &t);
    if (!e.ok()) return e;
    if (op != Op::kRemove && value == nullptr)
      return InvalidValue(std::string(op == Op::kAdd ? "add" : "replace") + " needs a value");
    return ApplyTarget(op, t, value);
  }

 private:
  // A path-less value (or a whole extension's value): each member names an attribute.
  Error ApplyObject(Op op, const Schema* extension, const nlohmann::json& value) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string& key = it.key();
      if (extension == nullptr && EqualsIgnoreCase(key, "schemas")) continue;
      Target t;
      if (extension == nullptr) {
        // Entra's keys may be paths ("name.givenName", "urn:...:User:department", "emails[type eq
        // \"work\"].value").
        Error e = ParseTarget(type_, key, &t);
        if (!e.ok()) return e;
      } else {
        t.path.extension = extension;
        t.path.attr = extension->Find(key);
        if (t.path.attr == nullptr) return InvalidPath("unknown attribute " + extension->id + ":" + key);
      }
      Error e = ApplyTarget(op, t, &*it);
      if (!e.ok()) return e;
    }
    return Error::Ok();
  }

  Error CheckMutable(const Attribute& attr, Op op, const nlohmann::json* current,
                     const nlohmann::json* value) {
    if (attr.mutability == Mutability::kReadOnly) {
      if (current != nullptr && value != nullptr && *current == *value) return Error::Ok();
      return MutabilityError(attr.name + " is readOnly");
    }
    if (attr.mutability == Mutability::kImmutable && current != nullptr) {
      if (op != Op::kRemove && value != nullptr && *current == *value) return Error::Ok();
      return MutabilityError(attr.name + " is immutable");
    }
    return Error::Ok();
  }

  Error ApplyTarget(Op op, const Target& t, const nlohmann::json* value) {
    if (t.path.attr == nullptr) {  // a whole extension
      if (op == Op::kRemove) {
        EraseMember(*res_, t.path.extension->id);
        return Error::Ok();
      }
      if (!value->is_object()) return InvalidValue(t.path.extension->id + " must be an object");
      if (op == Op::kReplace) (*res_)[t.path.extension->id] = nlohmann::json::object();
      return ApplyObject(op, t.path.extension, *value);
    }
    const Attribute& attr = *t.path.attr;
    nlohmann::json* container = Container(t.path, res_, op != Op::kRemove);
    if (container == nullptr) return Error::Ok();  // removing from an absent extension
    nlohmann::json* current = FindMember(*container, attr.name);
    if (t.filter != nullptr) return ApplyFiltered(op, t, container, current, value);

    if (t.path.sub != nullptr) {
      const Attribute& sub = *t.path.sub;
      nlohmann::json v;
      if (value != nullptr) {
        Error e = NormalizeValue(sub, *value, true, false, &v);
        if (!e.ok()) return e;
      }
      if (attr.mutability == Mutability::kReadOnly) return MutabilityError(attr.name + " is readOnly");
      if (attr.multi_valued) {
        if (current == nullptr || !current->is_array() || current->empty()) {
          if (op == Op::kRemove) return Error::Ok();
          return NoTarget(attr.name + " has no values to set " + sub.name + " on");
        }
        for (nlohmann::json& element : *current) {
          Error e = SetSub(op, sub, &element, value != nullptr ? &v : nullptr);
          if (!e.ok()) return e;
        }
        return Error::Ok();
      }
      if (current == nullptr || !current->is_object()) {
        if (op == Op::kRemove) return Error::Ok();
        (*container)[attr.name] = nlohmann::json::object();
        current = &(*container)[attr.name];
      }
      return SetSub(op, sub, current, value != nullptr ? &v : nullptr);
    }

    if (op == Op::kRemove) {
      if (attr.required) return InvalidValue(attr.name + " is required and cannot be removed");
      if (current == nullptr) return Error::Ok();
      if (attr.multi_valued && value != nullptr && !value->is_null()) {
        // Entra: remove the listed values (matched by their "value").
        nlohmann::json listed;
        Error e = NormalizeValue(attr, *value, false, true, &listed);
        if (!e.ok()) return e;
        if (!current->is_array()) return Error::Ok();
        nlohmann::json kept = nlohmann::json::array();
        for (nlohmann::json& element : *current) {
          bool drop = false;
          for (const nlohmann::json& l : listed) drop = drop || SameValue(attr, element, l);
          if (drop) {
            Error m = CheckMutable(attr, op, &element, nullptr);
            if (!m.ok()) return m;
          } else {
            kept.push_back(std::move(element));
          }
        }
        *current = std::move(kept);
        return Error::Ok();
      }
      Error m = CheckMutable(attr, op, current, nullptr);
      if (!m.ok()) return m;
      EraseMember(*container, attr.name);
      return Error::Ok();
    }

    nlohmann::json v;
    Error e = NormalizeValue(attr, *value, false, true, &v);
    if (!e.ok()) return e;
    if (attr.mutability == Mutability::kReadOnly) {
      if (current != nullptr && *current == v) return Error::Ok();
      return MutabilityError(attr.name + " is readOnly");
    }
    if (attr.multi_valued) {
      if (op == Op::kReplace || current == nullptr || !current->is_array()) {
        (*container)[attr.name] = std::move(v);
        return Error::Ok();
      }
      for (nlohmann::json& element : v) {
        bool merged = false;
        for (nlohmann::json& have : *current) {
          if (SameValue(attr, have, element)) {
            if (have.is_object() && element.is_object()) {
              have.update(element);
            } else {
              have = element;
            }
            if (IsPrimary(have)) OnePrimary(current, &have);
            merged = true;
            break;
          }
        }
        if (!merged) {
          current->push_back(std::move(element));
          if (IsPrimary(current->back())) OnePrimary(current, &current->back());
        }
      }
      return Error::Ok();
    }
    if (attr.mutability == Mutability::kImmutable && current != nullptr && *current != v) {
      return MutabilityError(attr.name + " is immutable");
    }
    if (attr.type == Type::kComplex && current != nullptr && current->is_object()) {
      current->update(v);  // sub-attributes not given stay (RFC 7644 section 3.5.2.3)
    } else {
      (*container)[attr.name] = std::move(v);
    }
    return Error::Ok();
  }

  Error SetSub(Op op, const Attribute& sub, nlohmann::json* element, const nlohmann::json* v) {
    if (!element->is_object()) return InvalidValue("not an object");
    nlohmann::json* have = FindMember(*element, sub.name);
    Error m = CheckMutable(sub, op, have, v);
    if (!m.ok()) return m;
    if (op == Op::kRemove) {
      EraseMember(*element, sub.name);
    } else {
      EraseMember(*element, sub.name);
      (*element)[sub.name] = *v;
    }
    return Error::Ok();
  }

  Error ApplyFiltered(Op op, const Target& t, nlohmann::json* container, nlohmann::json* current,
                      const nlohmann::json* value) {
    const Attribute& attr = *t.path.attr;
    if (attr.mutability == Mutability::kReadOnly) return MutabilityError(attr.name + " is readOnly");
    nlohmann::json v;
    if (value != nullptr && op != Op::kRemove) {
      Error e = t.filter_sub != nullptr ? NormalizeValue(*t.filter_sub, *value, true, false, &v)
                                        : NormalizeValue(attr, *value, true, true, &v);
      if (!e.ok()) return e;
    }
    bool any = false;
    if (current != nullptr && current->is_array()) {
      nlohmann::json kept = nlohmann::json::array();
      for (nlohmann::json& element : *current) {
        if (!element.is_object() || !MatchesElement(*t.filter, element)) {
          kept.push_back(std::move(element));
          continue;
        }
        any = true;
        if (op == Op::kRemove && t.filter_sub == nullptr) {
          Error m = CheckMutable(attr, op, &element, nullptr);
          if (!m.ok()) return m;
          continue;  // dropped
        }
        if (t.filter_sub != nullptr) {
          Error e = SetSub(op, *t.filter_sub, &element, op == Op::kRemove ? nullptr : &v);
          if (!e.ok()) return e;
        } else if (op == Op::kReplace && !v.is_object()) {
          return InvalidValue(attr.name + " values are objects");
        } else {
          for (auto it = v.begin(); it != v.end(); ++it) {
            const Attribute* sub = attr.Sub(it.key());
            Error e = SetSub(op, *sub, &element, &*it);
            if (!e.ok()) return e;
          }
        }
        kept.push_back(std::move(element));
      }
      *current = std::move(kept);
      if (any && op != Op::kRemove) {
        for (nlohmann::json& e : *current) {
          if (IsPrimary(e) && MatchesElement(*t.filter, e)) {
            OnePrimary(current, &e);
            break;
          }
        }
      }
    }
    if (any || op == Op::kRemove) return Error::Ok();
    // Nothing matched. RFC 7644 3.5.2.3 says noTarget; but Entra sets emails[type eq "work"].value on a
    // user without a work email and expects it made, so a filter.sub path whose filter says what the
    // element is (eq terms joined by and) creates it.
    nlohmann::json element = nlohmann::json::object();
    if (t.filter_sub == nullptr || !EqualityTerms(*t.filter, &element)) {
      return NoTarget("no value of " + attr.name + " matches the filter");
    }
    element[t.filter_sub->name] = v;
    nlohmann::json normalized;
    Error e = NormalizeValue(attr, element, true, true, &normalized);
    if (!e.ok()) return e;
    if (current == nullptr || !current->is_array()) {
      (*container)[attr.name] = nlohmann::json::array();
      current = &(*container)[attr.name];
    }
    current->push_back(std::move(normalized));
    if (IsPrimary(current->back())) OnePrimary(current, &current->back());
    return Error::Ok();
  }

  const ResourceType& type_;
  nlohmann::json* res_;
};

}  // namespace

Error ApplyPatch(const ResourceType& type, const nlohmann::json& request, nlohmann::json* resource,
                 bool* changed) {
  if (!request.is_object()) return InvalidSyntax("the PATCH body must be a JSON object");
  if (const nlohmann::json* schemas = FindMember(request, "schemas")) {
    bool ok = schemas->is_array();
    bool has = false;
    if (ok) {
      for (const nlohmann::json& s : *schemas)
        has = has || (s.is_string() && EqualsIgnoreCase(s.get<std::string>(), kPatchOpSchema));
    }
    if (!has) return InvalidSyntax(std::string("schemas must be [\"") + kPatchOpSchema + "\"]");
  }
  const nlohmann::json* ops = FindMember(request, "Operations");
  if (ops == nullptr || !ops->is_array()) return InvalidSyntax("Operations must be an array");
  if (ops->size() > kMaxPatchOperations)
    return TooMany("more than " + std::to_string(kMaxPatchOperations) + " operations");
  nlohmann::json work = *resource;
  Patcher patcher(type, &work);
  for (const nlohmann::json& o : *ops) {
    if (!o.is_object()) return InvalidSyntax("each operation must be an object");
    const nlohmann::json* name = FindMember(o, "op");
    if (name == nullptr || !name->is_string()) return InvalidSyntax("an operation needs \"op\"");
    Op op;
    const std::string& n = name->get_ref<const std::string&>();
    if (EqualsIgnoreCase(n, "add")) {
      op = Op::kAdd;
    } else if (EqualsIgnoreCase(n, "replace")) {
      op = Op::kReplace;
    } else if (EqualsIgnoreCase(n, "remove")) {
      op = Op::kRemove;
    } else {
      return InvalidSyntax("unknown op \"" + n + "\" (add, replace, remove)");
    }
    const nlohmann::json* path = FindMember(o, "path");
    const nlohmann::json* value = FindMember(o, "value");
    Error e = patcher.Apply(op, path, value);
    if (!e.ok()) return e;
  }
  Tidy(type, &work);
  Error e = CheckRequired(type, work);
  if (!e.ok()) return e;
  if (changed != nullptr) *changed = work != *resource;
  *resource = std::move(work);
  return Error::Ok();
}

}  // namespace govern::scim
