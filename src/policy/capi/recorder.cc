// The decision log side of the C ABI (see recorder.h for why it is a separate translation unit).
#include "policy/capi/recorder.h"

#include <utility>

#include "policy/decisions/decision_log.h"
#include "policy/decisions/record_from.h"

namespace govern::policy::capi {

struct Recorder::Impl {
  std::unique_ptr<DecisionLog> log;
  std::string organisation;
};

Recorder::Recorder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Recorder::~Recorder() = default;

Result<std::unique_ptr<Recorder>> Recorder::Open(const std::string& dir, int mode, int context,
                                                 std::string organisation) {
  DecisionLogOptions o;
  o.dir = dir;
  o.mode = mode == 1 ? RecordMode::kDurable : RecordMode::kBuffered;
  o.context = context == 1 ? ContextKind::kFull : context == 2 ? ContextKind::kNone : ContextKind::kHash;
  GOVERN_ASSIGN_OR_RETURN(auto log, DecisionLog::Open(std::move(o)));
  auto impl = std::make_unique<Impl>();
  impl->log = std::move(log);
  impl->organisation = std::move(organisation);
  return std::unique_ptr<Recorder>(new Recorder(std::move(impl)));
}

void AppendUid(std::string_view type, std::string_view id, std::string* out) {
  AppendCedarUid(type, id, out);
}

namespace {

// Per thread, so that recording reuses the strings' and vectors' capacity instead of allocating.
DecisionRecord& Scratch() {
  thread_local DecisionRecord record;
  return record;
}

// The C enum (0 deny, 1 allow, 2 approval_required) as the record's wire enum.
RecordedDecision RecordedOutcome(int decision) {
  switch (decision) {
    case 1:
      return RecordedDecision::kAllow;
    case 2:
      return RecordedDecision::kApprovalRequired;
    default:
      return RecordedDecision::kDeny;
  }
}

}  // namespace

Status Recorder::Record(const DecisionFacts& f, char id_out[37]) {
  DecisionParts parts;
  parts.organisation = impl_->organisation.empty() ? f.organisation : std::string_view(impl_->organisation);
  parts.principal_type = f.principal_type;
  parts.principal_id = f.principal_id;
  parts.action_type = f.action_type;
  parts.action_id = f.action_id;
  parts.resource_type = f.resource_type;
  parts.resource_id = f.resource_id;
  parts.decision = RecordedOutcome(f.decision);
  parts.names = *f.ids;
  parts.reason = *f.reason;
  parts.errors = *f.errors;
  parts.limit_id = f.limit_id;
  parts.limit_error = f.limit_error;
  parts.bundle_version = f.bundle_version;
  parts.context_json = f.context_json;
  DecisionRecord& r = Scratch();
  RecordFrom(parts, &r);
  GOVERN_ASSIGN_OR_RETURN(DecisionId id, impl_->log->Record(r));
  // The UUID text (as DecisionId::ToString, without its allocation).
  static constexpr char kHex[] = "0123456789abcdef";
  char* o = id_out;
  for (size_t i = 0; i < id.bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *o++ = '-';
    *o++ = kHex[id.bytes[i] >> 4];
    *o++ = kHex[id.bytes[i] & 15];
  }
  *o = '\0';
  return Status::Ok();
}

Status Recorder::Flush() { return impl_->log->Flush(); }

Recorder::Stats Recorder::GetStats() const {
  DecisionLog::Stats s = impl_->log->GetStats();
  return Stats{s.recorded, s.synced, s.failed, s.refused, s.pending_bytes};
}

}  // namespace govern::policy::capi
