// The PostgreSQL a govern process uses: database.url or the private cluster, shared by its users.
#include "cli/database.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>

#include "base/log.h"
#include "db/connection.h"
#include "db/local_cluster.h"
#include "db/migrator.h"

namespace govern::cli {
namespace {

constexpr std::string_view kDatabaseName = "govern";

}  // namespace

Result<std::string> ResolveDataDir(const config::Config& cfg) {
  std::error_code ec;
  std::string data_dir = std::filesystem::absolute(cfg.GetString("data_dir"), ec).lexically_normal();
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return ErrnoStatus(ec.value(), "create data_dir " + data_dir);
  return data_dir;
}

Database::Database() = default;
Database::~Database() { Release(); }

Status Database::Open(const config::Config& cfg, const std::string& data_dir) {
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
  description_ = "private, " + cluster_->data_dir() +
                 " (socket), 127.0.0.1:" + std::to_string(cluster_->port()) +
                 (cluster_->reused() ? " (already running)" : "");
  return OkStatus();
}

void Database::Release() {
  if (users_fd_ < 0) return;
  if (cluster_ && ::flock(users_fd_, LOCK_EX | LOCK_NB) == 0 && ::access(owned_path_.c_str(), F_OK) == 0) {
    Status s = cluster_->Stop();
    if (s.ok()) {
      ::unlink(owned_path_.c_str());
    } else {
      log::Warn("cli", "private PostgreSQL did not stop cleanly", {{"error", s.message()}});
    }
  } else if (cluster_) {
    log::Info("cli",
              "private PostgreSQL left running: another govern process uses it, or govern did "
              "not start it");
  }
  ::close(users_fd_);
  users_fd_ = -1;
}

ServiceDatabase::ServiceDatabase() = default;

ServiceDatabase::~ServiceDatabase() {
  conn_.reset();  // before the private cluster may stop
  database_.Release();
}

Status ServiceDatabase::Open(const config::Config& cfg, std::string service,
                             std::vector<db::Migration> migrations) {
  GOVERN_ASSIGN_OR_RETURN(data_dir_, ResolveDataDir(cfg));
  GOVERN_RETURN_IF_ERROR(database_.Open(cfg, data_dir_));
  auto conn = db::Connection::Connect(database_.conninfo());
  if (!conn.ok()) return conn.status().WithContext("connect to PostgreSQL");
  conn_ = std::move(*conn);
  std::string context = service + ": migrations";
  auto applied = db::Migrator(std::move(service), std::move(migrations)).Apply(*conn_);
  if (!applied.ok()) return applied.status().WithContext(context);
  return OkStatus();
}

}  // namespace govern::cli
