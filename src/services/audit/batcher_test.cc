// The append path against a real PostgreSQL: chains, idempotency, many organisations and threads,
// failures that fail only their batch, and a child process killed before COMMIT.
#include "services/audit/batcher.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <thread>

#include "services/audit/audit_testing.h"
#include "services/audit/store.h"

namespace govern::audit_service {
namespace {

AppendInput Input(std::string key, std::string actor = "alice", std::string action = "login") {
  AppendInput in;
  in.idempotency_key = std::move(key);
  in.actor = std::move(actor);
  in.action = std::move(action);
  in.details = "{\"n\":1}";
  return in;
}

class BatcherTest : public testing::AuditDbTest {};

TEST_F(BatcherTest, AppendsChainAndReturnsTheOriginalOnRetry) {
  Batcher b(pool_.get(), {.flush_interval = std::chrono::microseconds(100)});
  auto first = b.AppendBlocking("acme", {Input("k1"), Input("k2")});
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_EQ(first->entries.size(), 2u);
  EXPECT_EQ(first->entries[0].entry.seq, 1u);
  EXPECT_EQ(first->entries[1].entry.seq, 2u);
  EXPECT_EQ(first->entries[0].entry.prev_hash, audit::kGenesisHash);
  EXPECT_EQ(first->entries[1].entry.prev_hash, first->entries[0].entry.entry_hash);
  EXPECT_TRUE(first->created[0] && first->created[1]);

  auto again = b.AppendBlocking("acme", {Input("k2", "mallory"), Input("k3")});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_FALSE(again->created[0]);
  EXPECT_EQ(again->entries[0].entry.seq, 2u);
  EXPECT_EQ(again->entries[0].entry.actor, "alice") << "the original, not the retry's fields";
  EXPECT_EQ(again->entries[0].entry.entry_hash, first->entries[1].entry.entry_hash);
  EXPECT_TRUE(again->created[1]);
  EXPECT_EQ(again->entries[1].entry.seq, 3u);

  // The same key twice in one request: stored once.
  auto dup = b.AppendBlocking("acme", {Input("k9"), Input("k9")});
  ASSERT_TRUE(dup.ok());
  EXPECT_EQ(dup->entries[0].entry.seq, dup->entries[1].entry.seq);
  EXPECT_EQ(testing::Verified(Conn(), "acme"), 4);

  // Another organisation's chain starts at 1 and may reuse the key.
  auto other = b.AppendBlocking("globex", {Input("k1")});
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->entries[0].entry.seq, 1u);
  EXPECT_TRUE(other->created[0]);
}

TEST_F(BatcherTest, AnyTextTravelsIntact) {
  Batcher b(pool_.get());
  AppendInput in = Input("quote\"d");  // refused by the HTTP parser, but the batcher must not care
  in.idempotency_key = "k-text";
  in.actor = "a \"quoted\" \\ back\\slash, {braces}, comma";
  in.action = "ünïcödé ✓";
  in.target = "NULL";
  in.outcome = "";
  in.details = R"({"q":"\"","s":"\\","u":"ü"})";
  auto r = b.AppendBlocking("acme", {in});
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto stored = GetEntry(Conn(), "acme", 1);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->entry.actor, in.actor);
  EXPECT_EQ(stored->entry.action, in.action);
  EXPECT_EQ(stored->entry.target, "NULL");
  EXPECT_EQ(stored->entry.outcome, "");
  EXPECT_EQ(stored->entry.details, in.details);
  EXPECT_TRUE(stored->entry == r->entries[0].entry);
  EXPECT_EQ(testing::Verified(Conn(), "acme"), 1);
}

TEST_F(BatcherTest, ManyThreadsManyOrgsTwoBatchersNoGapsNoDoubles) {
  // Two batchers on one database stand in for two replicas.
  Batcher a(pool_.get(), {.max_batch = 64, .flushers = 2});
  Batcher b(pool_.get(), {.max_batch = 64, .flushers = 2});
  constexpr int kThreads = 16, kPerThread = 60, kOrgs = 7;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string org = "org" + std::to_string((t + i) % kOrgs);
        std::string key = "t" + std::to_string(t) + "-" + std::to_string(i);
        // Every append is sent twice, to different batchers: a retry racing the original.
        auto r1 = (i % 2 ? a : b).AppendBlocking(org, {Input(key)});
        auto r2 = (i % 2 ? b : a).AppendBlocking(org, {Input(key)});
        if (!r1.ok() || !r2.ok() || r1->entries[0].entry.entry_hash != r2->entries[0].entry.entry_hash)
          ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  int64_t total = 0;
  for (int o = 0; o < kOrgs; ++o) {
    total += testing::Verified(Conn(), "org" + std::to_string(o));
  }
  EXPECT_EQ(total, kThreads * kPerThread);
  auto rows = Conn().Exec("SELECT count(*), count(DISTINCT (org, idem_key)) FROM audit_entries");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows->Int64(0, 0), kThreads * kPerThread);
  EXPECT_EQ(*rows->Int64(0, 1), kThreads * kPerThread);
}

TEST_F(BatcherTest, AFailedBatchFailsOnlyItselfAndLeavesNoTrace) {
  // A batch whose transaction breaks (the heads table taken away) is refused with Unavailable.
  Batcher ok(pool_.get());
  ASSERT_TRUE(ok.AppendBlocking("acme", {Input("a")}).ok());
  ASSERT_TRUE(Conn().Exec("ALTER TABLE audit_tree_nodes RENAME TO gone").ok());
  std::vector<AppendInput> many;
  for (int i = 0; i < 20; ++i) many.push_back(Input("m" + std::to_string(i)));
  auto r = ok.AppendBlocking("acme", many);  // 21 entries: completes a level-4 subtree, which needs the table
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status().message();
  ASSERT_TRUE(Conn().Exec("ALTER TABLE gone RENAME TO audit_tree_nodes").ok());
  EXPECT_EQ(testing::Verified(Conn(), "acme"), 1) << "nothing of the failed batch is stored";
  auto retried = ok.AppendBlocking("acme", many);
  ASSERT_TRUE(retried.ok()) << retried.status().message();
  EXPECT_EQ(retried->entries.back().entry.seq, 21u);
  EXPECT_EQ(testing::Verified(Conn(), "acme"), 21);
}

TEST_F(BatcherTest, AProcessKilledBeforeCommitLeavesNothingAndRetriesSucceed) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = 2});
    if (!pool.ok()) _exit(2);
    Batcher b(pool->get(), {.before_commit = [] { _exit(137); }});
    (void)b.AppendBlocking("acme", {Input("x1"), Input("x2")});
    _exit(3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 137);
  auto rows = Conn().Exec("SELECT count(*) FROM audit_entries");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows->Int64(0, 0), 0);
  Batcher b(pool_.get());
  auto r = b.AppendBlocking("acme", {Input("x1"), Input("x2")});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->entries[1].entry.seq, 2u);
  EXPECT_TRUE(r->created[0]);
}

}  // namespace
}  // namespace govern::audit_service
