// Group commit in the SCIM store against a real PostgreSQL: requests held until they form one shared
// transaction, so that what one group does is known: a part that fails (409, 412) leaves the others
// committed and correct, a COMMIT that fails (a deferred constraint raising at COMMIT) acknowledges
// none and applies none, and concurrent creates and PATCHes lose nothing.
#include "services/scim/group_commit.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "db/connection.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"
#include "scim/schema.h"
#include "services/scim/schema.h"
#include "services/scim/store.h"

namespace govern::scim_service {
namespace {

using json = nlohmann::json;

class GroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_ = std::make_unique<db::testing::TestDatabase>(std::move(*db));
    auto pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = 24});
    ASSERT_TRUE(pool.ok()) << pool.status().message();
    pool_ = std::move(*pool);
    ASSERT_TRUE(PrepareAuthTables(*pool_).ok());
    ASSERT_TRUE(db::Migrator("scim", Migrations()).Apply(*pool_).ok());
  }

  void TearDown() override { store_.reset(); }

  // One lane: the parts queued while held form one transaction.
  Store& OneLaneStore() {
    store_ = std::make_unique<Store>(
        pool_.get(), StoreOptions{.group_commit = true, .group_commit_options = {.lanes = 1}});
    return *store_;
  }

  int64_t Count(const std::string& sql) {
    auto c = pool_->Checkout();
    auto r = (*c)->Exec(sql);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r->Int64(0, 0) : -1;
  }

  static json UserBody(const std::string& name) {
    return {{"schemas", {scim::kUserSchema}},
            {"userName", name},
            {"emails", {{{"value", name}, {"primary", true}}}},
            {"active", true}};
  }

  static json AddMember(const std::string& id) {
    return {{"schemas", {scim::kPatchOpSchema}},
            {"Operations", {{{"op", "add"}, {"path", "members"}, {"value", {{{"value", id}}}}}}}};
  }

  // Runs `calls` on threads while the committer is held, releases it once all are queued (one
  // group), and waits for them.
  void AsOneGroup(Store& store, const std::vector<std::function<void()>>& calls) {
    GroupCommitter* gc = store.group_committer();
    ASSERT_NE(gc, nullptr);
    gc->Hold();
    std::vector<std::thread> threads;
    for (const auto& call : calls) threads.emplace_back(call);
    while (gc->Queued() < calls.size()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    uint64_t groups_before = gc->stats().groups;
    gc->Release();
    for (auto& t : threads) t.join();
    EXPECT_EQ(gc->stats().groups, groups_before + 1) << "the held requests did not form one transaction";
  }

  std::unique_ptr<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Pool> pool_;
  std::unique_ptr<Store> store_;
};

TEST_F(GroupCommitTest, OneFailedPartLeavesTheOthersCommitted) {
  Store& store = OneLaneStore();
  const auto& users = scim::UserResourceType();
  const auto& groups = scim::GroupResourceType();
  json taken, group, member;
  ASSERT_TRUE(store.Create("acme", users, UserBody("taken@acme.test"), "k", &taken).ok());
  ASSERT_TRUE(store.Create("acme", users, UserBody("member@acme.test"), "k", &member).ok());
  ASSERT_TRUE(store.Create("acme", groups, {{"displayName", "eng"}}, "k", &group).ok());
  const std::string gid = group["id"], mid = member["id"], etag = group["meta"]["version"];
  const int64_t changes_before = Count("SELECT count(*) FROM scim_changes");

  scim::Error a, b, dup, twin1, twin2, patch, stale;
  json out_a, out_b, out_dup, out_t1, out_t2, none1, none2;
  AsOneGroup(store,
             {
                 [&] { a = store.Create("acme", users, UserBody("a@acme.test"), "k", &out_a); },
                 [&] { dup = store.Create("acme", users, UserBody("TAKEN@acme.test"), "k", &out_dup); },
                 [&] { b = store.Create("acme", users, UserBody("b@acme.test"), "k", &out_b); },
                 // Two creates of one userName in the same transaction: the second sees the first.
                 [&] { twin1 = store.Create("acme", users, UserBody("twin@acme.test"), "k", &out_t1); },
                 [&] { twin2 = store.Create("acme", users, UserBody("twin@acme.test"), "k", &out_t2); },
                 // Two PATCHes holding the same ETag: the first wins, the second is stale.
                 [&] { patch = store.Patch("acme", groups, gid, AddMember(mid), etag, "k", &none1); },
                 [&] { stale = store.Patch("acme", groups, gid, AddMember(taken["id"]), etag, "k", &none2); },
             });
  EXPECT_TRUE(a.ok()) << a.detail;
  EXPECT_TRUE(b.ok()) << b.detail;
  EXPECT_EQ(dup.status, 409);
  EXPECT_EQ(dup.scim_type, "uniqueness");
  EXPECT_NE(twin1.ok(), twin2.ok()) << "exactly one twin is created";
  EXPECT_EQ(twin1.ok() ? twin2.status : twin1.status, 409);
  EXPECT_NE(patch.ok(), stale.ok()) << "exactly one PATCH with the same If-Match applies";
  EXPECT_EQ(patch.ok() ? stale.status : patch.status, 412);

  // What succeeded is committed and whole: resource, auth user, change row; the group moved one version.
  for (const json* u : {&out_a, &out_b}) {
    json got;
    ASSERT_TRUE(store.Get("acme", users, (*u)["id"], &got).ok());
    EXPECT_EQ(got["meta"]["version"], "W/\"1\"");
    EXPECT_EQ(
        Count("SELECT count(*) FROM auth_users WHERE user_id = '" + (*u)["id"].get<std::string>() + "'"), 1);
  }
  EXPECT_EQ(Count("SELECT count(*) FROM scim_resources WHERE kind = 'User'"),
            5);  // taken, member, a, b, twin
  EXPECT_EQ(Count("SELECT count(*) FROM auth_users"), 5);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_memberships"), 1);
  json g;
  ASSERT_TRUE(store.Get("acme", groups, gid, &g).ok());
  // Its new version is the change row of the PATCH that applied (a group's version is its latest change).
  EXPECT_NE(g["meta"]["version"], etag);
  EXPECT_EQ(g["meta"]["version"],
            Store::ETag(Count("SELECT max(version) FROM scim_changes WHERE id = '" + gid + "'")));
  ASSERT_EQ(g["members"].size(), 1u);
  // 3 creates (a, b, a twin) and one PATCH: no change row for what failed.
  EXPECT_EQ(Count("SELECT count(*) FROM scim_changes") - changes_before, 4);
}

TEST_F(GroupCommitTest, FailedCommitAcknowledgesNone) {
  Store& store = OneLaneStore();
  const auto& users = scim::UserResourceType();
  const auto& groups = scim::GroupResourceType();
  json group, member;
  ASSERT_TRUE(store.Create("acme", users, UserBody("member@acme.test"), "k", &member).ok());
  ASSERT_TRUE(store.Create("acme", groups, {{"displayName", "eng"}}, "k", &group).ok());
  // A constraint checked at COMMIT, not at the statement: the statements all succeed, the COMMIT
  // fails.
  {
    auto c = pool_->Checkout();
    ASSERT_TRUE((*c)->ExecScript(R"sql(
CREATE FUNCTION fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.key_id = 'fail-at-commit' THEN RAISE EXCEPTION 'refused at commit'; END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT ON scim_changes DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION fail_at_commit();)sql")
                    .ok());
  }
  const int64_t users_before = Count("SELECT count(*) FROM scim_resources WHERE kind = 'User'");
  const int64_t changes_before = Count("SELECT count(*) FROM scim_changes");
  scim::Error e1, e2, e3, e4;
  json o1, o2, o3, o4;
  AsOneGroup(
      store,
      {
          [&] { e1 = store.Create("acme", users, UserBody("x@acme.test"), "k", &o1); },
          [&] { e2 = store.Create("acme", users, UserBody("y@acme.test"), "fail-at-commit", &o2); },
          [&] { e3 = store.Create("acme", users, UserBody("z@acme.test"), "k", &o3); },
          [&] { e4 = store.Patch("acme", groups, group["id"], AddMember(member["id"]), "", "k", &o4); },
      });
  for (const scim::Error* e : {&e1, &e2, &e3, &e4}) EXPECT_EQ(e->status, 503) << e->detail;
  EXPECT_EQ(Count("SELECT count(*) FROM scim_resources WHERE kind = 'User'"), users_before);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_users"), users_before);
  EXPECT_EQ(Count("SELECT count(*) FROM scim_changes"), changes_before);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_memberships"), 0);
  json g;
  ASSERT_TRUE(store.Get("acme", groups, group["id"], &g).ok());
  EXPECT_EQ(g["meta"]["version"], group["meta"]["version"]);
  EXPECT_EQ(store.group_committer()->stats().commit_failures, 1u);
  // The committer goes on: the same requests without the failing key succeed.
  EXPECT_TRUE(store.Create("acme", users, UserBody("x@acme.test"), "k", &o1).ok());
  EXPECT_TRUE(store.Patch("acme", groups, group["id"], AddMember(member["id"]), "", "k", &o4).ok());
}

TEST_F(GroupCommitTest, ConcurrentCreatesAndPatchesLoseNothing) {
  store_ = std::make_unique<Store>(pool_.get(), StoreOptions{.group_commit = true});  // several lanes
  Store& store = *store_;
  const auto& users = scim::UserResourceType();
  const auto& groups = scim::GroupResourceType();
  std::vector<std::string> gids;
  for (int g = 0; g < 3; ++g) {
    json out;
    ASSERT_TRUE(store.Create("acme", groups, {{"displayName", "g" + std::to_string(g)}}, "k", &out).ok());
    gids.push_back(out["id"]);
  }
  constexpr int kThreads = 12, kEach = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const int n = t * kEach + i;
        json out, none;
        if (!store.Create("acme", users, UserBody("u" + std::to_string(n) + "@acme.test"), "k", &out).ok()) {
          ++failures;
          continue;
        }
        if (!store
                 .Patch("acme", groups, gids[static_cast<size_t>(n % 3)], AddMember(out["id"]), "", "k",
                        &none)
                 .ok())
          ++failures;
        // Every third user is deactivated at once (a user write through the same committer).
        if (n % 3 == 0) {
          json patched;
          json off = {{"schemas", {scim::kPatchOpSchema}},
                      {"Operations", {{{"op", "replace"}, {"path", "active"}, {"value", false}}}}};
          if (!store.Patch("acme", users, out["id"], off, "W/\"1\"", "k", &patched).ok() ||
              patched["active"] != false || patched["meta"]["version"] != "W/\"2\"")
            ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  constexpr int kUsers = kThreads * kEach;
  EXPECT_EQ(Count("SELECT count(*) FROM scim_resources WHERE kind = 'User'"), kUsers);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_memberships"), kUsers);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_users WHERE disabled"), kUsers / 3);
  for (int g = 0; g < 3; ++g) {
    json got;
    ASSERT_TRUE(store.Get("acme", groups, gids[static_cast<size_t>(g)], &got).ok());
    const int members = kUsers / 3;
    EXPECT_EQ(got["members"].size(), static_cast<size_t>(members));
    // One version and one change row per membership change, none lost or doubled.
    EXPECT_EQ(got["meta"]["version"], Store::ETag(Count("SELECT max(version) FROM scim_changes WHERE id = '" +
                                                        gids[static_cast<size_t>(g)] + "'")));
    EXPECT_EQ(Count("SELECT count(*) FROM scim_changes WHERE id = '" + gids[static_cast<size_t>(g)] + "'"),
              1 + members);
    EXPECT_EQ(Count("SELECT count(DISTINCT version) FROM scim_changes WHERE id = '" +
                    gids[static_cast<size_t>(g)] + "'"),
              1 + members);
  }
}

}  // namespace
}  // namespace govern::scim_service
