// Limits: limits.json parsed into matchers, and sharded per-principal counters (a token bucket for a
// rate, a calendar window for a budget). See limits.h and docs/policy-extensions.md.
#include "policy/limits.h"

#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <vector>

#include "policy/ast.h"
#include "policy/entity_store.h"

namespace govern::policy {

// ---- counters ----

namespace {

constexpr size_t kShards = 16;

struct Counter {
  std::string limit_id;
  std::string type, id;  // the principal
  double level = 0;      // rate: tokens left
  int64_t last_ns = 0;   // rate: when level was computed
  int64_t window = -1;   // budget: the window index of `used`
  int64_t used = 0;      // budget: consumed in `window`
  int64_t touched_ns = 0;
};

}  // namespace

struct LimitCounters::Impl {
  struct alignas(64) Shard {
    std::mutex mu;
    std::unordered_map<uint64_t, Counter> map;
  };
  Shard shards[kShards];
  size_t per_shard;
};

LimitCounters::LimitCounters(size_t max_counters) : impl_(std::make_unique<Impl>()) {
  impl_->per_shard = std::max<size_t>(1, (max_counters + kShards - 1) / kShards);
  for (auto& s : impl_->shards) s.map.reserve(std::min<size_t>(impl_->per_shard, 1024));
}
LimitCounters::~LimitCounters() = default;

size_t LimitCounters::size() const {
  size_t n = 0;
  for (auto& s : impl_->shards) {
    std::lock_guard<std::mutex> lock(s.mu);
    n += s.map.size();
  }
  return n;
}

size_t LimitCounters::capacity() const { return impl_->per_shard * kShards; }

// ---- parsing ----

namespace {

struct Scope {
  enum Kind : uint8_t { kAny, kEq, kIn } kind = kAny;
  Uid uid;
};

struct Limit {
  std::string id;
  uint64_t id_hash = 0;
  Scope principal, action, resource;
  bool budget = false;
  int64_t capacity = 0;  // requests, or the budget's limit
  int64_t per_ns = 0;
  std::string amount_from;                             // "context.a.b" as written
  std::vector<std::pair<std::string, uint64_t>> path;  // keys after "context", with their hashes
};

}  // namespace

struct Limits::Impl {
  std::vector<Limit> limits;
  const Clock* clock = nullptr;
  std::shared_ptr<LimitCounters> counters;
};

namespace {

using json = nlohmann::json;

// Type::"id" (Cedar's uid syntax; the id's escapes \" \\ \' \n \r \t \0).
bool ParseUidText(std::string_view s, Uid* out, std::string* error) {
  size_t q = s.find("::\"");
  if (q == std::string_view::npos || s.size() < q + 4 || s.back() != '"') {
    *error = "expected an entity uid written Type::\"id\", got `" + std::string(s) + "`";
    return false;
  }
  std::string_view type = s.substr(0, q);
  if (!ValidEntityTypeName(type)) {
    *error = "`" + std::string(type) + "` is not a valid entity type name";
    return false;
  }
  std::string id;
  std::string_view body = s.substr(q + 3, s.size() - q - 4);
  for (size_t k = 0; k < body.size(); ++k) {
    char c = body[k];
    if (c == '"') {
      *error = "unescaped quote in the id of `" + std::string(s) + "`";
      return false;
    }
    if (c != '\\') {
      id.push_back(c);
      continue;
    }
    if (++k == body.size()) {
      *error = "a dangling backslash in `" + std::string(s) + "`";
      return false;
    }
    switch (body[k]) {
      case '"':
      case '\\':
      case '\'':
        id.push_back(body[k]);
        break;
      case 'n':
        id.push_back('\n');
        break;
      case 'r':
        id.push_back('\r');
        break;
      case 't':
        id.push_back('\t');
        break;
      case '0':
        id.push_back('\0');
        break;
      default:
        *error = "unsupported escape \\" + std::string(1, body[k]) + " in `" + std::string(s) + "`";
        return false;
    }
  }
  *out = Uid(std::string(type), std::move(id));
  return true;
}

// "500ms", "30s", "1m", "24h", "7d": a positive whole number and a unit, at most 366 days.
bool ParseDuration(const json& j, int64_t* ns, std::string* error) {
  if (!j.is_string()) {
    *error = "\"per\" must be a string such as \"1m\" or \"24h\"";
    return false;
  }
  const std::string& s = j.get_ref<const std::string&>();
  size_t k = 0;
  int64_t n = 0;
  while (k < s.size() && s[k] >= '0' && s[k] <= '9' && n < 1'000'000'000) n = n * 10 + (s[k++] - '0');
  std::string unit = s.substr(k);
  int64_t scale = 0;
  if (unit == "ms") scale = 1'000'000;
  if (unit == "s") scale = 1'000'000'000;
  if (unit == "m") scale = 60'000'000'000;
  if (unit == "h") scale = 3'600'000'000'000;
  if (unit == "d") scale = 86'400'000'000'000;
  if (k == 0 || scale == 0 || n <= 0) {
    *error = "\"per\": `" + s + "` is not a duration (a positive whole number then ms, s, m, h or d)";
    return false;
  }
  if (n > 366 * 86'400'000'000'000 / scale) {
    *error = "\"per\": `" + s + "` is longer than 366 days";
    return false;
  }
  *ns = n * scale;
  return true;
}

bool PositiveInt(const json& j, const char* name, int64_t* out, std::string* error) {
  if (!j.is_number_integer() || j.get<int64_t>() <= 0 || j.get<int64_t>() > (int64_t{1} << 53)) {
    *error = std::string("\"") + name + "\" must be a positive integer (at most 2^53)";
    return false;
  }
  *out = j.get<int64_t>();
  return true;
}

bool ParseLimit(const json& j, Limit* l, std::string* error) {
  if (!j.is_object()) {
    *error = "expected an object";
    return false;
  }
  static const char* kKnown[] = {"id",       "principal",   "principal_in", "action", "action_in",
                                 "resource", "resource_in", "rate",         "budget", "description"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find_if(std::begin(kKnown), std::end(kKnown), [&](const char* k) { return it.key() == k; }) ==
        std::end(kKnown)) {
      *error = "unknown field \"" + it.key() + "\"";
      return false;
    }
  }
  if (j.contains("description") && !j["description"].is_string()) {
    *error = "\"description\" must be a string";
    return false;
  }
  struct Part {
    const char* eq;
    const char* in;
    Scope* scope;
  } parts[] = {{"principal", "principal_in", &l->principal},
               {"action", "action_in", &l->action},
               {"resource", "resource_in", &l->resource}};
  for (const Part& p : parts) {
    if (j.contains(p.eq) && j.contains(p.in)) {
      *error = std::string("give \"") + p.eq + "\" or \"" + p.in + "\", not both";
      return false;
    }
    for (const char* name : {p.eq, p.in}) {
      if (!j.contains(name)) continue;
      if (!j[name].is_string()) {
        *error = std::string("\"") + name + "\" must be a string such as \"Agent::\\\"a1\\\"\"";
        return false;
      }
      std::string why;
      if (!ParseUidText(j[name].get<std::string>(), &p.scope->uid, &why)) {
        *error = std::string("\"") + name + "\": " + why;
        return false;
      }
      p.scope->kind = name == p.eq ? Scope::kEq : Scope::kIn;
    }
  }
  bool rate = j.contains("rate"), budget = j.contains("budget");
  if (rate == budget) {
    *error = "needs exactly one of \"rate\" and \"budget\"";
    return false;
  }
  const json& spec = rate ? j["rate"] : j["budget"];
  const char* what = rate ? "rate" : "budget";
  if (!spec.is_object()) {
    *error = std::string("\"") + what + "\" must be an object";
    return false;
  }
  for (auto it = spec.begin(); it != spec.end(); ++it) {
    bool known = it.key() == "per" || (rate && it.key() == "requests") ||
                 (!rate && (it.key() == "limit" || it.key() == "amount_from"));
    if (!known) {
      *error = std::string("unknown field \"") + it.key() + "\" in \"" + what + "\"";
      return false;
    }
  }
  if (!spec.contains("per")) {
    *error = std::string("\"") + what + "\" needs \"per\"";
    return false;
  }
  if (!ParseDuration(spec["per"], &l->per_ns, error)) return false;
  l->budget = budget;
  if (rate) {
    if (!spec.contains("requests")) {
      *error = "\"rate\" needs \"requests\"";
      return false;
    }
    return PositiveInt(spec["requests"], "requests", &l->capacity, error);
  }
  if (!spec.contains("limit") || !spec.contains("amount_from")) {
    *error = "\"budget\" needs \"limit\" and \"amount_from\"";
    return false;
  }
  if (!PositiveInt(spec["limit"], "limit", &l->capacity, error)) return false;
  if (!spec["amount_from"].is_string()) {
    *error = "\"amount_from\" must be a string such as \"context.cost_cents\"";
    return false;
  }
  l->amount_from = spec["amount_from"].get<std::string>();
  std::string_view rest = l->amount_from;
  if (rest.substr(0, 8) != "context.") {
    *error = "\"amount_from\": `" + l->amount_from + "` must be a path into the context: context.NAME{.NAME}";
    return false;
  }
  rest.remove_prefix(8);
  for (;;) {
    size_t dot = rest.find('.');
    std::string_view key = rest.substr(0, dot);
    if (key.empty()) {
      *error = "\"amount_from\": `" + l->amount_from + "` has an empty attribute name";
      return false;
    }
    l->path.emplace_back(std::string(key), HashBytes(key));
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  return true;
}

bool ValidId(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '_' || c == '.'))
      return false;
  }
  return true;
}

}  // namespace

Limits::Limits() : impl_(std::make_shared<Impl>()) {}

Result<Limits> Limits::Parse(std::string_view text, LimitOptions options) {
  auto impl = std::make_shared<Impl>();
  impl->clock = options.clock ? options.clock : &Clock::Real();
  impl->counters =
      options.counters ? options.counters : std::make_shared<LimitCounters>(options.max_counters);
  Limits out;
  if (text.find_first_not_of(" \t\r\n") != std::string_view::npos) {
    json j;
    try {
      j = json::parse(text);
    } catch (const json::parse_error& e) {
      return InvalidArgument("limits.json: invalid JSON at byte " + std::to_string(e.byte));
    } catch (const json::exception& e) {
      return InvalidArgument(std::string("limits.json: invalid JSON: ") + e.what());
    }
    if (!j.is_array()) return InvalidArgument("limits.json: expected a JSON array of limits");
    for (size_t k = 0; k < j.size(); ++k) {
      std::string label = "limits.json: limit #" + std::to_string(k + 1);
      const json& e = j[k];
      if (e.is_object() && e.contains("id") && e["id"].is_string())
        label += " (\"" + e["id"].get<std::string>() + "\")";
      if (!e.is_object() || !e.contains("id") || !e["id"].is_string() ||
          !ValidId(e["id"].get<std::string>())) {
        return InvalidArgument(label + ": needs \"id\", 1-64 characters of [A-Za-z0-9._-]");
      }
      Limit l;
      l.id = e["id"].get<std::string>();
      l.id_hash = HashBytes(l.id, 0x6C696D6974ULL);
      for (const Limit& other : impl->limits) {
        if (other.id == l.id) return InvalidArgument(label + ": the id is used by an earlier limit");
      }
      std::string error;
      if (!ParseLimit(e, &l, &error)) return InvalidArgument(label + ": " + error);
      impl->limits.push_back(std::move(l));
    }
  }
  out.impl_ = std::move(impl);
  return out;
}

size_t Limits::size() const { return impl_->limits.size(); }
const std::string& Limits::id(size_t index) const { return impl_->limits[index].id; }
const std::shared_ptr<LimitCounters>& Limits::counters() const { return impl_->counters; }

// ---- applying ----

namespace {

bool ScopeMatches(const Scope& s, const Uid& u, const EntityStore& store) {
  switch (s.kind) {
    case Scope::kAny:
      return true;
    case Scope::kEq:
      return u == s.uid;
    case Scope::kIn:
      return store.In(u, s.uid, store.Find(u));
  }
  return false;
}

// The amount a budget charges, from the context. False with `error` if it is missing or not a
// non-negative integer (the decision is then denied: a budget cannot be checked).
bool Amount(const Limit& l, const RequestData& r, int64_t* out, std::string* error) {
  const Value* v = &r.context;
  for (const auto& [key, hash] : l.path) {
    if (v->kind != Kind::kRecord || !(v = v->rec->Find(key, hash))) {
      *error = "limit " + l.id + ": " + l.amount_from + " is missing";
      return false;
    }
  }
  if (v->kind != Kind::kLong || v->i < 0) {
    *error = "limit " + l.id + ": " + l.amount_from + " is not a non-negative integer";
    return false;
  }
  *out = v->i;
  return true;
}

// True if the counter is as a new one would be (dropping it loses nothing).
bool AtRest(const Counter& c, const Limit* l, int64_t now_ns, int64_t now_unix_ns) {
  if (!l) return true;
  if (l->budget) return c.window != now_unix_ns / l->per_ns || c.used == 0;
  double refill = static_cast<double>(now_ns - c.last_ns) * static_cast<double>(l->capacity) /
                  static_cast<double>(l->per_ns);
  return c.level + refill >= static_cast<double>(l->capacity);
}

class Table {
 public:
  Table(const Limits::Impl& limits, LimitCounters::Impl& counters) : limits_(limits), c_(counters) {}

  // Takes `amount` from the principal's counter of limit `l` (refund: gives it back). False if there
  // is not enough room.
  bool Take(const Limit& l, const Uid& principal, int64_t amount, bool refund) {
    uint64_t key = l.id_hash ^ (principal.hash * 0x9E3779B97F4A7C15ULL);
    auto& shard = c_.shards[(key >> 59) & (kShards - 1)];
    // The clock is read once per decision (and the wall clock only for budgets).
    if (now_ < 0) now_ = limits_.clock->MonotonicNanos();
    if (unix_ns_ < 0 && l.budget) unix_ns_ = limits_.clock->UnixMicros() * 1000;
    int64_t now = now_;
    std::lock_guard<std::mutex> lock(shard.mu);
    Counter* c = nullptr;
    for (uint64_t k = key;; ++k) {  // a 64-bit collision moves on to the next key
      auto it = shard.map.find(k);
      if (it == shard.map.end()) {
        if (refund) return true;  // evicted meanwhile: nothing to give back
        if (shard.map.size() >= c_.per_shard) {
          if (unix_ns_ < 0) unix_ns_ = limits_.clock->UnixMicros() * 1000;
          Evict(shard, now, unix_ns_);
        }
        Counter fresh;
        fresh.limit_id = l.id;
        fresh.type = principal.type;
        fresh.id = principal.id;
        fresh.level = static_cast<double>(l.capacity);
        fresh.last_ns = now;
        c = &shard.map.emplace(k, std::move(fresh)).first->second;
        break;
      }
      if (it->second.limit_id == l.id && it->second.id == principal.id && it->second.type == principal.type) {
        c = &it->second;
        break;
      }
    }
    c->touched_ns = now;
    if (l.budget) {
      int64_t window = unix_ns_ / l.per_ns;
      if (c->window != window) {
        if (refund) return true;  // the window the amount was taken from is over
        c->window = window;
        c->used = 0;
      }
      if (refund) {
        c->used = std::max<int64_t>(0, c->used - amount);
        return true;
      }
      if (amount > l.capacity - c->used) return false;
      c->used += amount;
      return true;
    }
    double cap = static_cast<double>(l.capacity);
    if (now > c->last_ns) {
      c->level = std::min(
          cap, c->level + static_cast<double>(now - c->last_ns) * cap / static_cast<double>(l.per_ns));
      c->last_ns = now;
    }
    if (c->level > cap) c->level = cap;  // the limit shrank in a new bundle
    if (refund) {
      c->level = std::min(cap, c->level + static_cast<double>(amount));
      return true;
    }
    if (c->level < static_cast<double>(amount)) return false;
    c->level -= static_cast<double>(amount);
    return true;
  }

 private:
  const Limit* Find(const std::string& id) const {
    for (const Limit& l : limits_.limits) {
      if (l.id == id) return &l;
    }
    return nullptr;
  }

  // Makes room in a full shard: drops the counters at rest; if there are none, the least recently
  // used one.
  void Evict(LimitCounters::Impl::Shard& shard, int64_t now, int64_t unix_ns) {
    size_t before = shard.map.size();
    auto lru = shard.map.end();
    for (auto it = shard.map.begin(); it != shard.map.end();) {
      if (AtRest(it->second, Find(it->second.limit_id), now, unix_ns)) {
        it = shard.map.erase(it);
        continue;
      }
      if (lru == shard.map.end() || it->second.touched_ns < lru->second.touched_ns) lru = it;
      ++it;
    }
    if (shard.map.size() == before && lru != shard.map.end()) shard.map.erase(lru);
  }

  const Limits::Impl& limits_;
  LimitCounters::Impl& c_;
  int64_t now_ = -1;
  int64_t unix_ns_ = -1;
};

bool Matches(const Limit& l, const RequestData& r, const EntityStore& store) {
  return ScopeMatches(l.principal, *r.principal, store) && ScopeMatches(l.action, *r.action, store) &&
         ScopeMatches(l.resource, *r.resource, store);
}

}  // namespace

void Limits::Apply(const Entities& entities, const RequestData& r, Outcome* out) const {
  if (out->decision == Decision::kDeny || impl_->limits.empty()) return;
  const EntityStore& store = entities.store();
  Table table(*impl_, impl_->counters->impl());
  const auto& limits = impl_->limits;
  for (size_t i = 0; i < limits.size(); ++i) {
    const Limit& l = limits[i];
    if (!Matches(l, r, store)) continue;
    int64_t amount = 1;
    bool ok = !l.budget || Amount(l, r, &amount, &out->limit_error);
    if (ok) ok = table.Take(l, *r.principal, amount, false);
    if (ok) continue;
    // Refused: give back what the earlier limits took for this decision.
    for (size_t j = 0; j < i; ++j) {
      const Limit& p = limits[j];
      int64_t back = 1;
      std::string ignored;
      if (!Matches(p, r, store) || (p.budget && !Amount(p, r, &back, &ignored))) continue;
      table.Take(p, *r.principal, back, true);
    }
    out->decision = Decision::kDeny;
    out->reason.clear();
    out->limit = static_cast<int32_t>(i);
    return;
  }
}

// ---- Decider ----

Decider::Decider(PolicySet policies, Entities entities, Limits limits)
    : policies_(std::move(policies)), entities_(std::move(entities)), limits_(std::move(limits)) {}

Result<Decider> Decider::FromFiles(const std::map<std::string, std::string>& files, LimitOptions options) {
  auto p = files.find("policies.cedar");
  auto pj = files.find("policies.json");
  auto lf = files.find("links.json");
  Result<PolicySet> set = InvalidArgument("the bundle has no policies.cedar");
  if (p != files.end()) {
    if (pj != files.end()) return InvalidArgument("the bundle has both policies.cedar and policies.json");
    std::vector<TemplateLink> links;
    if (lf != files.end()) {
      auto parsed = PolicySet::ParseLinks(lf->second);
      if (!parsed.ok()) return parsed.status().WithContext("links.json");
      links = std::move(*parsed);
    }
    set = PolicySet::ParseWithTemplates(p->second, links);
    if (!set.ok())
      return set.status().WithContext(lf != files.end() ? "policies.cedar, links.json" : "policies.cedar");
  } else if (pj != files.end()) {
    // The JSON policy set carries its own templateLinks.
    if (lf != files.end())
      return InvalidArgument("links.json goes with policies.cedar; policies.json has templateLinks");
    set = PolicySet::FromJson(pj->second);
    if (!set.ok()) return set.status().WithContext("policies.json");
  } else {
    return set.status();
  }
  const char* policy_file = p != files.end() ? "policies.cedar" : "policies.json";
  const CompiledPolicySet& c = set->compiled();
  for (const CompiledPolicy& policy : c.policies) {
    if (!policy.forbid) continue;
    for (const auto& [key, value] : policy.annotations) {
      if (key == kRequireApprovalAnnotation) {
        return InvalidArgument(std::string(policy_file) + ": " + std::to_string(policy.line) + ":" +
                               std::to_string(policy.col) +
                               ": @require_approval applies to permit policies only (" + policy.id + ")");
      }
    }
  }
  Entities entities;
  if (auto e = files.find("entities.json"); e != files.end()) {
    auto parsed = Entities::FromJson(e->second);
    if (!parsed.ok()) return parsed.status().WithContext("entities.json");
    entities = std::move(*parsed);
  }
  Limits limits;
  if (auto l = files.find("limits.json"); l != files.end()) {
    GOVERN_ASSIGN_OR_RETURN(limits, Limits::Parse(l->second, std::move(options)));
  }
  return Decider(std::move(*set), std::move(entities), std::move(limits));
}

void Decider::Decide(const Request& request, Outcome* out) const {
  Authorize(policies_, entities_, request.data(), out);
  limits_.Apply(entities_, request.data(), out);
}

void Decider::Decide(const RequestBuilder& request, Outcome* out) const {
  Authorize(policies_, entities_, request, out);
  if (request.status().ok()) limits_.Apply(entities_, request.data(), out);
}

Response Decider::Decide(const Request& request) const {
  Outcome o;
  Decide(request, &o);
  return ToResponse(o);
}

Response Decider::ToResponse(const Outcome& o) const {
  Response resp;
  resp.decision = o.decision;
  for (uint32_t k : o.reason) resp.reason.push_back(policies_.id(k));
  for (const auto& [k, msg] : o.errors) resp.errors.push_back({policies_.id(k), msg});
  if (o.limit != Outcome::kNoLimit) {
    std::string name = "limit:" + limits_.id(static_cast<size_t>(o.limit));
    resp.reason.push_back(name);
    if (!o.limit_error.empty()) resp.errors.push_back({name, o.limit_error});
  }
  std::sort(resp.reason.begin(), resp.reason.end());
  std::sort(resp.errors.begin(), resp.errors.end(),
            [](const PolicyError& a, const PolicyError& b) { return a.policy_id < b.policy_id; });
  return resp;
}

Result<BundleDecider> DeciderFromBundle(const std::function<const std::string*(std::string_view)>& file,
                                        LimitOptions options) {
  std::map<std::string, std::string> files;
  for (std::string_view name :
       {"policies.cedar", "policies.json", "links.json", "entities.json", "limits.json"}) {
    if (const std::string* f = file(name)) files.emplace(std::string(name), *f);
  }
  if (!files.contains("policies.cedar") && !files.contains("policies.json"))
    return InvalidArgument("the bundle has no policies.cedar or policies.json");
  // Errors name the file ("limits.json: ...").
  GOVERN_ASSIGN_OR_RETURN(Decider decider, Decider::FromFiles(files, std::move(options)));
  BundleDecider c{std::move(decider), {}};
  const PolicySet& ps = c.decider.policies();
  for (size_t i = 0; i < ps.size(); ++i) {
    std::string name = ps.id(i);
    if (ps.template_of(i).empty()) {
      for (const auto& [k, v] : ps.annotations(i)) {
        if (k == "id" && !v.empty()) name = v;
      }
    }
    c.names.push_back(std::move(name));
  }
  return c;
}

}  // namespace govern::policy
