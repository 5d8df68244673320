// The Cedar evaluator and authorizer: walks the compiled trees of a PolicySet against one request.
// Errors follow the reference's semantics (which operations raise which errors, and where `&&`,
// `||` and `if` stop evaluating); the messages are ours.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "policy/ast.h"
#include "policy/cedar.h"
#include "policy/entity_store.h"
#include "policy/extensions.h"
#include "policy/parser.h"

namespace govern::policy {
namespace {

struct Ctx {
  const EntityStore* store;
  const RequestData* req;
  Value vars[4];
  const EntityData* data[3];  // principal, action, resource
  Arena* scratch;
  std::string error;
};

bool Err(Ctx& c, std::string msg) {
  c.error = std::move(msg);
  return false;
}

bool TypeErr(Ctx& c, const char* expected, const Value& got) {
  return Err(c, std::string("type error: expected ") + expected + ", got " + KindName(got.kind));
}

const EntityData* Lookup(Ctx& c, const Uid* u) {
  if (u == c.req->principal) return c.data[0];
  if (u == c.req->action) return c.data[1];
  if (u == c.req->resource) return c.data[2];
  return c.store->Find(*u);
}

bool Like(std::string_view s, const std::vector<PatternElem>& pat) {
  size_t n = pat.size();
  if (n == 0) return s.empty();
  size_t pos = 0;
  size_t first = 0;
  if (!pat[0].wildcard) {
    const std::string& lit = pat[0].text;
    if (s.substr(0, lit.size()) != lit) return false;
    pos = lit.size();
    first = 1;
    if (n == 1) return pos == s.size();
  }
  size_t last = n;
  size_t end = s.size();
  if (!pat[n - 1].wildcard) {
    const std::string& lit = pat[n - 1].text;
    if (lit.size() > s.size() - pos || s.substr(s.size() - lit.size()) != lit) return false;
    end = s.size() - lit.size();
    last = n - 1;
  }
  for (size_t k = first; k < last; ++k) {
    if (pat[k].wildcard) continue;
    size_t found = s.substr(0, end).find(pat[k].text, pos);
    if (found == std::string_view::npos) return false;
    pos = found + pat[k].text.size();
  }
  return pos <= end;
}

bool Eval(const Node* n, Ctx& c, Value* out);

bool EvalBool(const Node* n, Ctx& c, bool* out) {
  Value v;
  if (!Eval(n, c, &v)) return false;
  if (v.kind != Kind::kBool) return TypeErr(c, "bool", v);
  *out = v.b;
  return true;
}

bool EvalKind(const Node* n, Ctx& c, Kind k, Value* out) {
  if (!Eval(n, c, out)) return false;
  if (out->kind != k) return TypeErr(c, KindName(k), *out);
  return true;
}

bool InValue(Ctx& c, const Value& l, const Value& r, bool* out) {
  if (l.kind != Kind::kEntity) return TypeErr(c, "entity", l);
  const EntityData* ld = Lookup(c, l.e);
  if (r.kind == Kind::kEntity) {
    *out = c.store->In(*l.e, *r.e, ld);
    return true;
  }
  if (r.kind == Kind::kSet) {
    bool any = false;
    for (const Value& e : r.set->elems) {
      if (e.kind != Kind::kEntity) return TypeErr(c, "entity", e);
      if (!any && c.store->In(*l.e, *e.e, ld)) any = true;
    }
    *out = any;
    return true;
  }
  return Err(c, std::string("type error: expected one of [set, entity], got ") + KindName(r.kind));
}

bool GetAttr(Ctx& c, const Node* n, const Value& base, Value* out) {
  if (base.kind == Kind::kRecord) {
    const Value* v = base.rec->Find(n->name, n->hash);
    if (!v) return Err(c, "record does not have the attribute `" + n->name + "`");
    *out = *v;
    return true;
  }
  if (base.kind == Kind::kEntity) {
    const EntityData* d = Lookup(c, base.e);
    if (!d) return Err(c, "entity `" + base.e->ToString() + "` does not exist");
    const Value* v = d->attrs->Find(n->name, n->hash);
    if (!v) return Err(c, "`" + base.e->ToString() + "` does not have the attribute `" + n->name + "`");
    *out = *v;
    return true;
  }
  return Err(c, std::string("type error: expected one of [record, entity], got ") + KindName(base.kind));
}

bool Compare(Ctx& c, Op op, const Value& l, const Value& r, bool* out) {
  if (l.kind != Kind::kLong && l.kind != Kind::kDatetime && l.kind != Kind::kDuration) {
    return TypeErr(c, "one of [long, datetime, duration]", l);
  }
  if (r.kind != l.kind) return TypeErr(c, KindName(l.kind), r);
  switch (op) {
    case Op::kLt:
      *out = l.i < r.i;
      break;
    case Op::kLe:
      *out = l.i <= r.i;
      break;
    case Op::kGt:
      *out = l.i > r.i;
      break;
    default:
      *out = l.i >= r.i;
      break;
  }
  return true;
}

bool EvalExt(const Node* n, Ctx& c, Value* out) {
  if (n->kids.size() != n->expected_args) {
    return Err(c, "wrong number of arguments provided to extension function `" + n->name + "`: expected " +
                      std::to_string(n->expected_args) + ", got " + std::to_string(n->kids.size()));
  }
  Value a[2];
  for (size_t k = 0; k < n->kids.size(); ++k) {
    if (!Eval(n->kids[k], c, &a[k])) return false;
  }
  return CallExtension(n->fn, n->name, n->expected_args, a, n->kids.size(), c.scratch, &c.error, out);
}

}  // namespace

bool CallExtension(ExtFn fn, std::string_view name, uint8_t expected_args, const Value* a, size_t n,
                   Arena* scratch, std::string* error_out, Value* out) {
  if (n != expected_args) {
    *error_out = "wrong number of arguments provided to extension function `" + std::string(name) +
                 "`: expected " + std::to_string(expected_args) + ", got " + std::to_string(n);
    return false;
  }
  auto fail = [&](std::string msg) {
    *error_out = std::move(msg);
    return false;
  };
  auto want = [&](size_t k, Kind kind) {
    if (a[k].kind == kind) return true;
    return fail(std::string("type error: expected ") + KindName(kind) + ", got " + KindName(a[k].kind));
  };
  std::string error;
  int64_t v = 0;
  switch (fn) {
    case ExtFn::kIp: {
      if (!want(0, Kind::kString)) return false;
      IpAddr ip;
      if (!ParseIp(*a[0].s, &ip, &error))
        return fail("error while evaluating `ipaddr` extension function: " + error);
      *out = Value::Ip(scratch->New<IpAddr>(ip));
      return true;
    }
    case ExtFn::kDecimal:
      if (!want(0, Kind::kString)) return false;
      if (!ParseDecimal(*a[0].s, &v, &error))
        return fail("error while evaluating `decimal` extension function: " + error);
      *out = Value::Scalar(Kind::kDecimal, v);
      return true;
    case ExtFn::kDatetime:
      if (!want(0, Kind::kString)) return false;
      if (!ParseDatetime(*a[0].s, &v, &error))
        return fail("error while evaluating `datetime` extension function: " + error);
      *out = Value::Scalar(Kind::kDatetime, v);
      return true;
    case ExtFn::kDuration:
      if (!want(0, Kind::kString)) return false;
      if (!ParseDuration(*a[0].s, &v, &error))
        return fail("error while evaluating `duration` extension function: " + error);
      *out = Value::Scalar(Kind::kDuration, v);
      return true;
    case ExtFn::kIsIpv4:
      if (!want(0, Kind::kIp)) return false;
      *out = Value::Bool(!a[0].ip->v6);
      return true;
    case ExtFn::kIsIpv6:
      if (!want(0, Kind::kIp)) return false;
      *out = Value::Bool(a[0].ip->v6);
      return true;
    case ExtFn::kIsLoopback:
      if (!want(0, Kind::kIp)) return false;
      *out = Value::Bool(IpIsLoopback(*a[0].ip));
      return true;
    case ExtFn::kIsMulticast:
      if (!want(0, Kind::kIp)) return false;
      *out = Value::Bool(IpIsMulticast(*a[0].ip));
      return true;
    case ExtFn::kIsInRange:
      if (!want(0, Kind::kIp) || !want(1, Kind::kIp)) return false;
      *out = Value::Bool(IpIsInRange(*a[0].ip, *a[1].ip));
      return true;
    case ExtFn::kLessThan:
    case ExtFn::kLessThanOrEqual:
    case ExtFn::kGreaterThan:
    case ExtFn::kGreaterThanOrEqual: {
      if (!want(0, Kind::kDecimal) || !want(1, Kind::kDecimal)) return false;
      int64_t l = a[0].i, r = a[1].i;
      bool b = fn == ExtFn::kLessThan          ? l < r
               : fn == ExtFn::kLessThanOrEqual ? l <= r
               : fn == ExtFn::kGreaterThan     ? l > r
                                               : l >= r;
      *out = Value::Bool(b);
      return true;
    }
    case ExtFn::kOffset:
      if (!want(0, Kind::kDatetime) || !want(1, Kind::kDuration)) return false;
      if (__builtin_add_overflow(a[0].i, a[1].i, &v)) return fail("overflows when adding an offset");
      *out = Value::Scalar(Kind::kDatetime, v);
      return true;
    case ExtFn::kDurationSince:
      if (!want(0, Kind::kDatetime) || !want(1, Kind::kDatetime)) return false;
      if (__builtin_sub_overflow(a[0].i, a[1].i, &v)) return fail("overflows when computing the duration");
      *out = Value::Scalar(Kind::kDuration, v);
      return true;
    case ExtFn::kToDate: {
      if (!want(0, Kind::kDatetime)) return false;
      const int64_t day = 86400000;
      int64_t rem = a[0].i % day;
      if (rem < 0) rem += day;
      if (__builtin_sub_overflow(a[0].i, rem, &v)) return fail("overflows when computing the date");
      *out = Value::Scalar(Kind::kDatetime, v);
      return true;
    }
    case ExtFn::kToTime: {
      if (!want(0, Kind::kDatetime)) return false;
      const int64_t day = 86400000;
      int64_t rem = a[0].i % day;
      if (rem < 0) rem += day;
      *out = Value::Scalar(Kind::kDuration, rem);
      return true;
    }
    case ExtFn::kToDays:
    case ExtFn::kToHours:
    case ExtFn::kToMinutes:
    case ExtFn::kToSeconds:
    case ExtFn::kToMilliseconds: {
      if (!want(0, Kind::kDuration)) return false;
      int64_t ms = a[0].i;
      int64_t r = ms;
      if (fn != ExtFn::kToMilliseconds) r = ms / 1000;
      if (fn == ExtFn::kToMinutes || fn == ExtFn::kToHours || fn == ExtFn::kToDays) r /= 60;
      if (fn == ExtFn::kToHours || fn == ExtFn::kToDays) r /= 60;
      if (fn == ExtFn::kToDays) r /= 24;
      *out = Value::Long(r);
      return true;
    }
  }
  return fail("unknown extension function");
}

namespace {

bool Eval(const Node* n, Ctx& c, Value* out) {
  switch (n->op) {
    case Op::kLit:
      *out = n->lit;
      return true;
    case Op::kVar:
      *out = c.vars[n->var];
      return true;
    case Op::kAnd:
    case Op::kOr: {
      bool l = false;
      if (!EvalBool(n->kids[0], c, &l)) return false;
      if (n->op == Op::kAnd ? !l : l) {
        *out = Value::Bool(l);
        return true;
      }
      bool r = false;
      if (!EvalBool(n->kids[1], c, &r)) return false;
      *out = Value::Bool(r);
      return true;
    }
    case Op::kNot: {
      bool b = false;
      if (!EvalBool(n->kids[0], c, &b)) return false;
      *out = Value::Bool(!b);
      return true;
    }
    case Op::kNeg: {
      Value v;
      if (!EvalKind(n->kids[0], c, Kind::kLong, &v)) return false;
      if (v.i == INT64_MIN)
        return Err(c, "integer overflow while attempting to negate the value `" + std::to_string(v.i) + "`");
      *out = Value::Long(-v.i);
      return true;
    }
    case Op::kIf: {
      bool cond = false;
      if (!EvalBool(n->kids[0], c, &cond)) return false;
      return Eval(n->kids[cond ? 1 : 2], c, out);
    }
    case Op::kEq:
    case Op::kNe: {
      Value l, r;
      if (!Eval(n->kids[0], c, &l) || !Eval(n->kids[1], c, &r)) return false;
      bool eq = ValueEquals(l, r);
      *out = Value::Bool(n->op == Op::kEq ? eq : !eq);
      return true;
    }
    case Op::kLt:
    case Op::kLe:
    case Op::kGt:
    case Op::kGe: {
      Value l, r;
      if (!Eval(n->kids[0], c, &l) || !Eval(n->kids[1], c, &r)) return false;
      bool b = false;
      if (!Compare(c, n->op, l, r, &b)) return false;
      *out = Value::Bool(b);
      return true;
    }
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul: {
      Value l, r;
      if (!EvalKind(n->kids[0], c, Kind::kLong, &l) || !EvalKind(n->kids[1], c, Kind::kLong, &r))
        return false;
      int64_t v = 0;
      bool overflow = n->op == Op::kAdd   ? __builtin_add_overflow(l.i, r.i, &v)
                      : n->op == Op::kSub ? __builtin_sub_overflow(l.i, r.i, &v)
                                          : __builtin_mul_overflow(l.i, r.i, &v);
      if (overflow) {
        const char* verb = n->op == Op::kAdd ? "add" : n->op == Op::kSub ? "subtract" : "multiply";
        return Err(c, std::string("integer overflow while attempting to ") + verb + " the values `" +
                          std::to_string(l.i) + "` and `" + std::to_string(r.i) + "`");
      }
      *out = Value::Long(v);
      return true;
    }
    case Op::kIn: {
      Value l, r;
      if (!Eval(n->kids[0], c, &l) || !Eval(n->kids[1], c, &r)) return false;
      bool b = false;
      if (!InValue(c, l, r, &b)) return false;
      *out = Value::Bool(b);
      return true;
    }
    case Op::kHas: {
      Value base;
      if (!Eval(n->kids[0], c, &base)) return false;
      if (base.kind == Kind::kRecord) {
        *out = Value::Bool(base.rec->Find(n->name, n->hash) != nullptr);
        return true;
      }
      if (base.kind == Kind::kEntity) {
        const EntityData* d = Lookup(c, base.e);
        *out = Value::Bool(d && d->attrs->Find(n->name, n->hash) != nullptr);
        return true;
      }
      return Err(c, std::string("type error: expected one of [record, entity], got ") + KindName(base.kind));
    }
    case Op::kGetAttr:
    case Op::kIndex: {
      Value base;
      if (!Eval(n->kids[0], c, &base)) return false;
      return GetAttr(c, n, base, out);
    }
    case Op::kLike: {
      Value v;
      if (!EvalKind(n->kids[0], c, Kind::kString, &v)) return false;
      *out = Value::Bool(Like(*v.s, n->pattern));
      return true;
    }
    case Op::kIs:
    case Op::kIsIn: {
      Value v;
      if (!EvalKind(n->kids[0], c, Kind::kEntity, &v)) return false;
      if (v.e->type != n->name) {
        *out = Value::Bool(false);
        return true;
      }
      if (n->op == Op::kIs) {
        *out = Value::Bool(true);
        return true;
      }
      Value r;
      if (!Eval(n->kids[1], c, &r)) return false;
      bool b = false;
      if (!InValue(c, v, r, &b)) return false;
      *out = Value::Bool(b);
      return true;
    }
    case Op::kSetLit: {
      std::vector<Value> elems(n->kids.size());
      for (size_t k = 0; k < n->kids.size(); ++k) {
        if (!Eval(n->kids[k], c, &elems[k])) return false;
      }
      *out = c.scratch->MakeSet(std::move(elems));
      return true;
    }
    case Op::kRecLit: {
      std::vector<Field> fields(n->kids.size());
      for (size_t k = 0; k < n->kids.size(); ++k) {
        fields[k].key = n->keys[k];
        if (!Eval(n->kids[k], c, &fields[k].value)) return false;
      }
      *out = c.scratch->MakeRecord(std::move(fields));
      return true;
    }
    case Op::kContains: {
      Value s, x;
      if (!EvalKind(n->kids[0], c, Kind::kSet, &s) || !Eval(n->kids[1], c, &x)) return false;
      bool found = false;
      for (const Value& e : s.set->elems) {
        if (ValueEquals(e, x)) {
          found = true;
          break;
        }
      }
      *out = Value::Bool(found);
      return true;
    }
    case Op::kContainsAll:
    case Op::kContainsAny: {
      Value s, x;
      if (!EvalKind(n->kids[0], c, Kind::kSet, &s) || !EvalKind(n->kids[1], c, Kind::kSet, &x)) return false;
      bool all = true, any = false;
      for (const Value& want : x.set->elems) {
        bool found = false;
        for (const Value& e : s.set->elems) {
          if (ValueEquals(e, want)) {
            found = true;
            break;
          }
        }
        all = all && found;
        any = any || found;
      }
      *out = Value::Bool(n->op == Op::kContainsAll ? all : any);
      return true;
    }
    case Op::kIsEmpty: {
      Value s;
      if (!EvalKind(n->kids[0], c, Kind::kSet, &s)) return false;
      *out = Value::Bool(s.set->elems.empty());
      return true;
    }
    case Op::kHasTag:
    case Op::kGetTag: {
      Value e, k;
      if (!EvalKind(n->kids[0], c, Kind::kEntity, &e) || !EvalKind(n->kids[1], c, Kind::kString, &k))
        return false;
      const EntityData* d = Lookup(c, e.e);
      const Value* tag = nullptr;
      if (d && d->tags) tag = d->tags->Find(*k.s, HashBytes(*k.s));
      if (n->op == Op::kHasTag) {
        *out = Value::Bool(tag != nullptr);
        return true;
      }
      if (!d) return Err(c, "entity `" + e.e->ToString() + "` does not exist");
      if (!tag) return Err(c, "`" + e.e->ToString() + "` does not have the tag `" + *k.s + "`");
      *out = *tag;
      return true;
    }
    case Op::kExt:
      return EvalExt(n, c, out);
  }
  return Err(c, "unknown expression");
}

bool ScopeMatches(const ScopeConstraint& sc, const Uid* u, const EntityData* d, const EntityStore& store) {
  switch (sc.kind) {
    case ScopeConstraint::kAny:
      return true;
    case ScopeConstraint::kEq:
      return *u == *sc.uid;
    case ScopeConstraint::kIn:
      if (sc.list) {
        for (const Uid* x : sc.uids) {
          if (store.In(*u, *x, d)) return true;
        }
        return false;
      }
      return store.In(*u, *sc.uid, d);
    case ScopeConstraint::kIs:
      return u->type == sc.type;
    case ScopeConstraint::kIsIn:
      return u->type == sc.type && store.In(*u, *sc.uid, d);
  }
  return false;
}

constexpr uint32_t kForbidBit = 0x80000000u;

void EvalPolicy(const CompiledPolicySet& set, uint32_t index, Ctx& c, Outcome* out) {
  const CompiledPolicy& p = set.policies[index];
  const RequestData& r = *c.req;
  if (!ScopeMatches(p.principal, r.principal, c.data[0], *c.store) ||
      !ScopeMatches(p.action, r.action, c.data[1], *c.store) ||
      !ScopeMatches(p.resource, r.resource, c.data[2], *c.store)) {
    return;
  }
  for (const Condition& cond : p.conditions) {
    bool b = false;
    if (!EvalBool(cond.expr, c, &b)) {
      out->errors.emplace_back(index, std::move(c.error));
      return;
    }
    if (b != cond.when) return;
  }
  out->reason.push_back(p.forbid ? (index | kForbidBit) : index);
}

}  // namespace

const char* DecisionName(Decision d) { return d == Decision::kAllow ? "allow" : "deny"; }

void Authorize(const PolicySet& policies, const Entities& entities, const Request& request, Outcome* out) {
  const CompiledPolicySet& set = policies.compiled();
  const EntityStore& store = entities.store();
  const RequestData& r = request.data();
  out->reason.clear();
  out->errors.clear();
  Arena scratch;  // empty unless a policy builds a set or record at run time
  Ctx c{&store, &r, {}, {}, &scratch, {}};
  c.vars[0] = Value::Entity(r.principal);
  c.vars[1] = Value::Entity(r.action);
  c.vars[2] = Value::Entity(r.resource);
  c.vars[3] = r.context;
  c.data[0] = store.Find(*r.principal);
  c.data[1] = store.Find(*r.action);
  c.data[2] = store.Find(*r.resource);

  auto bucket = set.by_action.find(r.action->hash);
  if (bucket != set.by_action.end()) {
    for (uint32_t k : bucket->second) EvalPolicy(set, k, c, out);
  }
  for (uint32_t k : set.any_action) EvalPolicy(set, k, c, out);

  bool any_forbid = false;
  for (uint32_t k : out->reason) any_forbid = any_forbid || (k & kForbidBit);
  size_t w = 0;
  for (uint32_t k : out->reason) {
    if (bool(k & kForbidBit) == any_forbid) out->reason[w++] = k & ~kForbidBit;
  }
  out->reason.resize(w);
  std::sort(out->reason.begin(), out->reason.end());
  std::sort(out->errors.begin(), out->errors.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  out->decision = (!any_forbid && w > 0) ? Decision::kAllow : Decision::kDeny;
}

Response Authorize(const PolicySet& policies, const Entities& entities, const Request& request) {
  Outcome o;
  Authorize(policies, entities, request, &o);
  Response resp;
  resp.decision = o.decision;
  for (uint32_t k : o.reason) resp.reason.push_back(policies.id(k));
  for (auto& [k, msg] : o.errors) resp.errors.push_back({policies.id(k), std::move(msg)});
  std::sort(resp.reason.begin(), resp.reason.end());
  std::sort(resp.errors.begin(), resp.errors.end(),
            [](const PolicyError& a, const PolicyError& b) { return a.policy_id < b.policy_id; });
  return resp;
}

// ---- PolicySet, Entities, Request ----

Result<PolicySet> PolicySet::Parse(std::string_view text) {
  auto parsed = ParsePolicySet(text);
  if (!parsed.ok()) return parsed.status();
  PolicySet ps;
  ps.impl_ = std::move(*parsed);
  return ps;
}

size_t PolicySet::size() const { return impl_->policies.size(); }
const std::string& PolicySet::id(size_t index) const { return impl_->policies[index].id; }
bool PolicySet::is_forbid(size_t index) const { return impl_->policies[index].forbid; }
const std::vector<std::pair<std::string, std::string>>& PolicySet::annotations(size_t index) const {
  return impl_->policies[index].annotations;
}

namespace {

Result<nlohmann::json> ParseJson(std::string_view text, const char* what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgument(std::string(what) + ": invalid JSON at byte " + std::to_string(e.byte) + ": " +
                           e.what());
  } catch (const nlohmann::json::exception& e) {  // out_of_range: a number too large for a double
    return InvalidArgument(std::string(what) + ": invalid JSON: " + e.what());
  }
}

}  // namespace

Entities::Entities() : impl_(std::make_shared<EntityStore>()) {}

Result<Entities> Entities::FromJson(std::string_view json) {
  GOVERN_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(json, "entities"));
  auto store = std::make_shared<EntityStore>();
  GOVERN_RETURN_IF_ERROR(store->Load(j));
  Entities e;
  e.impl_ = std::move(store);
  return e;
}

size_t Entities::size() const { return impl_->size(); }

Result<Request> Request::FromJson(std::string_view json) {
  GOVERN_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(json, "request"));
  auto data = std::make_shared<RequestData>();
  GOVERN_RETURN_IF_ERROR(RequestFromJson(j, data.get()));
  Request r;
  r.impl_ = std::move(data);
  return r;
}

Result<Request> Request::Make(const EntityRef& principal, const EntityRef& action, const EntityRef& resource,
                              std::string_view context_json) {
  // Built directly rather than through a JSON document: this runs once per decision.
  auto data = std::make_shared<RequestData>();
  const EntityRef* refs[3] = {&principal, &action, &resource};
  const Uid** slots[3] = {&data->principal, &data->action, &data->resource};
  static const char* kNames[3] = {"request principal", "request action", "request resource"};
  for (int k = 0; k < 3; ++k) {
    if (!ValidEntityTypeName(refs[k]->type)) {
      return InvalidArgument(std::string(kNames[k]) + ": `" + refs[k]->type +
                             "` is not a valid entity type name");
    }
    *slots[k] = data->arena.MakeUid(refs[k]->type, refs[k]->id);
  }
  if (context_json.empty()) {
    data->context = data->arena.MakeRecord({});
  } else {
    GOVERN_ASSIGN_OR_RETURN(nlohmann::json c, ParseJson(context_json, "context"));
    if (!c.is_object()) return InvalidArgument("request context: expected a JSON object");
    GOVERN_RETURN_IF_ERROR(ValueFromJson(c, &data->arena, "context", &data->context));
    if (data->context.kind != Kind::kRecord) return InvalidArgument("request context: expected a record");
  }
  Request r;
  r.impl_ = std::move(data);
  return r;
}

}  // namespace govern::policy
