// Cedar policy decisions: parse a policy set once, load entities once, then decide requests fast.
//
// The language is Cedar as cedar-policy 4.x defines it and @cedar-policy/cedar-wasm 4.13 runs it:
// permit/forbid with scope constraints (==, in, is, is..in; action in [..]), when/unless conditions,
// annotations, every operator, and the ip/decimal/datetime/duration extensions. Decisions follow
// Cedar's rules: default deny; any satisfied forbid denies; otherwise any satisfied permit allows; a
// policy whose condition raises an error is skipped and reported among the errors.
//
// Thread-safety: PolicySet, Entities and Request are immutable values that share their compiled
// state; copying one is cheap (a reference count), and any number of threads may call Authorize on
// the same objects at once. Authorize itself allocates nothing on its usual path when given a reused
// Outcome (computed set/record literals and error messages are the exceptions).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace govern::policy {

struct CompiledPolicySet;
class EntityStore;
struct RequestData;

// The outcome of a decision. Not a bool: a later change adds an outcome that asks a human.
enum class Decision : uint8_t { kDeny = 0, kAllow = 1 };

const char* DecisionName(Decision d);  // "allow" / "deny"

// An entity uid as given by callers: type ("Agent", "Acme::Team") and id.
struct EntityRef {
  std::string type;
  std::string id;
};

// A compiled, immutable policy set.
class PolicySet {
 public:
  // Parses Cedar policy text. Policies get the ids "policy0", "policy1", ... in text order (the ids
  // the reference gives the policies of a set passed as one string). Errors: InvalidArgument with
  // "line:column: message" of the first problem.
  static Result<PolicySet> Parse(std::string_view text);

  size_t size() const;
  const std::string& id(size_t index) const;
  bool is_forbid(size_t index) const;
  // The policy's annotations (@key("value"); a bare @key has an empty value), in text order.
  const std::vector<std::pair<std::string, std::string>>& annotations(size_t index) const;

  const CompiledPolicySet& compiled() const { return *impl_; }

 private:
  std::shared_ptr<const CompiledPolicySet> impl_;
};

// An immutable entity store: each entity's attributes, tags and the transitive closure of its
// parents, computed when loaded.
class Entities {
 public:
  Entities();  // empty
  // Parses the Cedar JSON entity format: an array of {"uid": {"type","id"}, "attrs": {...},
  // "parents": [uid...], "tags": {...}} ("tags" optional, other fields ignored; uids may also be written
  // {"__entity": {...}}). Attribute values: bool, integer, string, array (a set), object (a record),
  // {"__entity": uid}, and {"__extn": {"fn": F, "arg": A}} or {"fn": F, "args": [..]}, a call of any
  // extension function or method evaluated when loaded. An escape object of the wrong shape is an
  // ordinary record, as in the reference. Errors: InvalidArgument naming the problem (bad JSON with its
  // byte offset, a missing field, a duplicate entity that differs, a parent cycle, a float, a null, a
  // failing extension call).
  static Result<Entities> FromJson(std::string_view json);

  size_t size() const;
  const EntityStore& store() const { return *impl_; }

 private:
  std::shared_ptr<const EntityStore> impl_;
};

// One request: principal, action, resource and context (a record).
class Request {
 public:
  // {"principal": {"type","id"}, "action": {...}, "resource": {...}, "context": {...}} (context may
  // be absent). Errors: InvalidArgument.
  static Result<Request> FromJson(std::string_view json);
  // The same from parts; `context_json` is a JSON object ("" means {}).
  static Result<Request> Make(const EntityRef& principal, const EntityRef& action, const EntityRef& resource,
                              std::string_view context_json);

  const RequestData& data() const { return *impl_; }

 private:
  std::shared_ptr<const RequestData> impl_;
};

// The fast-path result: indices into the PolicySet. Reuse one per thread to avoid allocation.
// Error messages are ours (the reference's wording is not reproduced); which policies err is the same.
struct Outcome {
  Decision decision = Decision::kDeny;
  std::vector<uint32_t> reason;  // policies that determined the decision (satisfied forbids, else permits)
  std::vector<std::pair<uint32_t, std::string>> errors;  // policies skipped because evaluation failed
};

// Decides `request`. Clears and fills `out`; indices are in increasing order.
void Authorize(const PolicySet& policies, const Entities& entities, const Request& request, Outcome* out);

struct PolicyError {
  std::string policy_id;
  std::string message;
};

// The convenient result: policy ids, sorted as strings (the reference's order for comparison).
struct Response {
  Decision decision = Decision::kDeny;
  std::vector<std::string> reason;
  std::vector<PolicyError> errors;
};

Response Authorize(const PolicySet& policies, const Entities& entities, const Request& request);

}  // namespace govern::policy
