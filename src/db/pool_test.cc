// Pool against the shared test PostgreSQL: concurrency, timeouts, broken connections.
#include "db/pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "db/testing.h"

namespace govern::db {
namespace {

class PoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_.emplace(std::move(db).value());
  }
  std::unique_ptr<Pool> MakePool(int size, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    PoolOptions o;
    o.conninfo = db_->conninfo();
    o.max_size = size;
    o.checkout_timeout = timeout;
    auto p = Pool::Create(o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? std::move(p).value() : nullptr;
  }
  std::optional<testing::TestDatabase> db_;
};

TEST_F(PoolTest, ManyThreadsShareFewConnections) {
  auto pool = MakePool(4);
  ASSERT_TRUE(pool);
  ASSERT_TRUE(pool->Transact([](Connection& c) { return c.Exec("CREATE TABLE n (v int)").status(); }).ok());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto lease = pool->Checkout();
        if (!lease.ok() || !(*lease)->ExecPrepared("INSERT INTO n VALUES ($1)", Params(t * 1000 + i)).ok()) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(pool->stats().open, 4);
  auto lease = pool->Checkout();
  ASSERT_TRUE(lease.ok());
  auto count = (*lease)->Exec("SELECT count(DISTINCT v) FROM n");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count->Int64(0, 0), 16 * 50);
}

TEST_F(PoolTest, CheckoutTimesOutWhenAllAreLeased) {
  auto pool = MakePool(2, std::chrono::milliseconds(100));
  ASSERT_TRUE(pool);
  auto a = pool->Checkout();
  auto b = pool->Checkout();
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = pool->Checkout();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kDeadlineExceeded);
  { auto released = std::move(b).value(); }  // returned here
  auto d = pool->Checkout();
  EXPECT_TRUE(d.ok()) << d.status().ToString();
}

TEST_F(PoolTest, ConnectionReturnedInsideATransactionIsDiscarded) {
  auto pool = MakePool(1);
  ASSERT_TRUE(pool);
  {
    auto lease = pool->Checkout();
    ASSERT_TRUE(lease.ok());
    ASSERT_TRUE((*lease)->Exec("BEGIN").ok());
  }
  EXPECT_EQ(pool->stats().discarded, 1u);
  auto lease = pool->Checkout();
  ASSERT_TRUE(lease.ok());
  EXPECT_FALSE((*lease)->InTransaction());
}

TEST_F(PoolTest, ReconnectsAfterEveryBackendIsTerminated) {
  auto pool = MakePool(4);
  ASSERT_TRUE(pool);
  // Open all four connections.
  {
    std::vector<Pool::Lease> leases;
    for (int i = 0; i < 4; ++i) {
      auto l = pool->Checkout();
      ASSERT_TRUE(l.ok()) << l.status().ToString();
      ASSERT_TRUE((*l)->Ping().ok());
      leases.push_back(std::move(l).value());
    }
  }
  ASSERT_EQ(pool->stats().idle, 4);
  auto admin = Connection::Connect(db_->conninfo());
  ASSERT_TRUE(admin.ok());
  auto killed = (*admin)->Exec(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() "
      "AND pid <> pg_backend_pid()");
  ASSERT_TRUE(killed.ok()) << killed.status().ToString();
  EXPECT_EQ(*killed->Int64(0, 0), 4);
  for (int i = 0; i < 500; ++i) {
    auto left = (*admin)->Exec(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> "
        "pg_backend_pid()");
    ASSERT_TRUE(left.ok());
    if (*left->Int64(0, 0) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Every pooled connection is dead now; each checkout must hand out a working one.
  std::vector<Pool::Lease> leases;
  for (int i = 0; i < 4; ++i) {
    auto l = pool->Checkout();
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    auto r = (*l)->Exec("SELECT 1");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    leases.push_back(std::move(l).value());
  }
  leases.clear();
  EXPECT_TRUE(pool->HealthCheck().ok());
}

}  // namespace
}  // namespace govern::db
