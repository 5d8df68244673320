// Test helpers for code that needs a real PostgreSQL: the cluster that ctest's `pg` fixture started
// (tests/pg), and a fresh database per test.
//
// A test declared with govern_test(... FIXTURES pg) gets GOVERN_TEST_PG_DIR, the data directory of the
// one cluster shared by the whole ctest run. TestDatabase::Create() makes a database with a unique
// name there and drops it again when destroyed, so tests never see each other's tables.
// Thread-safe to create from several threads; each TestDatabase is a value owned by one test.
#pragma once

#include <string>

#include "base/status.h"

namespace govern::db::testing {

// The conninfo of the shared test cluster's maintenance database ("postgres"), or an error saying
// that GOVERN_TEST_PG_DIR is unset (run the test through ctest) or that no server runs there.
Result<std::string> SharedClusterConnInfo(const std::string& dbname = "postgres");

class TestDatabase {
 public:
  static Result<TestDatabase> Create();
  TestDatabase(TestDatabase&& other) noexcept;
  TestDatabase& operator=(TestDatabase&&) = delete;
  ~TestDatabase();  // drops the database (terminating sessions still connected to it)

  const std::string& name() const { return name_; }
  const std::string& conninfo() const { return conninfo_; }

 private:
  TestDatabase() = default;
  std::string name_;
  std::string conninfo_;
};

}  // namespace govern::db::testing
