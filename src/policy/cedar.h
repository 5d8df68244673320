// Cedar policy decisions: parse a policy set once, load entities once, then decide requests fast.
//
// The language is Cedar as cedar-policy 4.x defines it and @cedar-policy/cedar-wasm 4.13 runs it:
// permit/forbid with scope constraints (==, in, is, is..in; action in [..]), when/unless conditions,
// annotations, every operator, and the ip/decimal/datetime/duration extensions. Decisions follow
// Cedar's rules: default deny; any satisfied forbid denies; otherwise any satisfied permit allows; a
// policy whose condition raises an error is skipped and reported among the errors.
//
// Beyond Cedar (docs/policy-extensions.md): a satisfied permit annotated `@require_approval` makes the
// decision approval_required instead of allow (forbid still wins); without such a policy the decision
// is exactly Cedar's. Rate limits and budgets are in limits.h (Limits, Decider).
//
// Thread-safety: PolicySet, Entities and Request are immutable values that share their compiled
// state; copying one is cheap (a reference count), and any number of threads may call Authorize on
// the same objects at once. A RequestBuilder is one thread's reusable scratch (not shared). Authorize itself
// allocates nothing on its usual path when given a reused Outcome (computed set/record literals and error
// messages are the exceptions).
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

// The outcome of a decision. kApprovalRequired: allowed once a human approves (the determining
// policies are the satisfied `@require_approval` permits).
enum class Decision : uint8_t { kDeny = 0, kAllow = 1, kApprovalRequired = 2 };

const char* DecisionName(Decision d);  // "allow" / "deny" / "approval_required"

// The annotation that marks a permit as needing a human's approval: `@require_approval` or
// `@require_approval("note for the approver")`.
inline constexpr std::string_view kRequireApprovalAnnotation = "require_approval";

// An entity uid as given by callers: type ("Agent", "Acme::Team") and id.
struct EntityRef {
  std::string type;
  std::string id;
};

// A link of a policy template (Cedar's template-linked policy): the policy `link_id` is the template
// `template_id` with each slot ("?principal", "?resource") replaced by the given entity. The JSON form
// (links.json, a JSON policy set's "templateLinks") is cedar-wasm's TemplateLink:
//   {"templateId": "policy3", "newId": "alice-reads", "values": {"?principal": {"type": "User", "id":
//   "alice"}}}
struct TemplateLink {
  std::string template_id;
  std::string link_id;
  std::vector<std::pair<std::string, EntityRef>> values;  // slot -> entity
};

// A compiled, immutable policy set: static policies and template-linked policies (both evaluated),
// and the templates (not evaluated themselves; a template is a policy with `?principal` or
// `?resource` in its scope, and nowhere else).
class PolicySet {
 public:
  // Parses Cedar policy text of static policies only (a template is an error, as when the reference
  // is given one `staticPolicies` string). Policies get the ids "policy0", "policy1", ... in text
  // order (the reference's ids for such a set). Errors: InvalidArgument with "line:column: message"
  // of the first problem.
  static Result<PolicySet> Parse(std::string_view text);

  // Policy text that may hold templates too (a bundle's policies.cedar): policies and templates are
  // numbered together "policy0", "policy1", ... in text order (as Cedar's PolicySet::from_str does),
  // then `links` are linked. Link errors, as Cedar's: an unknown template (or a static policy named as
  // one), a link id already used by a policy, template or link, a slot of the template not filled, a
  // value for a slot the template lacks.
  static Result<PolicySet> ParseWithTemplates(std::string_view text, const std::vector<TemplateLink>& links);

  // A Cedar JSON policy set, in the shape cedar-wasm's PolicySet takes (docs/policy.md):
  //   {"staticPolicies": "<text>" | {id: <policy>} | [<policy>...], "templates": {id: <template>},
  //    "templateLinks": [<TemplateLink>...]}
  // where a policy or template is Cedar text (exactly one) or its JSON form (EST, as the reference's
  // policyToJson prints it). A single policy's JSON form alone (an object with "effect") is accepted
  // too, as the static policy "policy0". Errors: InvalidArgument naming the policy.
  static Result<PolicySet> FromJson(std::string_view json);

  // A policy file by its name: "*.json" is a JSON policy set (FromJson), anything else Cedar text that
  // may hold templates (ParseWithTemplates), linked by `links_json` (links.json's content; "" for none;
  // with a JSON set its templateLinks are used instead, and links_json must be "").
  static Result<PolicySet> FromFile(std::string_view name, std::string_view content,
                                    std::string_view links_json = "");

  // links.json: a JSON array of TemplateLink objects. Errors: InvalidArgument naming the link by position.
  static Result<std::vector<TemplateLink>> ParseLinks(std::string_view json);

  // The set as a Cedar JSON policy set: {"staticPolicies": {id: EST}, "templates": {id: EST},
  // "templateLinks": [...]} (the last two only when not empty). FromJson reads it back to the same set.
  std::string ToJson() const;

  size_t template_count() const;
  const std::string& template_id(size_t index) const;

  size_t size() const;
  const std::string& id(size_t index) const;
  bool is_forbid(size_t index) const;
  // The policy's annotations (@key("value"); a bare @key has an empty value), in text order.
  const std::vector<std::pair<std::string, std::string>>& annotations(size_t index) const;

  // The policy is a permit annotated @require_approval.
  bool requires_approval(size_t index) const;
  // For a template-linked policy, its template's id; empty for a static policy.
  const std::string& template_of(size_t index) const;

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
  friend class RequestBuilder;
  std::shared_ptr<const RequestData> impl_;
};

// Builds requests without a JSON document, reusing its storage from one request to the next: after
// the first few calls, setting the uids and a context of a few arguments allocates nothing. Use one
// per thread (not thread-safe); Authorize reads it directly, Build() makes an immutable Request.
//
//   RequestBuilder b;                                     // once per thread
//   b.Reset().Principal("Agent", "a1").Action("Action", "call_tool").Resource("Tool", "search");
//   b.Long("cost_cents", 3).BeginRecord("args").String("query", q).Long("max_results", 5).End();
//   b.Ip("source_ip", "10.1.2.3").Decimal("price", "12.50").Datetime("now", "2024-10-15T11:38:02Z");
//   if (!b.status().ok()) ...;                            // a bad type name, a duplicate key
//   Authorize(policies, entities, b, &outcome);
//
// Context setters add to the record or set opened last (the context record at the top); inside a set
// the key is ignored (pass ""). Records keep one value per key: a second value for a key is an error.
class RequestBuilder {
 public:
  RequestBuilder();
  ~RequestBuilder();
  RequestBuilder(RequestBuilder&&) noexcept;
  RequestBuilder& operator=(RequestBuilder&&) noexcept;

  // Empties the context and clears the status; the principal, action and resource stay as set.
  RequestBuilder& Reset();
  // Entity uids. Setting the same uid again is nearly free (compared, not rebuilt).
  RequestBuilder& Principal(std::string_view type, std::string_view id);
  RequestBuilder& Action(std::string_view type, std::string_view id);
  RequestBuilder& Resource(std::string_view type, std::string_view id);

  RequestBuilder& String(std::string_view key, std::string_view value);
  RequestBuilder& Long(std::string_view key, int64_t value);
  RequestBuilder& Bool(std::string_view key, bool value);
  RequestBuilder& Entity(std::string_view key, std::string_view type, std::string_view id);
  // Extension values from the strings Cedar's constructors take: ip("10.0.0.1"), ip("10.0.0.0/8"),
  // decimal("12.50"), datetime("2024-10-15T11:38:02Z"), duration("1h30m"), with their rules; a string
  // the constructor refuses sets the status (naming the key). Allocate nothing once warm.
  RequestBuilder& Ip(std::string_view key, std::string_view text);
  RequestBuilder& Decimal(std::string_view key, std::string_view text);
  RequestBuilder& Datetime(std::string_view key, std::string_view text);
  RequestBuilder& Duration(std::string_view key, std::string_view text);
  // The same from numbers, without parsing: a decimal in ten-thousandths (12.5 is 125000), a datetime
  // in milliseconds since the Unix epoch, a duration in milliseconds.
  RequestBuilder& DecimalScaled(std::string_view key, int64_t ten_thousandths);
  RequestBuilder& DatetimeMillis(std::string_view key, int64_t millis_since_epoch);
  RequestBuilder& DurationMillis(std::string_view key, int64_t millis);
  RequestBuilder& BeginRecord(std::string_view key);
  RequestBuilder& BeginSet(std::string_view key);
  RequestBuilder& End();  // closes the record or set opened last

  // Replaces the context with a JSON object, with exactly Request::Make's meaning and errors. Plain
  // objects, arrays, strings, integers and booleans are read by a small parser straight into the
  // builder's storage; anything else (escapes such as __entity/__extn, \u escapes, non-ASCII text,
  // fractions, duplicate keys, errors) goes through the general JSON path.
  Status ContextJson(std::string_view json);

  // The first problem since Reset (ok if none): a bad type name, a duplicate key, a record or set left
  // open, a uid never set. Authorize on a builder whose status is not ok denies.
  Status status() const;
  // An immutable copy (allocates), e.g. to keep or hand to another thread.
  Result<Request> Build() const;

  const RequestData& data() const;

  struct State;  // internal (request_builder.cc)

 private:
  std::unique_ptr<State> s_;
};

// The fast-path result: indices into the PolicySet. Reuse one per thread to avoid allocation.
// Error messages are ours (the reference's wording is not reproduced); which policies err is the same.
struct Outcome {
  static constexpr int32_t kNoLimit = -1;
  Decision decision = Decision::kDeny;
  // Policies that determined the decision: satisfied forbids; else the satisfied @require_approval
  // permits if any; else the satisfied permits. Empty when a limit denied.
  std::vector<uint32_t> reason;
  std::vector<std::pair<uint32_t, std::string>> errors;  // policies skipped because evaluation failed
  // The limit (index into Limits) that turned an allow or approval into a deny, or kNoLimit.
  int32_t limit = kNoLimit;
  // Why a limit could not be applied (e.g. the budget's amount is missing); empty otherwise.
  std::string limit_error;
};

// Decides `request`. Clears and fills `out`; indices are in increasing order.
void Authorize(const PolicySet& policies, const Entities& entities, const Request& request, Outcome* out);
void Authorize(const PolicySet& policies, const Entities& entities, const RequestBuilder& request,
               Outcome* out);
// The same from the internal form (Request::data() or RequestBuilder::data()).
void Authorize(const PolicySet& policies, const Entities& entities, const RequestData& request, Outcome* out);

struct PolicyError {
  std::string policy_id;
  std::string message;
};

// The convenient result: policy ids, sorted as strings (the reference's order for comparison).
struct Response {
  Decision decision = Decision::kDeny;
  std::vector<std::string> reason;  // policy ids, or "limit:<id>" when a limit denied
  std::vector<PolicyError> errors;  // a limit's problem has the policy_id "limit:<id>"
};

Response Authorize(const PolicySet& policies, const Entities& entities, const Request& request);

}  // namespace govern::policy
