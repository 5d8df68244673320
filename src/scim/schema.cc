// The RFC 7643 schemas (sections 4, 8.7.1 and 8.7.2) as static data.
#include "scim/schema.h"

#include <string>
#include <utility>

namespace govern::scim {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

const nlohmann::json* FindMember(const nlohmann::json& object, std::string_view name) {
  if (!object.is_object()) return nullptr;
  auto exact = object.find(std::string(name));
  if (exact != object.end()) return &*exact;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (EqualsIgnoreCase(it.key(), name)) return &*it;
  }
  return nullptr;
}

nlohmann::json* FindMember(nlohmann::json& object, std::string_view name) {
  return const_cast<nlohmann::json*>(FindMember(static_cast<const nlohmann::json&>(object), name));
}

bool EraseMember(nlohmann::json& object, std::string_view name) {
  if (!object.is_object()) return false;
  bool erased = false;
  for (auto it = object.begin(); it != object.end();) {
    if (EqualsIgnoreCase(it.key(), name)) {
      it = object.erase(it);
      erased = true;
    } else {
      ++it;
    }
  }
  return erased;
}

const Attribute* Attribute::Sub(std::string_view n) const {
  for (const Attribute& a : sub_attributes) {
    if (EqualsIgnoreCase(a.name, n)) return &a;
  }
  return nullptr;
}

const Attribute* Schema::Find(std::string_view n) const {
  for (const Attribute& a : attributes) {
    if (EqualsIgnoreCase(a.name, n)) return &a;
  }
  return nullptr;
}

const Attribute* ResourceType::FindCore(std::string_view n) const {
  if (const Attribute* a = core->Find(n)) return a;
  for (const Attribute& a : *common) {
    if (EqualsIgnoreCase(a.name, n)) return &a;
  }
  return nullptr;
}

const Schema* ResourceType::FindSchema(std::string_view urn) const {
  if (EqualsIgnoreCase(core->id, urn)) return core;
  for (const Schema* s : extensions) {
    if (EqualsIgnoreCase(s->id, urn)) return s;
  }
  return nullptr;
}

namespace {

// Builders keep the tables below close to the RFC's text.
Attribute Str(std::string name, std::string description = {}) {
  Attribute a;
  a.name = std::move(name);
  a.description = std::move(description);
  return a;
}
Attribute Bool(std::string name) {
  Attribute a = Str(std::move(name));
  a.type = Type::kBoolean;
  return a;
}
Attribute Ref(std::string name, std::vector<std::string> types) {
  Attribute a = Str(std::move(name));
  a.type = Type::kReference;
  a.reference_types = std::move(types);
  return a;
}
Attribute Complex(std::string name, std::vector<Attribute> subs, bool multi = false) {
  Attribute a = Str(std::move(name));
  a.type = Type::kComplex;
  a.sub_attributes = std::move(subs);
  a.multi_valued = multi;
  return a;
}
Attribute With(Attribute a, Mutability m) {
  a.mutability = m;
  return a;
}
Attribute Canonical(Attribute a, std::vector<std::string> values) {
  a.canonical_values = std::move(values);
  return a;
}

// The usual multi-valued shape: value, display, type, primary.
Attribute MultiValued(std::string name, std::vector<std::string> types, Type value_type = Type::kString) {
  Attribute value = Str("value");
  value.type = value_type;
  if (value_type == Type::kReference) value.reference_types = {"external"};
  return Complex(std::move(name),
                 {value, Str("display"), Canonical(Str("type"), std::move(types)), Bool("primary")}, true);
}

Schema MakeUser() {
  Schema s;
  s.id = kUserSchema;
  s.name = "User";
  s.description = "User Account";
  Attribute user_name = Str("userName", "Unique identifier for the User, used to sign in");
  user_name.required = true;
  user_name.uniqueness = Uniqueness::kServer;
  Attribute password = With(Str("password"), Mutability::kWriteOnly);
  password.returned = Returned::kNever;
  Attribute groups = Complex(
      "groups",
      {With(Str("value"), Mutability::kReadOnly), With(Ref("$ref", {"User", "Group"}), Mutability::kReadOnly),
       With(Str("display"), Mutability::kReadOnly),
       With(Canonical(Str("type"), {"direct", "indirect"}), Mutability::kReadOnly)},
      true);
  groups.mutability = Mutability::kReadOnly;
  Attribute certificates = MultiValued("x509Certificates", {}, Type::kBinary);
  s.attributes = {
      user_name,
      Complex("name", {Str("formatted"), Str("familyName"), Str("givenName"), Str("middleName"),
                       Str("honorificPrefix"), Str("honorificSuffix")}),
      Str("displayName"),
      Str("nickName"),
      Ref("profileUrl", {"external"}),
      Str("title"),
      Str("userType"),
      Str("preferredLanguage"),
      Str("locale"),
      Str("timezone"),
      Bool("active"),
      password,
      MultiValued("emails", {"work", "home", "other"}),
      MultiValued("phoneNumbers", {"work", "home", "mobile", "fax", "pager", "other"}),
      MultiValued("ims", {"aim", "gtalk", "icq", "xmpp", "msn", "skype", "qq", "yahoo"}),
      MultiValued("photos", {"photo", "thumbnail"}, Type::kReference),
      Complex("addresses",
              {Str("formatted"), Str("streetAddress"), Str("locality"), Str("region"), Str("postalCode"),
               Str("country"), Canonical(Str("type"), {"work", "home", "other"}), Bool("primary")},
              true),
      groups,
      MultiValued("entitlements", {}),
      MultiValued("roles", {}),
      certificates,
  };
  return s;
}

Schema MakeEnterprise() {
  Schema s;
  s.id = kEnterpriseSchema;
  s.name = "EnterpriseUser";
  s.description = "Enterprise User";
  s.attributes = {
      Str("employeeNumber"),
      Str("costCenter"),
      Str("organization"),
      Str("division"),
      Str("department"),
      Complex("manager",
              {Str("value"), Ref("$ref", {"User"}), With(Str("displayName"), Mutability::kReadOnly)}),
  };
  return s;
}

Schema MakeGroup() {
  Schema s;
  s.id = kGroupSchema;
  s.name = "Group";
  s.description = "Group";
  Attribute display_name = Str("displayName");
  display_name.required = true;
  Attribute value = With(Str("value"), Mutability::kImmutable);
  value.case_exact = true;
  s.attributes = {
      display_name,
      Complex("members",
              {value, With(Ref("$ref", {"User", "Group"}), Mutability::kImmutable), Str("display"),
               With(Canonical(Str("type"), {"User", "Group"}), Mutability::kImmutable)},
              true),
  };
  return s;
}

std::vector<Attribute> MakeCommon() {
  Attribute id = With(Str("id"), Mutability::kReadOnly);
  id.case_exact = true;
  id.returned = Returned::kAlways;
  id.uniqueness = Uniqueness::kServer;
  Attribute external_id = Str("externalId");
  external_id.case_exact = true;
  Attribute created = With(Str("created"), Mutability::kReadOnly);
  created.type = Type::kDateTime;
  Attribute modified = created;
  modified.name = "lastModified";
  Attribute resource_type = With(Str("resourceType"), Mutability::kReadOnly);
  resource_type.case_exact = true;
  Attribute version = With(Str("version"), Mutability::kReadOnly);
  version.case_exact = true;
  Attribute location = With(Ref("location", {"uri"}), Mutability::kReadOnly);
  location.case_exact = true;
  Attribute meta =
      With(Complex("meta", {resource_type, created, modified, location, version}), Mutability::kReadOnly);
  // "schemas" is an attribute too (RFC 7643 section 3), so filters like schemas eq "urn:..." work.
  Attribute schemas = With(Ref("schemas", {"uri"}), Mutability::kReadOnly);
  schemas.multi_valued = true;
  schemas.returned = Returned::kAlways;
  return {schemas, id, external_id, meta};
}

const char* TypeName(Type t) {
  switch (t) {
    case Type::kString:
      return "string";
    case Type::kBoolean:
      return "boolean";
    case Type::kDecimal:
      return "decimal";
    case Type::kInteger:
      return "integer";
    case Type::kDateTime:
      return "dateTime";
    case Type::kReference:
      return "reference";
    case Type::kBinary:
      return "binary";
    case Type::kComplex:
      return "complex";
  }
  return "string";
}
const char* MutabilityName(Mutability m) {
  switch (m) {
    case Mutability::kReadWrite:
      return "readWrite";
    case Mutability::kReadOnly:
      return "readOnly";
    case Mutability::kImmutable:
      return "immutable";
    case Mutability::kWriteOnly:
      return "writeOnly";
  }
  return "readWrite";
}
const char* ReturnedName(Returned r) {
  switch (r) {
    case Returned::kDefault:
      return "default";
    case Returned::kAlways:
      return "always";
    case Returned::kNever:
      return "never";
    case Returned::kRequest:
      return "request";
  }
  return "default";
}
const char* UniquenessName(Uniqueness u) {
  switch (u) {
    case Uniqueness::kNone:
      return "none";
    case Uniqueness::kServer:
      return "server";
    case Uniqueness::kGlobal:
      return "global";
  }
  return "none";
}

nlohmann::json AttributeJson(const Attribute& a) {
  nlohmann::json out = {{"name", a.name},
                        {"type", TypeName(a.type)},
                        {"multiValued", a.multi_valued},
                        {"description", a.description},
                        {"required", a.required},
                        {"caseExact", a.case_exact},
                        {"mutability", MutabilityName(a.mutability)},
                        {"returned", ReturnedName(a.returned)},
                        {"uniqueness", UniquenessName(a.uniqueness)}};
  if (!a.canonical_values.empty()) out["canonicalValues"] = a.canonical_values;
  if (!a.reference_types.empty()) out["referenceTypes"] = a.reference_types;
  if (a.type == Type::kComplex) {
    nlohmann::json subs = nlohmann::json::array();
    for (const Attribute& s : a.sub_attributes) subs.push_back(AttributeJson(s));
    out["subAttributes"] = std::move(subs);
  }
  return out;
}

}  // namespace

nlohmann::json Schema::ToJson(std::string_view base_url) const {
  nlohmann::json attrs = nlohmann::json::array();
  for (const Attribute& a : attributes) attrs.push_back(AttributeJson(a));
  return {{"schemas", {"urn:ietf:params:scim:schemas:core:2.0:Schema"}},
          {"id", id},
          {"name", name},
          {"description", description},
          {"attributes", std::move(attrs)},
          {"meta", {{"resourceType", "Schema"}, {"location", std::string(base_url) + "/Schemas/" + id}}}};
}

nlohmann::json ResourceType::ToJson(std::string_view base_url) const {
  nlohmann::json ext = nlohmann::json::array();
  for (const Schema* s : extensions) ext.push_back({{"schema", s->id}, {"required", false}});
  nlohmann::json out = {
      {"schemas", {"urn:ietf:params:scim:schemas:core:2.0:ResourceType"}},
      {"id", name},
      {"name", name},
      {"endpoint", endpoint},
      {"description", description},
      {"schema", core->id},
      {"meta",
       {{"resourceType", "ResourceType"}, {"location", std::string(base_url) + "/ResourceTypes/" + name}}}};
  if (!ext.empty()) out["schemaExtensions"] = std::move(ext);
  return out;
}

const Schema& UserSchema() {
  static const Schema* s = new Schema(MakeUser());
  return *s;
}
const Schema& EnterpriseUserSchema() {
  static const Schema* s = new Schema(MakeEnterprise());
  return *s;
}
const Schema& GroupSchema() {
  static const Schema* s = new Schema(MakeGroup());
  return *s;
}
const std::vector<Attribute>& CommonAttributes() {
  static const std::vector<Attribute>* c = new std::vector<Attribute>(MakeCommon());
  return *c;
}
const ResourceType& UserResourceType() {
  static const ResourceType* rt = new ResourceType{
      "User", "/Users", "User Account", &UserSchema(), {&EnterpriseUserSchema()}, &CommonAttributes()};
  return *rt;
}
const ResourceType& GroupResourceType() {
  static const ResourceType* rt =
      new ResourceType{"Group", "/Groups", "Group", &GroupSchema(), {}, &CommonAttributes()};
  return *rt;
}

}  // namespace govern::scim
