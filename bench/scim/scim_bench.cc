// scim_bench: the scim suite's rows (docs/scim.md, BENCHMARKS.md "scim").
//   scim_bench --dir <pg data dir> [--users N] [--streams 16] [--rows store,http,raw] [--group-commit on|off]
//              [--lanes 2] [--group-lane on|off]
// Starts (or reuses) a private PostgreSQL in --dir with fsync on, makes a fresh database per row, and
// runs with `streams` threads:
//   store: Store::Create per user, then a members-only PATCH adding it to one of 16 groups (each user:
//          two transactions, a membership and two change-log rows), then a full re-sync: a PATCH per
//          user replacing one attribute. HTTP excluded.
//   http:  the same requests over HTTP to the SCIM API on a loopback socket (keep-alive clients).
//   raw:   the limit: per user one transaction with the same rows straight in SQL (resource, auth
//          user, membership, change), no SCIM work.
// Prints one line per measurement: rows, users, seconds, users/s; under it the counts that do not
// depend on the machine's load: transactions committed (pg_stat_database.xact_commit of the row's
// database, read-only ones included) and WAL flushes (pg_stat_wal.wal_sync) per user, and CPU per user
// of PostgreSQL (every server process) and of this process.
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "db/connection.h"
#include "db/local_cluster.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "scim/schema.h"
#include "services/auth/schema.h"
#include "services/keys/keys.h"
#include "services/scim/api.h"
#include "services/scim/schema.h"
#include "services/scim/store.h"

namespace {

using govern::scim_service::Store;
using nlohmann::json;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Runs f(i) for i in [0, n) on `streams` threads; returns seconds; counts failures.
template <typename F>
double Parallel(int streams, int n, std::atomic<int>* failures, F f) {
  std::atomic<int> next{0};
  double start = Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < streams; ++t) {
    threads.emplace_back([&, t] {
      for (int i = next++; i < n; i = next++) {
        if (!f(t, i)) ++*failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  return Now() - start;
}

json UserBody(int i) {
  std::string name = "user" + std::to_string(i) + "@bench.test";
  return {{"schemas", {govern::scim::kUserSchema, govern::scim::kEnterpriseSchema}},
          {"userName", name},
          {"externalId", "ext-" + std::to_string(i)},
          {"active", true},
          {"displayName", "User " + std::to_string(i)},
          {"name", {{"givenName", "User"}, {"familyName", std::to_string(i)}}},
          {"emails", {{{"value", name}, {"type", "work"}, {"primary", true}}}},
          {govern::scim::kEnterpriseSchema, {{"employeeNumber", std::to_string(i)}, {"department", "eng"}}}};
}

json AddMember(const std::string& id) {
  return {{"schemas", {govern::scim::kPatchOpSchema}},
          {"Operations", {{{"op", "add"}, {"path", "members"}, {"value", {{{"value", id}}}}}}}};
}

json Resync(int i) {
  return {
      {"schemas", {govern::scim::kPatchOpSchema}},
      {"Operations", {{{"op", "Replace"}, {"path", "title"}, {"value", "Engineer " + std::to_string(i)}}}}};
}

// CPU seconds of the PostgreSQL server on `data_dir`: the postmaster, its live children and the
// children it has reaped (backends of closed connections).
double PgCpu(const std::string& data_dir) {
  std::ifstream pidfile(data_dir + "/postmaster.pid");
  long postmaster = 0;
  pidfile >> postmaster;
  if (postmaster <= 0) return 0;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  // Fields after the command: state ppid ... utime(14) stime(15) cutime(16) cstime(17), 1-based.
  auto read = [](const std::string& path, long* ppid, double* self, double* reaped) {
    std::ifstream f(path);
    std::string line;
    if (!std::getline(f, line)) return false;
    auto close = line.rfind(')');
    if (close == std::string::npos) return false;
    std::istringstream in(line.substr(close + 2));
    std::string state;
    long v[16] = {};
    in >> state;
    for (long& x : v) in >> x;
    *ppid = v[0];
    *self = static_cast<double>(v[10] + v[11]);
    *reaped = static_cast<double>(v[12] + v[13]);
    return true;
  };
  double total = 0, self = 0, reaped = 0;
  long ppid = 0;
  if (read("/proc/" + std::to_string(postmaster) + "/stat", &ppid, &self, &reaped)) total += self + reaped;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      if (read(std::string("/proc/") + e->d_name + "/stat", &ppid, &self, &reaped) && ppid == postmaster)
        total += self;
    }
    closedir(d);
  }
  return total / tick;
}

double SelfCpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// The load-independent counts around one measurement.
struct Counts {
  double commits = 0, wal_syncs = 0, pg_cpu = 0, self_cpu = 0;
};

Counts Sample(const std::string& conninfo, const std::string& db, const std::string& data_dir) {
  Counts c;
  // Backends report their counters when idle, at most once a second: wait for the last report.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto admin = govern::db::Connection::Connect(conninfo);
  if (admin.ok()) {
    auto r = (*admin)->Exec(
        "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = $1), (SELECT wal_sync FROM "
        "pg_stat_wal)",
        govern::db::Params(db));
    if (r.ok() && !r->empty()) {
      c.commits = static_cast<double>(r->Int64(0, 0).value_or(0));
      c.wal_syncs = static_cast<double>(r->Int64(0, 1).value_or(0));
    }
  }
  c.pg_cpu = PgCpu(data_dir);
  c.self_cpu = SelfCpu();
  return c;
}

void PrintCounts(const Counts& a, const Counts& b, int users) {
  double n = users;
  std::printf("  %.2f commits/user, %.3f WAL flushes/user, CPU/user: PostgreSQL %.0f us, bench %.0f us\n",
              (b.commits - a.commits) / n, (b.wal_syncs - a.wal_syncs) / n, (b.pg_cpu - a.pg_cpu) / n * 1e6,
              (b.self_cpu - a.self_cpu) / n * 1e6);
  std::fflush(stdout);
}

void Print(const char* row, int users, double secs, int failures) {
  std::printf("%-44s %8d users %8.1f s %8.0f users/s%s\n", row, users, secs, users / secs,
              failures > 0 ? (" FAILURES " + std::to_string(failures)).c_str() : "");
  std::fflush(stdout);
}

std::unique_ptr<govern::db::Pool> FreshDatabase(govern::db::LocalCluster& cluster, const std::string& name,
                                                int size) {
  auto admin = govern::db::Connection::Connect(cluster.ConnInfo());
  if (!admin.ok()) return nullptr;
  (void)(*admin)->Exec("DROP DATABASE IF EXISTS " + name);
  if (!cluster.EnsureDatabase(name).ok()) return nullptr;
  auto pool = govern::db::Pool::Create({.conninfo = cluster.ConnInfo(name), .max_size = size});
  if (!pool.ok()) return nullptr;
  if (!govern::scim_service::PrepareAuthTables(**pool).ok()) return nullptr;
  if (!govern::db::Migrator("scim", govern::scim_service::Migrations()).Apply(**pool).ok()) return nullptr;
  return std::move(*pool);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, rows = "store,http,raw";
  int users = 10000, streams = 16, lanes = 2;
  bool group_commit = false, group_lane = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--dir") dir = argv[i + 1];
    if (a == "--users") users = std::atoi(argv[i + 1]);
    if (a == "--streams") streams = std::atoi(argv[i + 1]);
    if (a == "--rows") rows = argv[i + 1];
    if (a == "--group-commit") group_commit = std::string(argv[i + 1]) == "on";
    if (a == "--lanes") lanes = std::atoi(argv[i + 1]);
    if (a == "--group-lane") group_lane = std::string(argv[i + 1]) != "off";
  }
  if (dir.empty()) {
    std::fprintf(
        stderr, "usage: scim_bench --dir <pg data dir> [--users N] [--streams 16] [--rows store,http,raw]\n");
    return 2;
  }
  govern::db::LocalCluster cluster(
      {.data_dir = dir, .shared_buffers = "512MB", .relocate_root = "/tmp/govern-scim-bench-pg"});
  if (auto s = cluster.Start(); !s.ok()) {
    std::fprintf(stderr, "scim_bench: postgres: %s\n", s.message().c_str());
    return 1;
  }
  const auto& user_type = govern::scim::UserResourceType();
  const auto& group_type = govern::scim::GroupResourceType();

  if (rows.find("store") != std::string::npos || rows.find("http") != std::string::npos) {
    for (const char* mode : {"store", "http"}) {
      if (rows.find(mode) == std::string::npos) continue;
      bool http = std::string(mode) == "http";
      const std::string db_name = std::string("scim_bench_") + mode;
      auto pool = FreshDatabase(cluster, db_name, streams + 4);
      if (!pool) return 1;
      Store store(pool.get(),
                  {.group_commit = group_commit,
                   .group_commit_options = {.lanes = lanes, .exclusive_class = group_lane ? -1 : -2}});
      std::vector<std::string> groups;
      for (int g = 0; g < 16; ++g) {
        json out;
        auto e = store.Create("bench", group_type, {{"displayName", "group" + std::to_string(g)}}, "", &out);
        if (!e.ok()) return 1;
        groups.push_back(out["id"]);
      }
      std::unique_ptr<govern::service_keys::KeyCache> keys;
      std::unique_ptr<govern::scim_service::Api> api;
      std::unique_ptr<govern::net::Server> server;
      std::string key, base;
      govern::net::HttpClient client;
      if (http) {
        auto conn = pool->Checkout();
        key = *govern::service_keys::CreateKey(**conn, govern::scim_service::ScimKeyTable(), "bench", "sync",
                                               "bench");
        keys = std::make_unique<govern::service_keys::KeyCache>(pool.get(),
                                                                govern::scim_service::ScimKeyTable());
        api = std::make_unique<govern::scim_service::Api>(
            &store, keys.get(), govern::scim_service::ApiOptions{.threads = streams});
        govern::net::Router router;
        api->AddRoutes(router);
        server =
            std::make_unique<govern::net::Server>(govern::net::ServerConfig{.workers = 1}, std::move(router));
        if (!server->Start().ok()) return 1;
        base = "http://127.0.0.1:" + std::to_string(server->port()) + "/scim/v2";
      }
      auto send = [&](govern::net::Method m, const std::string& path, const json& body, json* out) {
        govern::net::ClientRequest req;
        req.method = m;
        req.url = base + path;
        req.headers.Set("Authorization", "Bearer " + key);
        req.headers.Set("Content-Type", "application/scim+json");
        req.body = body.dump();
        auto r = client.Send(std::move(req));
        if (!r.ok() || r->status >= 300) return false;
        if (out != nullptr) *out = json::parse(r->body, nullptr, false);
        return true;
      };
      std::vector<std::string> ids(static_cast<size_t>(users));
      std::atomic<int> failures{0};
      Counts before = Sample(cluster.ConnInfo(), db_name, dir);
      double secs = Parallel(streams, users, &failures, [&](int, int i) {
        json out;
        if (http) {
          if (!send(govern::net::Method::kPost, "/Users", UserBody(i), &out)) return false;
          ids[static_cast<size_t>(i)] = out["id"];
          return send(govern::net::Method::kPatch, "/Groups/" + groups[static_cast<size_t>(i % 16)],
                      AddMember(ids[static_cast<size_t>(i)]), nullptr);
        }
        if (!store.Create("bench", user_type, UserBody(i), "", &out).ok()) return false;
        ids[static_cast<size_t>(i)] = out["id"];
        json none;
        return store
            .Patch("bench", group_type, groups[static_cast<size_t>(i % 16)], AddMember(out["id"]), "", "",
                   &none)
            .ok();
      });
      Print(http ? "created + membership, HTTP included" : "created + membership, HTTP excluded", users, secs,
            failures);
      Counts after = Sample(cluster.ConnInfo(), db_name, dir);
      PrintCounts(before, after, users);
      before = after;
      if (auto* gc = store.group_committer()) {
        auto st = gc->stats();
        std::printf("  group commit: %llu requests in %llu transactions (%.1f each)\n",
                    static_cast<unsigned long long>(st.parts), static_cast<unsigned long long>(st.groups),
                    st.groups > 0 ? static_cast<double>(st.parts) / static_cast<double>(st.groups) : 0.0);
      }
      failures = 0;
      secs = Parallel(streams, users, &failures, [&](int, int i) {
        const std::string& id = ids[static_cast<size_t>(i)];
        if (http) return send(govern::net::Method::kPatch, "/Users/" + id, Resync(i), nullptr);
        json out;
        return store.Patch("bench", user_type, id, Resync(i), "", "", &out).ok();
      });
      Print(http ? "updated (re-sync PATCH), HTTP included" : "updated (re-sync PATCH), HTTP excluded", users,
            secs, failures);
      PrintCounts(before, Sample(cluster.ConnInfo(), db_name, dir), users);
      if (server) server->Stop();
      api.reset();
      if (keys) keys->Shutdown();
    }
  }

  if (rows.find("raw") != std::string::npos) {
    auto pool = FreshDatabase(cluster, "scim_bench_raw", streams + 4);
    if (!pool) return 1;
    {
      auto c = pool->Checkout();
      (void)(*c)->Exec("INSERT INTO auth_orgs (org) VALUES ('bench')");
      for (int g = 0; g < 16; ++g) {
        (void)(*c)->Exec("INSERT INTO auth_groups (org, name) VALUES ('bench', $1)",
                         govern::db::Params("group" + std::to_string(g)));
      }
    }
    std::atomic<int> failures{0};
    Counts before = Sample(cluster.ConnInfo(), "scim_bench_raw", dir);
    double secs = Parallel(streams, users, &failures, [&](int, int i) {
      auto lease = pool->Checkout();
      if (!lease.ok()) return false;
      std::string id = "raw-" + std::to_string(i);
      std::string body = UserBody(i).dump();
      std::string name = "user" + std::to_string(i) + "@bench.test";
      return (*lease)
          ->Transact([&](govern::db::Connection& tx) -> govern::Status {
            GOVERN_RETURN_IF_ERROR(
                tx.ExecPrepared("INSERT INTO scim_resources (id, org, kind, name, body) VALUES ($1, "
                                "'bench', 'User', $2, $3::jsonb)",
                                govern::db::Params(id, name, body))
                    .status());
            GOVERN_RETURN_IF_ERROR(
                tx.ExecPrepared("INSERT INTO auth_users (user_id, org, email, subject) VALUES ($1, "
                                "'bench', $2, $1)",
                                govern::db::Params(id, name))
                    .status());
            GOVERN_RETURN_IF_ERROR(
                tx.ExecPrepared("INSERT INTO auth_memberships (org, name, user_id) VALUES ('bench', "
                                "$1, $2)",
                                govern::db::Params("group" + std::to_string(i % 16), id))
                    .status());
            return tx
                .ExecPrepared(
                    "INSERT INTO scim_changes (org, kind, id, action, version) VALUES ('bench', 'User', $1, "
                    "'create', 1)",
                    govern::db::Params(id))
                .status();
          })
          .ok();
    });
    Print("raw limit: same rows in one SQL transaction", users, secs, failures);
    PrintCounts(before, Sample(cluster.ConnInfo(), "scim_bench_raw", dir), users);
  }
  return 0;
}
