// Normalization, projection and sorting of resources.
#include "scim/resource.h"

#include <algorithm>
#include <string>
#include <utility>

namespace govern::scim {

namespace {

bool IsEmpty(const nlohmann::json& v) {
  return v.is_null() || ((v.is_array() || v.is_object()) && v.empty());
}

Error NormalizeScalar(const Attribute& attr, const nlohmann::json& in, nlohmann::json* out) {
  switch (attr.type) {
    case Type::kBoolean:
      if (in.is_boolean()) {
        *out = in;
      } else if (in.is_string() && EqualsIgnoreCase(in.get_ref<const std::string&>(), "true")) {
        *out = true;
      } else if (in.is_string() && EqualsIgnoreCase(in.get_ref<const std::string&>(), "false")) {
        *out = false;
      } else {
        return InvalidValue(attr.name + " must be a boolean");
      }
      return Error::Ok();
    case Type::kInteger:
      if (!in.is_number_integer() && !in.is_number_unsigned())
        return InvalidValue(attr.name + " must be an integer");
      *out = in;
      return Error::Ok();
    case Type::kDecimal:
      if (!in.is_number()) return InvalidValue(attr.name + " must be a number");
      *out = in;
      return Error::Ok();
    case Type::kString:
    case Type::kReference:
    case Type::kDateTime:
    case Type::kBinary:
      if (in.is_string()) {
        *out = in;
      } else if (in.is_number() && attr.type == Type::kString) {
        *out = in.dump();  // some IdPs send employee numbers and phone numbers as JSON numbers
      } else {
        return InvalidValue(attr.name + " must be a string");
      }
      return Error::Ok();
    case Type::kComplex:
      break;
  }
  return InvalidValue(attr.name + " is complex");
}

}  // namespace

Error NormalizeValue(const Attribute& attr, const nlohmann::json& in, bool element, bool drop_read_only,
                     nlohmann::json* out) {
  if (attr.multi_valued && !element) {
    nlohmann::json list = nlohmann::json::array();
    const nlohmann::json single = nlohmann::json::array({in});
    const nlohmann::json& items = in.is_array() ? in : single;
    int primaries = 0;
    for (const nlohmann::json& item : items) {
      if (item.is_null()) continue;
      nlohmann::json v;
      Error e = NormalizeValue(attr, item, true, drop_read_only, &v);
      if (!e.ok()) return e;
      if (IsEmpty(v)) continue;
      if (v.is_object() && v.value("primary", false)) ++primaries;
      list.push_back(std::move(v));
    }
    if (primaries > 1) return InvalidValue(attr.name + ": at most one value may be primary");
    *out = std::move(list);
    return Error::Ok();
  }
  if (attr.type != Type::kComplex) return NormalizeScalar(attr, in, out);
  if (in.is_string() && attr.Sub("value") != nullptr) {
    // Entra sends the enterprise manager (and some IdPs members) as a bare id: {"value": id}.
    *out = nlohmann::json{{"value", in}};
    return Error::Ok();
  }
  if (!in.is_object()) return InvalidValue(attr.name + " must be an object");
  nlohmann::json obj = nlohmann::json::object();
  for (auto it = in.begin(); it != in.end(); ++it) {
    const Attribute* sub = attr.Sub(it.key());
    if (sub == nullptr) return InvalidSyntax("unknown attribute " + attr.name + "." + it.key());
    if (it->is_null()) continue;
    if (drop_read_only && sub->mutability == Mutability::kReadOnly) continue;
    nlohmann::json v;
    Error e = NormalizeScalar(*sub, *it, &v);
    if (!e.ok()) return InvalidValue(attr.name + "." + e.detail);
    obj[sub->name] = std::move(v);
  }
  *out = std::move(obj);
  return Error::Ok();
}

namespace {

Error NormalizeAttributes(const ResourceType& type, const Schema* extension, const nlohmann::json& in,
                          nlohmann::json* out) {
  for (auto it = in.begin(); it != in.end(); ++it) {
    const std::string& key = it.key();
    if (extension == nullptr && EqualsIgnoreCase(key, "schemas")) continue;
    if (extension == nullptr && key.find(':') != std::string::npos) {
      const Schema* ext = type.FindSchema(key);
      if (ext == nullptr || ext == type.core) return InvalidSyntax("unknown schema extension " + key);
      if (it->is_null()) continue;
      if (!it->is_object()) return InvalidSyntax(key + " must be an object");
      nlohmann::json sub = nlohmann::json::object();
      Error e = NormalizeAttributes(type, ext, *it, &sub);
      if (!e.ok()) return e;
      (*out)[ext->id] = std::move(sub);
      continue;
    }
    const Attribute* attr = extension != nullptr ? extension->Find(key) : type.FindCore(key);
    if (attr == nullptr) return InvalidSyntax("unknown attribute " + key);
    if (attr->mutability == Mutability::kReadOnly || it->is_null()) continue;
    nlohmann::json v;
    Error e = NormalizeValue(*attr, *it, false, true, &v);
    if (!e.ok()) return e;
    (*out)[attr->name] = std::move(v);
  }
  return Error::Ok();
}

void TidyObject(nlohmann::json* obj) {
  for (auto it = obj->begin(); it != obj->end();) {
    if (it->is_array()) {
      nlohmann::json kept = nlohmann::json::array();
      for (nlohmann::json& e : *it) {
        if (e.is_object()) TidyObject(&e);
        if (!IsEmpty(e)) kept.push_back(std::move(e));
      }
      *it = std::move(kept);
    } else if (it->is_object()) {
      TidyObject(&*it);
    }
    if (IsEmpty(*it)) {
      it = obj->erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace

void Tidy(const ResourceType& type, nlohmann::json* resource) {
  resource->erase("schemas");
  TidyObject(resource);
  nlohmann::json schemas = nlohmann::json::array({type.core->id});
  for (const Schema* ext : type.extensions) {
    if (resource->contains(ext->id)) schemas.push_back(ext->id);
  }
  (*resource)["schemas"] = std::move(schemas);
}

Error CheckRequired(const ResourceType& type, const nlohmann::json& resource) {
  for (const Attribute& a : type.core->attributes) {
    if (a.required && !resource.contains(a.name)) return InvalidValue(a.name + " is required");
  }
  return Error::Ok();
}

Error NormalizeResource(const ResourceType& type, const nlohmann::json& in, nlohmann::json* out) {
  if (!in.is_object()) return InvalidSyntax("the body must be a JSON object");
  if (const nlohmann::json* schemas = FindMember(in, "schemas")) {
    if (!schemas->is_array()) return InvalidSyntax("schemas must be an array");
    bool core = false;
    for (const nlohmann::json& s : *schemas) {
      if (!s.is_string()) return InvalidSyntax("schemas must be an array of strings");
      const Schema* known = type.FindSchema(s.get<std::string>());
      if (known == nullptr) return InvalidSyntax("unknown schema " + s.get<std::string>());
      core = core || known == type.core;
    }
    if (!core) return InvalidSyntax("schemas must include " + type.core->id);
  }
  nlohmann::json result = nlohmann::json::object();
  Error e = NormalizeAttributes(type, nullptr, in, &result);
  if (!e.ok()) return e;
  Tidy(type, &result);
  e = CheckRequired(type, result);
  if (!e.ok()) return e;
  *out = std::move(result);
  return Error::Ok();
}

std::vector<AttrPath> ParseAttributeList(const ResourceType& type, std::string_view list) {
  std::vector<AttrPath> out;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    AttrPath p;
    if (!item.empty() && ResolvePath(PathScope{&type, nullptr}, item, &p).ok()) out.push_back(p);
  }
  return out;
}

namespace {

// How a list names one attribute: not at all, wholly, or some of its sub-attributes.
struct Named {
  bool whole = false;
  std::vector<const Attribute*> subs;
};

Named Lookup(const std::vector<AttrPath>& list, const Schema* extension, const Attribute& attr) {
  Named n;
  for (const AttrPath& p : list) {
    if (p.extension != extension) continue;
    if (p.attr == nullptr) {
      n.whole = true;  // the whole extension
    } else if (p.attr == &attr) {
      if (p.sub == nullptr) {
        n.whole = true;
      } else {
        n.subs.push_back(p.sub);
      }
    }
  }
  return n;
}

void ProjectObject(const std::vector<const Attribute*>& attrs, const Schema* extension,
                   const nlohmann::json& in, const std::vector<AttrPath>& attributes,
                   const std::vector<AttrPath>& excluded, nlohmann::json* out) {
  for (const Attribute* a : attrs) {
    const nlohmann::json* v = FindMember(in, a->name);
    if (v == nullptr || a->returned == Returned::kNever) continue;
    if (a->returned == Returned::kAlways) {
      (*out)[a->name] = *v;
      continue;
    }
    const Named inc = Lookup(attributes, extension, *a);
    const Named exc = Lookup(excluded, extension, *a);
    bool listing = !attributes.empty();
    if (listing && !inc.whole && inc.subs.empty()) continue;
    if (!listing && a->returned == Returned::kRequest) continue;
    if (!listing && exc.whole) continue;
    // Which sub-attributes to keep.
    auto keep_sub = [&](const Attribute& sub) {
      if (sub.returned == Returned::kNever) return false;
      if (sub.returned == Returned::kAlways) return true;
      if (listing && !inc.whole) return std::find(inc.subs.begin(), inc.subs.end(), &sub) != inc.subs.end();
      if (!listing && std::find(exc.subs.begin(), exc.subs.end(), &sub) != exc.subs.end()) return false;
      return sub.returned != Returned::kRequest || inc.whole;
    };
    if (a->type != Type::kComplex) {
      (*out)[a->name] = *v;
      continue;
    }
    auto filter = [&](const nlohmann::json& obj) {
      nlohmann::json kept = nlohmann::json::object();
      if (!obj.is_object()) return kept;
      for (const Attribute& sub : a->sub_attributes) {
        const nlohmann::json* s = FindMember(obj, sub.name);
        if (s != nullptr && keep_sub(sub)) kept[sub.name] = *s;
      }
      return kept;
    };
    nlohmann::json value;
    if (v->is_array()) {
      value = nlohmann::json::array();
      for (const nlohmann::json& e : *v) {
        nlohmann::json k = filter(e);
        if (!k.empty()) value.push_back(std::move(k));
      }
    } else {
      value = filter(*v);
    }
    if (!value.empty()) (*out)[a->name] = std::move(value);
  }
}

}  // namespace

nlohmann::json Project(const ResourceType& type, const nlohmann::json& resource,
                       const std::vector<AttrPath>& attributes, const std::vector<AttrPath>& excluded) {
  nlohmann::json out = nlohmann::json::object();
  std::vector<const Attribute*> core;
  for (const Attribute& a : *type.common) core.push_back(&a);
  for (const Attribute& a : type.core->attributes) core.push_back(&a);
  ProjectObject(core, nullptr, resource, attributes, excluded, &out);
  for (const Schema* ext : type.extensions) {
    const nlohmann::json* v = FindMember(resource, ext->id);
    if (v == nullptr) continue;
    std::vector<const Attribute*> attrs;
    for (const Attribute& a : ext->attributes) attrs.push_back(&a);
    nlohmann::json part = nlohmann::json::object();
    ProjectObject(attrs, ext, *v, attributes, excluded, &part);
    if (!part.empty()) out[ext->id] = std::move(part);
  }
  return out;
}

Error ParseSortBy(const ResourceType& type, std::string_view sort_by, AttrPath* out) {
  Error e = ResolvePath(PathScope{&type, nullptr}, sort_by, out);
  if (!e.ok()) return e;
  if (out->attr == nullptr) return InvalidPath("cannot sort by a whole extension");
  if (out->sub == nullptr && out->attr->type == Type::kComplex) {
    if (!out->attr->multi_valued || out->attr->Sub("value") == nullptr)
      return InvalidPath("sortBy names a complex attribute");
    out->sub = out->attr->Sub("value");
  }
  return Error::Ok();
}

namespace {
// The value a resource sorts by: for multi-valued attributes the primary one, else the first.
const nlohmann::json* SortKey(const AttrPath& by, const nlohmann::json& resource) {
  if (by.attr->multi_valued && by.sub != nullptr) {
    const nlohmann::json* container =
        by.extension != nullptr ? FindMember(resource, by.extension->id) : &resource;
    const nlohmann::json* list = container != nullptr ? FindMember(*container, by.attr->name) : nullptr;
    if (list != nullptr && list->is_array()) {
      for (const nlohmann::json& e : *list) {
        const nlohmann::json* p = FindMember(e, "primary");
        if (p != nullptr && p->is_boolean() && p->get<bool>()) {
          if (const nlohmann::json* v = FindMember(e, by.sub->name)) return v;
        }
      }
    }
  }
  std::vector<const nlohmann::json*> values = ValuesAt(by, resource);
  return values.empty() ? nullptr : values.front();
}
}  // namespace

void SortResources(const AttrPath& by, bool descending, std::vector<nlohmann::json>* resources) {
  const Attribute& leaf = *by.Leaf();
  std::stable_sort(resources->begin(), resources->end(),
                   [&](const nlohmann::json& a, const nlohmann::json& b) {
                     const nlohmann::json* x = SortKey(by, a);
                     const nlohmann::json* y = SortKey(by, b);
                     if (x == nullptr || y == nullptr) return x != nullptr && y == nullptr;
                     int c = CompareValues(leaf, *x, *y);
                     return descending ? c > 0 : c < 0;
                   });
}

}  // namespace govern::scim
