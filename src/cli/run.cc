// `govern up` and `govern serve`: start services in order, wait for a signal, stop them in reverse.
#include "cli/run.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

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

// The database this process uses. For the private cluster, every govern process using it holds a
// shared flock on <data_dir>/postgres.users; at exit, the process that can turn it into an exclusive
// lock is the last user, and stops the cluster if govern started it (marker <data_dir>/postgres.owned).
// So a second `govern up` on the same data directory keeps its database when the first one exits, and
// every exit path of the last one (including a failed start) stops what govern started.
class Database {
 public:
  Database() = default;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database() { Release(); }

  Status Open(const config::Config& cfg, const std::string& data_dir) {
    conninfo_ = cfg.GetString("database.url");
    if (!conninfo_.empty()) {
      description_ = "external (database.url)";
      return OkStatus();
    }
    users_path_ = data_dir + "/postgres.users";
    owned_path_ = data_dir + "/postgres.owned";
    users_fd_ = ::open(users_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (users_fd_ < 0) return ErrnoStatus(errno, "open " + users_path_);
    if (::flock(users_fd_, LOCK_SH) != 0) return ErrnoStatus(errno, "lock " + users_path_);

    db::LocalClusterOptions o;
    o.data_dir = data_dir + "/postgres";
    o.bin_dir = cfg.GetString("database.pg_bin_dir");
    // As root, the server runs as the postgres user; when it cannot reach a data_dir under a private
    // home (say /root/govern/var), the cluster lives under /var/lib/govern instead, linked from data_dir.
    o.relocate_root = "/var/lib/govern/postgres";
    cluster_ = std::make_unique<db::LocalCluster>(o);
    GOVERN_RETURN_IF_ERROR(cluster_->Start().WithContext("private PostgreSQL under " + o.data_dir));
    if (!cluster_->reused()) {
      int fd = ::open(owned_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd >= 0) ::close(fd);
    }
    // Govern's tables live in their own database, created on first start.
    GOVERN_RETURN_IF_ERROR(cluster_->EnsureDatabase(std::string(kDatabaseName)));
    conninfo_ = cluster_->ConnInfo(kDatabaseName);
    description_ = "private, " + cluster_->data_dir() + " (socket), 127.0.0.1:" +
                   std::to_string(cluster_->port()) + (cluster_->reused() ? " (already running)" : "");
    return OkStatus();
  }

  // Stops the private cluster when this is its last user and govern started it. Idempotent.
  void Release() {
    if (users_fd_ < 0) return;
    if (cluster_ && ::flock(users_fd_, LOCK_EX | LOCK_NB) == 0 && ::access(owned_path_.c_str(), F_OK) == 0) {
      Status s = cluster_->Stop();
      if (s.ok()) {
        ::unlink(owned_path_.c_str());
      } else {
        log::Warn("cli", "private PostgreSQL did not stop cleanly", {{"error", s.message()}});
      }
    } else if (cluster_) {
      log::Info("cli", "private PostgreSQL left running: another govern process uses it, or govern did "
                       "not start it");
    }
    ::close(users_fd_);
    users_fd_ = -1;
  }

  const std::string& conninfo() const { return conninfo_; }
  const std::string& description() const { return description_; }

 private:
  std::unique_ptr<db::LocalCluster> cluster_;
  std::string conninfo_;
  std::string description_;
  std::string users_path_;
  std::string owned_path_;
  int users_fd_ = -1;
};

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

  std::error_code ec;
  std::string data_dir = std::filesystem::absolute(cfg.GetString("data_dir"), ec).lexically_normal();
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return Fail(ErrnoStatus(ec.value(), "create data_dir " + data_dir));

  auto limiter = NewLimiter(cfg, Clock::Real());
  if (!limiter.ok()) return Fail(limiter.status());

  // Declared before everything that uses it, so it is released (and the cluster stopped) last, on
  // every return path.
  Database database;
  Status opened = database.Open(cfg, data_dir);
  if (!opened.ok()) return Fail(opened);
  auto pool = db::Pool::Create({.conninfo = database.conninfo(),
                                .max_size = static_cast<int>(cfg.GetInt("database.pool_size"))});
  if (!pool.ok()) return Fail(pool.status().WithContext("connect to PostgreSQL"));

  for (const auto& svc : svcs) {
    std::vector<db::Migration> migrations = svc->Migrations();
    if (migrations.empty()) continue;
    auto applied = db::Migrator(std::string(svc->name()), std::move(migrations)).Apply(**pool);
    if (!applied.ok()) return Fail(applied.status().WithContext(std::string(svc->name()) + ": migrations"));
  }

  services::EndpointList running;
  running.Add({"postgres", "postgresql", database.description()});
  services::Context ctx;
  ctx.config = &cfg;
  ctx.clock = &Clock::Real();
  ctx.db = pool->get();
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
    std::printf("Ctrl-C or SIGTERM stops every service.\n");
    std::fflush(stdout);
    int sig = 0;
    sigwait(&signals, &sig);
    log::Info("cli", "shutting down", {{"signal", sigabbrev_np(sig)}});
    // A second signal means the operator will not wait for the drain.
    std::thread([signals] {
      int again = 0;
      sigwait(&signals, &again);
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
  pool->reset();
  database.Release();
  if (!failure.ok()) return Fail(failure);
  log::Info("cli", "stopped");
  log::Sync();
  return 0;
}

}  // namespace govern::cli
