// Test databases on the shared ctest cluster.
#include "db/testing.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <random>

#include "db/connection.h"
#include "db/local_cluster.h"

namespace govern::db::testing {

Result<std::string> SharedClusterConnInfo(const std::string& dbname) {
  const char* dir = std::getenv("GOVERN_TEST_PG_DIR");
  if (!dir || !*dir) {
    return FailedPrecondition(
        "GOVERN_TEST_PG_DIR is not set: run this test through ctest (the pg fixture starts the cluster), or "
        "start one with `govern_testpg start <dir>` and set GOVERN_TEST_PG_DIR=<dir>");
  }
  return LocalCluster::RunningConnInfo(dir, dbname);
}

Result<TestDatabase> TestDatabase::Create() {
  static std::atomic<int> counter{0};
  GOVERN_ASSIGN_OR_RETURN(std::string admin, SharedClusterConnInfo());
  GOVERN_ASSIGN_OR_RETURN(auto conn, Connection::Connect(admin));
  std::random_device rd;
  // Only [a-z0-9_] in the name, so building the CREATE DATABASE statement from it is safe.
  TestDatabase db;
  db.name_ = "govern_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
             std::to_string(rd() % 1000000);
  GOVERN_RETURN_IF_ERROR(conn->Exec("CREATE DATABASE " + db.name_).status());
  GOVERN_ASSIGN_OR_RETURN(db.conninfo_, SharedClusterConnInfo(db.name_));
  return db;
}

TestDatabase::TestDatabase(TestDatabase&& other) noexcept
    : name_(std::move(other.name_)), conninfo_(std::move(other.conninfo_)) {
  other.name_.clear();
}

TestDatabase::~TestDatabase() {
  if (name_.empty()) return;
  auto admin = SharedClusterConnInfo();
  if (!admin.ok()) return;
  auto conn = Connection::Connect(*admin);
  if (!conn.ok()) return;
  (void)(*conn)->Exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
}

}  // namespace govern::db::testing
