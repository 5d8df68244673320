// The admin service.
#include "services/admin/admin.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/log.h"
#include "db/pool.h"
#include "net/http_server.h"
#include "net/json.h"
#include "services/http_config.h"

namespace govern::services {
namespace {

class AdminService final : public Service {
 public:
  std::string_view name() const override { return "admin"; }
  std::string_view summary() const override {
    return "health, readiness, metrics and status of this govern process (HTTP)";
  }

  void DeclareConfig(config::Schema& schema) const override {
    schema.Add({.key = "admin.listen", .type = config::Type::kString, .default_value = "127.0.0.1:7700",
                .help = "Address of the admin HTTP endpoint (/healthz, /readyz, /metrics, /v1/status). "
                        "Port 0 picks a free port.",
                .validate = [](std::string_view v) { return ParseListen(v).status(); }});
  }

  Status Start(const Context& ctx) override {
    ctx_ = ctx;
    started_unix_micros_ = ctx.clock->UnixMicros();
    GOVERN_ASSIGN_OR_RETURN(net::ServerConfig sc, MakeServerConfig(ctx, name()));
    net::Router router;
    router.AddSync(net::Method::kGet, "/v1/status", [this](net::Request&) { return StatusResponse(); },
                   {.cls = net::RequestClass::kNormal, .name = "status"});
    server_ = std::make_unique<net::Server>(std::move(sc), std::move(router));
    if (ctx.db != nullptr) {
      // Probes read a cached answer: a stalled database must never block an event loop (and with it
      // /healthz). A thread of our own asks the database once a second.
      database_ok_ = ctx.db->HealthCheck().ok();
      prober_ = std::thread([this, pool = ctx.db] { ProbeDatabase(pool); });
      server_->AddReadinessCheck("database", [this] { return database_ok_.load(); });
    }
    GOVERN_RETURN_IF_ERROR(server_->Start().WithContext("admin: start HTTP server"));
    host_ = ParseListen(ctx.config->GetString("admin.listen"))->host;
    return OkStatus();
  }

  std::vector<Endpoint> Endpoints() const override {
    if (!server_) return {};
    return {{"admin", "http", FormatListen(host_, server_->port())}};
  }

  void Stop() override {
    if (server_) server_->Stop();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (prober_.joinable()) prober_.join();
  }

 private:
  void ProbeDatabase(db::Pool* pool) {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; })) {
      lock.unlock();
      database_ok_ = pool->HealthCheck().ok();
      lock.lock();
    }
  }

  net::Response StatusResponse() const {
    nlohmann::json services = nlohmann::json::array();
    if (ctx_.running != nullptr) {
      for (const Endpoint& e : ctx_.running->Snapshot()) {
        services.push_back({{"service", e.service}, {"protocol", e.protocol}, {"address", e.address}});
      }
    }
    int64_t now = ctx_.clock->UnixMicros();
    return net::JsonResponse(nlohmann::json{
        {"version", ctx_.version},
        {"uptime_seconds", (now - started_unix_micros_) / 1'000'000},
        {"database", ctx_.db == nullptr ? "none" : database_ok_.load() ? "ready" : "unreachable"},
        {"endpoints", services},
    });
  }

  Context ctx_;
  int64_t started_unix_micros_ = 0;
  std::string host_;
  std::unique_ptr<net::Server> server_;
  std::atomic<bool> database_ok_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread prober_;
};

}  // namespace

std::unique_ptr<Service> NewAdminService() { return std::make_unique<AdminService>(); }

}  // namespace govern::services
