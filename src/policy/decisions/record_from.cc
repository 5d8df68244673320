// A decision's parts as a DecisionRecord: see record_from.h.
#include "policy/decisions/record_from.h"

namespace govern::policy {

void AppendCedarUid(std::string_view type, std::string_view id, std::string* out) {
  out->append(type);
  out->append("::\"");
  for (char c : id) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\0':
        out->append("\\0");
        break;
      default:
        out->push_back(c);
    }
  }
  out->push_back('"');
}

std::string LimitPolicyName(std::string_view limit_id) {
  std::string out = "limit:";
  out.append(limit_id);
  return out;
}

void RecordFrom(const DecisionParts& p, DecisionRecord* r) {
  r->id = DecisionId{};
  r->time_ns = 0;
  r->organisation.assign(p.organisation);
  r->principal.clear();
  AppendCedarUid(p.principal_type, p.principal_id, &r->principal);
  r->action.clear();
  AppendCedarUid(p.action_type, p.action_id, &r->action);
  r->resource.clear();
  AppendCedarUid(p.resource_type, p.resource_id, &r->resource);
  r->decision = p.decision;
  // As the engine's Response names them: a limit that denied is the reason "limit:<id>" (the policies
  // that allowed are not), and a limit that could not be applied is also an error under that name.
  auto limit_name = [&](std::string* out) {
    out->assign("limit:");
    out->append(p.limit_id);
  };
  if (!p.limit_id.empty()) {
    r->determining_policies.resize(1);
    limit_name(&r->determining_policies[0]);
  } else {
    r->determining_policies.resize(p.reason.size());
    for (size_t i = 0; i < p.reason.size(); ++i) r->determining_policies[i].assign(p.names[p.reason[i]]);
  }
  size_t n_errors = p.errors.size();
  bool limit_failed = !p.limit_id.empty() && !p.limit_error.empty();
  r->erroring_policies.resize(n_errors + (limit_failed ? 1 : 0));
  for (size_t i = 0; i < n_errors; ++i) r->erroring_policies[i].assign(p.names[p.errors[i].first]);
  if (limit_failed) limit_name(&r->erroring_policies[n_errors]);
  r->bundle_version = p.bundle_version;
  r->context_kind = ContextKind::kFull;
  r->context.assign(p.context_json.empty() ? std::string_view("{}") : p.context_json);
}

}  // namespace govern::policy
