// PolicyGate: the gateway's in-process Cedar check of every request, from a signed policy bundle.
//
// The bundle is a policy bundle as the bundle server publishes it (kind "policy", name "default", the
// configured organisation) read from a file: `policies.cedar` (or `policies.json`) with `links.json`,
// `entities.json` and `limits.json` when present, decided by policy::Decider (Cedar, then approval,
// then limits) exactly as the policy sidecar does. Point it at the bundle the sidecar keeps on disk
// (<data_dir>/policy-agent/bundle.tar.gz) to follow the bundle server, or at a file of your own. The
// file is re-read every reload interval; a new version is verified against the trusted keys and swapped
// in with bundle::BundleSlot (a refused bundle leaves the loaded one deciding; the reason is logged).
//
// Each request is decided as
//   principal  Gateway::Agent::"<id>", Gateway::User::"<id>" (a Govern token) or Gateway::Key::"<key id>"
//              (a virtual key: VirtualKeyId, 16 hex digits of its SHA-256, as in the usage record)
//   action     Gateway::Action::"invoke"
//   resource   Gateway::Model::"<model the client asked for>"
//   context    {organisation: String, stream: Bool, estimated_tokens: Long, format: "openai"|"anthropic",
//               on_behalf_of: String (only for an agent acting for a person)}
// Only `allow` admits the request: `approval_required` is refused like a deny (nobody can approve a
// model call in-line), and a limit of the bundle's limits.json with no room left is its own outcome
// (the proxy answers it as a rate limit). With a bundle configured but none loaded (missing file, bad
// signature), every request is refused (fail closed). A decision takes no lock: the loaded bundle is
// one atomic shared_ptr load, the request is built in a per-thread policy::RequestBuilder.
//
// Thread-safe: Decide from any thread; Reload from the owner's thread or the reload thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/status.h"
#include "bundle/bundle.h"

namespace govern::gateway {

struct PolicyGateOptions {
  std::string bundle_file;
  std::vector<std::string> trust_files;  // public key files (govern policy keygen); at least one
  std::string org;                       // the organisation the bundle must be for
  std::chrono::milliseconds reload_interval{std::chrono::seconds(5)};  // 0: read only at start
};

struct PolicyQuery {
  std::string_view principal_type;  // "Agent", "User", "Key"
  std::string_view principal_id;
  std::string_view org;
  std::string_view model;
  std::string_view format;  // "openai" / "anthropic"
  bool stream = false;
  int64_t estimated_tokens = 0;
  std::string_view on_behalf_of;
};

struct GateDecision {
  enum class Kind {
    kAllow,
    kDeny,         // a forbid, no permit, or a permit that needs approval
    kLimited,      // Cedar allowed, a limit of the bundle's limits.json had no room left
    kUnavailable,  // no bundle loaded: refused (fail closed)
  };
  Kind kind = Kind::kDeny;
  std::string reason;  // the determining policies' names, comma-separated; "limit:<id>"; or why
  uint64_t bundle_version = 0;
  std::string_view Name() const;  // "allow", "deny", "limit", "no_bundle"
};

class PolicyGate {
 public:
  // Reads the trust files, then the bundle (a missing or refused bundle is logged; requests are then
  // refused until one loads). Starts the reload thread when reload_interval > 0.
  static Result<std::unique_ptr<PolicyGate>> Create(PolicyGateOptions options);
  ~PolicyGate();
  PolicyGate(const PolicyGate&) = delete;
  PolicyGate& operator=(const PolicyGate&) = delete;

  GateDecision Decide(const PolicyQuery& q) const;

  // Re-reads the bundle file and offers it (unchanged: a no-op). The verdict, for tests and logs.
  bundle::Verdict Reload();
  // Offers an archive directly (tests).
  bundle::Verdict Offer(std::string_view archive);
  uint64_t version() const;

  struct Impl;

 private:
  explicit PolicyGate(std::unique_ptr<Impl> impl);
  void Loop();
  std::unique_ptr<Impl> impl_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace govern::gateway
