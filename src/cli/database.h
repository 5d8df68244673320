// The PostgreSQL a govern process uses, and its data directory: shared by `govern up`/`serve` and the
// subcommands that need the database (`govern telemetry keys ...`), so they all find the same one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "config/config.h"

namespace govern::db {
class Connection;
class LocalCluster;
struct Migration;
}  // namespace govern::db

namespace govern::cli {

// data_dir made absolute and created.
Result<std::string> ResolveDataDir(const config::Config& cfg);

// The database this process uses: database.url, or the private cluster under <data_dir>/postgres.
// For the private cluster, every govern process using it holds a shared flock on
// <data_dir>/postgres.users; at exit, the process that can turn it into an exclusive lock is the last
// user, and stops the cluster if govern started it (marker <data_dir>/postgres.owned). So a second
// `govern up` on the same data directory keeps its database when the first one exits, and every exit
// path of the last one (including a failed start) stops what govern started. Not thread-safe: the
// main thread owns it.
class Database {
 public:
  Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  Status Open(const config::Config& cfg, const std::string& data_dir);
  // Stops the private cluster when this is its last user and govern started it. Idempotent.
  void Release();

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

// One connection to that database with one service's tables migrated: what a `govern <service> ...`
// subcommand (keys, exports) works on. The connection closes before the private cluster may stop.
class ServiceDatabase {
 public:
  ServiceDatabase();
  ~ServiceDatabase();
  Status Open(const config::Config& cfg, std::string service, std::vector<db::Migration> migrations);
  db::Connection& conn() { return *conn_; }
  const std::string& data_dir() const { return data_dir_; }
  // For a command that needs a db::Pool of its own (may hold a password; never print it).
  const std::string& conninfo() const { return database_.conninfo(); }

 private:
  Database database_;
  std::string data_dir_;
  std::unique_ptr<db::Connection> conn_;
};

}  // namespace govern::cli
