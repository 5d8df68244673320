// The audit service: configuration, start and stop, and the maintenance thread.
#include "services/audit/service.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/log.h"
#include "db/pool.h"
#include "net/http_server.h"
#include "services/audit/api.h"
#include "services/audit/batcher.h"
#include "services/audit/files.h"
#include "services/audit/schema.h"
#include "services/audit/store.h"
#include "services/http_config.h"

namespace govern::audit_service {
namespace {

class AuditService final : public services::Service {
 public:
  std::string_view name() const override { return "audit"; }
  std::string_view summary() const override {
    return "audit log: per-organisation hash chains in PostgreSQL with signed checkpoints (HTTP)";
  }

  void DeclareConfig(config::Schema& s) const override {
    using config::Type;
    s.Add(
        {.key = "audit.listen",
         .type = Type::kString,
         .default_value = "127.0.0.1:7730",
         .help = "Address of the audit HTTP API (`POST /v1/audit/{org}/entries`, ...). 0 picks a free port.",
         .validate = [](std::string_view v) { return services::ParseListen(v).status(); }});
    s.Add({.key = "audit.batch_size",
           .type = Type::kInt,
           .default_value = "1000",
           .help = "Most entries appended in one transaction (a request is never split).",
           .min = 1,
           .max = 100000});
    s.Add({.key = "audit.flush_interval",
           .type = Type::kDuration,
           .default_value = "0ms",
           .help = "How long a free append lane waits for more appends before its transaction starts (0: at "
                   "once; appends that arrive while a transaction runs go into the next one).",
           .min = 0,
           .max = 1000});
    s.Add({.key = "audit.flushers",
           .type = Type::kInt,
           .default_value = "1",
           .help = "Append lanes per replica: organisations are split among them by name, and each lane has "
                   "one transaction holding head locks at a time. One is fastest when several replicas "
                   "share the organisations (bigger batches, fewer transactions; docs/audit.md); with "
                   "audit.flush_outside_lock=false a lane waits for its own flush, so raise it there.",
           .min = 1,
           .max = 64});
    s.Add({.key = "audit.max_queued",
           .type = Type::kInt,
           .default_value = "20000",
           .help = "Most entries waiting for a transaction per replica; appends beyond it get 503 with "
                   "Retry-After (nothing stored).",
           .min = 1,
           .max = 10000000});
    s.Add({
        .key = "audit.flush_outside_lock",
        .type = Type::kBool,
        .default_value = "true",
        .help = "Release chain head locks before the commit's WAL flush and acknowledge after a "
                "durability barrier (a synchronously committed transaction after it); false: the "
                "append transaction itself commits synchronously, holding the locks through the flush.",
    });
    s.Add({
        .key = "audit.append_in_database",
        .type = Type::kBool,
        .default_value = "false",
        .help = "One round trip per append batch: seq, hashes and Merkle computed in PostgreSQL (the "
                "function audit_append) while it holds the chain heads, instead of two round trips with "
                "the hashing in the service. Same stored bytes; see docs/audit.md (Throughput).",
    });
    s.Add({.key = "audit.checkpoint_interval",
           .type = Type::kDuration,
           .default_value = "10s",
           .help = "How often a checkpoint is signed for every organisation whose chain moved (0: only on "
                   "demand).",
           .min = 0});
    s.Add({.key = "audit.checkpoint_dir",
           .type = Type::kString,
           .default_value = "",
           .help = "Directory outside the database where every checkpoint is also written "
                   "(<dir>/<org>/<size>.checkpoint). Empty: <data_dir>/audit/checkpoints."});
    s.Add({.key = "audit.checkpoint_key",
           .type = Type::kString,
           .default_value = "",
           .help = "File holding the Ed25519 seed (64 hex digits) that signs checkpoints; give every replica "
                   "the same file. Empty: <data_dir>/audit/checkpoint.key, made on first start."});
    s.Add({.key = "audit.retention",
           .type = Type::kString,
           .default_value = "forever",
           .help = "How long entries are kept by default ('forever', or a duration such as 90d); per "
                   "organisation: `govern audit retention`. Entries go only up to a signed checkpoint.",
           .validate = [](std::string_view v) { return ParseRetentionSeconds(v).status(); }});
    s.Add({.key = "audit.max_details_bytes",
           .type = Type::kBytes,
           .default_value = "64KiB",
           .help = "Largest 'details' object of one entry (canonical JSON).",
           .min = 16,
           .max = int64_t{4} << 20});
    s.Add({.key = "audit.max_body_bytes",
           .type = Type::kBytes,
           .default_value = "8MiB",
           .help = "Largest append request body (larger: 413).",
           .min = 1024,
           .max = int64_t{256} << 20});
    s.Add({.key = "audit.max_appends_in_flight",
           .type = Type::kInt,
           .default_value = "4096",
           .help = "Most append requests handled at once per replica (their own admission class: the "
                   "adaptive limit does not shed appends); more get 503 with Retry-After at once.",
           .min = 1,
           .max = 1000000});
    s.Add({.key = "audit.read_threads",
           .type = Type::kInt,
           .default_value = "4",
           .help = "Threads answering reads (entries, searches, proofs, exports).",
           .min = 1,
           .max = 64});
  }

  std::vector<db::Migration> Migrations() const override { return audit_service::Migrations(); }

  Status Start(const services::Context& ctx) override {
    if (ctx.db == nullptr) return FailedPrecondition("audit needs PostgreSQL (the chains live there)");
    const config::Config& cfg = *ctx.config;
    clock_ = ctx.clock != nullptr ? ctx.clock : &Clock::Real();
    pool_ = ctx.db;
    std::string key_path;
    auto signer = LoadCheckpointSigner(cfg.GetString("audit.checkpoint_key"), ctx.data_dir, &key_path);
    if (!signer.ok()) return signer.status().WithContext("audit: checkpoint key");
    signer_ = std::make_unique<CheckpointSigner>(std::move(*signer));
    checkpoint_dir_ = CheckpointDir(cfg.GetString("audit.checkpoint_dir"), ctx.data_dir);
    auto retention = ParseRetentionSeconds(cfg.GetString("audit.retention"));
    if (!retention.ok()) return retention.status().WithContext("audit.retention");
    retention_ = *retention;
    checkpoint_interval_ = cfg.GetDuration("audit.checkpoint_interval");
    log::Info("audit", "signing checkpoints",
              {{"key_file", key_path}, {"verifier_key", signer_->verifier_key()}, {"dir", checkpoint_dir_}});

    GOVERN_RETURN_IF_ERROR(CheckDurabilityBarrier(*pool_));
    keys_ = std::make_unique<service_keys::KeyCache>(pool_, AuditKeyTable(),
                                                     service_keys::KeyCacheOptions{.clock = ctx.clock});
    batcher_ = std::make_unique<Batcher>(
        pool_, BatcherOptions{.max_batch = static_cast<size_t>(cfg.GetInt("audit.batch_size")),
                              .flush_interval = std::chrono::duration_cast<std::chrono::microseconds>(
                                  cfg.GetDuration("audit.flush_interval")),
                              .flushers = static_cast<int>(cfg.GetInt("audit.flushers")),
                              .max_queued = static_cast<size_t>(cfg.GetInt("audit.max_queued")),
                              .flush_outside_lock = cfg.GetBool("audit.flush_outside_lock"),
                              .append_in_database = cfg.GetBool("audit.append_in_database"),
                              .stats_interval = std::chrono::milliseconds(5000),
                              .clock = ctx.clock});
    ApiOptions api;
    api.max_details_bytes = static_cast<size_t>(cfg.GetBytes("audit.max_details_bytes"));
    api.max_body_bytes = static_cast<size_t>(cfg.GetBytes("audit.max_body_bytes"));
    api.read_threads = static_cast<int>(cfg.GetInt("audit.read_threads"));
    api.max_appends_in_flight = static_cast<size_t>(cfg.GetInt("audit.max_appends_in_flight"));
    api.clock = ctx.clock;
    api.on_checkpoint = [this](const std::string& org, uint64_t size, const std::string& note) {
      WriteFile(org, size, note);
    };
    api_ = std::make_unique<Api>(pool_, batcher_.get(), keys_.get(), signer_.get(), std::move(api));

    GOVERN_ASSIGN_OR_RETURN(net::ServerConfig sc, services::MakeServerConfig(ctx, "audit"));
    net::Router router;
    api_->AddRoutes(router);
    GOVERN_RETURN_IF_ERROR(router.status());
    server_ = std::make_unique<net::Server>(std::move(sc), std::move(router));
    GOVERN_RETURN_IF_ERROR(server_->Start().WithContext("audit: start HTTP server"));
    host_ = services::ParseListen(cfg.GetString("audit.listen"))->host;
    maintenance_ = std::thread([this] { Maintain(); });
    log::Info("audit", "listening", {{"address", services::FormatListen(host_, server_->port())}});
    return OkStatus();
  }

  std::vector<services::Endpoint> Endpoints() const override {
    if (!server_) return {};
    return {{"audit", "http", services::FormatListen(host_, server_->port())}};
  }

  void Stop() override {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (maintenance_.joinable()) maintenance_.join();
    if (server_) server_->Stop();
    if (batcher_) batcher_->Shutdown();  // flushes what the server accepted
    server_.reset();
    api_.reset();
    batcher_.reset();
    if (keys_) keys_->Shutdown();
    keys_.reset();
  }

 private:
  void WriteFile(const std::string& org, uint64_t size, const std::string& note) {
    Status s = WriteCheckpointFile(checkpoint_dir_, org, size, note);
    if (!s.ok())
      log::Warn("audit", "could not write checkpoint file", {{"org", org}, {"error", s.message()}});
  }

  void CheckpointAll() {
    auto lease = pool_->Checkout();
    if (!lease.ok()) return;
    auto orgs = OrgsNeedingCheckpoint(**lease, 10000);
    if (!orgs.ok()) {
      log::Warn("audit", "checkpoint scan failed", {{"error", orgs.status().message()}});
      return;
    }
    for (const std::string& org : *orgs) {
      auto cp = MakeCheckpoint(**lease, org, *signer_, clock_->UnixMicros());
      if (!cp.ok()) {
        log::Warn("audit", "checkpoint failed", {{"org", org}, {"error", cp.status().message()}});
        continue;
      }
      WriteFile(org, cp->checkpoint.size, cp->note);
    }
  }

  void RetainAll() {
    auto lease = pool_->Checkout();
    if (!lease.ok()) return;
    auto rows = (*lease)->Exec(
        "SELECT h.org, r.keep_secs, r.org IS NOT NULL FROM audit_heads h LEFT JOIN audit_retention r USING "
        "(org)");
    if (!rows.ok()) return;
    int64_t now = clock_->UnixMicros();
    for (int i = 0; i < rows->size(); ++i) {
      std::optional<int64_t> keep = retention_;
      if (*rows->Bool(i, 2))
        keep = rows->IsNull(i, 1) ? std::nullopt : std::optional<int64_t>(*rows->Int64(i, 1));
      if (!keep) continue;
      std::string org(rows->Text(i, 0));
      auto removed = ApplyRetention(**lease, org, now - *keep * 1000000);
      if (removed.ok() && *removed > 0)
        log::Info("audit", "retention", {{"org", org}, {"removed", *removed}});
    }
  }

  void Maintain() {
    auto tick = checkpoint_interval_.count() > 0 ? checkpoint_interval_ : std::chrono::milliseconds(60000);
    int64_t last_retention = 0;
    std::unique_lock lk(mu_);
    while (!stop_) {
      cv_.wait_for(lk, tick, [&] { return stop_; });
      if (stop_) break;
      lk.unlock();
      if (checkpoint_interval_.count() > 0) CheckpointAll();
      int64_t now = clock_->MonotonicNanos();
      if (now - last_retention > int64_t{300} * 1000000000) {
        RetainAll();
        last_retention = now;
      }
      lk.lock();
    }
  }

  const Clock* clock_ = nullptr;
  db::Pool* pool_ = nullptr;
  std::unique_ptr<CheckpointSigner> signer_;
  std::unique_ptr<service_keys::KeyCache> keys_;
  std::unique_ptr<Batcher> batcher_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<net::Server> server_;
  std::string host_;
  std::string checkpoint_dir_;
  std::optional<int64_t> retention_;
  std::chrono::milliseconds checkpoint_interval_{10000};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread maintenance_;
};

}  // namespace

std::unique_ptr<services::Service> NewAuditService() { return std::make_unique<AuditService>(); }

}  // namespace govern::audit_service
