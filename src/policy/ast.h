// The compiled form of a Cedar policy set: expression trees with literals folded, policies with their
// scope constraints, and an index of policies by the request's action. Internal to src/policy; built
// once by the parser, immutable afterwards, so any number of threads may evaluate it at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "policy/value.h"

namespace govern::policy {

enum class Op : uint8_t {
  kLit,
  kVar,  // var: 0 principal, 1 action, 2 resource, 3 context
  kAnd,
  kOr,
  kNot,
  kNeg,
  kIf,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAdd,
  kSub,
  kMul,
  kIn,
  kHas,      // kids[0] has name
  kLike,     // kids[0] like pattern
  kIs,       // kids[0] is type
  kIsIn,     // kids[0] is type in kids[1]
  kGetAttr,  // kids[0].name
  kIndex,    // kids[0][name] (same as kGetAttr; kept apart only for messages)
  kSetLit,
  kRecLit,  // keys[k]: kids[k]
  kContains,
  kContainsAll,
  kContainsAny,
  kIsEmpty,
  kHasTag,
  kGetTag,
  kExt,  // fn over kids
};

enum class ExtFn : uint8_t {
  kIp,
  kDecimal,
  kDatetime,
  kDuration,
  kIsIpv4,
  kIsIpv6,
  kIsLoopback,
  kIsMulticast,
  kIsInRange,
  kLessThan,
  kLessThanOrEqual,
  kGreaterThan,
  kGreaterThanOrEqual,
  kOffset,
  kDurationSince,
  kToDate,
  kToTime,
  kToDays,
  kToHours,
  kToMinutes,
  kToSeconds,
  kToMilliseconds,
};

// One element of a `like` pattern: a literal run of characters, or a wildcard.
struct PatternElem {
  bool wildcard = false;
  std::string text;
};

struct Node {
  Op op = Op::kLit;
  uint8_t var = 0;
  ExtFn fn = ExtFn::kIp;
  uint8_t expected_args = 0;  // for kExt: the arity the function takes (checked when evaluated)
  // What the source wrote, where compiling changed the node, so that the policy prints back as written
  // (est.cc): a kLit folded from a set/record literal or an extension call (kids still hold the
  // parts), or (kHas) the top kAnd of `e has a.b.c`, whose `keys` hold the path.
  Op written = Op::kLit;
  Value lit;
  std::string name;  // attribute, tag-free key, or entity type for `is`
  uint64_t hash = 0;
  std::vector<const Node*> kids;
  std::vector<std::string> keys;  // kRecLit
  std::vector<PatternElem> pattern;
  uint32_t line = 0, col = 0;
};

struct ScopeConstraint {
  enum Kind : uint8_t { kAny, kEq, kIn, kIs, kIsIn } kind = kAny;
  // A template's slot in place of `uid` (kEq, kIn, kIsIn): the uid comes from each link.
  enum Slot : uint8_t { kNoSlot, kPrincipalSlot, kResourceSlot } slot = kNoSlot;
  const Uid* uid = nullptr;      // kEq, kIn, kIsIn
  std::vector<const Uid*> uids;  // action in [..]
  bool list = false;             // action in [..]
  std::string type;              // kIs, kIsIn
};

// "?principal" / "?resource".
const char* SlotName(ScopeConstraint::Slot slot);

struct Condition {
  bool when = true;  // false: unless
  const Node* expr = nullptr;
};

struct CompiledPolicy {
  std::string id;
  bool forbid = false;
  ScopeConstraint principal, action, resource;
  std::vector<Condition> conditions;
  std::vector<std::pair<std::string, std::string>> annotations;
  std::vector<uint8_t> bare_annotation;  // per annotation: written without a value (`@key`)
  int32_t template_index = -1;           // a template-linked policy: its template in `templates`
  uint32_t slot_line = 0, slot_col = 0;  // where the first slot is written (text only)
  bool requires_approval = false;        // a permit annotated @require_approval (docs/policy-extensions.md)
  uint32_t line = 0, col = 0;
};

// One template-linked policy: `policies[policy]` is the template with its slots filled.
struct TemplateLinkData {
  std::string id;
  uint32_t template_index = 0;
  uint32_t policy = 0;
  const Uid* principal = nullptr;  // the ?principal value, if the template has that slot
  const Uid* resource = nullptr;
};

struct CompiledPolicySet {
  Arena arena;  // literals, uids and nodes
  std::vector<std::unique_ptr<Node>> nodes;
  // Static policies, then template-linked policies; only these are evaluated.
  std::vector<CompiledPolicy> policies;
  std::vector<CompiledPolicy> templates;  // scope with slots; conditions shared with their links
  std::vector<TemplateLinkData> links;
  // Policies whose action scope is `action == A`, by A's hash; the rest are in `any_action`.
  // Each list holds policy indices in increasing order.
  std::unordered_map<uint64_t, std::vector<uint32_t>> by_action;
  std::vector<uint32_t> any_action;
  bool any_approval = false;  // some policy requires_approval
  void BuildIndex();
};

// Finds an extension function or method by name ("ip", "isInRange", ...): its id and the number of
// arguments it takes (a method's receiver counts). False if there is none.
bool LookupExtension(std::string_view name, ExtFn* fn, uint8_t* args);

// Applies an extension function to already evaluated arguments (receiver first for methods). Values
// it creates are owned by `scratch`. On an error (arity, type, a bad literal, overflow) returns false
// with the message in `error`.
bool CallExtension(ExtFn fn, std::string_view name, uint8_t expected_args, const Value* args, size_t n,
                   Arena* scratch, std::string* error, Value* out);

}  // namespace govern::policy
