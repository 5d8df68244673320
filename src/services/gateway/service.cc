#include "services/gateway/service.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "net/http_server.h"
#include "services/gateway/aws_credentials.h"
#include "services/gateway/budget.h"
#include "services/gateway/governance_config.h"
#include "services/gateway/proxy.h"
#include "services/gateway/routes_reload.h"
#include "services/gateway/schema.h"
#include "services/gateway/usage_ship.h"
#include "services/http_config.h"

namespace govern::gateway {
namespace {

// How long Stop() waits for AWS credential fetches in flight (IMDS: three exchanges of `timeout`, 2 s).
constexpr std::chrono::seconds kRefreshDrain{10};

class GatewayService final : public services::Service {
 public:
  std::string_view name() const override { return "gateway"; }
  std::string_view summary() const override {
    return "AI gateway: OpenAI and Anthropic APIs in front of model providers, with virtual keys, rate "
           "limits, metering and usage records";
  }
  // Budgets (the routes file's "budgets") reconcile through PostgreSQL in the background, and gateway API
  // keys (gateway.keys.enabled) load from it; without them the gateway touches no database, and
  // `govern serve gateway` alone starts none.
  bool needs_database() const override { return false; }
  bool needs_database_for(const config::Config& config) const override {
    if (config.GetBool("gateway.keys.enabled")) return true;
    std::ifstream in(config.GetString("gateway.routes_file"));
    if (!in) return false;  // Start reports the unreadable file
    std::stringstream text;
    text << in.rdbuf();
    auto budgets = ParseBudgets(text.str());
    return budgets.ok() && !budgets->empty();  // a bad file: Start reports it
  }
  std::vector<db::Migration> Migrations() const override { return gateway::Migrations(); }

  void DeclareConfig(config::Schema& schema) const override {
    schema.Add({.key = "gateway.listen",
                .type = config::Type::kString,
                .default_value = "127.0.0.1:7770",
                .help = "HTTP address of the AI gateway. Port 0 picks a free port.",
                .validate = [](std::string_view v) { return services::ParseListen(v).status(); }});
    schema.Add(
        {.key = "gateway.routes_file",
         .type = config::Type::kString,
         .default_value = "",
         .help =
             "JSON file of routes (model -> base_url, format openai|anthropic, api_key, "
             "stub_fault_headers: pass x-stub-* test headers; or model -> deployments with "
             "provider openai, anthropic, azure, openai_compatible, gemini or bedrock, weights and timeouts, "
             "retry, "
             "fallbacks and breaker: see docs/gateway.md, Routing), virtual "
             "keys (gvg_..., org, requests_per_minute, tokens_per_minute) and prices per "
             "million tokens (input, output, cached_input). Required."});
    schema.Add({.key = "gateway.usage_dir",
                .type = config::Type::kString,
                .default_value = "",
                .help = "Directory of the usage record WAL; empty: <data_dir>/gateway/usage."});
    schema.Add({.key = "gateway.usage_durable_before_response",
                .type = config::Type::kBool,
                .default_value = "false",
                .help = "Complete each response (the last byte of an answer, the end of a stream) only once "
                        "its usage record is fdatasync'd. false: the record is queued first, written to the "
                        "WAL file within microseconds (surviving a crash of the process) and synced within "
                        "5 ms (what a power cut can take)."});
    schema.Add({.key = "gateway.upstream_connect_timeout",
                .type = config::Type::kDuration,
                .default_value = "5s",
                .help = "Longest TCP connect plus TLS handshake to a provider, per attempt.",
                .min = 1});
    schema.Add({.key = "gateway.upstream_header_timeout",
                .type = config::Type::kDuration,
                .default_value = "10m",
                .help = "Longest wait from sending a request to a provider until its response head (a "
                        "non-streamed answer comes whole, so this bounds it): over it, 504.",
                .min = 1});
    schema.Add({.key = "gateway.upstream_read_timeout",
                .type = config::Type::kDuration,
                .default_value = "5m",
                .help = "Longest wait for the next bytes of a provider's answer body (a quiet stream): over "
                        "it the answer is cut (504, or an in-stream error event).",
                .min = 1});
    schema.Add({.key = "gateway.upstream_idle_timeout",
                .type = config::Type::kDuration,
                .default_value = "15s",
                .help = "A pooled keep-alive connection to a provider unused this long is closed (keep it "
                        "below the provider's own keep-alive timeout).",
                .min = 1});
    schema.Add({.key = "gateway.upstream_max_idle_per_host",
                .type = config::Type::kInt,
                .default_value = "64",
                .help = "Idle keep-alive connections kept per provider origin and upstream thread.",
                .min = 0,
                .max = 100000});
    schema.Add({.key = "gateway.upstream_threads",
                .type = config::Type::kInt,
                .default_value = "1",
                .help = "Event loops (threads) that run provider calls and relay streams.",
                .min = 1,
                .max = 256});
    schema.Add({.key = "gateway.upstream_ca_file",
                .type = config::Type::kString,
                .default_value = "",
                .help = "PEM bundle to verify https:// providers against; empty: the system store."});
    DeclareGovernanceConfig(schema);    // gateway.auth.*, gateway.policy.*, gateway.budget.*
    DeclareUsageShipConfig(schema);     // gateway.ship.*: usage records to telemetry (usage_ship.h)
    DeclareRoutesReloadConfig(schema);  // gateway.routes_reload_interval (routes_reload.h)
  }

  Status Start(const services::Context& ctx) override {
    std::string file = ctx.config->GetString("gateway.routes_file");
    if (file.empty()) return InvalidArgument("gateway.routes_file must name the routes file");
    std::ifstream in(file);
    if (!in) return InvalidArgument("gateway.routes_file: cannot read " + file);
    std::stringstream text;
    text << in.rdbuf();
    GOVERN_ASSIGN_OR_RETURN(ProxyConfig config, ParseProxyConfig(text.str()));
    config.wal_dir = ctx.config->GetString("gateway.usage_dir");
    if (config.wal_dir.empty()) config.wal_dir = ctx.data_dir + "/gateway/usage";
    const config::Config& c = *ctx.config;
    config.usage_durable_before_response = c.GetBool("gateway.usage_durable_before_response");
    config.upstream.connect_timeout = c.GetDuration("gateway.upstream_connect_timeout");
    config.upstream.header_timeout = c.GetDuration("gateway.upstream_header_timeout");
    config.upstream.read_timeout = c.GetDuration("gateway.upstream_read_timeout");
    config.upstream.idle_timeout = c.GetDuration("gateway.upstream_idle_timeout");
    config.upstream.max_idle_per_host = static_cast<size_t>(c.GetInt("gateway.upstream_max_idle_per_host"));
    config.upstream.threads = static_cast<int>(c.GetInt("gateway.upstream_threads"));
    config.upstream.ca_file = c.GetString("gateway.upstream_ca_file");
    // A provider may take minutes over a whole (non-streamed) answer, bounded by the upstream header
    // timeout (which answers 504 by itself); streams are answered once their head is sent.
    // Routes with retries and fallbacks (routing.h) can take several attempts.
    std::chrono::milliseconds handler_timeout =
        std::max(config.upstream.header_timeout + config.upstream.connect_timeout * 2,
                 LongestAnswerTime(config)) +
        std::chrono::seconds(5);
    // Governance: Govern tokens, the policy check, budgets (governance_config.h).
    GOVERN_ASSIGN_OR_RETURN(governance_, StartGovernance(c, ctx.data_dir, text.str(), ctx.db));
    config.governance = governance_.governance;
    // Every failure below stops the budget sync (and releases its leases) before returning.
    struct StopGovernanceOnFailure {
      GovernanceRuntime* runtime;
      bool armed = true;
      ~StopGovernanceOnFailure() {
        if (armed) runtime->Stop();
      }
    } governance_guard{&governance_};
    const std::string usage_dir = config.wal_dir;
    const UpstreamOptions upstream = config.upstream;  // for the routes reload's timeout check
    {
      // The WAL makes its own directory but not the ones above it (<data_dir>/gateway on a fresh data dir).
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(usage_dir).parent_path(), ec);
    }
    GOVERN_ASSIGN_OR_RETURN(auto ship, UsageShipOptionsFromConfig(c));
    GOVERN_ASSIGN_OR_RETURN(proxy_, Proxy::Create(std::move(config)));
    // Usage records to telemetry: the shipper reads the proxy's WAL from its durable cursor.
    if (ship) {
      auto shipper = NewUsageShipper(proxy_->usage_wal(), usage_dir, std::move(*ship));
      if (!shipper.ok()) {
        proxy_.reset();
        return shipper.status();
      }
      shipper_ = std::move(*shipper);
      shipper_->Start();
    } else if (Status s = ForgetUsageShipper(proxy_->usage_wal()); !s.ok()) {
      proxy_.reset();
      return s;
    }

    GOVERN_ASSIGN_OR_RETURN(net::ServerConfig sc, services::MakeServerConfig(ctx, "gateway"));
    sc.handler_timeout = std::max(sc.handler_timeout, handler_timeout);
    sc.max_body_bytes = std::max<size_t>(sc.max_body_bytes, 32u << 20);
    net::Router router;
    proxy_->Register(router);
    server_ = std::make_unique<net::Server>(sc, std::move(router));
    if (Status s = server_->Start(); !s.ok()) {
      server_.reset();
      shipper_.reset();
      proxy_.reset();
      return s;
    }
    governance_guard.armed = false;
    host_ = sc.address;
    // Routes, keys, prices and DLP rules re-read on a change of the file and on SIGHUP (routes_reload.h).
    reloader_ = std::make_unique<RoutesReloader>(
        *proxy_, RoutesReloadOptions{.file = file,
                                     .interval = c.GetDuration("gateway.routes_reload_interval"),
                                     .max_answer_time = sc.handler_timeout - std::chrono::seconds(5),
                                     .upstream = upstream,
                                     .initial_text = text.str()});
    reloader_->Start();
    log::Info("gateway", "serving", {{"address", services::FormatListen(host_, server_->port())}});
    return OkStatus();
  }

  std::vector<services::Endpoint> Endpoints() const override {
    if (!server_) return {};
    return {{"gateway", "http", services::FormatListen(host_, server_->port())}};
  }

  void Reload() override {
    if (reloader_) (void)reloader_->ReloadNow();  // logged
  }

  void Stop() override {
    reloader_.reset();
    if (server_) server_->Stop();
    server_.reset();
    // The shipper stops before the proxy closes its WAL; what it has not shipped goes at the next start.
    shipper_.reset();
    proxy_.reset();  // cancels provider calls in flight, waits for them, flushes the usage WAL
    // After the last settlement: reports spend, releases the budget leases.
    governance_.Stop();
    governance_ = {};
    // With the routes gone, so are their AWS credential sources: a refresh thread still fetching must
    // end before the process exits (static destruction of the HTTP client's and logger's state).
    if (!AwsCredentialSource::AwaitRefreshThreads(std::chrono::steady_clock::now() + kRefreshDrain))
      log::Warn("gateway", "an aws credentials refresh was still running at shutdown");
  }

 private:
  GovernanceRuntime governance_;
  std::unique_ptr<Proxy> proxy_;
  std::unique_ptr<RoutesReloader> reloader_;  // before proxy_ goes
  std::unique_ptr<policy::WalEventShipper> shipper_;
  std::unique_ptr<net::Server> server_;
  std::string host_;
};

}  // namespace

std::unique_ptr<services::Service> NewGatewayService() { return std::make_unique<GatewayService>(); }

}  // namespace govern::gateway
