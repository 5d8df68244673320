// Migrator against the shared test PostgreSQL.
#include "db/migrator.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "db/pool.h"
#include "db/testing.h"

namespace govern::db {
namespace {

std::vector<Migration> V1toV3() {
  return {
      {1, "create items", "CREATE TABLE items (id bigserial PRIMARY KEY, name text NOT NULL);"},
      // Not idempotent on purpose: running it twice fails, so double application cannot hide.
      {2, "add price", "ALTER TABLE items ADD COLUMN price int; INSERT INTO items (name) VALUES ('seed');"},
      {3, "index names", "CREATE INDEX items_name ON items (name);"},
  };
}

class MigratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_.emplace(std::move(db).value());
    auto c = Connection::Connect(db_->conninfo());
    ASSERT_TRUE(c.ok());
    conn_ = std::move(c).value();
  }
  std::optional<testing::TestDatabase> db_;
  std::unique_ptr<Connection> conn_;
};

TEST_F(MigratorTest, AppliesInOrderOnceAndRecords) {
  Migrator m("catalog", V1toV3());
  auto n = m.Apply(*conn_);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 3);
  auto again = m.Apply(*conn_);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, 0);
  auto rows =
      conn_->Exec("SELECT version, name, checksum FROM govern_migrations WHERE service = $1 ORDER BY 1",
                  Params("catalog"));
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 3);
  EXPECT_EQ(rows->Text(1, 1), "add price");
  EXPECT_EQ(rows->Text(2, 2), Migrator::Checksum(V1toV3()[2].sql));
  // A later binary with one more migration applies just that one.
  auto v4 = V1toV3();
  v4.push_back({4, "add sku", "ALTER TABLE items ADD COLUMN sku text;"});
  auto n4 = Migrator("catalog", v4).Apply(*conn_);
  ASSERT_TRUE(n4.ok()) << n4.status().ToString();
  EXPECT_EQ(*n4, 1);
}

TEST_F(MigratorTest, ServicesAreIndependent) {
  ASSERT_TRUE(Migrator("a", {{1, "t", "CREATE TABLE a_t (x int);"}}).Apply(*conn_).ok());
  auto b = Migrator("b", {{1, "t", "CREATE TABLE b_t (x int);"}}).Apply(*conn_);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(*b, 1);
}

TEST_F(MigratorTest, ChangedMigrationIsRefused) {
  ASSERT_TRUE(Migrator("catalog", V1toV3()).Apply(*conn_).ok());
  auto edited = V1toV3();
  edited[1].sql = "ALTER TABLE items ADD COLUMN price bigint;";
  edited.push_back({4, "never applied", "CREATE TABLE must_not_exist (x int);"});
  auto r = Migrator("catalog", edited).Apply(*conn_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("v2 (add price)"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("checksum"), std::string::npos);
  auto t = conn_->Exec("SELECT to_regclass('must_not_exist') IS NULL");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(*t->Bool(0, 0));
}

TEST_F(MigratorTest, DatabaseNewerThanBinaryIsRefused) {
  auto v4 = V1toV3();
  v4.push_back({4, "add sku", "ALTER TABLE items ADD COLUMN sku text;"});
  ASSERT_TRUE(Migrator("catalog", v4).Apply(*conn_).ok());
  auto r = Migrator("catalog", V1toV3()).Apply(*conn_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("newer than the binary"), std::string::npos) << r.status().ToString();
}

TEST_F(MigratorTest, FailingMigrationLeavesNothingBehind) {
  auto bad = V1toV3();
  bad[2].sql = "CREATE INDEX items_name ON items (no_such_column);";
  auto r = Migrator("catalog", bad).Apply(*conn_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("v3 (index names)"), std::string::npos) << r.status().ToString();
  auto t = conn_->Exec("SELECT to_regclass('items') IS NULL, (SELECT count(*) FROM govern_migrations)");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(*t->Bool(0, 0));
  EXPECT_EQ(*t->Int64(0, 1), 0);
}

TEST_F(MigratorTest, BadListIsRefused) {
  auto r = Migrator("catalog", {{2, "b", "SELECT 1;"}, {1, "a", "SELECT 1;"}}).Apply(*conn_);
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
}

TEST_F(MigratorTest, ConcurrentStartersApplyEachMigrationOnce) {
  // Four threads, each with its own connection, and four processes, all starting at once on a
  // database that has never seen the service (not even the govern_migrations table).
  constexpr int kThreads = 4, kProcs = 4;
  std::vector<std::unique_ptr<Connection>> conns;
  for (int i = 0; i < kThreads; ++i) {
    auto c = Connection::Connect(db_->conninfo());
    ASSERT_TRUE(c.ok());
    conns.push_back(std::move(c).value());
  }
  std::vector<pid_t> children;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto c = Connection::Connect(db_->conninfo());
      if (!c.ok()) ::_exit(3);
      auto r = Migrator("catalog", V1toV3()).Apply(**c);
      ::_exit(r.ok() ? 0 : 4);
    }
    children.push_back(pid);
  }
  std::vector<Result<int>> results(kThreads, Result<int>(Internal("not run")));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      results[static_cast<size_t>(i)] = Migrator("catalog", V1toV3()).Apply(*conns[static_cast<size_t>(i)]);
    });
  }
  for (auto& t : threads) t.join();
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child exit " << status;
  }
  for (auto& r : results) EXPECT_TRUE(r.ok()) << r.status().ToString();
  auto rows = conn_->Exec("SELECT count(*), (SELECT count(*) FROM items) FROM govern_migrations");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(*rows->Int64(0, 0), 3);
  EXPECT_EQ(*rows->Int64(0, 1), 1);  // v2's seed row inserted once
}

}  // namespace
}  // namespace govern::db
