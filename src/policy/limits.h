// Per-agent rate limits and spending budgets kept locally, and Decider: a bundle's policies, entities
// and limits decided together. The format of limits.json and the consistency model are in
// docs/policy-extensions.md.
//
// Limits are consulted after Cedar: a decision that Cedar makes allow or approval_required is turned
// into deny (Outcome::limit names the limit) when a matching limit has no room left; a denied decision
// consumes nothing, and when a later limit refuses, what earlier limits took for the same decision is
// given back. Each principal has its own counter per limit. Counters live in this process only.
//
// Thread-safety: Limits, LimitCounters and Decider are safe to use from any number of threads at once
// (counters are sharded, each shard under its own mutex). After a principal's counter exists, applying
// limits allocates nothing. The number of counters is bounded (LimitOptions::max_counters): when a
// shard is full, counters that have returned to their initial state are dropped first (nothing is
// lost), otherwise the least recently used one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "policy/cedar.h"

namespace govern::policy {

// The counters behind one or more Limits. Share one across bundle swaps (LimitOptions::counters) so
// that a new bundle does not refill everyone's budget: a limit keeps its counters while its id stays.
class LimitCounters {
 public:
  explicit LimitCounters(size_t max_counters = 65536);
  ~LimitCounters();
  LimitCounters(const LimitCounters&) = delete;
  LimitCounters& operator=(const LimitCounters&) = delete;

  size_t size() const;  // counters held now
  size_t capacity() const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct LimitOptions {
  const Clock* clock = nullptr;             // null: Clock::Real(); must outlive the Limits
  size_t max_counters = 65536;              // used when `counters` is null
  std::shared_ptr<LimitCounters> counters;  // null: a new table
};

class Limits {
 public:
  Limits();  // no limits
  // Parses limits.json (an array of limit objects; "" means none). Errors: InvalidArgument naming
  // the limit by position and id ("limits.json: limit #2 (\"search-rate\"): ..."), or the JSON byte
  // offset.
  static Result<Limits> Parse(std::string_view json, LimitOptions options = {});

  size_t size() const;
  const std::string& id(size_t index) const;
  const std::shared_ptr<LimitCounters>& counters() const;

  // Applies the limits to `out`, the outcome of `request`. Does nothing unless the decision is allow
  // or approval_required.
  void Apply(const Entities& entities, const RequestData& request, Outcome* out) const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

// Policies, entities and limits of one bundle, decided together. Copies share everything (and the
// counters).
class Decider {
 public:
  Decider() = default;  // no policies: denies everything
  Decider(PolicySet policies, Entities entities, Limits limits);

  // From a bundle's content files by name: "policies.cedar" (static policies and templates, numbered
  // policy0, policy1, ... in text order) with the optional "links.json" (template links, see
  // PolicySet::ParseLinks), or instead "policies.json" (a Cedar JSON policy set, PolicySet::FromJson);
  // "entities.json" and "limits.json" (optional); other files (schema, ...) are ignored here. Errors
  // name the file. A forbid annotated @require_approval is refused (the annotation applies to
  // permits; a template's annotations are its links').
  static Result<Decider> FromFiles(const std::map<std::string, std::string>& files,
                                   LimitOptions options = {});

  // Cedar, then approval, then limits. Clears and fills `out`.
  void Decide(const Request& request, Outcome* out) const;
  void Decide(const RequestBuilder& request, Outcome* out) const;
  Response Decide(const Request& request) const;
  // Converts an outcome of this decider to ids ("limit:<id>" for a limit).
  Response ToResponse(const Outcome& outcome) const;

  const PolicySet& policies() const { return policies_; }
  const Entities& entities() const { return entities_; }
  const Limits& limits() const { return limits_; }

 private:
  PolicySet policies_ = *PolicySet::Parse("");
  Entities entities_;
  Limits limits_;
};

// What a policy bundle decides with: its Decider, and the name each policy is reported by: a
// template-linked policy by its link id (the template's @id annotation is every link's, so it would
// not tell them apart); a static policy by its @id annotation when it has one, else "policyN".
struct BundleDecider {
  Decider decider;
  std::vector<std::string> names;  // per policy, in PolicySet order
};

// The BundleDecider of a bundle whose files are read through `file` (null: the bundle has no such
// file): Decider::FromFiles over policies.cedar or policies.json (one is required), links.json,
// entities.json and limits.json. Shared by the policy sidecar and the gateway, so both load a bundle
// the same way and report policies by the same names.
Result<BundleDecider> DeciderFromBundle(const std::function<const std::string*(std::string_view)>& file,
                                        LimitOptions options = {});

}  // namespace govern::policy
