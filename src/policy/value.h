// Cedar values as the evaluator sees them: a 16-byte tagged word that points into storage owned by
// whoever created it (a PolicySet for literals, an Entities store for attributes, a Request for the
// context, or the per-decision scratch Arena for computed values). Internal to src/policy.
//
// Values are plain words: copying one never allocates and never touches a reference count. The
// pointed-to storage is immutable once built, so values from a compiled PolicySet or Entities store
// may be read by many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace govern::policy {

// Hash used for attribute keys and entity uids; the same everywhere so that compiled attribute
// accesses compare a precomputed hash before the bytes.
uint64_t HashBytes(std::string_view s, uint64_t seed = 0x9E3779B97F4A7C15ULL);

// An entity uid: type name ("A::B") and id. `hash` covers both.
struct Uid {
  std::string type;
  std::string id;
  uint64_t hash = 0;

  Uid() = default;
  Uid(std::string t, std::string i) : type(std::move(t)), id(std::move(i)) {
    hash = HashBytes(id, HashBytes(type));
  }
  bool operator==(const Uid& o) const { return hash == o.hash && type == o.type && id == o.id; }
  // Cedar's display form: Type::"id" with the id escaped.
  std::string ToString() const;
};

enum class Kind : uint8_t {
  kBool,
  kLong,
  kString,
  kEntity,
  kSet,
  kRecord,
  kDecimal,
  kIp,
  kDatetime,
  kDuration
};

// Cedar's name for a kind, as used in type-error messages ("long", "string", ...).
const char* KindName(Kind k);

struct SetData;
struct RecordData;
struct IpAddr {
  bool v6 = false;
  uint8_t prefix = 32;
  uint64_t hi = 0;  // IPv6 high 64 bits; 0 for IPv4
  uint64_t lo = 0;  // IPv6 low 64 bits, or the IPv4 address in the low 32 bits
  bool operator==(const IpAddr& o) const {
    return v6 == o.v6 && prefix == o.prefix && hi == o.hi && lo == o.lo;
  }
};

struct Value {
  Kind kind = Kind::kBool;
  union {
    bool b;
    int64_t i;  // long; decimal (scaled by 10^4); datetime (ms since epoch); duration (ms)
    const std::string* s;
    const Uid* e;
    const SetData* set;
    const RecordData* rec;
    const IpAddr* ip;
  };
  Value() : i(0) {}
  static Value Bool(bool v) {
    Value x;
    x.kind = Kind::kBool;
    x.b = v;
    return x;
  }
  static Value Long(int64_t v) {
    Value x;
    x.kind = Kind::kLong;
    x.i = v;
    return x;
  }
  static Value Str(const std::string* v) {
    Value x;
    x.kind = Kind::kString;
    x.s = v;
    return x;
  }
  static Value Entity(const Uid* v) {
    Value x;
    x.kind = Kind::kEntity;
    x.e = v;
    return x;
  }
  static Value Set(const SetData* v) {
    Value x;
    x.kind = Kind::kSet;
    x.set = v;
    return x;
  }
  static Value Record(const RecordData* v) {
    Value x;
    x.kind = Kind::kRecord;
    x.rec = v;
    return x;
  }
  static Value Ip(const IpAddr* v) {
    Value x;
    x.kind = Kind::kIp;
    x.ip = v;
    return x;
  }
  static Value Scalar(Kind k, int64_t v) {
    Value x;
    x.kind = k;
    x.i = v;
    return x;
  }
};

struct SetData {
  std::vector<Value> elems;  // duplicates removed
};

struct Field {
  std::string key;
  uint64_t hash = 0;
  Value value;
};

struct RecordData {
  std::vector<Field> fields;  // sorted by key, unique keys
  const Value* Find(std::string_view key, uint64_t hash) const {
    for (const Field& f : fields) {
      if (f.hash == hash && f.key == key) return &f.value;
    }
    return nullptr;
  }
};

// Cedar equality: structural, sets compared as sets, values of different kinds are unequal.
bool ValueEquals(const Value& a, const Value& b);

// A hash consistent with ValueEquals (sets and records hash independently of order).
uint64_t ValueHash(const Value& v);

// Renders a value in Cedar syntax (for messages and the CLI).
std::string ValueToString(const Value& v);

// Owns the storage behind values. Not thread-safe while being filled; read-only afterwards.
class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  Arena(Arena&&) = default;
  Arena& operator=(Arena&&) = default;

  template <typename T, typename... A>
  T* New(A&&... args) {
    auto holder = std::make_unique<Holder<T>>(std::forward<A>(args)...);
    T* p = &holder->value;
    items_.push_back(std::move(holder));
    return p;
  }
  const std::string* Str(std::string s) { return New<std::string>(std::move(s)); }
  const Uid* MakeUid(std::string type, std::string id) { return New<Uid>(std::move(type), std::move(id)); }
  // Builds a set value: removes duplicates.
  Value MakeSet(std::vector<Value> elems);
  // Builds a record value from fields with unique keys (hashes are filled in here).
  Value MakeRecord(std::vector<Field> fields);
  bool empty() const { return items_.empty(); }
  void Clear() { items_.clear(); }

 private:
  struct Base {
    virtual ~Base() = default;
  };
  template <typename T>
  struct Holder : Base {
    template <typename... A>
    explicit Holder(A&&... args) : value(std::forward<A>(args)...) {}
    T value;
  };
  std::vector<std::unique_ptr<Base>> items_;
};

}  // namespace govern::policy
