#include "services/gateway/service.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "net/http_server.h"
#include "services/gateway/proxy.h"
#include "services/http_config.h"

namespace govern::gateway {
namespace {

class GatewayService final : public services::Service {
 public:
  std::string_view name() const override { return "gateway"; }
  std::string_view summary() const override {
    return "AI gateway: OpenAI and Anthropic APIs in front of model providers, with virtual keys, rate "
           "limits, metering and usage records";
  }
  bool needs_database() const override { return false; }

  void DeclareConfig(config::Schema& schema) const override {
    schema.Add({.key = "gateway.listen",
                .type = config::Type::kString,
                .default_value = "127.0.0.1:7770",
                .help = "HTTP address of the AI gateway. Port 0 picks a free port.",
                .validate = [](std::string_view v) { return services::ParseListen(v).status(); }});
    schema.Add({.key = "gateway.routes_file",
                .type = config::Type::kString,
                .default_value = "",
                .help = "JSON file of routes (model -> base_url, format openai|anthropic, api_key, "
                        "stub_fault_headers: pass x-stub-* test headers), virtual "
                        "keys (gvg_..., org, requests_per_minute, tokens_per_minute) and prices per "
                        "million tokens (input, output, cached_input). Required."});
    schema.Add({.key = "gateway.usage_dir",
                .type = config::Type::kString,
                .default_value = "",
                .help = "Directory of the usage record WAL; empty: <data_dir>/gateway/usage."});
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
    GOVERN_ASSIGN_OR_RETURN(proxy_, Proxy::Create(std::move(config)));

    GOVERN_ASSIGN_OR_RETURN(net::ServerConfig sc, services::MakeServerConfig(ctx, "gateway"));
    // A provider may take minutes over a whole (non-streamed) answer; streams are answered once their
    // head is sent, so this only bounds the former.
    sc.handler_timeout = std::max<std::chrono::milliseconds>(sc.handler_timeout, std::chrono::minutes(10));
    sc.max_body_bytes = std::max<size_t>(sc.max_body_bytes, 32u << 20);
    net::Router router;
    proxy_->Register(router);
    server_ = std::make_unique<net::Server>(sc, std::move(router));
    if (Status s = server_->Start(); !s.ok()) {
      server_.reset();
      proxy_.reset();
      return s;
    }
    host_ = sc.address;
    log::Info("gateway", "serving", {{"address", services::FormatListen(host_, server_->port())}});
    return OkStatus();
  }

  std::vector<services::Endpoint> Endpoints() const override {
    if (!server_) return {};
    return {{"gateway", "http", services::FormatListen(host_, server_->port())}};
  }

  void Stop() override {
    if (server_) server_->Stop();
    server_.reset();
    proxy_.reset();  // cancels provider calls in flight, waits for them, flushes the usage WAL
  }

 private:
  std::unique_ptr<Proxy> proxy_;
  std::unique_ptr<net::Server> server_;
  std::string host_;
};

}  // namespace

std::unique_ptr<services::Service> NewGatewayService() { return std::make_unique<GatewayService>(); }

}  // namespace govern::gateway
