// `govern up` and `govern serve`: start services in order, wait for a signal, stop them in reverse.
#include "cli/run.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <thread>

#include "base/log.h"
#include "cli/database.h"
#include "cli/limits_config.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "services/service.h"

#ifndef GOVERN_VERSION
#define GOVERN_VERSION "0.0.0"
#endif

namespace govern::cli {
namespace {

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
    bool take = wanted.empty() && all && reg.in_up;
    for (const std::string& w : wanted) take = take || reg.name == w;
    if (take) out.push_back(reg.make());
  }
  return out;
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
  // Signals are taken by sigwait below; every thread started from here inherits the mask. A signal
  // that arrives during start-up is taken as soon as start-up is done.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto selected = Select(cfg, names, all);
  if (!selected.ok()) {
    Fail(selected.status());
    return 2;  // a bad command line, like a bad configuration
  }
  std::vector<std::unique_ptr<services::Service>>& svcs = *selected;

  auto resolved = ResolveDataDir(cfg);
  if (!resolved.ok()) return Fail(resolved.status());
  const std::string& data_dir = *resolved;

  auto limiter = NewLimiter(cfg, Clock::Real());
  if (!limiter.ok()) return Fail(limiter.status());

  // Declared before everything that uses it, so it is released (and the cluster stopped) last, on
  // every return path. Opened only when a selected service needs it: the sidecar alone starts no
  // PostgreSQL.
  Database database;
  std::unique_ptr<db::Pool> pool;
  services::EndpointList running;
  bool needs_database = false;
  for (const auto& svc : svcs) needs_database = needs_database || svc->needs_database_for(cfg);
  if (needs_database) {
    Status opened = database.Open(cfg, data_dir);
    if (!opened.ok()) return Fail(opened);
    auto created = db::Pool::Create(
        {.conninfo = database.conninfo(), .max_size = static_cast<int>(cfg.GetInt("database.pool_size"))});
    if (!created.ok()) return Fail(created.status().WithContext("connect to PostgreSQL"));
    pool = std::move(*created);
    for (const auto& svc : svcs) {
      std::vector<db::Migration> migrations = svc->Migrations();
      if (migrations.empty()) continue;
      auto applied = db::Migrator(std::string(svc->name()), std::move(migrations)).Apply(*pool);
      if (!applied.ok()) return Fail(applied.status().WithContext(std::string(svc->name()) + ": migrations"));
    }
    running.Add({"postgres", "postgresql", database.description()});
  }

  services::Context ctx;
  ctx.config = &cfg;
  ctx.clock = &Clock::Real();
  ctx.db = pool.get();
  ctx.admission = limiter->get();
  ctx.data_dir = data_dir;
  ctx.version = GOVERN_VERSION;
  ctx.running = &running;

  size_t to_stop = 0;
  Status failure;
  for (const auto& svc : svcs) {
    ++to_stop;  // a service that fails part way through Start is stopped too
    Status s = svc->Start(ctx);
    if (!s.ok()) {
      failure = s.WithContext(std::string(svc->name()));
      break;
    }
    for (auto& e : svc->Endpoints()) running.Add(e);
    log::Info("cli", "service started", {{"service", std::string(svc->name())}});
  }

  if (failure.ok()) {
    std::printf("govern %s is up (data_dir %s)\n", GOVERN_VERSION, data_dir.c_str());
    for (const auto& e : running.Snapshot()) {
      std::printf("  %-10s %-11s %s\n", e.service.c_str(), e.protocol.c_str(), e.address.c_str());
    }
    std::printf("Ctrl-C or SIGTERM stops every service; SIGHUP reloads their files.\n");
    std::fflush(stdout);
    int sig = 0;
    // SIGHUP: each service re-reads what it can without a restart (Service::Reload).
    while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
      log::Info("cli", "reloading", {{"signal", sigabbrev_np(sig)}});
      for (const auto& svc : svcs) svc->Reload();
    }
    log::Info("cli", "shutting down", {{"signal", sigabbrev_np(sig)}});
    // A second SIGINT or SIGTERM means the operator will not wait for the drain. A SIGHUP meanwhile
    // (config tooling reloading after an edit) is ignored: it must not skip the services' Stop, which
    // flushes buffered usage records and releases budget leases.
    std::thread([signals] {
      int again = 0;
      while (sigwait(&signals, &again) == 0 && again == SIGHUP) {
        log::Info("cli", "reload ignored while shutting down", {{"signal", sigabbrev_np(again)}});
      }
      log::Warn("cli", "second signal: exiting without waiting for services to stop",
                {{"signal", sigabbrev_np(again)}});
      log::Sync();
      _exit(1);
    }).detach();
  }

  while (to_stop > 0) {
    services::Service& svc = *svcs[--to_stop];
    svc.Stop();
    log::Info("cli", "service stopped", {{"service", std::string(svc.name())}});
  }
  svcs.clear();  // before the pool and the limiter they point to
  pool.reset();
  database.Release();
  if (!failure.ok()) return Fail(failure);
  log::Info("cli", "stopped");
  log::Sync();
  return 0;
}

}  // namespace govern::cli
