// db_benchmark: what the PostgreSQL client layer costs on this machine, against a private cluster
// with production durability (fsync on). Prints a table; not a test (nothing is asserted).
//
//   build/release/src/db/db_benchmark [--quick] [--keep DIR]
//
// Rows: single-statement round trips (latency median/p99), prepared INSERTs one at a time (each its own
// commit), the same INSERTs pipelined in batches (one commit per batch), binary COPY, and beside them
// the server's own limit: INSERT ... SELECT generate_series of the same rows (no client at all).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "base/log.h"
#include "db/connection.h"
#include "db/local_cluster.h"

namespace {
using govern::db::Connection;
using govern::db::Params;
using Clock = std::chrono::steady_clock;

double Secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

void Die(const govern::Status& s, const char* what) {
  std::fprintf(stderr, "db_benchmark: %s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

int64_t Count(Connection& c) {
  auto r = c.Exec("SELECT count(*) FROM ev");
  if (!r.ok()) Die(r.status(), "count");
  return *r->Int64(0, 0);
}

void Reset(Connection& c) {
  auto s = c.Exec("TRUNCATE ev");
  if (!s.ok()) Die(s.status(), "truncate");
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    if (!std::strcmp(argv[i], "--keep") && i + 1 < argc) dir = argv[++i];
  }
  bool temp = dir.empty();
  if (temp) dir = (std::filesystem::temp_directory_path() / "govern_db_benchmark").string();
  govern::log::Configure(govern::log::Level::kWarn, govern::log::Format::kText);
  govern::db::LocalClusterOptions o;
  o.data_dir = dir;
  govern::db::LocalCluster cluster(o);
  if (auto s = cluster.Start(); !s.ok()) Die(s, "start cluster");
  auto conn = Connection::Connect(cluster.ConnInfo());
  if (!conn.ok()) Die(conn.status(), "connect");
  Connection& c = **conn;
  auto made = c.ExecScript(
      "DROP TABLE IF EXISTS ev; CREATE TABLE ev (id bigint, org int4, ts timestamptz, kind text, body "
      "jsonb)");
  if (!made.ok()) Die(made, "create table");

  const int kRoundTrips = quick ? 5000 : 20000;
  const int kSingle = quick ? 300 : 2000;  // each waits for its WAL flush
  const int kPipelined = quick ? 50000 : 200000;
  const int kCopy = quick ? 200000 : 1000000;
  const std::string body = R"({"agent":"a-17","action":"tool.call","tool":"search","ok":true,"n":42})";
  std::printf("%-44s %14s  %s\n", "metric", "value", "unit");

  // Round trips.
  {
    std::vector<int64_t> ns;
    ns.reserve(kRoundTrips);
    auto t0 = Clock::now();
    for (int i = 0; i < kRoundTrips; ++i) {
      auto a = Clock::now();
      auto r = c.ExecPrepared("SELECT $1::int8 + 1", Params(i));
      if (!r.ok()) Die(r.status(), "round trip");
      ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - a).count());
    }
    double secs = Secs(t0, Clock::now());
    std::sort(ns.begin(), ns.end());
    std::printf("%-44s %14.0f  %s\n", "prepared_select_round_trips_per_s", kRoundTrips / secs,
                "statements/s");
    std::printf("%-44s %14.1f  %s\n", "prepared_select_median", ns[ns.size() / 2] / 1000.0, "us");
    std::printf("%-44s %14.1f  %s\n", "prepared_select_p99", ns[ns.size() * 99 / 100] / 1000.0, "us");
  }
  // One INSERT per commit.
  {
    auto t0 = Clock::now();
    for (int i = 0; i < kSingle; ++i) {
      auto r = c.ExecPrepared("INSERT INTO ev VALUES ($1, $2, now(), $3, $4)",
                              Params(i, i % 50, "tool.call", body));
      if (!r.ok()) Die(r.status(), "insert");
    }
    std::printf("%-44s %14.0f  %s\n", "insert_autocommit_per_s", kSingle / Secs(t0, Clock::now()), "rows/s");
    Reset(c);
  }
  // Pipelined INSERTs, 1000 per pipeline (one implicit transaction each).
  {
    std::vector<govern::db::Statement> batch;
    auto t0 = Clock::now();
    for (int i = 0; i < kPipelined; ++i) {
      batch.push_back(
          {"INSERT INTO ev VALUES ($1, $2, now(), $3, $4)", Params(i, i % 50, "tool.call", body), true});
      if (batch.size() == 1000) {
        auto r = c.Pipeline(batch);
        if (!r.ok()) Die(r.status(), "pipeline");
        batch.clear();
      }
    }
    double secs = Secs(t0, Clock::now());
    if (Count(c) != kPipelined) Die(govern::Internal("row count"), "pipeline");
    std::printf("%-44s %14.0f  %s\n", "insert_pipelined_1000_per_s", kPipelined / secs, "rows/s");
    Reset(c);
  }
  // Binary COPY.
  double copy_rate = 0;
  {
    auto t0 = Clock::now();
    auto copy = c.CopyFrom("COPY ev FROM STDIN (FORMAT binary)");
    if (!copy.ok()) Die(copy.status(), "copy");
    int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    for (int i = 0; i < kCopy; ++i) {
      copy->Row(5).Int64(i).Int32(i % 50).TimestampUnixMicros(now_us + i).Text("tool.call").Jsonb(body);
    }
    auto n = copy->Finish();
    if (!n.ok()) Die(n.status(), "copy finish");
    copy_rate = kCopy / Secs(t0, Clock::now());
    std::printf("%-44s %14.0f  %s\n", "copy_binary_per_s", copy_rate, "rows/s");
    Reset(c);
  }
  // The server alone: same rows generated inside PostgreSQL.
  {
    auto t0 = Clock::now();
    auto r =
        c.Exec("INSERT INTO ev SELECT g, g % 50, now(), 'tool.call', $2::jsonb FROM generate_series(1, $1) g",
               Params(kCopy, body));
    if (!r.ok()) Die(r.status(), "server-side insert");
    double rate = kCopy / Secs(t0, Clock::now());
    std::printf("%-44s %14.0f  %s\n", "peer_server_side_insert_select_per_s", rate, "rows/s");
    std::printf("%-44s %14.2f  %s\n", "copy_binary_vs_server_side", copy_rate / rate, "x");
  }
  (void)c.Exec("DROP TABLE ev");
  conn->reset();
  if (temp) {
    (void)cluster.Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return 0;
}
