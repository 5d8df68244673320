// RecordFrom: one decision, as a deciding caller holds it (uid parts, the indices of the policies in
// its policy set, the limit that applied), turned into the DecisionRecord the decision log keeps. The
// C ABI (src/policy/capi) and the sidecar (src/services/policy) both record through it, so a decision
// reads the same in the log whichever of them made it.
//
// Engine-free like the rest of this folder: the caller passes the engine's outcome as plain indices and
// names.
//
// Thread-safety: pure functions; any number of threads may call them at once on distinct outputs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "policy/decisions/decision_record.h"

namespace govern::policy {

// One decision as the engine made it.
struct DecisionParts {
  std::string_view organisation;
  std::string_view principal_type, principal_id, action_type, action_id, resource_type, resource_id;
  RecordedDecision decision = RecordedDecision::kDeny;
  std::span<const std::string> names;  // the policy set's ids by index
  std::span<const uint32_t> reason;    // indices into names: the policies that determined it
  std::span<const std::pair<uint32_t, std::string>> errors;  // indices into names, with the messages
  // The limit that denied (recorded as the only determining "limit:<id>"), or "" when none did;
  // limit_error is why it could not be applied (the limit is then also recorded among the erroring).
  std::string_view limit_id, limit_error;
  uint64_t bundle_version = 0;
  std::string_view context_json;  // "" means {}
};

// Fills `out` from `parts`, reusing its strings' and vectors' capacity (a caller keeping one record per
// thread allocates nothing once warm). Uids become Cedar uid text (AppendCedarUid); id and time are
// cleared for DecisionLog to assign; the context is kept in full (DecisionLog reduces it as
// configured).
void RecordFrom(const DecisionParts& parts, DecisionRecord* out);

// Appends the Cedar uid text Type::"id" (the id escaped as a Cedar string literal) to `out`.
void AppendCedarUid(std::string_view type, std::string_view id, std::string* out);

// "limit:<id>": how a limit is named among the determining and erroring policies.
std::string LimitPolicyName(std::string_view limit_id);

}  // namespace govern::policy
