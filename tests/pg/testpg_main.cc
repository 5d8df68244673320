// govern_testpg start|stop <dir>: the PostgreSQL cluster one ctest run shares (fixture "pg").
//
// start reuses a cluster left running by an earlier run (dropping its leftover test databases),
// starts a stopped one, and if that fails (a broken leftover) recreates it from scratch. The cluster
// runs with fsync off: it is thrown away, and speed matters more than crash safety here.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "db/connection.h"
#include "db/local_cluster.h"

namespace {

govern::db::LocalClusterOptions Options(const char* dir) {
  govern::db::LocalClusterOptions o;
  o.data_dir = dir;
  o.fsync = false;
  o.shared_buffers = "64MB";
  o.max_connections = 300;
  // A checkout under /root is not enterable by postgres: keep the cluster in /var/tmp then, with
  // the build directory's testpg a symlink to it.
  o.relocate_root = "/var/tmp/govern-testpg";
  return o;
}

int Fail(const govern::Status& s) {
  std::fprintf(stderr, "govern_testpg: %s\n", s.ToString().c_str());
  return 1;
}

// Databases left by test processes that died before dropping theirs.
void DropLeftovers(govern::db::LocalCluster& cluster) {
  auto conn = govern::db::Connection::Connect(cluster.ConnInfo());
  if (!conn.ok()) return;
  auto rows = (*conn)->Exec("SELECT datname FROM pg_database WHERE datname LIKE 'govern\\_test\\_%'");
  if (!rows.ok()) return;
  for (int r = 0; r < rows->size(); ++r) {
    std::string name(rows->Text(r, 0));
    // Names come from the catalog; quote them as identifiers all the same.
    std::string quoted = "\"";
    for (char c : name) quoted += (c == '"') ? std::string("\"\"") : std::string(1, c);
    quoted += "\"";
    (void)(*conn)->Exec("DROP DATABASE IF EXISTS " + quoted + " WITH (FORCE)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "start") != 0 && std::strcmp(argv[1], "stop") != 0)) {
    std::fprintf(stderr, "usage: govern_testpg start|stop <data dir>\n");
    return 2;
  }
  govern::db::LocalCluster cluster(Options(argv[2]));
  if (std::strcmp(argv[1], "stop") == 0) {
    govern::Status s = cluster.Stop();
    return s.ok() ? 0 : Fail(s);
  }
  govern::Status s = cluster.Start();
  if (!s.ok()) {
    std::fprintf(stderr, "govern_testpg: %s; recreating the cluster\n", s.ToString().c_str());
    (void)cluster.Stop();
    std::error_code ec;
    if (std::filesystem::is_symlink(argv[2], ec)) {
      std::filesystem::remove_all(cluster.data_dir(), ec);  // the relocated directory itself
    }
    std::filesystem::remove_all(argv[2], ec);
    govern::db::LocalCluster fresh(Options(argv[2]));
    s = fresh.Start();
    if (!s.ok()) return Fail(s);
    std::printf("PostgreSQL for tests: %s\n", fresh.ConnInfo().c_str());
    return 0;
  }
  if (cluster.reused()) DropLeftovers(cluster);
  std::printf("PostgreSQL for tests (%s): %s\n", cluster.reused() ? "reused" : "started",
              cluster.ConnInfo().c_str());
  return 0;
}
