// Test helpers for the audit service: a fresh database with the audit tables, and a full chain check
// straight from the tables.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "db/connection.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"
#include "services/audit/schema.h"
#include "services/audit/store.h"

namespace govern::audit_service::testing {

class AuditDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_ = std::make_unique<db::testing::TestDatabase>(std::move(*db));
    auto pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = 16});
    ASSERT_TRUE(pool.ok()) << pool.status().message();
    pool_ = std::move(*pool);
    auto applied = db::Migrator("audit", Migrations()).Apply(*pool_);
    ASSERT_TRUE(applied.ok()) << applied.status().message();
  }
  db::Connection& Conn() {
    if (!lease_) lease_.emplace(std::move(*pool_->Checkout()));
    return **lease_;
  }
  void TearDown() override { lease_.reset(); }

  std::unique_ptr<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Pool> pool_;
  std::optional<db::Pool::Lease> lease_;
};

// Entries of `org` whose chain and Merkle tree verify straight from the tables (no checkpoints); -1
// (and a test failure naming the problem) when they do not.
inline int64_t Verified(db::Connection& conn, const std::string& org) {
  auto r = VerifyFromDatabase(conn, org, {});
  if (!r.ok()) {
    ADD_FAILURE() << r.status().message();
    return -1;
  }
  if (!r->ok()) {
    ADD_FAILURE() << org << ": " << r->reason;
    return -1;
  }
  return static_cast<int64_t>(r->entries_verified);
}

}  // namespace govern::audit_service::testing
