// The decision log side of the C ABI (see recorder.h for why it is a separate translation unit).
#include "policy/capi/recorder.h"

#include <utility>

#include "policy/decisions/decision_log.h"

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

namespace {

// Per thread, so that recording reuses the strings' and vectors' capacity instead of allocating.
DecisionRecord& Scratch() {
  thread_local DecisionRecord record;
  return record;
}

}  // namespace

Status Recorder::Record(const DecisionFacts& f, char id_out[37]) {
  DecisionRecord& r = Scratch();
  r.id = DecisionId{};
  r.time_ns = 0;
  r.organisation.assign(impl_->organisation.empty() ? f.organisation : std::string_view(impl_->organisation));
  r.principal.clear();
  AppendUid(f.principal_type, f.principal_id, &r.principal);
  r.action.clear();
  AppendUid(f.action_type, f.action_id, &r.action);
  r.resource.clear();
  AppendUid(f.resource_type, f.resource_id, &r.resource);
  r.decision = f.allow ? RecordedDecision::kAllow : RecordedDecision::kDeny;
  r.determining_policies.resize(f.reason->size());
  for (size_t i = 0; i < f.reason->size(); ++i) r.determining_policies[i].assign((*f.ids)[(*f.reason)[i]]);
  r.erroring_policies.resize(f.errors->size());
  for (size_t i = 0; i < f.errors->size(); ++i) r.erroring_policies[i].assign((*f.ids)[(*f.errors)[i].first]);
  r.bundle_version = f.bundle_version;
  r.context_kind = ContextKind::kFull;
  r.context.assign(f.context_json.empty() ? std::string_view("{}") : f.context_json);
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
