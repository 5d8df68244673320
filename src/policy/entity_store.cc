// Loading Cedar JSON entities and requests into the evaluator's form (see entity_store.h).
#include "policy/entity_store.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "policy/ast.h"
#include "policy/extensions.h"

namespace govern::policy {
namespace {

using nlohmann::json;

}  // namespace

bool ValidEntityTypeName(std::string_view s) {
  // IDENT {'::' IDENT}
  size_t i = 0;
  for (;;) {
    if (i >= s.size()) return false;
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')) return false;
    size_t start = i;
    while (i < s.size() && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_' ||
                            (s[i] >= '0' && s[i] <= '9'))) {
      ++i;
    }
    std::string_view ident = s.substr(start, i - start);
    static const char* kReserved[] = {"true", "false", "if",   "then", "else",
                                      "in",   "is",    "like", "has",  "__cedar"};
    for (const char* r : kReserved) {
      if (ident == r) return false;
    }
    if (i == s.size()) return true;
    if (s.substr(i, 2) != "::") return false;
    i += 2;
  }
}

namespace {

std::string Str(std::string_view s) { return std::string(s); }

}  // namespace

Status UidFromJson(const json& j, Arena* arena, std::string_view what, const Uid** out) {
  const json* obj = &j;
  if (j.is_object() && j.size() == 1 && j.contains("__entity")) obj = &j["__entity"];
  if (!obj->is_object())
    return InvalidArgument(Str(what) + ": expected an entity uid {\"type\": .., \"id\": ..}");
  auto t = obj->find("type");
  auto i = obj->find("id");
  if (t == obj->end() || i == obj->end() || !t->is_string() || !i->is_string()) {
    return InvalidArgument(Str(what) +
                           ": expected an entity uid {\"type\": .., \"id\": ..} with string fields");
  }
  const std::string& type = t->get_ref<const std::string&>();
  if (!ValidEntityTypeName(type))
    return InvalidArgument(Str(what) + ": `" + type + "` is not a valid entity type name");
  *out = arena->MakeUid(type, i->get_ref<const std::string&>());
  return OkStatus();
}

namespace {
Status ValueFromJsonAt(const json& j, Arena* arena, std::string_view what, Value* out, int depth);
}  // namespace

Status ValueFromJson(const json& j, Arena* arena, std::string_view what, Value* out) {
  return ValueFromJsonAt(j, arena, what, out, 0);
}

namespace {

Status ValueFromJsonAt(const json& j, Arena* arena, std::string_view what, Value* out, int depth) {
  if (depth > 256) return InvalidArgument(Str(what) + ": values nested more than 256 deep");
  switch (j.type()) {
    case json::value_t::boolean:
      *out = Value::Bool(j.get<bool>());
      return OkStatus();
    case json::value_t::number_integer:
      *out = Value::Long(j.get<int64_t>());
      return OkStatus();
    case json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX))
        return InvalidArgument(Str(what) + ": integer " + std::to_string(u) + " is out of range");
      *out = Value::Long(static_cast<int64_t>(u));
      return OkStatus();
    }
    case json::value_t::number_float: {
      // A JSON number with a fraction part that is integral (5.0) is what node hands the reference
      // as the integer 5; anything else is not a Cedar value (Cedar has no floats).
      double d = j.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && d >= -9.2233720368547758e18 &&
          d < 9.2233720368547758e18) {
        *out = Value::Long(static_cast<int64_t>(d));
        return OkStatus();
      }
      return InvalidArgument(Str(what) + ": " + j.dump() +
                             " is not a Cedar value (Cedar has no floating-point numbers)");
    }
    case json::value_t::string:
      *out = Value::Str(arena->Str(j.get<std::string>()));
      return OkStatus();
    case json::value_t::array: {
      std::vector<Value> elems;
      elems.reserve(j.size());
      for (const json& e : j) {
        Value v;
        GOVERN_RETURN_IF_ERROR(ValueFromJsonAt(e, arena, what, &v, depth + 1));
        elems.push_back(v);
      }
      *out = arena->MakeSet(std::move(elems));
      return OkStatus();
    }
    case json::value_t::object: {
      // The escapes apply only when their payload has the expected shape; otherwise the object is
      // an ordinary record, as the reference's untagged JSON value reading does.
      if (j.size() == 1 && j.contains("__expr") && j["__expr"].is_string()) {
        return InvalidArgument(Str(what) + ": the `__expr` escape is no longer supported");
      }
      if (j.size() == 1 && j.contains("__entity")) {
        const json& x = j["__entity"];
        if (x.is_object() && x.contains("type") && x.contains("id") && x["type"].is_string() &&
            x["id"].is_string()) {
          const Uid* uid = nullptr;
          GOVERN_RETURN_IF_ERROR(UidFromJson(j, arena, what, &uid));
          *out = Value::Entity(uid);
          return OkStatus();
        }
      }
      // {"__extn": {"fn": F, "arg": A}} or {"fn": F, "args": [..]}: a call of any extension function
      // or method on restricted values, evaluated now ("arg" wins when both are given).
      if (j.size() == 1 && j.contains("__extn") && j["__extn"].is_object() && j["__extn"].contains("fn") &&
          j["__extn"]["fn"].is_string() &&
          (j["__extn"].contains("arg") || (j["__extn"].contains("args") && j["__extn"]["args"].is_array()))) {
        const json& x = j["__extn"];
        const std::string& fn = x["fn"].get_ref<const std::string&>();
        ExtFn id;
        uint8_t expected = 0;
        if (!LookupExtension(fn, &id, &expected)) {
          return InvalidArgument(Str(what) + ": extension function `" + fn + "` does not exist");
        }
        std::vector<const json*> arg_json;
        if (x.contains("arg")) {
          arg_json.push_back(&x["arg"]);
        } else {
          for (const json& e : x["args"]) arg_json.push_back(&e);
        }
        std::vector<Value> args(arg_json.size());
        for (size_t k = 0; k < arg_json.size(); ++k) {
          GOVERN_RETURN_IF_ERROR(ValueFromJsonAt(*arg_json[k], arena, what, &args[k], depth + 1));
        }
        std::string error;
        if (!CallExtension(id, fn, expected, args.data(), args.size(), arena, &error, out)) {
          return InvalidArgument(Str(what) + ": " + error);
        }
        return OkStatus();
      }
      std::vector<Field> fields;
      fields.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        Field f;
        f.key = it.key();
        GOVERN_RETURN_IF_ERROR(ValueFromJsonAt(it.value(), arena, what, &f.value, depth + 1));
        fields.push_back(std::move(f));
      }
      *out = arena->MakeRecord(std::move(fields));
      return OkStatus();
    }
    case json::value_t::null:
      return InvalidArgument(Str(what) + ": found a `null`; JSON `null`s are not allowed in Cedar");
    default:
      return InvalidArgument(Str(what) + ": not a Cedar value");
  }
}

}  // namespace

Status EntityStore::Load(const json& array) {
  if (!array.is_array()) return InvalidArgument("entities: expected a JSON array of entities");
  std::unordered_map<uint64_t, std::vector<size_t>> index;  // uid hash -> entities_ positions
  std::vector<const json*> sources;
  std::vector<std::vector<const Uid*>> parents;
  for (size_t n = 0; n < array.size(); ++n) {
    const json& e = array[n];
    std::string where = "entity #" + std::to_string(n);
    if (!e.is_object()) return InvalidArgument(where + ": expected an object");
    if (!e.contains("uid")) return InvalidArgument(where + ": missing field `uid`");
    if (!e.contains("attrs")) return InvalidArgument(where + ": missing field `attrs`");
    if (!e.contains("parents")) return InvalidArgument(where + ": missing field `parents`");
    EntityData d;
    GOVERN_RETURN_IF_ERROR(UidFromJson(e["uid"], &arena_, where + " uid", &d.uid));
    where = "entity " + d.uid->ToString();
    bool duplicate = false;
    for (size_t other : index[d.uid->hash]) {
      if (*entities_[other].uid == *d.uid) {
        if (*sources[other] != e)
          return InvalidArgument("duplicate entity entry `" + d.uid->ToString() + "`");
        duplicate = true;
      }
    }
    if (duplicate) continue;
    const json& attrs = e["attrs"];
    if (!attrs.is_object()) return InvalidArgument(where + ": `attrs` must be an object");
    Value v;
    GOVERN_RETURN_IF_ERROR(ValueFromJson(attrs, &arena_, where + " attrs", &v));
    if (v.kind != Kind::kRecord) return InvalidArgument(where + ": `attrs` must be a record");
    d.attrs = v.rec;
    if (e.contains("tags")) {
      const json& tags = e["tags"];
      if (!tags.is_object()) return InvalidArgument(where + ": `tags` must be an object");
      GOVERN_RETURN_IF_ERROR(ValueFromJson(tags, &arena_, where + " tags", &v));
      if (v.kind != Kind::kRecord) return InvalidArgument(where + ": `tags` must be a record");
      d.tags = v.rec;
    }
    const json& ps = e["parents"];
    if (!ps.is_array()) return InvalidArgument(where + ": `parents` must be an array");
    std::vector<const Uid*> direct;
    for (const json& p : ps) {
      const Uid* pu = nullptr;
      GOVERN_RETURN_IF_ERROR(UidFromJson(p, &arena_, where + " parent", &pu));
      direct.push_back(pu);
    }
    index[d.uid->hash].push_back(entities_.size());
    entities_.push_back(std::move(d));
    sources.push_back(&e);
    parents.push_back(std::move(direct));
  }
  // Hash table over the entities.
  size_t cap = 1;
  while (cap < entities_.size() * 2 + 1) cap <<= 1;
  table_.assign(cap, -1);
  for (size_t k = 0; k < entities_.size(); ++k) {
    size_t mask = cap - 1;
    size_t i = entities_[k].uid->hash & mask;
    while (table_[i] >= 0) i = (i + 1) & mask;
    table_[i] = static_cast<int32_t>(k);
  }
  // Transitive closure of parents: a walk from each entity. Entities in the store are visited once
  // per walk (marked by the walk's number); parents that are not in the store are leaves, deduplicated
  // after the walk. Reaching the starting entity again is a cycle, which the reference refuses.
  std::vector<size_t> mark(entities_.size(), SIZE_MAX);
  std::vector<const Uid*> found;
  std::vector<const Uid*> stack;
  for (size_t k = 0; k < entities_.size(); ++k) {
    found.clear();
    stack.assign(parents[k].begin(), parents[k].end());
    while (!stack.empty()) {
      const Uid* u = stack.back();
      stack.pop_back();
      const EntityData* pd = Find(*u);
      if (!pd) {
        found.push_back(u);
        continue;
      }
      size_t pk = static_cast<size_t>(pd - entities_.data());
      if (pk == k) {
        return InvalidArgument(
            "transitive closure computation/enforcement error: input graph has a cycle containing vertex `" +
            u->ToString() + "`");
      }
      if (mark[pk] == k) continue;
      mark[pk] = k;
      found.push_back(pd->uid);
      for (const Uid* g : parents[pk]) stack.push_back(g);
    }
    std::sort(found.begin(), found.end(), [](const Uid* a, const Uid* b) {
      if (a->hash != b->hash) return a->hash < b->hash;
      if (a->type != b->type) return a->type < b->type;
      return a->id < b->id;
    });
    found.erase(std::unique(found.begin(), found.end(), [](const Uid* a, const Uid* b) { return *a == *b; }),
                found.end());
    entities_[k].ancestors = found;
  }
  return OkStatus();
}

Status RequestFromJson(const json& j, RequestData* out) {
  if (!j.is_object()) return InvalidArgument("request: expected a JSON object");
  for (const char* key : {"principal", "action", "resource"}) {
    if (!j.contains(key)) return InvalidArgument(std::string("request: missing field `") + key + "`");
  }
  GOVERN_RETURN_IF_ERROR(UidFromJson(j["principal"], &out->arena, "request principal", &out->principal));
  GOVERN_RETURN_IF_ERROR(UidFromJson(j["action"], &out->arena, "request action", &out->action));
  GOVERN_RETURN_IF_ERROR(UidFromJson(j["resource"], &out->arena, "request resource", &out->resource));
  if (j.contains("context")) {
    const json& c = j["context"];
    if (!c.is_object()) return InvalidArgument("request context: expected a JSON object");
    GOVERN_RETURN_IF_ERROR(ValueFromJson(c, &out->arena, "context", &out->context));
    if (out->context.kind != Kind::kRecord) return InvalidArgument("request context: expected a record");
  } else {
    out->context = out->arena.MakeRecord({});
  }
  return OkStatus();
}

}  // namespace govern::policy
