// The loaded entity graph and the request data, as the evaluator reads them. Internal to src/policy.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "policy/value.h"

namespace govern::policy {

struct EntityData {
  const Uid* uid = nullptr;
  const RecordData* attrs = nullptr;
  const RecordData* tags = nullptr;
  std::vector<const Uid*> ancestors;  // transitive parents, sorted by hash
};

class EntityStore {
 public:
  // Loads the Cedar JSON entity format (see Entities::FromJson).
  Status Load(const nlohmann::json& array);

  const EntityData* Find(const Uid& uid) const {
    if (table_.empty()) return nullptr;
    size_t mask = table_.size() - 1;
    for (size_t i = uid.hash & mask;; i = (i + 1) & mask) {
      int32_t slot = table_[i];
      if (slot < 0) return nullptr;
      const EntityData& e = entities_[static_cast<size_t>(slot)];
      if (*e.uid == uid) return &e;
    }
  }
  // Cedar's `a in b` for entities: a == b, or b is among a's ancestors.
  bool In(const Uid& a, const Uid& b, const EntityData* a_data) const {
    if (a == b) return true;
    if (!a_data) return false;
    const auto& anc = a_data->ancestors;
    // Binary search on the hash, then compare the colliding run.
    size_t lo = 0, hi = anc.size();
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (anc[mid]->hash < b.hash)
        lo = mid + 1;
      else
        hi = mid;
    }
    for (; lo < anc.size() && anc[lo]->hash == b.hash; ++lo) {
      if (*anc[lo] == b) return true;
    }
    return false;
  }
  size_t size() const { return entities_.size(); }
  Arena& arena() { return arena_; }

 private:
  Arena arena_;
  std::vector<EntityData> entities_;
  std::vector<int32_t> table_;  // open addressing over entities_, power-of-two size
};

struct RequestData {
  Arena arena;
  const Uid* principal = nullptr;
  const Uid* action = nullptr;
  const Uid* resource = nullptr;
  Value context;  // a record
};

// A Cedar name: IDENT {"::" IDENT}, no reserved identifier.
bool ValidEntityTypeName(std::string_view s);

// JSON -> Cedar values (the "natural" JSON form of cedar-policy's JSON value format).
// `what` names the place for messages ("context", "attribute `x` of User::\"a\"").
Status ValueFromJson(const nlohmann::json& j, Arena* arena, std::string_view what, Value* out);
// {"type": T, "id": I} or {"__entity": {...}} -> uid.
Status UidFromJson(const nlohmann::json& j, Arena* arena, std::string_view what, const Uid** out);
// Loads a request from {"principal", "action", "resource", "context"}.
Status RequestFromJson(const nlohmann::json& j, RequestData* out);

}  // namespace govern::policy
