#include "services/model_stub/service.h"

#include "base/log.h"
#include "services/http_config.h"
#include "services/model_stub/server.h"

namespace govern::model_stub {
namespace {

class ModelStubService final : public services::Service {
 public:
  std::string_view name() const override { return "model-stub"; }
  std::string_view summary() const override {
    return "fake model provider (OpenAI chat, Responses, embeddings, models; Anthropic messages) with "
           "deterministic answers, a token rate and injected faults, for gateway tests and benchmarks";
  }
  bool needs_database() const override { return false; }

  void DeclareConfig(config::Schema& schema) const override {
    schema.Add({.key = "model_stub.listen",
                .type = config::Type::kString,
                .default_value = "127.0.0.1:7760",
                .help = "HTTP address of the model stub. Port 0 picks a free port.",
                .validate = [](std::string_view v) { return services::ParseListen(v).status(); }});
    schema.Add({.key = "model_stub.tokens_per_second",
                .type = config::Type::kInt,
                .default_value = "0",
                .help = "Pace of streamed tokens per stream; 0 sends every token at once.",
                .min = 0,
                .max = 1000000});
    schema.Add({.key = "model_stub.threads",
                .type = config::Type::kInt,
                .default_value = "1",
                .help = "Event-loop threads of the model stub.",
                .min = 1,
                .max = 256});
    schema.Add({.key = "model_stub.models",
                .type = config::Type::kStringList,
                .default_value = "stub-gpt,stub-claude",
                .help = "Model ids listed by GET /v1/models (any model name is answered)."});
  }

  Status Start(const services::Context& ctx) override {
    GOVERN_ASSIGN_OR_RETURN(services::ListenAddress addr,
                            services::ParseListen(ctx.config->GetString("model_stub.listen")));
    ServerOptions o;
    o.host = addr.host.empty() ? "0.0.0.0" : addr.host;
    o.port = addr.port;
    o.threads = static_cast<int>(ctx.config->GetInt("model_stub.threads"));
    o.tokens_per_second = ctx.config->GetInt("model_stub.tokens_per_second");
    o.stub.models = ctx.config->GetStringList("model_stub.models");
    auto server = StubServer::Start(std::move(o));
    if (!server.ok()) return server.status();
    server_ = std::move(*server);
    host_ = addr.host.empty() ? "0.0.0.0" : addr.host;
    log::Info("model-stub", "serving", {{"address", services::FormatListen(host_, server_->port())}});
    return OkStatus();
  }

  std::vector<services::Endpoint> Endpoints() const override {
    if (!server_) return {};
    return {{"model-stub", "http", services::FormatListen(host_, server_->port())}};
  }

  void Stop() override {
    if (server_) server_->Stop();
    server_.reset();
  }

 private:
  std::unique_ptr<StubServer> server_;
  std::string host_;
};

}  // namespace

std::unique_ptr<services::Service> NewModelStubService() { return std::make_unique<ModelStubService>(); }

}  // namespace govern::model_stub
