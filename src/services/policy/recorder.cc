// The sidecar's decision recording over src/policy/decisions.
#include "services/policy/recorder.h"

#include <nlohmann/json.hpp>

#include "base/log.h"
#include "policy/decisions/decision_config.h"
#include "policy/decisions/decision_log.h"
#include "policy/decisions/shipper.h"

namespace govern::policy_service {

struct DecisionRecorder::Impl {
  std::unique_ptr<policy::DecisionLog> log;
  std::unique_ptr<policy::DecisionShipper> shipper;
};

DecisionRecorder::DecisionRecorder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DecisionRecorder::~DecisionRecorder() { Stop(); }

void DecisionRecorder::DeclareConfig(config::Schema& schema) { policy::DeclareDecisionLogConfig(schema); }

Result<std::unique_ptr<DecisionRecorder>> DecisionRecorder::Open(const config::Config& cfg,
                                                                 const std::string& data_dir) {
  auto impl = std::make_unique<Impl>();
  auto log = policy::DecisionLog::Open(policy::DecisionLogOptionsFromConfig(cfg, data_dir));
  if (!log.ok()) return log.status().WithContext("open the decision log");
  impl->log = std::move(*log);
  GOVERN_ASSIGN_OR_RETURN(auto ship, policy::ShipperOptionsFromConfig(cfg));
  if (ship) {
    auto shipper = policy::DecisionShipper::Create(impl->log.get(), std::move(*ship));
    if (!shipper.ok()) return shipper.status().WithContext("start the decision shipper");
    impl->shipper = std::move(*shipper);
    impl->shipper->Start();
  } else if (Status s = policy::DecisionShipper::Forget(impl->log.get()); !s.ok()) {
    log::Warn("policy-agent", "cannot remove the old shipper cursor", {{"error", s.message()}});
  }
  return std::unique_ptr<DecisionRecorder>(new DecisionRecorder(std::move(impl)));
}

Result<std::string> DecisionRecorder::Record(const policy::DecisionRecord& r) {
  GOVERN_ASSIGN_OR_RETURN(policy::DecisionId id, impl_->log->Record(r));
  return id.ToString();
}

bool DecisionRecorder::durable() const {
  return impl_->log && impl_->log->mode() == policy::RecordMode::kDurable;
}

std::string DecisionRecorder::StatsJson() const {
  nlohmann::json out;
  if (!impl_->log) return "null";
  auto st = impl_->log->GetStats();
  out = {{"mode", durable() ? "durable" : "buffered"},
         {"dir", impl_->log->dir()},
         {"recorded", st.recorded},
         {"synced", st.synced},
         {"failed", st.failed},
         {"refused", st.refused}};
  if (impl_->shipper) {
    auto sh = impl_->shipper->GetStats();
    out["shipping"] = {{"events_shipped", sh.events_shipped},
                       {"next_seq", sh.next_seq},
                       {"retries", sh.retries},
                       {"quarantined", sh.quarantined},
                       {"last_error", sh.last_error}};
  } else {
    out["shipping"] = nullptr;
  }
  return out.dump();
}

void DecisionRecorder::Stop() {
  if (impl_->shipper) impl_->shipper->Stop();
  impl_->shipper.reset();
  impl_->log.reset();
}

}  // namespace govern::policy_service
