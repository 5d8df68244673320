// The policy sidecar: the bundle slot, the poller, the on-disk copy and the decision endpoints.
#include "services/policy/agent.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/file.h"
#include "base/log.h"
#include "bundle/bundle.h"
#include "bundle/slot.h"
#include "crypto/encoding.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/problem.h"
#include "policy/cedar.h"
#include "policy/decisions/record_from.h"
#include "policy/limits.h"
#include "services/http_config.h"
#include "services/job_queue.h"
#include "services/policy/recorder.h"
#include "services/policy/store.h"

namespace govern::policy_service {
namespace {

using json = nlohmann::json;

// What the sidecar decides from: one bundle's Decider and its policies' names (policy::DeciderFromBundle).
using Compiled = policy::BundleDecider;
using Slot = bundle::BundleSlot<Compiled>;

// `counters` is the one table of limit counters shared by every bundle version the sidecar loads, so a
// swap keeps each limit's counters while its id stays and refills no budget (docs/policy-extensions.md).
Result<Compiled> Compile(const bundle::Bundle& b, const std::shared_ptr<policy::LimitCounters>& counters) {
  policy::LimitOptions options;
  options.counters = counters;
  return policy::DeciderFromBundle([&b](std::string_view name) { return b.File(name); }, options);
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(errno, "read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A Cedar uid as text (Agent::"a1") from the request's {"type", "id"} (or {"__entity": {...}}).
// An entity uid in a request: {"type", "id"} or {"__entity": {"type", "id"}}.
const json& Uid(const json& u) { return u.is_object() && u.contains("__entity") ? u["__entity"] : u; }
bool IsUid(const json& u) {
  const json& e = Uid(u);
  return e.is_object() && e.contains("type") && e.contains("id") && e["type"].is_string() &&
         e["id"].is_string();
}

std::string Etag(const bundle::Bundle& b) { return "\"" + crypto::HexEncode(b.digest()) + "\""; }

class PolicyAgent final : public services::Service {
 public:
  std::string_view name() const override { return "policy-agent"; }
  std::string_view summary() const override {
    return "policy sidecar: fetches signed bundles, decides Cedar requests over loopback HTTP and a Unix "
           "socket";
  }
  // Decides from bundles, records to a local WAL: PostgreSQL is never touched, so `govern serve
  // policy-agent` alone starts none.
  bool needs_database() const override { return false; }

  void DeclareConfig(config::Schema& s) const override {
    using config::Type;
    s.Add({.key = "policy.agent.server",
           .type = Type::kString,
           .default_value = "",
           .help = "Base URL of the policy bundle server, e.g. `http://127.0.0.1:7720`. Empty: no polling; "
                   "the sidecar decides from the bundle kept on disk."});
    s.Add({.key = "policy.agent.key",
           .type = Type::kString,
           .default_value = "",
           .help = "API key with scope fetch (`govern policy-server keys create --scope fetch`).",
           .secret = true});
    s.Add({.key = "policy.agent.org",
           .type = Type::kString,
           .default_value = "",
           .help = "The organisation whose bundles this sidecar accepts (a bundle for another is refused)."});
    s.Add({.key = "policy.agent.trust",
           .type = Type::kStringList,
           .default_value = "",
           .help =
               "Public key files (from `govern policy keygen`, or the server's `GET /v1/policy/keys/{id}`) "
               "whose signatures the sidecar trusts; several during a key rotation. Required."});
    s.Add({.key = "policy.agent.poll_interval",
           .type = Type::kDuration,
           .default_value = "10s",
           .help = "How often the sidecar asks the server for a newer bundle (an unchanged one is a 304).",
           .min = 100,
           .max = 86'400'000});
    DecisionRecorder::DeclareConfig(s);
    s.Add({.key = "policy.agent.listen",
           .type = Type::kString,
           .default_value = "127.0.0.1:7721",
           .help = "Loopback address of the decision HTTP endpoint (`POST /v1/decide`, `GET /v1/status`). 0 "
                   "picks a free port.",
           .validate = [](std::string_view v) { return services::ParseListen(v).status(); }});
    s.Add(
        {.key = "policy.agent.socket",
         .type = Type::kString,
         .default_value = "",
         .help =
             "Unix socket answering the same HTTP API. Empty: `<data_dir>/policy-agent.sock`; `off`: none."});
  }

  Status Start(const services::Context& ctx) override {
    const config::Config& cfg = *ctx.config;
    clock_ = ctx.clock != nullptr ? ctx.clock : &Clock::Real();
    org_ = cfg.GetString("policy.agent.org");
    std::vector<std::string> trust_files = cfg.GetStringList("policy.agent.trust");
    std::erase(trust_files, std::string());
    if (org_.empty() && trust_files.empty() && cfg.GetString("policy.agent.server").empty()) {
      // `govern up` starts every service; a sidecar nobody configured has nothing to decide from.
      log::Warn("policy-agent",
                "not configured (policy.agent.org, policy.agent.trust, policy.agent.server); not started");
      return OkStatus();
    }
    if (org_.empty())
      return InvalidArgument("policy.agent.org must name the organisation whose bundles to accept");
    bundle::TrustStore trust;
    for (const std::string& path : trust_files) {
      GOVERN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
      GOVERN_RETURN_IF_ERROR(trust.AddText(text).WithContext("policy.agent.trust: " + path));
    }
    if (trust.size() == 0)
      return InvalidArgument("policy.agent.trust must name at least one public key file");
    bundle::VerifyOptions vo;
    vo.expected_kind = std::string(kBundleKind);
    vo.expected_org = org_;
    vo.expected_name = std::string(kBundleName);
    slot_ = std::make_unique<Slot>(std::move(trust), vo, [counters = counters_](const bundle::Bundle& b) {
      return Compile(b, counters);
    });

    dir_ = ctx.data_dir + "/policy-agent";
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) return ErrnoStatus(ec.value(), "create " + dir_);
    path_ = dir_ + "/bundle.tar.gz";
    LoadFromDisk();

    server_url_ = cfg.GetString("policy.agent.server");
    while (!server_url_.empty() && server_url_.back() == '/') server_url_.pop_back();
    key_ = cfg.GetString("policy.agent.key");
    interval_ = cfg.GetDuration("policy.agent.poll_interval");
    if (!server_url_.empty() && key_.empty()) {
      return InvalidArgument("policy.agent.key (a fetch key) is required when policy.agent.server is set");
    }

    // Every decision is recorded (docs/policy-decisions.md); in durable mode a decision waits for its
    // sync, so those run on job threads rather than on an event loop.
    auto recorder = DecisionRecorder::Open(cfg, ctx.data_dir);
    if (!recorder.ok()) return recorder.status().WithContext("policy-agent");
    recorder_ = std::move(*recorder);
    if (recorder_->durable()) jobs_ = std::make_unique<services::JobQueue>(8, 10000);

    GOVERN_ASSIGN_OR_RETURN(net::ServerConfig sc, services::MakeServerConfig(ctx, "policy.agent"));
    std::string sock = cfg.GetString("policy.agent.socket");
    if (sock.empty()) sock = ctx.data_dir + "/policy-agent.sock";
    if (sock != "off") sc.unix_socket = sock;
    socket_ = sc.unix_socket;
    net::Router router;
    router.Add(net::Method::kPost, "/v1/decide",
               [this](net::Request&& req, net::Responder r) {
                 if (!jobs_) return r.Send(Decide(req));
                 auto shared =
                     std::make_shared<std::pair<net::Request, net::Responder>>(std::move(req), std::move(r));
                 if (!jobs_->Post([this, shared] { shared->second.Send(Decide(shared->first)); })) {
                   shared->second.Send(
                       net::ProblemResponse(503, "too many decisions waiting; retry", shared->first.path));
                 }
               },
               {.max_body_bytes = 1 << 20, .name = "policy_decide"});
    router.AddSync(net::Method::kGet, "/v1/status", [this](net::Request&) { return StatusResponse(); },
                   {.name = "policy_agent_status"});
    server_ = std::make_unique<net::Server>(std::move(sc), std::move(router));
    server_->AddReadinessCheck("bundle", [this] { return slot_->Load() != nullptr; });
    GOVERN_RETURN_IF_ERROR(server_->Start().WithContext("policy-agent: start HTTP server"));
    host_ = services::ParseListen(cfg.GetString("policy.agent.listen"))->host;

    if (!server_url_.empty()) {
      client_ = std::make_unique<net::HttpClient>(
          net::ClientOptions{.connect_timeout = std::chrono::milliseconds(3000),
                             .request_timeout = std::chrono::milliseconds(15000),
                             .max_response_bytes = bundle::Limits{}.max_archive_bytes + 1});
      poller_ = std::thread([this] { PollLoop(); });
    } else {
      log::Warn("policy-agent", "policy.agent.server is empty: deciding from the bundle on disk only");
    }
    log::Info("policy-agent", "deciding",
              {{"address", services::FormatListen(host_, server_->port())},
               {"socket", socket_},
               {"bundle_version", slot_->stats().version}});
    return OkStatus();
  }

  std::vector<services::Endpoint> Endpoints() const override {
    if (!server_) return {};
    std::vector<services::Endpoint> out = {
        {"policy-agent", "http", services::FormatListen(host_, server_->port())}};
    if (!socket_.empty()) out.push_back({"policy-agent", "http/unix", socket_});
    return out;
  }

  void Stop() override {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (poller_.joinable()) poller_.join();
    if (server_) server_->Stop();
    if (jobs_) jobs_->Stop();  // decisions still queued answer before the server goes
    server_.reset();
    jobs_.reset();
    client_.reset();
    if (recorder_) recorder_->Stop();  // syncs what is queued
    recorder_.reset();
  }

 private:
  std::string Now() const { return bundle::FormatTime(clock_->UnixMicros() / 1'000'000); }

  void LoadFromDisk() {
    if (!std::filesystem::exists(path_)) {
      log::Info("policy-agent", "no bundle on disk yet", {{"path", path_}});
      return;
    }
    auto bytes = ReadFile(path_);
    if (!bytes.ok()) {
      log::Warn("policy-agent", "cannot read the bundle on disk", {{"error", bytes.status().message()}});
      return;
    }
    bundle::Verdict v = slot_->Offer(*bytes);
    std::lock_guard lk(mu_);
    if (v.ok()) {
      source_ = "disk";
      log::Info("policy-agent", "loaded the bundle kept on disk", {{"version", v.bundle->version()}});
    } else {
      last_refusal_ = {
          {"time", Now()}, {"reason", bundle::ReasonName(v.reason)}, {"detail", v.detail}, {"from", "disk"}};
      log::Warn("policy-agent", "refused the bundle kept on disk", {{"reason", v.ToString()}});
    }
  }

  void PollLoop() {
    std::unique_lock lk(mu_);
    while (!stop_) {
      lk.unlock();
      PollOnce();
      lk.lock();
      cv_.wait_for(lk, interval_, [this] { return stop_; });
    }
  }

  void PollOnce() {
    net::ClientRequest r;
    r.method = net::Method::kGet;
    r.url = server_url_ + "/v1/policy/bundle";
    r.headers.Set("Authorization", "Bearer " + key_);
    std::string inm;
    if (auto loaded = slot_->Load()) inm = Etag(*loaded->bundle);
    {
      std::lock_guard lk(mu_);
      // A bundle refused once is not downloaded again until the server has another.
      if (!refused_etag_.empty()) inm += (inm.empty() ? "" : ", ") + refused_etag_;
    }
    if (!inm.empty()) r.headers.Set("If-None-Match", inm);
    auto resp = client_->Send(std::move(r));
    std::string now = Now();
    if (!resp.ok()) {
      SetFetch(now, "error", resp.status().message());
      return;
    }
    if (resp->status == 304) {
      SetFetch(now, "not_modified", "");
      return;
    }
    if (resp->status != 200) {
      std::string detail = "HTTP " + std::to_string(resp->status);
      auto body = json::parse(resp->body, nullptr, false);
      if (body.is_object() && body.contains("detail") && body["detail"].is_string()) {
        detail += ": " + body["detail"].get<std::string>();
      }
      SetFetch(now, "error", detail);
      return;
    }
    uint64_t before = slot_->stats().version;
    bundle::Verdict v = slot_->Offer(resp->body);
    if (!v.ok()) {
      std::string etag(resp->headers.Get("ETag").value_or(""));
      {
        std::lock_guard lk(mu_);
        refused_etag_ = etag;
        last_refusal_ = {{"time", now},
                         {"reason", bundle::ReasonName(v.reason)},
                         {"detail", v.detail},
                         {"from", "server"}};
      }
      SetFetch(now, "refused", v.ToString());
      log::Warn("policy-agent", "refused a bundle; the loaded one keeps serving",
                {{"reason", v.ToString()}, {"loaded_version", before}});
      return;
    }
    {
      std::lock_guard lk(mu_);
      refused_etag_.clear();
    }
    if (v.bundle->version() != before) {
      {
        std::lock_guard lk(mu_);
        source_ = "server";
      }
      log::Info("policy-agent", "loaded a new bundle",
                {{"version", v.bundle->version()}, {"previous", before}});
      if (Status s = ReplaceFileDurably(path_, resp->body); !s.ok()) {
        log::Warn("policy-agent", "cannot keep the bundle on disk", {{"error", s.message()}});
      }
      SetFetch(now, "loaded", "version " + std::to_string(v.bundle->version()));
    } else {
      SetFetch(now, "unchanged", "");
    }
  }

  void SetFetch(const std::string& now, const std::string& result, const std::string& detail) {
    std::lock_guard lk(mu_);
    if (result == "error" && (last_fetch_.is_null() || last_fetch_["result"] != "error")) {
      log::Warn("policy-agent", "cannot fetch a bundle; deciding from the loaded one", {{"error", detail}});
    }
    last_fetch_ = {{"time", now}, {"result", result}};
    if (!detail.empty()) last_fetch_["detail"] = detail;
    if (result != "error") last_contact_ = now;
  }

  net::Response Decide(net::Request& req) {
    std::shared_ptr<const Slot::Loaded> loaded = slot_->Load();
    if (!loaded) return net::ProblemResponse(503, "no policy bundle loaded yet", req.path);
    json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object()) return net::ProblemResponse(400, "the request must be a JSON object", req.path);
    const json& p = body["principal"];
    const json& a = body["action"];
    const json& r = body["resource"];
    if (!IsUid(p) || !IsUid(a) || !IsUid(r)) {
      return net::ProblemResponse(
          400, "principal, action and resource must each be an entity {\"type\": ..., \"id\": ...}",
          req.path);
    }
    auto part = [](const json& u, const char* key) -> const std::string& {
      return Uid(u)[key].get_ref<const std::string&>();
    };
    std::string context = body.contains("context") ? body["context"].dump() : "{}";
    // One builder per thread, reused: no Request is made (docs/policy-extensions.md).
    thread_local policy::RequestBuilder builder;
    thread_local policy::Outcome outcome;
    builder.Reset()
        .Principal(part(p, "type"), part(p, "id"))
        .Action(part(a, "type"), part(a, "id"))
        .Resource(part(r, "type"), part(r, "id"));
    if (Status s = builder.ContextJson(context); !s.ok())
      return net::ProblemResponse(400, s.message(), req.path);
    if (Status s = builder.status(); !s.ok()) return net::ProblemResponse(400, s.message(), req.path);
    const Compiled& c = loaded->value;
    c.decider.Decide(builder, &outcome);

    // The record, made as the C ABI makes it; the answer names the same determining and erroring
    // policies.
    policy::DecisionParts parts;
    parts.organisation = org_;
    parts.principal_type = part(p, "type");
    parts.principal_id = part(p, "id");
    parts.action_type = part(a, "type");
    parts.action_id = part(a, "id");
    parts.resource_type = part(r, "type");
    parts.resource_id = part(r, "id");
    parts.decision = outcome.decision == policy::Decision::kAllow ? policy::RecordedDecision::kAllow
                     : outcome.decision == policy::Decision::kApprovalRequired
                         ? policy::RecordedDecision::kApprovalRequired
                         : policy::RecordedDecision::kDeny;
    parts.names = c.names;
    parts.reason = outcome.reason;
    parts.errors = outcome.errors;
    if (outcome.limit != policy::Outcome::kNoLimit) {
      parts.limit_id = c.decider.limits().id(static_cast<size_t>(outcome.limit));
      parts.limit_error = outcome.limit_error;
    }
    parts.bundle_version = loaded->bundle->version();
    parts.context_json = context;
    thread_local policy::DecisionRecord record;
    policy::RecordFrom(parts, &record);

    json reason = json::array();
    for (const std::string& d : record.determining_policies) reason.push_back(d);
    json errors = json::array();
    for (const auto& [i, msg] : outcome.errors) errors.push_back({{"policy", c.names[i]}, {"message", msg}});
    if (!parts.limit_error.empty()) {
      errors.push_back({{"policy", record.erroring_policies.back()}, {"message", outcome.limit_error}});
    }
    // Recorded before it is answered; a decision that cannot be recorded is not given (fail closed).
    auto id = recorder_->Record(record);
    if (!id.ok()) {
      record_failures_.fetch_add(1, std::memory_order_relaxed);
      return net::ProblemResponse(503, "the decision could not be recorded: " + id.status().message(),
                                  req.path);
    }
    decisions_.fetch_add(1, std::memory_order_relaxed);
    if (outcome.decision == policy::Decision::kApprovalRequired)
      approvals_.fetch_add(1, std::memory_order_relaxed);
    if (!parts.limit_id.empty()) limited_.fetch_add(1, std::memory_order_relaxed);
    json out = {{"decision", policy::DecisionName(outcome.decision)},
                {"reason", std::move(reason)},
                {"errors", std::move(errors)},
                {"bundle_version", loaded->bundle->version()},
                {"decision_id", *id}};
    if (!parts.limit_id.empty()) out["limit"] = parts.limit_id;
    return net::JsonResponse(out.dump());
  }

  net::Response StatusResponse() {
    json out;
    std::shared_ptr<const Slot::Loaded> loaded = slot_->Load();
    Slot::Stats st = slot_->stats();
    std::lock_guard lk(mu_);
    if (loaded) {
      const bundle::Bundle& b = *loaded->bundle;
      out["bundle"] = {{"version", b.version()},     {"etag", Etag(b)},
                       {"org", b.manifest().org},    {"created", bundle::FormatTime(b.manifest().created)},
                       {"signed_by", b.signed_by()}, {"loaded_from", source_}};
    } else {
      out["bundle"] = nullptr;
    }
    out["server"] = server_url_;
    out["last_fetch"] = last_fetch_;
    out["last_contact"] = last_contact_.empty() ? json(nullptr) : json(last_contact_);
    out["last_refusal"] = last_refusal_;
    out["offers"] = {{"accepted", st.accepted}, {"unchanged", st.unchanged}, {"refused", st.refused}};
    out["decisions"] = decisions_.load(std::memory_order_relaxed);
    out["approval_required"] = approvals_.load(std::memory_order_relaxed);
    out["limited"] = limited_.load(std::memory_order_relaxed);
    out["limit_counters"] = counters_->size();
    out["unrecorded"] = record_failures_.load(std::memory_order_relaxed);
    out["recording"] = recorder_ ? json::parse(recorder_->StatsJson()) : json(nullptr);
    return net::JsonResponse(out.dump());
  }

  const Clock* clock_ = nullptr;
  std::string org_;
  std::unique_ptr<Slot> slot_;
  std::string dir_;
  std::string path_;
  std::string server_url_;
  std::string key_;
  std::chrono::milliseconds interval_{10000};
  std::string host_;
  std::string socket_;
  std::unique_ptr<net::Server> server_;
  std::unique_ptr<net::HttpClient> client_;
  std::thread poller_;
  std::atomic<uint64_t> decisions_{0};
  std::atomic<uint64_t> record_failures_{0};
  std::atomic<uint64_t> approvals_{0};  // decisions answered approval_required
  std::atomic<uint64_t> limited_{0};    // decisions a limit turned into deny
  // The limit counters of every bundle version loaded (kept across swaps; see Compile).
  const std::shared_ptr<policy::LimitCounters> counters_ = std::make_shared<policy::LimitCounters>();
  std::unique_ptr<DecisionRecorder> recorder_;
  std::unique_ptr<services::JobQueue> jobs_;  // durable recording only

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  // Guarded by mu_: what GET /v1/status reports.
  std::string source_;        // where the loaded bundle came from: "disk" or "server"
  std::string refused_etag_;  // the server's bundle last refused
  json last_fetch_;
  std::string last_contact_;
  json last_refusal_;
};

}  // namespace

std::unique_ptr<services::Service> NewPolicyAgent() { return std::make_unique<PolicyAgent>(); }

}  // namespace govern::policy_service
