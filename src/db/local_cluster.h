// LocalCluster: a private PostgreSQL server under one data directory, for `govern up` and for tests.
//
// Start() creates the cluster when the directory holds none (initdb: UTF8, locale C, superuser
// "postgres"), then starts it with pg_ctl; when a server already runs on the directory it is reused
// as it is (that is how a second `govern up` on the same directory joins the first), and a stale
// postmaster.pid left by a crash is cleared by pg_ctl. Stop() is a fast shutdown with a bounded
// wait, then an immediate one. Destroying a LocalCluster does not stop the server.
//
// Layout: the Unix socket lives in the data directory itself (unix_socket_directories), the TCP port
// is a free one on 127.0.0.1, chosen at first start and kept in <data>/govern.port so restarts reuse
// it while it is free. Settings Govern owns are in <data>/govern.conf (rewritten at each start and
// included from postgresql.conf); the server log is <data>/postgresql.log.
//
// Authentication: the Unix socket uses "trust". That is safe because the socket sits in the data
// directory, which is mode 0700: only the OS user owning the cluster (and root) can reach it. TCP
// (when listen_tcp) uses scram-sha-256 with a random password generated at creation and kept in
// <data>/govern.password (mode 0600); TcpConnInfo() hands it out, nothing logs it.
//
// Running as root: PostgreSQL refuses to run as root, so the directory is given to the `postgres`
// user (or whoever already owns an existing cluster) and initdb/pg_ctl run as that user (fork,
// setgid, setuid, exec; no sudo). Every parent directory must be enterable by that user: directories
// Start() creates get o+x; for others Start() fails with a message naming the directory, unless
// relocate_root is set (see there).
//
// Not thread-safe; use one LocalCluster per data directory from one thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::db {

struct LocalClusterOptions {
  std::string data_dir;  // created when missing (with its parents)
  // Directory holding initdb, pg_ctl and postgres. Empty: /usr/lib/postgresql/15/bin, else the
  // highest /usr/lib/postgresql/*/bin, else the directory of pg_ctl on PATH.
  std::string bin_dir;
  std::string superuser = "postgres";
  std::string run_as = "postgres";  // OS user that runs the server when we are root
  bool listen_tcp = true;           // listen on 127.0.0.1 as well as on the socket
  // fsync=on keeps committed data through a power loss. Only throwaway test clusters turn it off
  // (it also disables full_page_writes and synchronous_commit there).
  bool fsync = true;
  std::string shared_buffers = "128MB";
  int max_connections = 200;
  // When we run as root and the server's user cannot enter a directory above data_dir (say the
  // project lives under /root), and data_dir does not exist yet: create the cluster in a directory
  // under relocate_root instead and make data_dir a symlink to it. Empty: fail with a clear error.
  std::string relocate_root;
  std::chrono::seconds start_timeout{60};
  std::chrono::seconds stop_timeout{30};
};

class LocalCluster {
 public:
  explicit LocalCluster(LocalClusterOptions options);

  Status Start();
  Status Stop();
  // Whether a server runs on the data directory now (pg_ctl status).
  bool IsRunning();

  // After Start(): whether this call found the server already running / created the cluster.
  bool reused() const { return reused_; }
  bool created() const { return created_; }
  int port() const { return port_; }
  const std::string& data_dir() const { return data_dir_; }
  std::string log_file() const { return data_dir_ + "/postgresql.log"; }

  // Creates database `name` (owned by the superuser) unless it exists. After Start().
  Status EnsureDatabase(std::string_view name);

  // libpq conninfo through the Unix socket: "host=<data dir> port=<port> dbname=<db> user=<superuser>".
  std::string ConnInfo(std::string_view dbname = "postgres") const;
  // The same over TCP to 127.0.0.1, with the password. Fails when listen_tcp is off.
  Result<std::string> TcpConnInfo(std::string_view dbname = "postgres") const;

  // The conninfo of the server running on `data_dir` (read from its postmaster.pid), for processes
  // that did not start it (tests using the shared cluster).
  static Result<std::string> RunningConnInfo(const std::string& data_dir,
                                             std::string_view dbname = "postgres",
                                             std::string_view user = "postgres");
  // Where the server binaries are (see LocalClusterOptions::bin_dir).
  static Result<std::string> FindBinDir(const std::string& configured);

 private:
  struct RunAs;
  Status Prepare();
  Status ResolveRunUser(const std::filesystem::path& dir);
  std::string Unreachable(const std::filesystem::path& dir) const;
  Status Create();
  Status WriteConf(int port);
  Status StartServer();
  Status AdoptRunning();
  Status SetPassword();
  Status WriteOwnedFile(const std::string& path, const std::string& content, int mode);
  Result<int> RunTool(const std::vector<std::string>& argv, std::string* output);

  LocalClusterOptions options_;
  std::string data_dir_;
  std::string bin_dir_;
  bool prepared_ = false;
  bool switch_user_ = false;
  unsigned run_uid_ = 0, run_gid_ = 0;
  std::vector<unsigned> run_groups_;
  std::string run_home_;
  std::string run_name_;
  bool reused_ = false;
  bool created_ = false;
  int port_ = 0;
};

}  // namespace govern::db
