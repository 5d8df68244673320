// The telemetry service: configuration, the write-ahead log, API keys, intake, ingest into PostgreSQL,
// compaction to the Parquet archive and the query API, started and stopped in that order.
#include "services/telemetry/service.h"

#include <filesystem>
#include <functional>

#include "base/log.h"
#include "net/http_server.h"
#include "net/metrics.h"
#include "services/http_config.h"
#include "services/telemetry/api_keys.h"
#include "services/telemetry/archive.h"
#include "services/telemetry/archive_config.h"
#include "services/telemetry/compactor.h"
#include "services/telemetry/ingest.h"
#include "services/telemetry/intake.h"
#include "services/telemetry/query_api.h"
#include "services/telemetry/schema.h"
#include "storage/wal.h"

namespace govern::telemetry {
namespace {

class TelemetryService final : public services::Service {
 public:
  std::string_view name() const override { return "telemetry"; }
  std::string_view summary() const override {
    return "takes in events (OTLP/HTTP logs, NDJSON), stores each once in PostgreSQL, archives old hours "
           "to Parquet, answers queries with DLP redaction";
  }

  void DeclareConfig(config::Schema& s) const override {
    using config::Type;
    s.Add({.key = "telemetry.listen",
           .type = Type::kString,
           .default_value = "127.0.0.1:4318",
           .help =
               "Address of the intake HTTP endpoint (OTLP/HTTP `POST /v1/logs`, NDJSON `POST /v1/events`). "
               "4318 is the OTLP/HTTP port; 0 picks a free port.",
           .validate = [](std::string_view v) { return services::ParseListen(v).status(); }});
    s.Add({.key = "telemetry.wal_dir",
           .type = Type::kString,
           .default_value = "",
           .help = "Directory of the telemetry write-ahead log. Empty: `<data_dir>/telemetry/wal`."});
    s.Add({.key = "telemetry.wal_segment_size",
           .type = Type::kBytes,
           .default_value = "64MiB",
           .help = "Size of one WAL segment file (allocated whole when created). Segments are deleted once "
                   "ingest has stored every record in them, so the WAL disk needs a few segments of room "
                   "plus whatever accumulates while PostgreSQL is unreachable.",
           .min = int64_t{1} << 20,
           .max = int64_t{1} << 30});
    s.Add({.key = "telemetry.max_batch_bytes",
           .type = Type::kBytes,
           .default_value = "4MiB",
           .help = "Largest intake request body, and again after gzip inflation; larger gets 413.",
           .min = 1024,
           .max = int64_t{256} << 20});
    s.Add({.key = "telemetry.max_batch_events",
           .type = Type::kInt,
           .default_value = "10000",
           .help = "Most events (OTLP log records, NDJSON lines) in one intake request; more gets 400.",
           .min = 1,
           .max = 1'000'000});
    s.Add({.key = "telemetry.max_ingest_lag",
           .type = Type::kDuration,
           .default_value = "30s",
           .help = "When the oldest batch accepted but not yet stored in PostgreSQL is older than this, "
                   "intake answers 429 with Retry-After instead of accepting more.",
           .min = 1});
    s.Add({.key = "telemetry.key_cache_ttl",
           .type = Type::kDuration,
           .default_value = "10s",
           .help = "How long intake trusts what it read about an API key; a revoked key stops working "
                   "within this time. 0: ask PostgreSQL on every request.",
           .min = 0,
           .max = 3'600'000});
    DeclareIngestConfig(s);
    DeclareArchiveConfig(s);
  }

  std::vector<db::Migration> Migrations() const override { return telemetry::Migrations(); }

  Status Start(const services::Context& ctx) override {
    if (ctx.db == nullptr) return FailedPrecondition("telemetry needs PostgreSQL (its API keys live there)");
    const config::Config& cfg = *ctx.config;
    std::string wal_dir = WalDir(cfg, ctx.data_dir);
    std::error_code ec;
    std::filesystem::create_directories(wal_dir, ec);
    if (ec) return ErrnoStatus(ec.value(), "create " + wal_dir);

    wal::Options wo;
    wo.default_durability = wal::Durability::kSync;
    wo.segment_size = static_cast<uint64_t>(cfg.GetBytes("telemetry.wal_segment_size"));
    auto log = wal::Log::Open(wal_dir, wo);
    if (!log.ok()) return log.status().WithContext("open the write-ahead log in " + wal_dir);
    log_ = std::move(*log);

    keys_ = std::make_unique<service_keys::KeyCache>(
        ctx.db, IngestKeys(),
        service_keys::KeyCacheOptions{.ttl = cfg.GetDuration("telemetry.key_cache_ttl"), .clock = ctx.clock});

    // Ingest reads the log from its cursor (PostgreSQL's telemetry_ingest_cursor is the position of
    // record, committed with the rows) and stores the events; intake refuses new batches with 429
    // while the oldest unstored one is older than telemetry.max_ingest_lag.
    ingester_ = std::make_unique<Ingester>(log_.get(), ctx.db, IngestOptionsFromConfig(cfg), ctx.clock);
    GOVERN_RETURN_IF_ERROR(ingester_->Start().WithContext("telemetry: start ingest"));
    oldest_unstored_received_ns_ = [ing = ingester_.get()] { return ing->OldestUnstoredReceivedNs(); };

    IntakeOptions io;
    io.max_batch_bytes = static_cast<size_t>(cfg.GetBytes("telemetry.max_batch_bytes"));
    io.max_batch_events = static_cast<size_t>(cfg.GetInt("telemetry.max_batch_events"));
    io.max_ingest_lag = cfg.GetDuration("telemetry.max_ingest_lag");
    io.max_record_bytes = wo.max_record_size;
    io.durability = wo.default_durability;
    intake_ = std::make_unique<Intake>(
        io,
        IntakeDeps{.log = log_.get(),
                   .keys = keys_.get(),
                   .clock = ctx.clock,
                   .oldest_unstored_received_ns =
                       [this] { return oldest_unstored_received_ns_ ? oldest_unstored_received_ns_() : 0; },
                   .metrics = &metrics_});

    GOVERN_ASSIGN_OR_RETURN(net::ServerConfig sc, services::MakeServerConfig(ctx, name()));
    sc.metrics = &metrics_;
    net::Router router;
    intake_->AddRoutes(router);
    // The archive: Parquet files listed in telemetry_archive_files, in a local directory or an S3
    // bucket. The compactor moves whole hours older than telemetry.compaction.age there.
    auto store = OpenArchiveStore(cfg, ctx.data_dir);
    if (!store.ok()) return store.status().WithContext("telemetry: open the archive");
    store_ = std::move(*store);
    archive_ = std::make_unique<Archive>(ctx.db, store_.get());

    // The query API checks `Authorization: Bearer <query key>` through the same cache (its callback
    // may run on a KeyCache thread; the API answers through the Responder from its own workers).
    query_ = std::make_unique<QueryApi>(ctx.db, archive_.get(), QueryApiOptions{.clock = ctx.clock});
    query_->Register(
        router, [keys = keys_.get()](std::string_view key, std::function<void(Result<std::string>)> done) {
          VerifyKey(*keys, key, kQueryScope, std::move(done));
        });

    server_ = std::make_unique<net::Server>(std::move(sc), std::move(router));
    // Not ready while the WAL is poisoned (a failed fdatasync): every append would fail until a restart.
    server_->AddReadinessCheck("wal", [this] { return log_->Health().ok(); });
    GOVERN_RETURN_IF_ERROR(server_->Start().WithContext("telemetry: start HTTP server"));
    host_ = services::ParseListen(cfg.GetString("telemetry.listen"))->host;

    CompactionOptions co = CompactionOptionsFromConfig(cfg, ctx.data_dir);
    compactor_ = std::make_unique<Compactor>(ctx.db, store_.get(), ctx.clock, co);
    compactor_->Start(co.interval);
    log::Info("telemetry", "intake listening",
              {{"address", services::FormatListen(host_, server_->port())}, {"wal_dir", wal_dir}});
    return OkStatus();
  }

  std::vector<services::Endpoint> Endpoints() const override {
    if (!server_) return {};
    return {{"telemetry", "http", services::FormatListen(host_, server_->port())}};
  }

  void Stop() override {
    // Stop taking requests and let those in flight finish (their WAL appends complete and answer).
    if (server_) server_->Stop();
    // Lookups still waiting answer 503 (and no KeyCache thread runs intake any more).
    if (keys_) keys_->Shutdown();
    query_.reset();  // its workers finish what they run; the server no longer hands it requests
    // A compaction pass in progress ends first (it holds a pool connection and the store).
    if (compactor_) compactor_->Stop();
    // Ingest stops before the log closes (it reads the log); an in-flight batch commits or rolls back.
    if (ingester_) ingester_->Stop();
    oldest_unstored_received_ns_ = nullptr;
    ingester_.reset();  // its WAL reader must not outlive the log
    // The log completes every pending append and closes before the server object goes, since the
    // appends' callbacks answer through its Responders.
    log_.reset();
    server_.reset();
    intake_.reset();
    keys_.reset();
    compactor_.reset();
    archive_.reset();
    store_.reset();
  }

 private:
  net::MetricsRegistry metrics_;
  std::unique_ptr<wal::Log> log_;
  std::unique_ptr<service_keys::KeyCache> keys_;
  std::unique_ptr<Intake> intake_;
  std::unique_ptr<net::Server> server_;
  std::string host_;
  std::unique_ptr<Ingester> ingester_;
  std::unique_ptr<objstore::Store> store_;
  std::unique_ptr<Archive> archive_;
  std::unique_ptr<Compactor> compactor_;
  std::unique_ptr<QueryApi> query_;
  // The lag provider intake consults (see Start). Empty: caught up.
  std::function<int64_t()> oldest_unstored_received_ns_;
};

}  // namespace

std::unique_ptr<services::Service> NewTelemetryService() { return std::make_unique<TelemetryService>(); }

std::string WalDir(const config::Config& cfg, std::string_view data_dir) {
  std::string dir = cfg.GetString("telemetry.wal_dir");
  if (dir.empty()) return std::string(data_dir) + "/telemetry/wal";
  std::error_code ec;
  std::string abs = std::filesystem::absolute(dir, ec).lexically_normal();
  return ec ? dir : abs;
}

}  // namespace govern::telemetry
