// Cedar values: equality, rendering and the arena that owns their storage (see value.h).
#include "policy/value.h"

#include <algorithm>
#include <cstdio>

#include "policy/extensions.h"

namespace govern::policy {

uint64_t HashBytes(std::string_view s, uint64_t seed) {
  // FNV-1a folded with the seed, then a final avalanche (splitmix64). Fast for short keys.
  uint64_t h = 0xcbf29ce484222325ULL ^ seed;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

namespace {

std::string Escape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\0':
        out += "\\0";
        break;
      default:
        if (c < 0x20) {
          char buf[16];
          std::snprintf(buf, sizeof buf, "\\u{%x}", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

bool SetContains(const SetData& s, const Value& v) {
  for (const Value& e : s.elems) {
    if (ValueEquals(e, v)) return true;
  }
  return false;
}

// Equal-sized sets of unique elements, compared through sorted hashes so that it stays n log n.
bool LargeSetsEqual(const SetData& a, const SetData& b) {
  auto hashes = [](const SetData& s) {
    std::vector<std::pair<uint64_t, const Value*>> h;
    h.reserve(s.elems.size());
    for (const Value& e : s.elems) h.emplace_back(ValueHash(e), &e);
    std::sort(h.begin(), h.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    return h;
  };
  auto ha = hashes(a), hb = hashes(b);
  for (size_t i = 0; i < ha.size();) {
    if (ha[i].first != hb[i].first) return false;
    size_t j = i;
    while (j < ha.size() && ha[j].first == ha[i].first) ++j;
    for (size_t x = i; x < j; ++x) {
      bool found = false;
      for (size_t y = i; y < j && !found; ++y)
        found = hb[y].first == ha[x].first && ValueEquals(*ha[x].second, *hb[y].second);
      if (!found) return false;
    }
    i = j;
  }
  return true;
}

}  // namespace

std::string Uid::ToString() const { return type + "::\"" + Escape(id) + "\""; }

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kBool:
      return "bool";
    case Kind::kLong:
      return "long";
    case Kind::kString:
      return "string";
    case Kind::kEntity:
      return "entity";
    case Kind::kSet:
      return "set";
    case Kind::kRecord:
      return "record";
    case Kind::kDecimal:
      return "decimal";
    case Kind::kIp:
      return "ipaddr";
    case Kind::kDatetime:
      return "datetime";
    case Kind::kDuration:
      return "duration";
  }
  return "?";
}

bool ValueEquals(const Value& a, const Value& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::kBool:
      return a.b == b.b;
    case Kind::kLong:
    case Kind::kDecimal:
    case Kind::kDatetime:
    case Kind::kDuration:
      return a.i == b.i;
    case Kind::kString:
      return a.s == b.s || *a.s == *b.s;
    case Kind::kEntity:
      return a.e == b.e || *a.e == *b.e;
    case Kind::kIp:
      return *a.ip == *b.ip;
    case Kind::kSet: {
      // Elements are unique within a set, so equal sizes plus inclusion one way is set equality.
      if (a.set == b.set) return true;
      if (a.set->elems.size() != b.set->elems.size()) return false;
      if (a.set->elems.size() > 16) return LargeSetsEqual(*a.set, *b.set);
      for (const Value& e : a.set->elems) {
        if (!SetContains(*b.set, e)) return false;
      }
      return true;
    }
    case Kind::kRecord: {
      if (a.rec == b.rec) return true;
      const auto& fa = a.rec->fields;
      const auto& fb = b.rec->fields;
      if (fa.size() != fb.size()) return false;
      for (size_t k = 0; k < fa.size(); ++k) {  // both sorted by key
        if (fa[k].key != fb[k].key || !ValueEquals(fa[k].value, fb[k].value)) return false;
      }
      return true;
    }
  }
  return false;
}

std::string ValueToString(const Value& v) {
  switch (v.kind) {
    case Kind::kBool:
      return v.b ? "true" : "false";
    case Kind::kLong:
      return std::to_string(v.i);
    case Kind::kString:
      return "\"" + Escape(*v.s) + "\"";
    case Kind::kEntity:
      return v.e->ToString();
    case Kind::kDecimal:
      return "decimal(\"" + DecimalToString(v.i) + "\")";
    case Kind::kIp:
      return "ip(\"" + IpToString(*v.ip) + "\")";
    case Kind::kDatetime:
      return "datetime(" + std::to_string(v.i) + "ms)";
    case Kind::kDuration:
      return "duration(\"" + std::to_string(v.i) + "ms\")";
    case Kind::kSet: {
      std::string out = "[";
      for (size_t k = 0; k < v.set->elems.size(); ++k) {
        if (k) out += ", ";
        out += ValueToString(v.set->elems[k]);
      }
      return out + "]";
    }
    case Kind::kRecord: {
      std::string out = "{";
      for (size_t k = 0; k < v.rec->fields.size(); ++k) {
        if (k) out += ", ";
        out += "\"" + Escape(v.rec->fields[k].key) + "\": " + ValueToString(v.rec->fields[k].value);
      }
      return out + "}";
    }
  }
  return "?";
}

uint64_t ValueHash(const Value& v) {
  uint64_t k = static_cast<uint64_t>(v.kind) * 0x9E3779B97F4A7C15ULL;
  switch (v.kind) {
    case Kind::kBool:
      return k ^ (v.b ? 1 : 2);
    case Kind::kLong:
    case Kind::kDecimal:
    case Kind::kDatetime:
    case Kind::kDuration:
      return HashBytes(std::string_view(reinterpret_cast<const char*>(&v.i), sizeof v.i), k);
    case Kind::kString:
      return HashBytes(*v.s, k);
    case Kind::kEntity:
      return k ^ v.e->hash;
    case Kind::kIp:
      return k ^ v.ip->hi ^ (v.ip->lo * 31) ^ v.ip->prefix;
    case Kind::kSet: {
      uint64_t h = k;
      for (const Value& e : v.set->elems) h += ValueHash(e);  // order-independent
      return h;
    }
    case Kind::kRecord: {
      uint64_t h = k;
      for (const Field& f : v.rec->fields) h += f.hash * 3 + ValueHash(f.value);
      return h;
    }
  }
  return k;
}

Value Arena::MakeSet(std::vector<Value> elems) {
  auto* s = New<SetData>();
  s->elems.reserve(elems.size());
  if (elems.size() <= 16) {
    for (const Value& e : elems) {
      if (!SetContains(*s, e)) s->elems.push_back(e);
    }
    return Value::Set(s);
  }
  // Large sets: dedupe through a hash table so that building one stays linear.
  std::vector<std::pair<uint64_t, size_t>> hashed;
  hashed.reserve(elems.size());
  for (size_t k = 0; k < elems.size(); ++k) hashed.emplace_back(ValueHash(elems[k]), k);
  std::stable_sort(hashed.begin(), hashed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<bool> keep(elems.size(), false);
  for (size_t i = 0; i < hashed.size();) {
    size_t j = i;
    while (j < hashed.size() && hashed[j].first == hashed[i].first) ++j;
    for (size_t a = i; a < j; ++a) {
      bool dup = false;
      for (size_t b = i; b < a && !dup; ++b) {
        dup = keep[hashed[b].second] && ValueEquals(elems[hashed[a].second], elems[hashed[b].second]);
      }
      keep[hashed[a].second] = !dup;
    }
    i = j;
  }
  for (size_t k = 0; k < elems.size(); ++k) {
    if (keep[k]) s->elems.push_back(elems[k]);
  }
  return Value::Set(s);
}

Value Arena::MakeRecord(std::vector<Field> fields) {
  auto* r = New<RecordData>();
  for (Field& f : fields) f.hash = HashBytes(f.key);
  std::sort(fields.begin(), fields.end(), [](const Field& a, const Field& b) { return a.key < b.key; });
  r->fields = std::move(fields);
  return Value::Record(r);
}

}  // namespace govern::policy
