// `govern up` and `govern serve`: start services in order, wait for a signal, stop them in reverse.
#include "cli/run.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/log.h"
#include "cli/limits_config.h"
#include "db/local_cluster.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "services/service.h"

#ifndef GOVERN_VERSION
#define GOVERN_VERSION "0.0.0"
#endif

namespace govern::cli {
namespace {

constexpr std::string_view kDatabaseName = "govern";

Result<std::vector<std::unique_ptr<services::Service>>> Select(const config::Config& cfg,
                                                               const std::vector<std::string>& names,
                                                               bool all) {
  std::vector<std::string> wanted = names;
  if (all) wanted = cfg.GetStringList("up.services");
  std::vector<std::unique_ptr<services::Service>> out;
  std::string known;
  for (const auto& reg : services::Registry()) {
    if (!known.empty()) known += ", ";
    known += reg.name;
  }
  for (const std::string& w : wanted) {
    bool found = false;
    for (const auto& reg : services::Registry()) found = found || reg.name == w;
    if (!found) return InvalidArgument("unknown service '" + w + "' (this binary holds: " + known + ")");
  }
  // Registry order is start order, whatever order the names came in.
  for (const auto& reg : services::Registry()) {
    bool take = wanted.empty() && all;
    for (const std::string& w : wanted) take = take || reg.name == w;
    if (take) out.push_back(reg.make());
  }
  return out;
}

// The private cluster: started here unless one already runs on the data directory.
struct Database {
  std::unique_ptr<db::LocalCluster> cluster;
  bool started_here = false;
  std::string conninfo;
  std::string description;
};

Result<Database> OpenDatabase(const config::Config& cfg, const std::string& data_dir) {
  Database d;
  d.conninfo = cfg.GetString("database.url");
  if (!d.conninfo.empty()) {
    d.description = "external (database.url)";
    return d;
  }
  db::LocalClusterOptions o;
  o.data_dir = data_dir + "/postgres";
  o.bin_dir = cfg.GetString("database.pg_bin_dir");
  // As root, the server runs as the postgres user; when it cannot reach a data_dir under a private
  // home (say /root/govern/var), the cluster lives under /var/lib/govern instead, linked from data_dir.
  o.relocate_root = "/var/lib/govern/postgres";
  d.cluster = std::make_unique<db::LocalCluster>(o);
  GOVERN_RETURN_IF_ERROR(d.cluster->Start().WithContext("private PostgreSQL under " + o.data_dir));
  d.started_here = !d.cluster->reused();
  // Govern's tables live in their own database, created on first start.
  GOVERN_RETURN_IF_ERROR(d.cluster->EnsureDatabase(std::string(kDatabaseName)));
  d.conninfo = d.cluster->ConnInfo(kDatabaseName);
  d.description = "private, " + d.cluster->data_dir() + " (socket), 127.0.0.1:" +
                  std::to_string(d.cluster->port()) + (d.cluster->reused() ? " (already running)" : "");
  return d;
}

int Fail(const Status& s) {
  log::Error("cli", s.message(), {{"code", std::string(CodeName(s.code()))}});
  std::fprintf(stderr, "govern: %s\n", s.message().c_str());
  log::Sync();
  return 1;
}

}  // namespace

void DeclareServiceKeys(config::Schema& schema) {
  for (const auto& reg : services::Registry()) reg.make()->DeclareConfig(schema);
  DeclareLimitsKeys(schema);
}

void PrintServices() {
  for (const auto& reg : services::Registry()) {
    std::printf("%-12s %s\n", std::string(reg.name).c_str(), std::string(reg.summary).c_str());
  }
}

int RunServices(const config::Config& cfg, const std::vector<std::string>& names, bool all) {
  // Signals are taken by sigwait below; every thread started from here inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto selected = Select(cfg, names, all);
  if (!selected.ok()) return Fail(selected.status());
  std::vector<std::unique_ptr<services::Service>>& svcs = *selected;

  std::error_code ec;
  std::string data_dir = std::filesystem::absolute(cfg.GetString("data_dir"), ec).lexically_normal();
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return Fail(ErrnoStatus(ec.value(), "create data_dir " + data_dir));

  auto database = OpenDatabase(cfg, data_dir);
  if (!database.ok()) return Fail(database.status());
  auto pool = db::Pool::Create({.conninfo = database->conninfo,
                                .max_size = static_cast<int>(cfg.GetInt("database.pool_size"))});
  if (!pool.ok()) return Fail(pool.status().WithContext("connect to PostgreSQL"));

  for (const auto& svc : svcs) {
    std::vector<db::Migration> migrations = svc->Migrations();
    if (migrations.empty()) continue;
    auto applied = db::Migrator(std::string(svc->name()), std::move(migrations)).Apply(**pool);
    if (!applied.ok()) return Fail(applied.status().WithContext(std::string(svc->name()) + ": migrations"));
  }


  std::unique_ptr<limits::Limiter> limiter = NewLimiter(cfg, Clock::Real());

  std::vector<services::Endpoint> running;
  running.push_back({"postgres", "postgresql", database->description});
  services::Context ctx;
  ctx.config = &cfg;
  ctx.clock = &Clock::Real();
  ctx.db = pool->get();
  ctx.admission = limiter.get();
  ctx.data_dir = data_dir;
  ctx.version = GOVERN_VERSION;
  ctx.running = &running;

  size_t started = 0;
  Status failure;
  for (; started < svcs.size(); ++started) {
    services::Service& svc = *svcs[started];
    Status s = svc.Start(ctx);
    if (!s.ok()) {
      failure = s.WithContext(std::string(svc.name()));
      break;
    }
    for (auto& e : svc.Endpoints()) running.push_back(e);
    log::Info("cli", "service started", {{"service", std::string(svc.name())}});
  }

  if (failure.ok()) {
    std::printf("govern %s is up (data_dir %s)\n", GOVERN_VERSION, data_dir.c_str());
    for (const auto& e : running) {
      std::printf("  %-10s %-11s %s\n", e.service.c_str(), e.protocol.c_str(), e.address.c_str());
    }
    std::printf("Ctrl-C or SIGTERM stops every service.\n");
    std::fflush(stdout);
    int sig = 0;
    sigwait(&signals, &sig);
    log::Info("cli", "shutting down", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
  }

  while (started > 0) {
    services::Service& svc = *svcs[--started];
    svc.Stop();
    log::Info("cli", "service stopped", {{"service", std::string(svc.name())}});
  }
  pool->reset();
  if (database->started_here) {
    Status s = database->cluster->Stop();
    if (!s.ok()) log::Warn("cli", "private PostgreSQL did not stop cleanly", {{"error", s.message()}});
  }
  if (!failure.ok()) return Fail(failure);
  log::Info("cli", "stopped");
  log::Sync();
  return 0;
}

}  // namespace govern::cli
