#include "services/gateway/policy_gate.h"

#include <fstream>
#include <sstream>

#include "base/log.h"
#include "bundle/slot.h"
#include "policy/cedar.h"
#include "policy/limits.h"

namespace govern::gateway {
namespace {

using Compiled = policy::BundleDecider;  // the Decider and each policy's reported name

Result<Compiled> Compile(const bundle::Bundle& b, const std::shared_ptr<policy::LimitCounters>& counters) {
  policy::LimitOptions lo;
  lo.counters = counters;
  return policy::DeciderFromBundle([&b](std::string_view name) { return b.File(name); }, lo);
}

Result<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

struct PolicyGate::Impl {
  PolicyGateOptions options;
  // One table of limit counters for every bundle version, so a swap refills no limit.
  std::shared_ptr<policy::LimitCounters> counters = std::make_shared<policy::LimitCounters>();
  std::unique_ptr<bundle::BundleSlot<Compiled>> slot;
};

std::string_view GateDecision::Name() const {
  switch (kind) {
    case Kind::kAllow:
      return "allow";
    case Kind::kDeny:
      return "deny";
    case Kind::kLimited:
      return "limit";
    case Kind::kUnavailable:
      return "no_bundle";
  }
  return "deny";
}

PolicyGate::PolicyGate(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<PolicyGate>> PolicyGate::Create(PolicyGateOptions options) {
  if (options.bundle_file.empty()) return InvalidArgument("gateway policy: the bundle file is required");
  if (options.org.empty()) return InvalidArgument("gateway policy: the bundle's organisation is required");
  bundle::TrustStore trust;
  for (const std::string& path : options.trust_files) {
    if (path.empty()) continue;
    GOVERN_ASSIGN_OR_RETURN(std::string text, ReadAll(path));
    GOVERN_RETURN_IF_ERROR(trust.AddText(text).WithContext("gateway policy trust " + path));
  }
  if (trust.size() == 0)
    return InvalidArgument("gateway policy: at least one trusted public key file is needed");
  auto impl = std::make_unique<Impl>();
  bundle::VerifyOptions vo;
  vo.expected_kind = "policy";
  vo.expected_name = "default";
  vo.expected_org = options.org;
  impl->slot = std::make_unique<bundle::BundleSlot<Compiled>>(
      std::move(trust), vo,
      [counters = impl->counters](const bundle::Bundle& b) { return Compile(b, counters); });
  impl->options = std::move(options);
  std::unique_ptr<PolicyGate> gate(new PolicyGate(std::move(impl)));
  bundle::Verdict v = gate->Reload();
  if (!v.ok()) {
    log::Warn("gateway", "no policy bundle loaded: requests are refused until one is",
              {{"file", gate->impl_->options.bundle_file}, {"reason", v.ToString()}});
  }
  if (gate->impl_->options.reload_interval.count() > 0)
    gate->thread_ = std::thread([g = gate.get()] { g->Loop(); });
  return gate;
}

PolicyGate::~PolicyGate() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PolicyGate::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, impl_->options.reload_interval, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    uint64_t before = version();
    bundle::Verdict v = Reload();
    if (!v.ok()) {
      log::Warn("gateway", "policy bundle refused; the loaded one keeps deciding",
                {{"reason", v.ToString()}});
    } else if (version() != before) {
      log::Info("gateway", "policy bundle loaded", {{"version", std::to_string(version())}});
    }
    lock.lock();
  }
}

bundle::Verdict PolicyGate::Reload() {
  auto bytes = ReadAll(impl_->options.bundle_file);
  if (!bytes.ok()) return bundle::Verdict{bundle::Reason::kRejected, bytes.status().message(), nullptr};
  return Offer(*bytes);
}

bundle::Verdict PolicyGate::Offer(std::string_view archive) { return impl_->slot->Offer(archive); }

uint64_t PolicyGate::version() const {
  auto loaded = impl_->slot->Load();
  return loaded ? loaded->bundle->version() : 0;
}

GateDecision PolicyGate::Decide(const PolicyQuery& q) const {
  GateDecision d;
  auto loaded = impl_->slot->Load();
  if (!loaded) {
    d.kind = GateDecision::Kind::kUnavailable;
    d.reason = "no policy bundle loaded";
    return d;
  }
  d.bundle_version = loaded->bundle->version();
  thread_local policy::RequestBuilder b;
  thread_local policy::Outcome out;
  std::string principal_type = "Gateway::" + std::string(q.principal_type);
  b.Reset()
      .Principal(principal_type, q.principal_id)
      .Action("Gateway::Action", "invoke")
      .Resource("Gateway::Model", q.model);
  b.String("organisation", q.org)
      .Bool("stream", q.stream)
      .Long("estimated_tokens", q.estimated_tokens)
      .String("format", q.format);
  if (!q.on_behalf_of.empty()) b.String("on_behalf_of", q.on_behalf_of);
  const Compiled& c = loaded->value;
  c.decider.Decide(b, &out);
  if (out.limit != policy::Outcome::kNoLimit) {
    d.kind = GateDecision::Kind::kLimited;
    d.reason = "limit:" + c.decider.limits().id(static_cast<size_t>(out.limit));
    return d;
  }
  d.kind = out.decision == policy::Decision::kAllow ? GateDecision::Kind::kAllow : GateDecision::Kind::kDeny;
  for (uint32_t i : out.reason) {
    if (!d.reason.empty()) d.reason += ",";
    d.reason += i < c.names.size() ? c.names[i] : std::to_string(i);
  }
  if (out.decision == policy::Decision::kApprovalRequired) d.reason = "approval_required:" + d.reason;
  if (d.kind == GateDecision::Kind::kDeny && out.reason.empty()) d.reason = "no permit matched";
  return d;
}

}  // namespace govern::gateway
