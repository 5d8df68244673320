// The scim service: configuration, start and stop.
#include "services/scim/service.h"

#include "base/log.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "net/http_server.h"
#include "services/auth/schema.h"
#include "services/http_config.h"
#include "services/keys/keys.h"
#include "services/scim/api.h"
#include "services/scim/schema.h"
#include "services/scim/store.h"

namespace govern::scim_service {
namespace {

class ScimService final : public services::Service {
 public:
  std::string_view name() const override { return "scim"; }
  std::string_view summary() const override {
    return "directory sync: SCIM 2.0 Users and Groups from Okta, Entra and others into the auth directory "
           "(HTTP)";
  }

  void DeclareConfig(config::Schema& s) const override {
    using config::Type;
    s.Add({.key = "scim.listen",
           .type = Type::kString,
           .default_value = "127.0.0.1:7750",
           .help = "Address of the SCIM 2.0 API (base URL http://<listen>/scim/v2). 0 picks a free port.",
           .validate = [](std::string_view v) { return services::ParseListen(v).status(); }});
    s.Add({.key = "scim.public_url",
           .type = Type::kString,
           .default_value = "",
           .help = "Base URL identity providers use (https://id.example.com/scim/v2), for meta.location and "
                   "Location; empty: http://<Host header>/scim/v2."});
    s.Add({.key = "scim.workers",
           .type = Type::kInt,
           .default_value = "8",
           .help = "Threads running SCIM requests against PostgreSQL (one transaction each).",
           .min = 1,
           .max = 256});
    s.Add({.key = "scim.max_queued",
           .type = Type::kInt,
           .default_value = "2000",
           .help = "Requests waiting for a worker; beyond it 503 with Retry-After (IdPs retry).",
           .min = 1,
           .max = 1000000});
    s.Add({.key = "scim.max_results",
           .type = Type::kInt,
           .default_value = "1000",
           .help = "Largest page of a list or search (count is clamped to it).",
           .min = 1,
           .max = 100000});
    s.Add({.key = "scim.bulk.max_operations",
           .type = Type::kInt,
           .default_value = "1000",
           .help = "Most operations in one Bulk request (more: 413).",
           .min = 1,
           .max = 100000});
    s.Add({.key = "scim.bulk.max_payload",
           .type = Type::kBytes,
           .default_value = "4MiB",
           .help = "Largest Bulk request body (more: 413).",
           .min = 1024,
           .max = int64_t{256} << 20});
    s.Add({.key = "scim.max_scan",
           .type = Type::kInt,
           .default_value = "500000",
           .help = "Most resources a filter that no index serves is evaluated over (more: 400 tooMany).",
           .min = 1,
           .max = 100000000});
    s.Add({.key = "scim.group_commit",
           .type = Type::kBool,
           .default_value = "false",
           .help = "Concurrent user creates, members-only group PATCHes and user writes share one "
                   "PostgreSQL transaction, each under its own savepoint (docs/scim.md, Group commit). "
                   "Fewer commits and less PostgreSQL CPU per user; not faster on 2 shared cores."});
  }

  std::vector<db::Migration> Migrations() const override { return scim_service::Migrations(); }

  Status Start(const services::Context& ctx) override {
    if (ctx.db == nullptr) return FailedPrecondition("scim needs PostgreSQL (the directory lives there)");
    const config::Config& cfg = *ctx.config;
    // SCIM writes auth's tables: make sure they exist even when auth runs elsewhere or later.
    GOVERN_RETURN_IF_ERROR(PrepareAuthTables(*ctx.db).WithContext("scim: auth tables"));
    keys_ = std::make_unique<service_keys::KeyCache>(ctx.db, ScimKeyTable(),
                                                     service_keys::KeyCacheOptions{.clock = ctx.clock});
    store_ = std::make_unique<Store>(
        ctx.db, StoreOptions{.max_scan = static_cast<size_t>(cfg.GetInt("scim.max_scan")),
                             .clock = ctx.clock,
                             .group_commit = cfg.GetBool("scim.group_commit")});
    ApiOptions api;
    api.public_url = cfg.GetString("scim.public_url");
    api.threads = static_cast<int>(cfg.GetInt("scim.workers"));
    api.max_queued = static_cast<size_t>(cfg.GetInt("scim.max_queued"));
    api.max_results = cfg.GetInt("scim.max_results");
    api.bulk_max_operations = static_cast<size_t>(cfg.GetInt("scim.bulk.max_operations"));
    api.bulk_max_payload = static_cast<size_t>(cfg.GetBytes("scim.bulk.max_payload"));
    api_ = std::make_unique<Api>(store_.get(), keys_.get(), std::move(api));
    GOVERN_ASSIGN_OR_RETURN(net::ServerConfig sc, services::MakeServerConfig(ctx, "scim"));
    net::Router router;
    api_->AddRoutes(router);
    GOVERN_RETURN_IF_ERROR(router.status());
    server_ = std::make_unique<net::Server>(std::move(sc), std::move(router));
    GOVERN_RETURN_IF_ERROR(server_->Start().WithContext("scim: start HTTP server"));
    host_ = services::ParseListen(cfg.GetString("scim.listen"))->host;
    log::Info("scim", "listening", {{"address", services::FormatListen(host_, server_->port())}});
    return OkStatus();
  }

  std::vector<services::Endpoint> Endpoints() const override {
    if (!server_) return {};
    return {{"scim", "http", services::FormatListen(host_, server_->port())}};
  }

  void Stop() override {
    if (server_) server_->Stop();
    server_.reset();
    api_.reset();
    store_.reset();
    if (keys_) keys_->Shutdown();
    keys_.reset();
  }

 private:
  std::unique_ptr<service_keys::KeyCache> keys_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<net::Server> server_;
  std::string host_;
};

}  // namespace

std::unique_ptr<services::Service> NewScimService() { return std::make_unique<ScimService>(); }

}  // namespace govern::scim_service
