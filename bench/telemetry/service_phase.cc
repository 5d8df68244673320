#include "service_phase.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "db/connection.h"
#include "db/local_cluster.h"
#include "http_conn.h"
#include "services/telemetry/schema.h"

namespace govern::telemetry::benchtool {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kOrg = "org_bench";

struct Target {
  const char* metric;
  double target;
  const char* unit;
  const char* better;
};
constexpr Target kIntakeHttp{"intake_per_core_http", 250000, "events/s", "higher"};
constexpr Target kSustained{"sustained_60s_every_event_stored", 100000, "events/s", "higher"};
constexpr Target kPeak{"peak_60s_every_event_stored", 150000, "events/s", "higher"};
constexpr Target kSoak{"soak_5min_every_event_stored", 80000, "events/s", "higher"};
constexpr Target kLatencyMedian{"send_to_stored_median_at_100k", 32, "ms", "lower"};
constexpr Target kLatencyP99{"send_to_stored_p99_at_100k", 809, "ms", "lower"};
constexpr Target kCompaction{"compaction_rows_per_s", 277000, "rows/s", "higher"};
constexpr Target kCompactionRatio{"compaction_size_ratio", 25.7, "x", "higher"};
constexpr Target kQueryHour{"archive_query_first100_hour", 2.0, "ms", "lower"};
constexpr Target kQueryDay{"archive_query_first100_day", 15.8, "ms", "lower"};
constexpr Target kQueryAll{"archive_query_day_all_48000_rows", 260, "ms", "lower"};

void NotRunRow(std::vector<NotRun>& out, const Target& t, const std::string& why) {
  out.push_back({t.metric, t.target, why});
}

// Runs argv, returns its exit code and what it printed (stdout and stderr).
int RunCapture(const std::vector<std::string>& argv, std::string* output) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) output->append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Starts argv in the background with stdout and stderr appended to `log`.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool CanConnect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

// The fields of a /proc stat file (a process's or a thread's) that the rows use; times in seconds.
struct ProcStat {
  std::string name;  // the text between the parentheses: the command, or the thread's name
  long ppid = 0;
  double utime = 0, stime = 0, cutime = 0, cstime = 0;
};
std::optional<ProcStat> ReadProcStat(const std::filesystem::path& stat_path) {
  std::ifstream in(stat_path);
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t open = stat.find('(');
  const size_t close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcStat out;
  out.name = stat.substr(open + 1, close - open - 1);
  std::istringstream fields(stat.substr(close + 2));
  std::string f;
  double t[4] = {0, 0, 0, 0};                     // utime, stime, cutime, cstime, in clock ticks
  for (int i = 3; fields >> f && i <= 17; ++i) {  // field 3 is the state
    if (i == 4) out.ppid = std::stol(f);
    if (i >= 14) t[i - 14] = std::stod(f);
  }
  const double tck = static_cast<double>(::sysconf(_SC_CLK_TCK));
  out.utime = t[0] / tck;
  out.stime = t[1] / tck;
  out.cutime = t[2] / tck;
  out.cstime = t[3] / tck;
  return out;
}

// utime + stime of a process, in seconds.
double ProcessCpuSeconds(pid_t pid) {
  auto st = ReadProcStat("/proc/" + std::to_string(pid) + "/stat");
  return st ? st->utime + st->stime : 0;
}

// CPU seconds of each live thread of `pid` by thread id, with its name (base/thread_name.h).
struct ThreadCpu {
  std::string name;
  double seconds = 0;
};
std::map<long, ThreadCpu> ThreadCpuSeconds(pid_t pid) {
  std::map<long, ThreadCpu> out;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    if (auto st = ReadProcStat(entry.path() / "stat"))
      out[std::strtol(entry.path().filename().c_str(), nullptr, 10)] = {st->name, st->utime + st->stime};
  }
  return out;
}

// The threads of the telemetry service that are not intake (ingest, compaction, the query workers), by
// the names it gives them (base/thread_name.h).
bool IsNonIntakeThread(const std::string& name) {
  return name.rfind("tel-ingest", 0) == 0 || name.rfind("tel-compact", 0) == 0 ||
         name.rfind("tel-query", 0) == 0;
}

// The CPU seconds between two snapshots spent by threads that are not intake, and how many such threads
// there were. A thread started in between counts from zero; one that ended in between is lost to both
// sides (none do during a load run).
double NonIntakeCpuSeconds(const std::map<long, ThreadCpu>& before, const std::map<long, ThreadCpu>& after,
                           int* threads) {
  double total = 0;
  *threads = 0;
  for (const auto& [tid, t] : after) {
    if (!IsNonIntakeThread(t.name)) continue;
    ++*threads;
    auto was = before.find(tid);
    total += t.seconds - (was == before.end() ? 0 : was->second.seconds);
  }
  return total;
}

// CPU seconds of the private PostgreSQL under `pgdir`: the postmaster and every live child (utime +
// stime), plus the postmaster's cutime + cstime (children that already exited). 0 when not running.
double PostgresCpuSeconds(const std::string& pgdir) {
  std::ifstream pidfile(pgdir + "/postmaster.pid");
  long postmaster = 0;
  if (!(pidfile >> postmaster) || postmaster <= 0) return 0;
  double total = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto st = ReadProcStat(entry.path() / "stat");
    if (!st) continue;
    const long pid = std::stol(name);
    if (pid == postmaster)
      total += st->utime + st->stime + st->cutime + st->cstime;
    else if (st->ppid == postmaster)
      total += st->utime + st->stime;
  }
  return total;
}

class Service {
 public:
  Service(const ServiceOptions& o) : o_(o) {}
  // Stops the service, then the private PostgreSQL under its data directory if it is still running (a
  // govern process that found it running leaves it so).
  ~Service() {
    Stop();
    db_.reset();
    db::LocalClusterOptions co;
    co.data_dir = o_.dir + "/postgres";
    if (std::filesystem::exists(co.data_dir)) (void)db::LocalCluster(co).Stop();
  }

  // Starts the service on a fresh data directory (`fresh`) or again on the same one, with extra
  // `--set key=value` settings; creates the ingest key on the first start.
  Status Start(bool fresh = true, const std::vector<std::string>& sets = {}) {
    if (fresh) {
      std::filesystem::remove_all(o_.dir);
      std::filesystem::create_directories(o_.dir);
    }
    port_ = FreePort();
    log_ = o_.dir + "/serve.log";
    std::vector<std::string> argv = {o_.govern, "--data-dir", o_.dir, "--set",
                                     "telemetry.listen=127.0.0.1:" + std::to_string(port_)};
    for (const std::string& kv : sets) argv.insert(argv.end(), {"--set", kv});
    argv.insert(argv.end(), {"serve", "telemetry"});
    pid_ = Spawn(argv, log_);
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (!CanConnect(port_)) {
      int status;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return Unavailable("`govern serve telemetry` exited at start; see " + log_);
      }
      if (Clock::now() > deadline) return Unavailable("intake did not listen within 120 s; see " + log_);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (fresh) {
      std::string out;
      const int rc =
          RunCapture({o_.govern, "--data-dir", o_.dir, "telemetry", "keys", "create", "--org", kOrg}, &out);
      std::smatch m;
      if (rc != 0 || !std::regex_search(out, m, std::regex("gvk_[A-Za-z0-9_\\-]+")))
        return Unavailable("`govern telemetry keys create --org " + std::string(kOrg) +
                           "` gave no key (exit " + std::to_string(rc) + "): " + out.substr(0, 300));
      key_ = m.str();
    }
    // A new connection each start: the private PostgreSQL stops with the last govern process using it.
    auto conninfo = db::LocalCluster::RunningConnInfo(o_.dir + "/postgres", "govern");
    if (!conninfo.ok()) return conninfo.status();
    auto conn = db::Connection::Connect(*conninfo);
    if (!conn.ok()) return conn.status();
    db_ = std::move(*conn);
    return Status::Ok();
  }

  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 300; ++i) {
      int status;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // Events of the organisation stored: rows in telemetry_events plus rows the compactor moved to the
  // archive (the manifest), so a compaction pass during a run does not look like lost events.
  Result<int64_t> StoredCount() {
    auto r = db_->Exec(
        "SELECT (SELECT count(*) FROM telemetry_events WHERE org = $1) + "
        "(SELECT coalesce(sum(rows), 0) FROM telemetry_archive_files WHERE org = $1)",
        db::Params(kOrg));
    if (!r.ok()) return r.status();
    return r->Int64(0, 0);
  }

  // Runs the load generator; returns its summary JSON.
  Result<nlohmann::json> Load(double rate, double seconds, uint64_t seed, const std::string& acked,
                              int64_t start_unix_nanos) {
    const std::string summary = o_.dir + "/summary.json";
    std::string out;
    std::vector<std::string> argv = {o_.loadgen,
                                     "--url",
                                     "http://127.0.0.1:" + std::to_string(port_),
                                     "--key",
                                     key_,
                                     "--org",
                                     kOrg,
                                     "--format",
                                     "ndjson",
                                     "--connections",
                                     "8",
                                     "--batch",
                                     "1000",
                                     "--duration",
                                     std::to_string(seconds),
                                     "--seed",
                                     std::to_string(seed),
                                     "--summary",
                                     summary};
    // An acked file makes the loadgen decode its own batches and hash every event (as much CPU as the
    // intake's own work, on the same cores): the benchmark counts rows instead, so it asks for none.
    if (!acked.empty()) argv.insert(argv.end(), {"--acked", acked});
    argv.insert(argv.end(), {"--start-unix-nanos", std::to_string(start_unix_nanos)});
    if (rate > 0)
      argv.insert(argv.end(), {"--rate", std::to_string(rate)});
    else
      argv.push_back("--max");
    const int rc = RunCapture(argv, &out);
    std::fputs(out.c_str(), stdout);
    if (rc != 0)
      return Unavailable("telemetry_loadgen exit " + std::to_string(rc) + ": " + out.substr(0, 300));
    std::ifstream in(summary);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded()) return Unavailable("no loadgen summary");
    return j;
  }

  // Waits until the organisation holds `want` rows; returns when that was seen (unix ns). Gives up
  // when ingest has not moved for 60 s (stopped or absent).
  //
  // It watches the ingest cursors (one tiny table) every 20 ms and counts the rows only once they have
  // stood still for 200 ms: counting a million rows is a scan that costs PostgreSQL a good part of a
  // core, and polling it (as this did before) took that from ingest while it drained, so the benchmark
  // slowed what it measured. The time returned is when the cursors were last seen to move (or the
  // first look, when nothing moved): no earlier than the last commit, at most one poll later.
  Result<int64_t> WaitStored(int64_t want, int64_t* seen) {
    auto last_move = Clock::now();
    int64_t last_move_ns = NowNanos();
    int64_t cursors = -1;
    bool counted_since_move = false;
    for (;;) {
      auto c = db_->Exec("SELECT coalesce(sum(next_seq), 0)::bigint FROM telemetry_ingest_cursor");
      if (!c.ok()) return c.status();
      const int64_t now_cursors = *c->Int64(0, 0);
      if (now_cursors != cursors) {
        cursors = now_cursors;
        last_move = Clock::now();
        last_move_ns = NowNanos();
        counted_since_move = false;
      } else if (!counted_since_move && Clock::now() - last_move >= std::chrono::milliseconds(200)) {
        auto n = StoredCount();
        if (!n.ok()) return n.status();
        *seen = *n;
        if (*n >= want) return last_move_ns;
        counted_since_move = true;  // count again only after the cursors move again
      } else if (Clock::now() - last_move > std::chrono::seconds(60)) {
        return DeadlineExceeded(std::to_string(*seen) + " of " + std::to_string(want) +
                                " acknowledged events stored, ingest has not moved for 60 s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  pid_t pid() const { return pid_; }
  // The service's log (stdout and stderr, appended across starts).
  std::string log_path() const { return o_.dir + "/serve.log"; }
  int port() const { return port_; }
  const std::string& key() const { return key_; }
  db::Connection& db() { return *db_; }

 private:
  const ServiceOptions& o_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_;
  std::string key_;
  std::unique_ptr<db::Connection> db_;
};

// Sends one-event probes (explicit ids) on their own connection while `stop` is false and measures the
// time from sending each to a query that finds its row. Serial: one probe at a time, 100 ms apart. Uses
// the service's database connection, which nothing else uses while the load runs.
// Probe events carry event times from `time_base` (inside the past hour the load uses, so compaction
// takes them too); the latency is measured from when each is sent.
void Probe(Service& svc, int64_t time_base, const std::atomic<bool>& stop, std::vector<int64_t>* latencies,
           std::string* error, std::vector<int64_t>* sent_at = nullptr) {
  loadgen::HttpConnection conn("127.0.0.1", svc.port());
  const std::string head =
      "POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n"
      "Authorization: Bearer " +
      svc.key() + "\r\n";
  for (int n = 0; !stop.load(); ++n) {
    const int64_t sent = NowNanos();
    const int64_t t = time_base + n;
    const std::string id = "probe-" + std::to_string(sent) + "-" + std::to_string(n);
    const std::string body = "{\"id\":\"" + id + "\",\"time\":" + std::to_string(t) +
                             ",\"type\":\"bench.probe\",\"body\":\"send-to-stored probe\"}\n";
    auto reply = conn.Post(head, body);
    if (!reply.ok() || reply->status / 100 != 2) {
      if (error->empty())
        error->assign(reply.ok() ? reply->status_line + ": " + reply->body : reply.status().message());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    for (;;) {
      // Prepared: this runs every millisecond while a probe waits, on the cores being measured.
      auto r =
          svc.db().ExecPrepared("SELECT 1 FROM telemetry_events WHERE org = $1 AND time_ns = $2 AND id = $3",
                                db::Params(kOrg, t, id));
      if (!r.ok()) {
        if (error->empty()) error->assign(r.status().message());
        return;
      }
      if (r->size() == 1) {
        latencies->push_back(NowNanos() - sent);
        if (sent_at) sent_at->push_back(sent);
        break;
      }
      if (NowNanos() - sent > 30'000'000'000LL) {
        if (error->empty()) error->assign("a probe was not stored within 30 s");
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Compaction: restarts the service with telemetry.compaction.age = 1s (and a local archive directory),
// so every stored row of the runs above is old enough, and waits until the archive manifest counts
// them all and PostgreSQL holds none of them. Rows/s = rows / the compactor's seconds (the sum of its
// groups' wall times from its log; restart included in the note); the ratio is
// the PostgreSQL size of the events (partitions with indexes and TOAST, before) over the Parquet bytes.
void Compaction(Service& svc, const ServiceOptions& o, int64_t expected, bench::Report& report,
                std::vector<NotRun>& not_run) {
  auto fail = [&](const std::string& why) {
    NotRunRow(not_run, kCompaction, why);
    NotRunRow(not_run, kCompactionRatio, why);
  };
  if (expected <= 0) return fail("nothing was stored to compact");
  auto size_before = svc.db().Exec(
      "SELECT coalesce(sum(pg_total_relation_size(relid)), 0)::bigint FROM "
      "pg_partition_tree('telemetry_events')");
  if (!size_before.ok() || !size_before->Int64(0, 0).ok()) return fail("cannot read the table size");
  const int64_t pg_bytes = *size_before->Int64(0, 0);
  auto manifest_before = svc.db().Exec(
      "SELECT coalesce(sum(rows), 0)::bigint FROM telemetry_archive_files WHERE org = $1", db::Params(kOrg));
  if (!manifest_before.ok() || !manifest_before->Int64(0, 0).ok()) return fail("cannot read the manifest");
  const int64_t archived_before = *manifest_before->Int64(0, 0);
  svc.Stop();
  const std::string pgdir = o.dir + "/postgres";
  const double pg_cpu0 = PostgresCpuSeconds(pgdir);
  std::error_code size_ec;  // the log's lines past its present size are this start's
  const auto log_offset = std::filesystem::file_size(svc.log_path(), size_ec);
  const auto t0 = Clock::now();
  if (Status s =
          svc.Start(/*fresh=*/false, {"telemetry.compaction.age=1s", "telemetry.compaction.interval=1s",
                                      "telemetry.archive.dir=" + o.dir + "/archive"});
      !s.ok())
    return fail("restart with telemetry.compaction.age=1s: " + s.message());
  int64_t last = -1;
  auto last_growth = Clock::now();
  for (;;) {
    // The manifest only, while compaction runs: counting the events left in PostgreSQL scans them all
    // (a second or so of a core at 2 million rows), and five times a second that took a core away
    // from the compaction being measured. They are counted once the manifest has every row.
    auto r = svc.db().Exec(
        "SELECT coalesce(sum(rows), 0)::bigint, coalesce(sum(bytes), 0)::bigint FROM telemetry_archive_files "
        "WHERE org = $1",
        db::Params(kOrg));
    // A deadlock with the compactor dropping an emptied partition (it locks the partition, then the
    // parent; a query on the parent locks them the other way round) costs a retry, not the row.
    auto deadlock = [](const Status& st) {
      if (st.message().find("40P01") == std::string::npos) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      return true;
    };
    if (!r.ok() && deadlock(r.status())) continue;
    if (!r.ok()) return fail("manifest query: " + r.status().message());
    const int64_t archived = *r->Int64(0, 0), bytes = *r->Int64(0, 1);
    int64_t left = -1;
    if (archived >= expected && bytes > 0) {
      auto l = svc.db().Exec("SELECT count(*) FROM telemetry_events WHERE org = $1", db::Params(kOrg));
      if (!l.ok() && deadlock(l.status())) continue;
      if (!l.ok()) return fail("count query: " + l.status().message());
      left = *l->Int64(0, 0);
    }
    if (archived >= expected && left == 0 && bytes > 0) {
      const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      // The compactor's own time: each group's "archived hour" log line gives its wall seconds, from
      // its manifest seq lookup to its commit (groups run one after another in a pass), so the
      // restart and this loop's polling are not counted (nor the pass's advisory lock and its listing
      // of groups, both small). A group's line is written just after its commit: read the log until
      // its groups' rows add up to what the manifest gained, so no group's time is left out.
      double group_secs = 0;
      int groups = 0;
      int64_t logged_rows = 0;
      const auto log_deadline = Clock::now() + std::chrono::seconds(10);
      for (;;) {
        group_secs = 0;
        groups = 0;
        logged_rows = 0;
        std::ifstream in(svc.log_path());
        if (!size_ec) in.seekg(static_cast<std::streamoff>(log_offset));
        const std::regex seconds_field(" seconds=([0-9]+\\.[0-9]+)"), rows_field(" rows=([0-9]+)");
        std::string line;
        std::smatch m;
        while (std::getline(in, line)) {
          if (line.find("msg=\"compaction pass failed\"") != std::string::npos)
            return fail("a compaction pass failed during the row: " + line.substr(0, 300));
          if (line.find("msg=\"archived hour\"") == std::string::npos) continue;
          if (!std::regex_search(line, m, seconds_field)) continue;
          group_secs += std::stod(m[1].str());
          if (std::regex_search(line, m, rows_field)) logged_rows += std::stoll(m[1].str());
          ++groups;
        }
        if (logged_rows >= archived - archived_before || Clock::now() > log_deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (groups == 0 || group_secs <= 0 || logged_rows != archived - archived_before)
        return fail("the \"archived hour\" lines in " + svc.log_path() + " give " +
                    std::to_string(logged_rows) + " rows, the manifest " +
                    std::to_string(archived - archived_before));
      // CPU of the restarted govern (its start included) and of PostgreSQL (the suite's polls included).
      const double govern_cpu = ProcessCpuSeconds(svc.pid());
      const double pg_cpu = PostgresCpuSeconds(pgdir) - pg_cpu0;
      char note[300];
      std::snprintf(
          note, sizeof note,
          "%lld rows to %lld Parquet bytes: the compactor's %d groups took %.1f s; with the service "
          "restart and polling %.1f s (%.0f rows/s); CPU: govern %.2f s, PostgreSQL %.2f s, %.0f rows "
          "per CPU-second",
          static_cast<long long>(archived), static_cast<long long>(bytes), groups, group_secs, secs,
          static_cast<double>(archived) / secs, govern_cpu, pg_cpu,
          static_cast<double>(archived) / (govern_cpu + pg_cpu));
      report.Add(bench::Row{kCompaction.metric,
                            static_cast<double>(logged_rows) / group_secs,
                            kCompaction.unit,
                            kCompaction.target,
                            "higher",
                            "",
                            {},
                            note});
      report.Add(bench::Row{kCompactionRatio.metric,
                            static_cast<double>(pg_bytes) / static_cast<double>(bytes),
                            "x",
                            kCompactionRatio.target,
                            "higher",
                            "",
                            {},
                            "PostgreSQL bytes of the events (table, indexes, TOAST) / Parquet bytes"});
      break;
    }
    if (archived != last) {
      last = archived;
      last_growth = Clock::now();
    } else if (Clock::now() - last_growth > std::chrono::seconds(600)) {
      // An organisation-hour is archived as one unit: with millions of rows nothing shows for minutes.
      fail(std::to_string(archived) + " of " + std::to_string(expected) + " rows archived" +
           (left >= 0 ? ", " + std::to_string(left) + " left in PostgreSQL" : std::string()) +
           ", no progress for 600 s");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  svc.Stop();
}

}  // namespace

void RunServicePhase(const ServiceOptions& o, bench::Report& report, std::vector<NotRun>& not_run) {
  const std::vector<const Target*> all = {&kIntakeHttp,    &kSustained,  &kPeak,       &kSoak,
                                          &kLatencyMedian, &kLatencyP99, &kCompaction, &kCompactionRatio,
                                          &kQueryHour,     &kQueryDay,   &kQueryAll};
  auto none = [&](const std::string& why) {
    for (const Target* t : all) NotRunRow(not_run, *t, why);
  };
  if (o.govern.empty() || ::access(o.govern.c_str(), X_OK) != 0) {
    none("no govern binary (" + (o.govern.empty() ? std::string("--govern not given") : o.govern) + ")");
    return;
  }
  if (o.loadgen.empty() || ::access(o.loadgen.c_str(), X_OK) != 0) {
    none("no telemetry_loadgen binary");
    return;
  }
  std::string services;
  RunCapture({o.govern, "services"}, &services);
  if (services.find("telemetry") == std::string::npos) {
    none("the telemetry service is not in this govern binary yet (`govern services` does not list it)");
    return;
  }
  std::printf("telemetry: service rows (govern serve telemetry, data under %s)\n", o.dir.c_str());
  Service svc(o);
  // The load's events are timed two hours back (see event_hour): keep the compactor off them while the
  // load runs (it would move rows and compete for the same cores), and let it at them afterwards.
  Status started = svc.Start(/*fresh=*/true, {"telemetry.compaction.age=24h"});
  if (!started.ok()) started = svc.Start(/*fresh=*/true);  // a binary without that key
  if (Status s = started; !s.ok()) {
    none("service start: " + s.message());
    return;
  }
  // The archive queries are measured by the suite's last step (bench/telemetry/run runs
  // telemetry_archive_benchmark: Archive::Scan in process over a day of 48,000 archived events).
  const std::string later =
      "measured below, in process, by telemetry_archive_benchmark (the last part of bench/telemetry/run)";
  for (const Target* t : {&kQueryHour, &kQueryDay, &kQueryAll}) NotRunRow(not_run, *t, later);

  // Events are timed from the start of the hour two hours ago (advancing at the send rate), so that the
  // compaction step below finds whole hours older than its age; intake and ingest do not care.
  const int64_t event_hour = (NowNanos() / kNanosPerHour - 2) * kNanosPerHour;
  int64_t expected = 0;  // acknowledged events so far (every run adds to the same organisation)
  uint64_t seed = 1;
  const double run_s = o.quick ? 10 : 60;
  // One run: send at `rate` (0: max) for `seconds`, then wait until every acknowledged event is stored.
  // The figure is acknowledged events / (first send .. all of them stored).
  const std::string pgdir = o.dir + "/postgres";
  auto run = [&](const Target& t, double rate, double seconds, bool measure_cpu, bool probe) {
    const std::string acked;  // none: see Load()
    const double cpu0 = ProcessCpuSeconds(svc.pid());
    const auto threads0 = measure_cpu ? ThreadCpuSeconds(svc.pid()) : std::map<long, ThreadCpu>();
    const double pg_cpu0 = PostgresCpuSeconds(pgdir);
    std::atomic<bool> stop{false};
    std::vector<int64_t> latencies, sent_at;
    std::string probe_error;
    std::thread prober;
    if (probe)
      prober = std::thread(
          [&] { Probe(svc, event_hour + 3'500'000'000'000LL, stop, &latencies, &probe_error, &sent_at); });
    auto summary = svc.Load(rate, seconds, seed++, acked, event_hour);
    stop = true;
    if (prober.joinable()) prober.join();
    if (!summary.ok()) {
      NotRunRow(not_run, t, summary.status().message());
      return;
    }
    const double cpu = ProcessCpuSeconds(svc.pid()) - cpu0;  // the sending period only
    const int64_t acked_events = (*summary)["acked_events"].get<int64_t>();
    // Intake is the HTTP loops, parsing, the WAL append and its fsync: every thread but ingest's,
    // compaction's and the query workers' (ingest, storing the WAL in PostgreSQL, has its own rows:
    // sustained, peak, soak). Both figures are printed; the target row is intake's.
    int ingest_threads = 0;
    const double ingest_cpu =
        measure_cpu ? NonIntakeCpuSeconds(threads0, ThreadCpuSeconds(svc.pid()), &ingest_threads) : 0;
    if (measure_cpu && cpu - ingest_cpu > 0 && acked_events > 0) {
      // No named ingest thread (a govern without thread names): the whole process, and the note says so.
      char note[400];
      std::snprintf(note, sizeof note,
                    "acked events per CPU-second of the govern process's intake threads (HTTP loops, "
                    "WAL sync; %.2f of its %.2f CPU-s while sending, the rest %d ingest, compaction and "
                    "query threads%s), peak run; PostgreSQL and loadgen not counted",
                    cpu - ingest_cpu, cpu, ingest_threads,
                    ingest_threads == 0 ? ": none found by name, so the whole process" : "");
      report.Add(bench::Row{kIntakeHttp.metric,
                            acked_events / (cpu - ingest_cpu),
                            kIntakeHttp.unit,
                            kIntakeHttp.target,
                            "higher",
                            "",
                            {},
                            note});
      report.Add(bench::Row{"intake_and_ingest_per_govern_cpu_second",
                            acked_events / cpu,
                            "events/s",
                            std::nullopt,
                            "higher",
                            "",
                            {},
                            "acked events per CPU-second of the whole govern process while sending "
                            "(intake and ingest together), peak run; no target of its own"});
    }
    // A sustained run at another rate than the target's is not that row: its own names, no target.
    const bool off_target = probe && rate != kSustained.target;
    const std::string suffix = off_target ? "_offered_" + std::to_string(static_cast<int64_t>(rate)) : "";
    // "send_to_stored_median_at_100k" becomes "send_to_stored_median_offered_50000".
    auto name_of = [&](const Target& x) {
      std::string m = x.metric;
      if (!off_target) return m;
      if (size_t at = m.find("_at_100k"); at != std::string::npos) m.erase(at);
      return m + suffix;
    };
    auto target_of = [&](const Target& x) {
      return off_target ? std::optional<double>() : std::optional<double>(x.target);
    };
    if (probe && !sent_at.empty()) {
      // Each probe's latency by when it was sent, to set beside PostgreSQL's log (checkpoints) and
      // the ingest batches: which moments make the p99.
      const int64_t first = (*summary)["first_send_unix_nanos"].get<int64_t>();
      char start[64];
      std::snprintf(start, sizeof start, "%lld.%03lld", static_cast<long long>(first / 1'000'000'000),
                    static_cast<long long>(first / 1'000'000 % 1000));
      std::string line =
          "send-to-stored by send time (s after the first send at unix " + std::string(start) + "): ";
      char one[48];
      for (size_t i = 0; i < sent_at.size(); ++i) {
        std::snprintf(one, sizeof one, "%s%.1f:%.0f", i ? " " : "",
                      static_cast<double>(sent_at[i] - first) / 1e9, static_cast<double>(latencies[i]) / 1e6);
        line += one;
      }
      std::printf("%s ms\n", line.c_str());
    }
    if (probe) {
      if (latencies.empty()) {
        NotRunRow(not_run, kLatencyMedian, "no probe stored: " + probe_error);
        NotRunRow(not_run, kLatencyP99, "no probe stored: " + probe_error);
      } else {
        bench::LatencyRecorder rec;
        for (int64_t l : latencies) rec.Record(l);
        const std::string pnote =
            std::to_string(latencies.size()) +
            " one-event probes sent beside the sustained load, send to a SELECT finding the row" +
            (probe_error.empty() ? "" : "; " + probe_error);
        report.Add(bench::Row{name_of(kLatencyMedian),
                              static_cast<double>(rec.Percentile(50)) / 1e6,
                              "ms",
                              target_of(kLatencyMedian),
                              "lower",
                              "",
                              {},
                              pnote});
        report.Add(bench::Row{name_of(kLatencyP99),
                              static_cast<double>(rec.Percentile(99)) / 1e6,
                              "ms",
                              target_of(kLatencyP99),
                              "lower",
                              "",
                              {},
                              pnote});
      }
    }
    expected += acked_events + static_cast<int64_t>(latencies.size());
    int64_t seen = 0;
    auto stored_at = svc.WaitStored(expected, &seen);
    if (!stored_at.ok()) {
      NotRunRow(not_run, t, "not every acknowledged event was stored: " + stored_at.status().message());
      return;
    }
    const double span_s =
        static_cast<double>(*stored_at - (*summary)["first_send_unix_nanos"].get<int64_t>()) / 1e9;
    // CPU from the first send until every event is stored, per 100,000 acknowledged events: robust
    // under load from other processes, unlike the wall-clock rates.
    const double per100k = acked_events > 0 ? 100000.0 / static_cast<double>(acked_events) : 0;
    const double govern_cpu = (ProcessCpuSeconds(svc.pid()) - cpu0) * per100k;
    const double pg_cpu = (PostgresCpuSeconds(pgdir) - pg_cpu0) * per100k;
    const double loadgen_cpu = (*summary)["cpu_seconds"].get<double>() * per100k;
    char note[400];
    std::snprintf(
        note, sizeof note,
        "%lld acked (send rate %.0f/s, refused %lld), all %lld counted in PostgreSQL %.1f s after the "
        "first send; request p99 %.1f ms; CPU-s per 100k events: govern %.3f, PostgreSQL %.3f, loadgen "
        "%.3f",
        static_cast<long long>(acked_events), (*summary)["acked_rate"].get<double>(),
        static_cast<long long>((*summary)["refused"].get<int64_t>()), static_cast<long long>(seen), span_s,
        (*summary)["latency_p99_ms"].get<double>(), govern_cpu, pg_cpu, loadgen_cpu);
    std::printf("%s: %s\n", name_of(t).c_str(), note);
    report.Add(bench::Row{
        name_of(t), acked_events / span_s, t.unit, target_of(t), t.better, "PostgreSQL COPY, same rows",
        o.copy_rows_per_s > 0 ? std::optional<double>(o.copy_rows_per_s) : std::nullopt, note});
  };
  run(kSustained, o.sustained_rate, run_s, /*measure_cpu=*/false, /*probe=*/true);
  if (o.sustained_only) {
    for (const Target* t : {&kPeak, &kSoak, &kCompaction, &kCompactionRatio})
      NotRunRow(not_run, *t, "--sustained-only");
    return;
  }
  run(kPeak, 0, run_s, /*measure_cpu=*/true, /*probe=*/false);
  if (o.quick)
    NotRunRow(not_run, kSoak, "full mode only (run without --quick)");
  else
    run(kSoak, kSoak.target, 300, false, false);
  Compaction(svc, o, expected, report, not_run);
}

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace govern::telemetry::benchtool
