// LocalCluster: initdb, pg_ctl and a user switch, with clear errors.
#include "db/local_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/log.h"

extern char** environ;

namespace govern::db {
namespace fs = std::filesystem;
namespace {

bool IsExecutable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

bool HasTools(const std::string& dir) {
  return IsExecutable(dir + "/initdb") && IsExecutable(dir + "/pg_ctl") && IsExecutable(dir + "/postgres");
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(errno, "open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Tail(const std::string& path, int lines) {
  auto text = ReadFile(path);
  if (!text.ok()) return "";
  const std::string& t = *text;
  size_t pos = t.size();
  int seen = 0;
  while (pos > 0) {
    --pos;
    if (t[pos] == '\n' && pos + 1 < t.size() && ++seen > lines) {
      ++pos;
      break;
    }
  }
  return t.substr(pos);
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// A single-quoted value for postgresql.conf.
std::string ConfQuote(std::string_view v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'')
      out += "''";
    else if (c == '\\')
      out += "\\\\";
    else
      out += c;
  }
  return out + "'";
}

// A value for a libpq keyword=value conninfo.
std::string ConnQuote(std::string_view v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

bool PortFree(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int one = 1;
  // PostgreSQL binds with SO_REUSEADDR, so a port in TIME_WAIT is free for it too.
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

Result<int> PickFreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus(errno, "socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = 0;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    int e = errno;
    ::close(fd);
    return ErrnoStatus(e, "finding a free port on 127.0.0.1");
  }
  ::close(fd);
  return static_cast<int>(ntohs(a.sin_port));
}

int ParseInt(std::string_view s) {
  int v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() ? v : 0;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// postmaster.pid: pid, data dir, start time, port, socket dir, listen address, shmem key, status.
struct PidFile {
  int pid = 0;
  int port = 0;
  std::string socket_dir;
};
Result<PidFile> ReadPidFile(const std::string& data_dir) {
  GOVERN_ASSIGN_OR_RETURN(std::string text, ReadFile(data_dir + "/postmaster.pid"));
  auto lines = Lines(text);
  if (lines.size() < 5)
    return Unavailable("postmaster.pid in " + data_dir + " is incomplete (server starting?)");
  PidFile p;
  p.pid = ParseInt(lines[0]);
  p.port = ParseInt(lines[3]);
  p.socket_dir = lines[4];
  if (p.pid <= 0 || p.port <= 0) return Unavailable("postmaster.pid in " + data_dir + " is not readable");
  return p;
}

// Alive means running: a zombie (dead, not yet reaped, as happens under an init that does not reap
// orphans) answers kill(pid, 0) but will never serve again.
bool PidAlive(int pid) {
  if (pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH)) return false;
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return true;  // no /proc: trust kill()
  size_t paren = stat->rfind(')');
  return !(paren != std::string::npos && paren + 2 < stat->size() && (*stat)[paren + 2] == 'Z');
}

std::string RandomPassword() {
  unsigned char b[24];
  size_t got = 0;
  while (got < sizeof b) {
    ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// Waits for the server `pid` to accept connections (PQping: no credentials needed).
Status WaitReady(const std::string& conninfo, int pid, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    PGPing p = PQping((conninfo + " connect_timeout=2").c_str());
    if (p == PQPING_OK) return OkStatus();
    if (p == PQPING_NO_ATTEMPT) return InvalidArgument("bad connection parameters for the local cluster");
    if (!PidAlive(pid)) return Unavailable("the server process " + std::to_string(pid) + " has exited");
    if (std::chrono::steady_clock::now() >= deadline) {
      return Unavailable("the running server did not accept connections within " +
                         std::to_string(timeout.count()) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Holds flock() on the data directory, so two processes starting (or stopping) the same cluster
// at once take turns: the second finds the first's server running and reuses it.
class DirLock {
 public:
  static Result<DirLock> Acquire(const std::string& dir, std::chrono::seconds timeout) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, "open " + dir);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) {
        int e = errno;
        ::close(fd);
        return ErrnoStatus(e, "lock " + dir);
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        ::close(fd);
        return Unavailable("another process kept " + dir + " locked for " + std::to_string(timeout.count()) +
                           " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return DirLock(fd);
  }
  DirLock(DirLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  DirLock& operator=(DirLock&&) = delete;
  ~DirLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }

 private:
  explicit DirLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace

LocalCluster::LocalCluster(LocalClusterOptions options) : options_(std::move(options)) {}

Result<std::string> LocalCluster::FindBinDir(const std::string& configured) {
  if (!configured.empty()) {
    if (HasTools(configured)) return configured;
    return NotFound("no initdb, pg_ctl and postgres in " + configured);
  }
  const std::string root = "/usr/lib/postgresql";
  if (HasTools(root + "/15/bin")) return root + "/15/bin";
  int best = -1;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    int v = ParseInt(e.path().filename().string());
    if (v > best && HasTools(e.path().string() + "/bin")) best = v;
  }
  if (best >= 0) return root + "/" + std::to_string(best) + "/bin";
  if (const char* path = std::getenv("PATH")) {
    std::string_view p(path);
    while (!p.empty()) {
      size_t colon = p.find(':');
      std::string dir(p.substr(0, colon));
      if (!dir.empty() && HasTools(dir)) return dir;
      if (colon == std::string_view::npos) break;
      p.remove_prefix(colon + 1);
    }
  }
  return NotFound(
      "PostgreSQL server binaries not found (looked in /usr/lib/postgresql/*/bin and PATH); "
      "install postgresql-15 or configure the bin directory");
}

// Runs a PostgreSQL tool, as the run-as user when we are root; collects its stdout and stderr.
Result<int> LocalCluster::RunTool(const std::vector<std::string>& argv, std::string* output) {
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    // PG* variables (PGDATA, PGPORT, PGHOST...) would steer the tools away from our settings.
    if (kv.starts_with("PG") || kv.starts_with("LC_") || kv.starts_with("LANG") || kv.starts_with("HOME="))
      continue;
    env_store.emplace_back(kv);
  }
  env_store.push_back("LC_ALL=C");
  env_store.push_back(
      "HOME=" + (switch_user_ ? run_home_ : std::string(std::getenv("HOME") ? std::getenv("HOME") : "/")));
  std::vector<char*> envp;
  for (std::string& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<gid_t> groups(run_groups_.begin(), run_groups_.end());

  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe");
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    return ErrnoStatus(e, "fork");
  }
  if (pid == 0) {
    // Child. Signal state is inherited across exec: give the tools (and the postmaster pg_ctl
    // starts) default handlers and an empty mask, or a blocked SIGTERM would make it unstoppable.
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    for (int s = 1; s < NSIG; ++s) signal(s, SIG_DFL);
    // A session of its own: Ctrl-C at the terminal signals govern's process group, and govern, not
    // the terminal, decides when the server stops (after the services have drained).
    ::setsid();
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(pipefd[1], 1);
    ::dup2(pipefd[1], 2);
    ::close_range(3, ~0U, 0);  // no descriptor of ours leaks into the server
    if (switch_user_) {
      if (::setgroups(groups.size(), groups.data()) != 0 || ::setgid(run_gid_) != 0 ||
          ::setuid(run_uid_) != 0) {
        static const char msg[] = "could not switch to the PostgreSQL user\n";
        (void)!::write(2, msg, sizeof msg - 1);
        ::_exit(126);
      }
    }
    if (::chdir("/") != 0) ::_exit(126);
    ::execve(args[0], args.data(), envp.data());
    static const char msg[] = "could not execute the PostgreSQL tool\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(pipefd[1]);
  std::string out;
  char buf[4096];
  while (true) {
    ssize_t n = ::read(pipefd[0], buf, sizeof buf);
    if (n > 0) {
      if (out.size() < (1 << 16)) out.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ErrnoStatus(errno, "waitpid");
  }
  if (output) *output = Trimmed(std::move(out));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

Status LocalCluster::WriteOwnedFile(const std::string& path, const std::string& content, int mode) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus(errno, "create " + tmp);
  bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  if (ok && switch_user_) ok = ::fchown(fd, run_uid_, run_gid_) == 0;
  if (ok) ok = ::fchmod(fd, static_cast<mode_t>(mode)) == 0 && ::fsync(fd) == 0;
  int e = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok) e = errno;
    ::unlink(tmp.c_str());
    return ErrnoStatus(e, "write " + path);
  }
  return OkStatus();
}

// FNV-1a: a stable short name for a relocated data directory.
std::string PathHash(const std::string& path) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : path) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Status LocalCluster::ResolveRunUser(const fs::path& dir) {
  std::error_code ec;
  std::string name = options_.run_as;
  // An existing cluster keeps the owner it has (unless that is root, which PostgreSQL refuses).
  struct stat st {};
  if (fs::exists(dir / "PG_VERSION", ec) && ::stat(dir.c_str(), &st) == 0 && st.st_uid != 0) {
    if (passwd* owner = ::getpwuid(st.st_uid)) name = owner->pw_name;
  }
  passwd* pw = ::getpwnam(name.c_str());
  if (!pw) {
    return FailedPrecondition("running as root, PostgreSQL must run as another user, and there is no user '" +
                              name + "' (installing postgresql-15 creates it)");
  }
  run_name_ = name;
  run_uid_ = pw->pw_uid;
  run_gid_ = pw->pw_gid;
  run_home_ = pw->pw_dir ? pw->pw_dir : "/";
  int n = 64;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  if (::getgrouplist(pw->pw_name, pw->pw_gid, groups.data(), &n) < 0) {
    groups.resize(static_cast<size_t>(n));
    ::getgrouplist(pw->pw_name, pw->pw_gid, groups.data(), &n);
  }
  groups.resize(static_cast<size_t>(std::max(n, 0)));
  run_groups_.assign(groups.begin(), groups.end());
  return OkStatus();
}

// The first existing directory above `dir` that the run-as user cannot enter, or "".
std::string LocalCluster::Unreachable(const fs::path& dir) const {
  std::error_code ec;
  for (fs::path p = dir.parent_path(); !p.empty(); p = p.parent_path()) {
    struct stat ps {};
    if (::stat(p.c_str(), &ps) == 0) {
      bool ok = (ps.st_mode & S_IXOTH) || (ps.st_uid == run_uid_ && (ps.st_mode & S_IXUSR)) ||
                ((ps.st_mode & S_IXGRP) &&
                 std::find(run_groups_.begin(), run_groups_.end(), ps.st_gid) != run_groups_.end());
      if (!ok) return p.string();
    }
    if (p == p.parent_path()) break;
  }
  return "";
}

// Resolves paths, binaries and the user to run as; creates and checks the directories on the way.
Status LocalCluster::Prepare() {
  if (prepared_) return OkStatus();
  if (options_.data_dir.empty()) return InvalidArgument("LocalCluster needs a data directory");
  std::error_code ec;
  fs::path dir = fs::absolute(options_.data_dir, ec).lexically_normal();
  if (ec) return InvalidArgument("bad data directory " + options_.data_dir + ": " + ec.message());
  if (dir.has_parent_path() && dir.filename().empty()) dir = dir.parent_path();  // trailing slash
  // A data directory given as a symlink (see relocate_root) is used through its target.
  for (int hops = 0; hops < 8 && fs::is_symlink(dir, ec); ++hops) {
    fs::path target = fs::read_symlink(dir, ec);
    if (ec) return ErrnoStatus(ec.value(), "readlink " + dir.string());
    dir = (target.is_absolute() ? target : dir.parent_path() / target).lexically_normal();
  }
  GOVERN_ASSIGN_OR_RETURN(bin_dir_, FindBinDir(options_.bin_dir));

  switch_user_ = ::geteuid() == 0;
  if (switch_user_) {
    GOVERN_RETURN_IF_ERROR(ResolveRunUser(dir));
    std::string blocked = Unreachable(dir);
    if (!blocked.empty() && !options_.relocate_root.empty() && !fs::exists(dir, ec)) {
      // Keep the data where the server can reach it, and leave a symlink where it was asked for.
      fs::path target =
          fs::path(options_.relocate_root) / (dir.filename().string() + "-" + PathHash(dir.string()));
      fs::create_directories(dir.parent_path(), ec);
      if (ec) return ErrnoStatus(ec.value(), "mkdir " + dir.parent_path().string());
      fs::create_directory_symlink(target, dir, ec);
      if (ec) return ErrnoStatus(ec.value(), "symlink " + dir.string() + " -> " + target.string());
      log::Info("db", "data directory relocated: PostgreSQL cannot enter " + blocked,
                {{"requested", dir.string()}, {"actual", target.string()}});
      dir = target;
      blocked = Unreachable(dir);
    }
    (void)blocked;  // checked again below, after creating what is missing
  }
  data_dir_ = dir.string();

  // Create missing parents (and the directory), remembering which ones are ours to open up.
  std::vector<fs::path> created;
  {
    std::vector<fs::path> missing;
    for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
      missing.push_back(p);
      if (p == p.parent_path()) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (::mkdir(it->c_str(), 0755) != 0 && errno != EEXIST)
        return ErrnoStatus(errno, "mkdir " + it->string());
      created.push_back(*it);
    }
  }

  if (switch_user_) {
    // Every directory above the data directory must be enterable by the server's user.
    for (std::string blocked = Unreachable(dir); !blocked.empty(); blocked = Unreachable(dir)) {
      struct stat ps {};
      if (::stat(blocked.c_str(), &ps) != 0) return ErrnoStatus(errno, "stat " + blocked);
      if (std::find(created.begin(), created.end(), fs::path(blocked)) == created.end()) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", ps.st_mode & 07777);
        return FailedPrecondition("PostgreSQL runs as user '" + run_name_ + "', which cannot enter " +
                                  blocked + " (mode " + mode + "); allow it (chmod o+x " + blocked +
                                  ") or put the data directory elsewhere");
      }
      if (::chmod(blocked.c_str(), (ps.st_mode & 07777) | S_IXOTH) != 0)
        return ErrnoStatus(errno, "chmod " + blocked);
    }
    struct stat st {};
    if (::stat(data_dir_.c_str(), &st) != 0) return ErrnoStatus(errno, "stat " + data_dir_);
    if (!fs::exists(dir / "PG_VERSION", ec)) {
      if (::chown(data_dir_.c_str(), run_uid_, run_gid_) != 0)
        return ErrnoStatus(errno, "chown " + data_dir_);
    } else if (st.st_uid == 0) {
      return FailedPrecondition(
          "the cluster in " + data_dir_ +
          " belongs to root, and PostgreSQL will not run as root; chown -R it to postgres");
    }
  }
  if (!fs::exists(dir / "PG_VERSION", ec)) {
    if (::chmod(data_dir_.c_str(), 0700) != 0) return ErrnoStatus(errno, "chmod " + data_dir_);
  }
  prepared_ = true;
  return OkStatus();
}

Status LocalCluster::Create() {
  std::error_code ec;
  if (!fs::is_empty(data_dir_, ec)) {
    return FailedPrecondition(data_dir_ +
                              " is neither empty nor a PostgreSQL data directory (no PG_VERSION)");
  }
  std::vector<std::string> argv = {bin_dir_ + "/initdb",
                                   "-D",
                                   data_dir_,
                                   "-E",
                                   "UTF8",
                                   "--locale=C",
                                   "-U",
                                   options_.superuser,
                                   "--auth-local=trust",
                                   "--auth-host=scram-sha-256"};
  if (!options_.fsync) argv.push_back("--no-sync");
  std::string out;
  GOVERN_ASSIGN_OR_RETURN(int rc, RunTool(argv, &out));
  if (rc != 0) {
    return Internal("initdb failed (exit " + std::to_string(rc) + ") in " + data_dir_ + ": " + out);
  }
  // Govern's settings live in their own file, rewritten at every start.
  std::ofstream conf(data_dir_ + "/postgresql.conf", std::ios::app);
  conf << "\n# Added by Govern: settings it manages (port, socket, durability) live here.\n"
       << "include_if_exists = 'govern.conf'\n";
  conf.close();
  if (!conf) return Internal("could not append to " + data_dir_ + "/postgresql.conf");
  GOVERN_RETURN_IF_ERROR(WriteOwnedFile(data_dir_ + "/govern.password", RandomPassword() + "\n", 0600));
  created_ = true;
  log::Info("db", "created PostgreSQL cluster", {{"dir", data_dir_}});
  return OkStatus();
}

Status LocalCluster::WriteConf(int port) {
  std::string c;
  c += "# Written by Govern at every start; edit postgresql.conf for your own settings.\n";
  c += "port = " + std::to_string(port) + "\n";
  c += "listen_addresses = " + std::string(options_.listen_tcp ? "'127.0.0.1'" : "''") + "\n";
  c += "unix_socket_directories = " + ConfQuote(data_dir_) + "\n";
  c += "unix_socket_permissions = 0700\n";
  c += "max_connections = " + std::to_string(options_.max_connections) + "\n";
  c += "shared_buffers = " + ConfQuote(options_.shared_buffers) + "\n";
  c += "timezone = 'UTC'\n";
  c += "log_timezone = 'UTC'\n";
  c += "logging_collector = off\n";
  c += "log_line_prefix = '%m [%p] %q%u@%d '\n";
  c += "max_wal_size = '1GB'\n";
  if (options_.fsync) {
    c += "fsync = on\nfull_page_writes = on\nsynchronous_commit = on\n";
  } else {
    c += "# Throwaway test cluster: a crash may lose or corrupt data.\n";
    c += "fsync = off\nfull_page_writes = off\nsynchronous_commit = off\n";
  }
  return WriteOwnedFile(data_dir_ + "/govern.conf", c, 0600);
}

Status LocalCluster::AdoptRunning() {
  GOVERN_ASSIGN_OR_RETURN(PidFile pid, ReadPidFile(data_dir_));
  port_ = pid.port;
  if (pid.socket_dir != data_dir_) {
    return FailedPrecondition("the server running on " + data_dir_ + " has its socket in " + pid.socket_dir +
                              ", not in its data directory; stop it and start it again with Govern");
  }
  GOVERN_RETURN_IF_ERROR(WaitReady(ConnInfo(), pid.pid, options_.start_timeout));
  reused_ = true;
  log::Info("db", "reusing running PostgreSQL", {{"dir", data_dir_}, {"port", port_}});
  return OkStatus();
}

bool LocalCluster::IsRunning() {
  if (!Prepare().ok()) return false;
  std::error_code ec;
  if (!fs::exists(fs::path(data_dir_) / "PG_VERSION", ec)) return false;
  auto rc = RunTool({bin_dir_ + "/pg_ctl", "status", "-D", data_dir_}, nullptr);
  return rc.ok() && *rc == 0;
}

Status LocalCluster::Start() {
  reused_ = created_ = false;
  GOVERN_RETURN_IF_ERROR(Prepare());
  GOVERN_ASSIGN_OR_RETURN(DirLock dir_lock, DirLock::Acquire(data_dir_, options_.start_timeout * 2));
  std::error_code ec;
  if (!fs::exists(fs::path(data_dir_) / "PG_VERSION", ec)) GOVERN_RETURN_IF_ERROR(Create());

  // Refuse a cluster of another major version with words rather than pg_ctl's.
  GOVERN_ASSIGN_OR_RETURN(std::string version, ReadFile(data_dir_ + "/PG_VERSION"));
  version = Trimmed(version);
  std::string vout;
  GOVERN_ASSIGN_OR_RETURN(int vrc, RunTool({bin_dir_ + "/pg_ctl", "--version"}, &vout));
  size_t at = vout.find(") ");
  std::string bin_major = at == std::string::npos ? "" : vout.substr(at + 2, vout.find('.', at) - at - 2);
  if (vrc == 0 && !bin_major.empty() && bin_major != version) {
    return FailedPrecondition("the cluster in " + data_dir_ + " is PostgreSQL " + version +
                              " but the binaries in " + bin_dir_ + " are " + bin_major);
  }

  // pg_ctl and the postmaster clear a postmaster.pid whose process is gone, but not one whose
  // process is a zombie: that one we remove, with the socket lock files it left in the directory.
  if (auto pid = ReadPidFile(data_dir_); pid.ok() && !PidAlive(pid->pid)) {
    log::Warn("db", "removing postmaster.pid of a dead server", {{"dir", data_dir_}, {"pid", pid->pid}});
    ::unlink((data_dir_ + "/postmaster.pid").c_str());
    for (const auto& e : fs::directory_iterator(data_dir_, ec)) {
      std::string name = e.path().filename().string();
      if (!name.starts_with(".s.PGSQL.") || !name.ends_with(".lock")) continue;
      auto lock = ReadFile(e.path().string());
      if (lock.ok() && ParseInt(Lines(*lock).empty() ? "" : Lines(*lock)[0]) == pid->pid) {
        ::unlink(e.path().c_str());
      }
    }
  }
  if (IsRunning()) return AdoptRunning();
  Status s = StartServer();
  if (!s.ok() && IsRunning()) return AdoptRunning();  // another starter won the race
  return s;
}

Status LocalCluster::StartServer() {
  int port = 0;
  if (auto saved = ReadFile(data_dir_ + "/govern.port"); saved.ok()) {
    int p = ParseInt(Trimmed(*saved));
    if (p > 0 && p < 65536 && PortFree(p)) port = p;
  }
  if (port == 0) {
    GOVERN_ASSIGN_OR_RETURN(port, PickFreePort());
  }
  GOVERN_RETURN_IF_ERROR(WriteConf(port));

  std::string out;
  GOVERN_ASSIGN_OR_RETURN(int rc, RunTool({bin_dir_ + "/pg_ctl", "start", "-D", data_dir_, "-l", log_file(),
                                           "-w", "-t", std::to_string(options_.start_timeout.count()), "-s"},
                                          &out));
  if (rc != 0) {
    return Unavailable("PostgreSQL did not start in " + data_dir_ + " (pg_ctl exit " + std::to_string(rc) +
                       "): " + out + "\nlast lines of " + log_file() + ":\n" + Tail(log_file(), 15));
  }
  port_ = port;
  GOVERN_RETURN_IF_ERROR(WriteOwnedFile(data_dir_ + "/govern.port", std::to_string(port) + "\n", 0600));
  GOVERN_RETURN_IF_ERROR(SetPassword());
  log::Info("db", "started PostgreSQL", {{"dir", data_dir_}, {"port", port_}, {"tcp", options_.listen_tcp}});
  return OkStatus();
}

// Gives the superuser the generated password, so TCP (scram) logins work. Done at every start:
// cheap, and it heals a cluster whose first start was interrupted before this step.
Status LocalCluster::SetPassword() {
  auto pw = ReadFile(data_dir_ + "/govern.password");
  if (!pw.ok()) return OkStatus();  // a cluster made elsewhere: leave its authentication alone
  std::string password = Trimmed(*pw);
  PGconn* c = PQconnectdb((ConnInfo() + " connect_timeout=10").c_str());
  Status s;
  if (PQstatus(c) != CONNECTION_OK) {
    s = Unavailable("connecting to the new server to set its password: " + Trimmed(PQerrorMessage(c)));
  } else {
    char* verifier = PQencryptPasswordConn(c, password.c_str(), options_.superuser.c_str(), "scram-sha-256");
    char* ident = PQescapeIdentifier(c, options_.superuser.data(), options_.superuser.size());
    char* literal = verifier ? PQescapeLiteral(c, verifier, std::strlen(verifier)) : nullptr;
    if (!verifier || !ident || !literal) {
      s = Internal("could not prepare the superuser password");
    } else {
      // The verifier is a salted hash, not the password; ALTER ROLE cannot take it as a parameter.
      std::string sql = std::string("ALTER ROLE ") + ident + " PASSWORD " + literal;
      PGresult* r = PQexec(c, sql.c_str());
      if (PQresultStatus(r) != PGRES_COMMAND_OK) s = Internal("setting the superuser password failed");
      PQclear(r);
    }
    if (verifier) PQfreemem(verifier);
    if (ident) PQfreemem(ident);
    if (literal) PQfreemem(literal);
  }
  PQfinish(c);
  return s;
}

Status LocalCluster::Stop() {
  GOVERN_RETURN_IF_ERROR(Prepare());
  GOVERN_ASSIGN_OR_RETURN(DirLock dir_lock, DirLock::Acquire(data_dir_, options_.stop_timeout * 2));
  if (!IsRunning()) return OkStatus();
  std::string out;
  GOVERN_ASSIGN_OR_RETURN(int rc, RunTool({bin_dir_ + "/pg_ctl", "stop", "-D", data_dir_, "-m", "fast", "-w",
                                           "-t", std::to_string(options_.stop_timeout.count()), "-s"},
                                          &out));
  if (rc == 0) {
    log::Info("db", "stopped PostgreSQL", {{"dir", data_dir_}});
    return OkStatus();
  }
  log::Warn("db", "fast shutdown did not finish in time; stopping immediately", {{"dir", data_dir_}});
  GOVERN_ASSIGN_OR_RETURN(rc, RunTool({bin_dir_ + "/pg_ctl", "stop", "-D", data_dir_, "-m", "immediate", "-w",
                                       "-t", std::to_string(options_.stop_timeout.count()), "-s"},
                                      &out));
  if (rc != 0 && IsRunning()) return Unavailable("PostgreSQL in " + data_dir_ + " did not stop: " + out);
  return OkStatus();
}

Status LocalCluster::EnsureDatabase(std::string_view name) {
  if (port_ == 0) return FailedPrecondition("EnsureDatabase() before Start()");
  if (name.empty() || name.find('\0') != std::string_view::npos) return InvalidArgument("bad database name");
  PGconn* c = PQconnectdb((ConnInfo() + " connect_timeout=10").c_str());
  Status s;
  if (PQstatus(c) != CONNECTION_OK) {
    s = Unavailable("connecting to create a database: " + Trimmed(PQerrorMessage(c)));
  } else {
    std::string n(name);
    const char* values[] = {n.c_str()};
    PGresult* r = PQexecParams(c, "SELECT 1 FROM pg_database WHERE datname = $1", 1, nullptr, values, nullptr,
                               nullptr, 0);
    bool exists = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
      s = Internal("reading pg_database: " + Trimmed(PQresultErrorMessage(r)));
    PQclear(r);
    if (s.ok() && !exists) {
      // CREATE DATABASE takes no parameters; the name goes in quoted as an identifier.
      char* ident = PQescapeIdentifier(c, n.data(), n.size());
      if (!ident) {
        s = InvalidArgument("bad database name");
      } else {
        std::string sql = std::string("CREATE DATABASE ") + ident;
        PQfreemem(ident);
        r = PQexec(c, sql.c_str());
        const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        // 42P04: created meanwhile by another starter.
        if (PQresultStatus(r) != PGRES_COMMAND_OK && !(state && std::string_view(state) == "42P04")) {
          s = Internal("CREATE DATABASE failed: " + Trimmed(PQresultErrorMessage(r)));
        }
        PQclear(r);
      }
    }
  }
  PQfinish(c);
  return s;
}

std::string LocalCluster::ConnInfo(std::string_view dbname) const {
  return "host=" + ConnQuote(data_dir_) + " port=" + std::to_string(port_) + " dbname=" + ConnQuote(dbname) +
         " user=" + ConnQuote(options_.superuser);
}

Result<std::string> LocalCluster::TcpConnInfo(std::string_view dbname) const {
  if (!options_.listen_tcp) return FailedPrecondition("this cluster does not listen on TCP");
  GOVERN_ASSIGN_OR_RETURN(std::string pw, ReadFile(data_dir_ + "/govern.password"));
  return "host=127.0.0.1 port=" + std::to_string(port_) + " dbname=" + ConnQuote(dbname) +
         " user=" + ConnQuote(options_.superuser) + " password=" + ConnQuote(Trimmed(pw));
}

Result<std::string> LocalCluster::RunningConnInfo(const std::string& data_dir, std::string_view dbname,
                                                  std::string_view user) {
  std::error_code ec;
  std::string dir = fs::absolute(data_dir, ec).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  auto pid = ReadPidFile(dir);
  if (!pid.ok()) return Unavailable("no PostgreSQL running on " + dir + ": " + pid.status().message());
  return "host=" + ConnQuote(pid->socket_dir) + " port=" + std::to_string(pid->port) +
         " dbname=" + ConnQuote(dbname) + " user=" + ConnQuote(user);
}

}  // namespace govern::db
