// The append path against a real PostgreSQL: chains, idempotency, many organisations and threads,
// failures that fail only their batch, and a child process killed before COMMIT.
#include "services/audit/batcher.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
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
  for (bool in_db : {false, true}) {
    SCOPED_TRACE(in_db ? "append in database" : "append in the service");
    const std::string acme = in_db ? "acme-d" : "acme", globex = in_db ? "globex-d" : "globex";
    Batcher b(pool_.get(), {.flush_interval = std::chrono::microseconds(100), .append_in_database = in_db});
    auto first = b.AppendBlocking(acme, {Input("k1"), Input("k2")});
    ASSERT_TRUE(first.ok()) << first.status().message();
    ASSERT_EQ(first->entries.size(), 2u);
    EXPECT_EQ(first->entries[0].entry.seq, 1u);
    EXPECT_EQ(first->entries[1].entry.seq, 2u);
    EXPECT_EQ(first->entries[0].entry.prev_hash, audit::kGenesisHash);
    EXPECT_EQ(first->entries[1].entry.prev_hash, first->entries[0].entry.entry_hash);
    EXPECT_TRUE(first->created[0] && first->created[1]);

    auto again = b.AppendBlocking(acme, {Input("k2", "mallory"), Input("k3")});
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_FALSE(again->created[0]);
    EXPECT_EQ(again->entries[0].entry.seq, 2u);
    EXPECT_EQ(again->entries[0].entry.actor, "alice") << "the original, not the retry's fields";
    EXPECT_EQ(again->entries[0].entry.entry_hash, first->entries[1].entry.entry_hash);
    EXPECT_TRUE(again->created[1]);
    EXPECT_EQ(again->entries[1].entry.seq, 3u);

    // The same key twice in one request: stored once.
    auto dup = b.AppendBlocking(acme, {Input("k9"), Input("k9")});
    ASSERT_TRUE(dup.ok());
    EXPECT_EQ(dup->entries[0].entry.seq, dup->entries[1].entry.seq);
    EXPECT_EQ(testing::Verified(Conn(), acme), 4);

    // Another organisation's chain starts at 1 and may reuse the key.
    auto other = b.AppendBlocking(globex, {Input("k1")});
    ASSERT_TRUE(other.ok());
    EXPECT_EQ(other->entries[0].entry.seq, 1u);
    EXPECT_TRUE(other->created[0]);
  }
}

// New keys are not looked up at all (the unique index finds a stored one: the INSERT fails and the
// batch runs once more, looking its keys up under the lock). For a second after such a conflict,
// batches look their keys up before the lock wait; then no more.
TEST_F(BatcherTest, KeysAreLookedUpOnlyAfterAStoredKeyTurnedUp) {
  ManualClock clock;
  Batcher b(pool_.get(), {.flushers = 1, .clock = &clock});
  auto first = b.AppendBlocking("acme", {Input("k1"), Input("k2")});
  ASSERT_TRUE(first.ok()) << first.status().message();
  Batcher::Stats st = b.GetStats();
  EXPECT_EQ(st.lookups, 0u) << "new keys need no lookup";
  EXPECT_EQ(st.key_conflicts, 0u);

  // A retry of k2 beside a new key: the first attempt meets the stored key, the second looks it up.
  auto retry = b.AppendBlocking("acme", {Input("k2", "mallory"), Input("k3")});
  ASSERT_TRUE(retry.ok()) << retry.status().message();
  EXPECT_FALSE(retry->created[0]);
  EXPECT_EQ(retry->entries[0].entry.seq, 2u);
  EXPECT_EQ(retry->entries[0].entry.actor, "alice") << "the original, not the retry's fields";
  EXPECT_EQ(retry->entries[0].entry.entry_hash, first->entries[1].entry.entry_hash);
  EXPECT_TRUE(retry->created[1]);
  EXPECT_EQ(retry->entries[1].entry.seq, 3u);
  st = b.GetStats();
  EXPECT_EQ(st.key_conflicts, 1u);
  EXPECT_EQ(st.lookups, 1u);

  // Right after the conflict: looked up first (before the lock wait), so a retry costs no second try.
  auto soon = b.AppendBlocking("acme", {Input("k1", "mallory"), Input("k4")});
  ASSERT_TRUE(soon.ok()) << soon.status().message();
  EXPECT_FALSE(soon->created[0]);
  EXPECT_EQ(soon->entries[0].entry.seq, 1u);
  EXPECT_TRUE(soon->created[1]);
  EXPECT_EQ(soon->entries[1].entry.seq, 4u);
  st = b.GetStats();
  EXPECT_EQ(st.lookups, 2u);
  EXPECT_EQ(st.key_conflicts, 1u);

  // A second later, new keys are no longer looked up.
  clock.Advance(std::chrono::seconds(2));
  auto later = b.AppendBlocking("acme", {Input("k5")});
  ASSERT_TRUE(later.ok()) << later.status().message();
  EXPECT_EQ(later->entries[0].entry.seq, 5u);
  st = b.GetStats();
  EXPECT_EQ(st.lookups, 2u);
  EXPECT_EQ(st.key_conflicts, 1u);
  EXPECT_EQ(st.batches_failed, 0u);
  EXPECT_EQ(testing::Verified(Conn(), "acme"), 5);
}

// Appends that queue while a batch waits for a busy head join that batch once it holds the head; a
// late joiner whose key is stored already (a retry) makes the batch run once more, every key looked up.
TEST_F(BatcherTest, LateJoinersRideTheSameLockHoldAndRetriesStillGetTheOriginal) {
  Batcher b(pool_.get(), {.flushers = 1});
  auto stored = b.AppendBlocking("acme", {Input("old")});
  ASSERT_TRUE(stored.ok()) << stored.status().message();
  const uint64_t batches_before = b.GetStats().batches;

  // Another transaction holds the head: the next batch waits for it.
  auto holder_lease = pool_->Checkout();
  ASSERT_TRUE(holder_lease.ok());
  db::Connection& holder = **holder_lease;
  ASSERT_TRUE(holder.Exec("BEGIN").ok());
  ASSERT_TRUE(holder.Exec("SELECT 1 FROM audit_heads WHERE org = 'acme' FOR UPDATE").ok());
  auto waiting = [&] {
    auto r = Conn().Exec(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = "
        "current_database()");
    return r.ok() && r->Text(0, 0) != "0";
  };
  // Append queues at once, on this thread: what is appended before the COMMIT below is queued then.
  std::vector<std::shared_ptr<std::promise<Result<AppendOutcome>>>> promises;
  std::vector<std::future<Result<AppendOutcome>>> futures;
  auto append = [&](std::vector<AppendInput> in) {
    auto p = std::make_shared<std::promise<Result<AppendOutcome>>>();
    futures.push_back(p->get_future());
    promises.push_back(p);
    b.Append("acme", std::move(in), [p](Result<AppendOutcome> r) { p->set_value(std::move(r)); });
  };
  append({Input("a1")});
  for (int i = 0; i < 1000 && !waiting(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(waiting()) << "the first batch never waited for the head";
  append({Input("b1"), Input("b2")});
  append({Input("c1")});
  ASSERT_TRUE(holder.Exec("COMMIT").ok());
  for (auto& f : futures) {
    auto r = f.get();
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->created[0]);
  }
  Batcher::Stats st = b.GetStats();
  EXPECT_EQ(st.batches - batches_before, 1u) << "b and c joined a1's batch";
  EXPECT_EQ(st.late_requests, 2u);
  EXPECT_EQ(testing::Verified(Conn(), "acme"), 5);

  // Once more with a late joiner that is a retry of a stored key: it gets the original.
  futures.clear();
  ASSERT_TRUE(holder.Exec("BEGIN").ok());
  ASSERT_TRUE(holder.Exec("SELECT 1 FROM audit_heads WHERE org = 'acme' FOR UPDATE").ok());
  append({Input("d1")});
  for (int i = 0; i < 1000 && !waiting(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(waiting());
  append({Input("old", "mallory")});
  append({Input("e1")});
  ASSERT_TRUE(holder.Exec("COMMIT").ok());
  std::vector<Result<AppendOutcome>> got;
  for (auto& f : futures) got.push_back(f.get());
  for (auto& r : got) ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(got[0]->created[0]);
  EXPECT_FALSE(got[1]->created[0]);
  EXPECT_EQ(got[1]->entries[0].entry.seq, 1u);
  EXPECT_EQ(got[1]->entries[0].entry.actor, "alice");
  EXPECT_TRUE(got[2]->created[0]);
  EXPECT_EQ(testing::Verified(Conn(), "acme"), 7);
  EXPECT_EQ(b.GetStats().batches_failed, 0u);
}

// The keys are looked up before the batch waits for the head. A key that the head's holder commits
// after that lookup (a retry racing its first attempt on another replica) fails the INSERT; the batch
// runs once more, looking the keys up after the lock, and the writer gets the original entry.
TEST_F(BatcherTest, AKeyCommittedWhileTheBatchWaitsForTheHeadIsStoredOnce) {
  Batcher b(pool_.get(), {.flushers = 1});
  ASSERT_TRUE(b.AppendBlocking("acme", {Input("first")}).ok());

  auto holder_lease = pool_->Checkout();
  ASSERT_TRUE(holder_lease.ok());
  db::Connection& holder = **holder_lease;
  ASSERT_TRUE(holder.Exec("BEGIN").ok());
  ASSERT_TRUE(holder.Exec("SELECT 1 FROM audit_heads WHERE org = 'acme' FOR UPDATE").ok());
  auto p = std::make_shared<std::promise<Result<AppendOutcome>>>();
  auto fut = p->get_future();
  b.Append("acme", {Input("raced", "mallory")}, [p](Result<AppendOutcome> r) { p->set_value(std::move(r)); });
  auto waiting = [&] {
    auto r = Conn().Exec(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = "
        "current_database()");
    return r.ok() && r->Text(0, 0) != "0";
  };
  for (int i = 0; i < 1000 && !waiting(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(waiting()) << "the batch never waited for the head";

  // The holder appends the same key as the next entry of the chain, as another replica's batch would.
  auto head = GetHead(Conn(), "acme");
  ASSERT_TRUE(head.ok()) << head.status().message();
  audit::Entry e{.org = "acme",
                 .seq = head->size + 1,
                 .time_us = 1764500000000000,
                 .actor = "alice",
                 .action = "login",
                 .target = "",
                 .outcome = "success",
                 .details = "{}",
                 .idempotency_key = "raced"};
  const audit::Hash leaf = audit::Seal(e, head->head_hash);
  audit::CompactRange range = head->range;
  range.Append(leaf, audit::kDefaultStride,
               [](uint32_t, uint64_t, const audit::Hash&) { FAIL() << "no subtree completes at size 2"; });
  const std::string cr = range.Encode();
  auto bytes = [](const audit::Hash& h) {
    return db::Bytea{std::string_view(reinterpret_cast<const char*>(h.data()), h.size())};
  };
  auto ins = holder.Exec(
      "INSERT INTO audit_entries (org, seq, idem_key, time, actor, action, target, outcome, details, "
      "prev_hash, entry_hash, leaf_hash) VALUES ('acme', $1, 'raced', 'epoch'::timestamptz + $2 * interval "
      "'1 microsecond', 'alice', 'login', '', 'success', '{}', $3, $4, $5)",
      db::Params(static_cast<int64_t>(e.seq), e.time_us, bytes(e.prev_hash), bytes(e.entry_hash),
                 bytes(leaf)));
  ASSERT_TRUE(ins.ok()) << ins.status().message();
  auto upd = holder.Exec(
      "UPDATE audit_heads SET next_seq = $1, head_hash = $2, compact_range = $3 WHERE org = 'acme'",
      db::Params(static_cast<int64_t>(e.seq + 1), bytes(e.entry_hash), db::Bytea{cr}));
  ASSERT_TRUE(upd.ok()) << upd.status().message();
  ASSERT_TRUE(holder.Exec("COMMIT").ok());

  auto r = fut.get();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->created[0]);
  EXPECT_EQ(r->entries[0].entry.seq, 2u);
  EXPECT_EQ(r->entries[0].entry.actor, "alice") << "the holder's entry, not the retry's fields";
  EXPECT_EQ(testing::Verified(Conn(), "acme"), 2);
  auto more = b.AppendBlocking("acme", {Input("after")});
  ASSERT_TRUE(more.ok()) << more.status().message();
  EXPECT_EQ(more->entries[0].entry.seq, 3u);
  EXPECT_EQ(testing::Verified(Conn(), "acme"), 3);
  EXPECT_EQ(b.GetStats().batches_failed, 0u);
}

// append_in_database: a retry racing its first attempt on another replica: both batches looked their keys up
// before waiting for the head; the second to get it finds the key stored by the first (a unique violation),
// runs once more with the keys looked up under the lock, and answers with the original entry.
TEST_F(BatcherTest, ARetryRacingItsFirstAttemptGetsTheOriginal) {
  Batcher first(pool_.get(), {.flushers = 1, .append_in_database = true});
  Batcher second(pool_.get(), {.flushers = 1, .append_in_database = true});  // another replica
  ASSERT_TRUE(first.AppendBlocking("acme", {Input("old")}).ok());

  // Another transaction holds the head: both batches wait for it, after their lookups.
  auto holder_lease = pool_->Checkout();
  ASSERT_TRUE(holder_lease.ok());
  db::Connection& holder = **holder_lease;
  ASSERT_TRUE(holder.Exec("BEGIN").ok());
  ASSERT_TRUE(holder.Exec("SELECT 1 FROM audit_heads WHERE org = 'acme' FOR UPDATE").ok());
  auto waiting = [&] {
    auto r = Conn().Exec(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = "
        "current_database()");
    return r.ok() ? std::stoi(std::string(r->Text(0, 0))) : 0;
  };
  std::promise<Result<AppendOutcome>> p1, p2;
  first.Append("acme", {Input("race"), Input("a2")},
               [&](Result<AppendOutcome> r) { p1.set_value(std::move(r)); });
  for (int i = 0; i < 1000 && waiting() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(waiting(), 1) << "the first batch never waited for the head";
  second.Append("acme", {Input("b1"), Input("race", "mallory")},
                [&](Result<AppendOutcome> r) { p2.set_value(std::move(r)); });
  for (int i = 0; i < 1000 && waiting() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(waiting(), 2) << "the second batch never waited for the head";
  ASSERT_TRUE(holder.Exec("COMMIT").ok());
  auto r1 = p1.get_future().get();
  auto r2 = p2.get_future().get();
  ASSERT_TRUE(r1.ok()) << r1.status().message();
  ASSERT_TRUE(r2.ok()) << r2.status().message();
  EXPECT_TRUE(r1->created[0] && r1->created[1]);
  EXPECT_EQ(r1->entries[0].entry.seq, 2u);
  EXPECT_TRUE(r2->created[0]);
  EXPECT_EQ(r2->entries[0].entry.seq, 4u);
  EXPECT_FALSE(r2->created[1]);
  EXPECT_EQ(r2->entries[1].entry.seq, 2u);
  EXPECT_EQ(r2->entries[1].entry.actor, "alice") << "the original, not the retry's fields";
  EXPECT_EQ(r2->entries[1].entry.entry_hash, r1->entries[0].entry.entry_hash);
  EXPECT_EQ(r2->entries[1].leaf_hash, r1->entries[0].leaf_hash);
  EXPECT_EQ(testing::Verified(Conn(), "acme"), 4);
  EXPECT_EQ(first.GetStats().batches_failed + second.GetStats().batches_failed, 0u);
}

// The chain head's compact range and the stored subtrees, computed in PostgreSQL (audit_append), are
// byte for byte what the core library computes from the leaf hashes, across batch boundaries of every
// alignment and subtrees of 16 and 256 leaves.
TEST_F(BatcherTest, HeadAndStoredSubtreesMatchTheCoreLibrary) {
  Batcher b(pool_.get(), {.append_in_database = true});
  int next = 0;
  for (int size = 1; next < 300; ++size) {
    std::vector<AppendInput> batch;
    for (int i = 0; i < size && next < 300; ++i) batch.push_back(Input("m" + std::to_string(next++)));
    ASSERT_TRUE(b.AppendBlocking("acme", std::move(batch)).ok());
  }
  auto leaves = Conn().Exec("SELECT leaf_hash FROM audit_entries WHERE org = 'acme' ORDER BY seq");
  ASSERT_TRUE(leaves.ok());
  ASSERT_EQ(leaves->size(), 300);
  audit::CompactRange range;
  std::map<std::pair<int64_t, int64_t>, std::string> want;
  for (int i = 0; i < leaves->size(); ++i) {
    auto leaf = HashFromBytes(*leaves->Bytes(i, 0));
    ASSERT_TRUE(leaf.ok());
    range.Append(*leaf, audit::kDefaultStride, [&](uint32_t level, uint64_t index, const audit::Hash& h) {
      want[{level, static_cast<int64_t>(index)}] = std::string(HashBytes(h));
    });
  }
  auto head = GetHead(Conn(), "acme");
  ASSERT_TRUE(head.ok()) << head.status().message();
  EXPECT_EQ(head->size, 300u);
  EXPECT_EQ(head->range.Encode(), range.Encode());
  EXPECT_EQ(head->range.Root(), range.Root());
  auto nodes = Conn().Exec("SELECT level, idx, hash FROM audit_tree_nodes WHERE org = 'acme'");
  ASSERT_TRUE(nodes.ok());
  std::map<std::pair<int64_t, int64_t>, std::string> got;
  for (int i = 0; i < nodes->size(); ++i)
    got[{*nodes->Int64(i, 0), *nodes->Int64(i, 1)}] = *nodes->Bytes(i, 2);
  EXPECT_EQ(got.size(), 300u / 16 + 1);
  EXPECT_EQ(got, want);
  EXPECT_EQ(testing::Verified(Conn(), "acme"), 300);
}

// A role that may not run the barrier's function is refused at start with the GRANT to run, instead
// of every append failing after its batch committed. Function privileges live in the database's own
// catalog, so revoking from PUBLIC here touches no other test.
TEST_F(BatcherTest, ARoleWithoutTheBarrierFunctionIsRefusedAtStart) {
  EXPECT_TRUE(CheckDurabilityBarrier(*pool_).ok());
  const std::string role = "audit_no_emit_" + std::to_string(::getpid());
  ASSERT_TRUE(Conn().Exec("CREATE ROLE " + role + " LOGIN").ok());
  ASSERT_TRUE(Conn()
                  .Exec("REVOKE EXECUTE ON FUNCTION pg_logical_emit_message(boolean, text, text) FROM PUBLIC")
                  .ok());
  {
    auto limited = db::Pool::Create({.conninfo = db_->conninfo() + " user=" + role, .max_size = 1});
    ASSERT_TRUE(limited.ok()) << limited.status().ToString();
    Status s = CheckDurabilityBarrier(**limited);
    EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
    EXPECT_NE(s.message().find("GRANT EXECUTE ON FUNCTION pg_catalog.pg_logical_emit_message"),
              std::string::npos)
        << s.message();
    ASSERT_TRUE(Conn()
                    .Exec("GRANT EXECUTE ON FUNCTION pg_logical_emit_message(boolean, text, text) TO " + role)
                    .ok());
    EXPECT_TRUE(CheckDurabilityBarrier(**limited).ok());
  }
  ASSERT_TRUE(
      Conn().Exec("REVOKE ALL ON FUNCTION pg_logical_emit_message(boolean, text, text) FROM " + role).ok());
  ASSERT_TRUE(Conn().Exec("DROP ROLE " + role).ok());
}

// Acknowledged means flushed: when an append is acknowledged, the WAL is flushed past its batch's
// commit record, in every mode, whether the session's synchronous_commit is on or off (the test
// cluster's default). A commit record lies after the WAL position read just before COMMIT.
// The durability barrier once only took an xid, which PostgreSQL commits without a flush: the WAL
// writer flushed it up to 200 ms later.
TEST_F(BatcherTest, AnAcknowledgedAppendIsFlushed) {
  int n = 0;
  for (const char* sync : {"off", "on"}) {
    auto set = Conn().Exec("ALTER DATABASE \"" + db_->name() + "\" SET synchronous_commit = " + sync);
    ASSERT_TRUE(set.ok()) << set.status().message();
    // New sessions only: a pool of its own.
    auto pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = 4});
    ASSERT_TRUE(pool.ok()) << pool.status().message();
    for (bool in_db : {false, true}) {
      for (bool outside : {true, false}) {
        SCOPED_TRACE(std::string("synchronous_commit ") + sync +
                     (in_db ? ", in database" : ", in the service") +
                     (outside ? ", barrier" : ", flush under the locks"));
        std::mutex mu;
        std::string before_commit_lsn;
        BatcherOptions o{.flush_outside_lock = outside, .append_in_database = in_db};
        o.before_commit = [&] {
          auto lsn = Conn().Exec("SELECT pg_current_wal_insert_lsn()::text");
          std::lock_guard g(mu);
          before_commit_lsn = lsn.ok() ? std::string(lsn->Text(0, 0)) : "";
        };
        Batcher b(pool->get(), std::move(o));
        for (int round = 0; round < 3; ++round) {
          auto r = b.AppendBlocking("flushed", {Input("f" + std::to_string(n++))});
          ASSERT_TRUE(r.ok()) << r.status().message();
          std::string lsn;
          {
            std::lock_guard g(mu);
            lsn = before_commit_lsn;
          }
          ASSERT_FALSE(lsn.empty());
          auto flushed = Conn().Exec("SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn", db::Params(lsn));
          ASSERT_TRUE(flushed.ok()) << flushed.status().message();
          EXPECT_TRUE(*flushed->Bool(0, 0))
              << "acknowledged before its commit was flushed (WAL before COMMIT: " << lsn << ")";
        }
      }
    }
  }
  EXPECT_EQ(testing::Verified(Conn(), "flushed"), n);
}

TEST_F(BatcherTest, AnyTextTravelsIntact) {
  for (bool in_db : {false, true}) {
    SCOPED_TRACE(in_db ? "append in database" : "append in the service");
    const std::string acme = in_db ? "acme-d" : "acme";
    Batcher b(pool_.get(), {.append_in_database = in_db});
    AppendInput in = Input("quote\"d");  // refused by the HTTP parser, but the batcher must not care
    in.idempotency_key = "k-text";
    in.actor = "a \"quoted\" \\ back\\slash, {braces}, comma";
    in.action = "ünïcödé ✓";
    in.target = "NULL";
    in.outcome = "";
    in.details = R"({"q":"\"","s":"\\","u":"ü"})";
    auto r = b.AppendBlocking(acme, {in});
    ASSERT_TRUE(r.ok()) << r.status().message();
    auto stored = GetEntry(Conn(), acme, 1);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->entry.actor, in.actor);
    EXPECT_EQ(stored->entry.action, in.action);
    EXPECT_EQ(stored->entry.target, "NULL");
    EXPECT_EQ(stored->entry.outcome, "");
    EXPECT_EQ(stored->entry.details, in.details);
    EXPECT_TRUE(stored->entry == r->entries[0].entry);
    EXPECT_EQ(testing::Verified(Conn(), acme), 1);
  }
}

TEST_F(BatcherTest, ManyThreadsManyOrgsTwoBatchersNoGapsNoDoubles) {
  // Two batchers on one database stand in for two replicas; one appends in the database
  // (append_in_database), the other in the service: the two paths share heads, keys and chains.
  Batcher a(pool_.get(), {.max_batch = 64, .flushers = 2, .append_in_database = true});
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

// Holds the chain head of `org` locked (as another replica's transaction would) until Release().
class HeadHolder {
 public:
  HeadHolder(db::Pool& pool, const std::string& org) : lease_(std::move(*pool.Checkout())) {
    EXPECT_TRUE(
        lease_->Exec("INSERT INTO audit_heads (org) VALUES ($1) ON CONFLICT DO NOTHING", db::Params(org))
            .ok());
    EXPECT_TRUE(lease_->Exec("BEGIN").ok());
    EXPECT_TRUE(lease_->Exec("SELECT 1 FROM audit_heads WHERE org = $1 FOR UPDATE", db::Params(org)).ok());
    pid_ = *(*lease_->Exec("SELECT pg_backend_pid()")).Int64(0, 0);
  }
  // Waits until some other session waits for this one's lock.
  void AwaitWaiter() {
    auto watcher = pool_checkout_();
    for (;;) {
      auto rows = watcher->Exec("SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
                                db::Params(pid_));
      ASSERT_TRUE(rows.ok());
      if (*rows->Int64(0, 0) > 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  void Release() { EXPECT_TRUE(lease_->Exec("ROLLBACK").ok()); }
  std::function<db::Pool::Lease()> pool_checkout_;

 private:
  db::Pool::Lease lease_;
  int64_t pid_ = 0;
};

// A head held by another transaction delays only the requests of that organisation: the others are
// appended meanwhile (the batch never waits for a lock while it holds others), and the delayed ones
// follow as soon as the head is free.
TEST_F(BatcherTest, ABusyHeadDelaysOnlyItsOwnOrganisation) {
  for (bool in_db : {false, true}) {
    SCOPED_TRACE(in_db ? "append in database" : "append in the service");
    const std::string sfx = in_db ? "d" : "s";
    for (bool outside : {true, false}) {
      SCOPED_TRACE(outside ? "flush outside lock" : "flush inside lock");
      const std::string busy = (outside ? "busy1" : "busy2") + sfx,
                        free_org = (outside ? "free1" : "free2") + sfx;
      ASSERT_TRUE(Batcher(pool_.get()).AppendBlocking(busy, {Input("seed")}).ok());
      HeadHolder holder(*pool_, busy);
      holder.pool_checkout_ = [this] { return std::move(*pool_->Checkout()); };
      Batcher b(pool_.get(), {.flushers = 1, .flush_outside_lock = outside, .append_in_database = in_db});
      std::promise<Result<AppendOutcome>> busy_done;
      auto busy_result = busy_done.get_future();
      b.Append(busy, {Input("b1")}, [&](Result<AppendOutcome> r) { busy_done.set_value(std::move(r)); });
      holder.AwaitWaiter();  // the lane now waits for the busy head (its oldest request)
      // Queued behind it on the same lane: the next batch holds both organisations' requests.
      std::promise<Result<AppendOutcome>> free_done[2];
      b.Append(busy, {Input("b2")}, [](Result<AppendOutcome>) {});
      b.Append(free_org, {Input("f1")},
               [&](Result<AppendOutcome> r) { free_done[0].set_value(std::move(r)); });
      holder.Release();
      ASSERT_TRUE(busy_result.get().ok());
      auto f = free_done[0].get_future().get();
      ASSERT_TRUE(f.ok()) << f.status().message();
      b.Shutdown();
      EXPECT_EQ(testing::Verified(Conn(), busy), 3);
      EXPECT_EQ(testing::Verified(Conn(), free_org), 1);
    }
    // Now the case the batch must not wait for: the busy head is not its oldest request's.
    ASSERT_TRUE(Batcher(pool_.get()).AppendBlocking("held" + sfx, {Input("seed")}).ok());
    HeadHolder holder(*pool_, "held" + sfx);
    holder.pool_checkout_ = [this] { return std::move(*pool_->Checkout()); };
    Batcher b(
        pool_.get(),
        {.flush_interval = std::chrono::microseconds(200000), .flushers = 1, .append_in_database = in_db});
    std::promise<Result<AppendOutcome>> held_done, other_done;
    auto held_result = held_done.get_future();
    // One batch (the lane waits 200 ms for company): "other" first, then "held".
    b.Append("other" + sfx, {Input("o1")},
             [&](Result<AppendOutcome> r) { other_done.set_value(std::move(r)); });
    b.Append("held" + sfx, {Input("h1")},
             [&](Result<AppendOutcome> r) { held_done.set_value(std::move(r)); });
    auto other = other_done.get_future().get();  // would never come if the batch waited for "held"
    ASSERT_TRUE(other.ok()) << other.status().message();
    holder.Release();
    ASSERT_TRUE(held_result.get().ok());
    b.Shutdown();
    EXPECT_EQ(testing::Verified(Conn(), "held" + sfx), 2);
    EXPECT_EQ(testing::Verified(Conn(), "other" + sfx), 1);
  }
}

// The append path's own bound: beyond max_queued waiting entries an append is refused at once
// (ResourceExhausted: the API answers 503 with Retry-After), and nothing of it is stored.
TEST_F(BatcherTest, AFullQueueRefusesAtOnceAndStoresNothing) {
  ASSERT_TRUE(Batcher(pool_.get()).AppendBlocking("q", {Input("seed")}).ok());
  HeadHolder holder(*pool_, "q");
  holder.pool_checkout_ = [this] { return std::move(*pool_->Checkout()); };
  Batcher b(pool_.get(), {.flushers = 1, .max_queued = 2});
  std::promise<Result<AppendOutcome>> first, second;
  b.Append("q", {Input("a")}, [&](Result<AppendOutcome> r) { first.set_value(std::move(r)); });
  holder.AwaitWaiter();  // "a" is in the transaction waiting for the head, no longer queued
  b.Append("q", {Input("b"), Input("c")}, [&](Result<AppendOutcome> r) { second.set_value(std::move(r)); });
  auto refused = b.AppendBlocking("q", {Input("d")});
  EXPECT_EQ(refused.status().code(), Code::kResourceExhausted);
  holder.Release();
  ASSERT_TRUE(first.get_future().get().ok());
  ASSERT_TRUE(second.get_future().get().ok());
  b.Shutdown();
  EXPECT_EQ(testing::Verified(Conn(), "q"), 4);
  auto d = Conn().Exec("SELECT count(*) FROM audit_entries WHERE org = 'q' AND idem_key = 'd'");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d->Int64(0, 0), 0);
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

// Waits (at most 30 s) until `done` holds; false if it never did.
bool WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 30000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

// Batches committed while a barrier runs wait for the next one, which covers them all at once; no
// append is acknowledged before a barrier that began after its commit has returned.
TEST_F(BatcherTest, OneBarrierCoversEveryBatchCommittedWhileThePreviousRan) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::vector<size_t> cohorts;
  std::atomic<int> acked{0}, failed{0};
  BatcherOptions o{.flushers = 4};
  o.before_barrier = [&](size_t batches) {
    std::unique_lock g(mu);
    cohorts.push_back(batches);
    if (cohorts.size() == 1) cv.wait(g, [&] { return release; });
  };
  Batcher b(pool_.get(), std::move(o));
  // Lets the held barrier go however the test ends (destroyed before the Batcher, whose destructor waits for
  // that thread).
  struct Release {
    std::function<void()> f;
    ~Release() { f(); }
  } release_at_end{[&] {
    {
      std::lock_guard g(mu);
      release = true;
    }
    cv.notify_all();
  }};
  auto count = [&](Result<AppendOutcome> r) { ++(r.ok() ? acked : failed); };
  b.Append("first", {Input("f")}, count);
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard g(mu);
    return cohorts.size() == 1;
  })) << "the first batch's barrier never began";
  // One at a time, so that each is a batch of its own, committed while the first barrier is held.
  uint64_t n = 0;
  for (const char* org : {"second", "third", "fourth"}) {
    b.Append(org, {Input(org)}, count);
    ++n;
    ASSERT_TRUE(WaitFor([&] { return b.GetStats().awaiting_flush == n; })) << org << " never committed";
  }
  EXPECT_EQ(acked.load(), 0) << "acknowledged before a barrier covered it";
  {
    std::lock_guard g(mu);
    release = true;
  }
  cv.notify_all();
  ASSERT_TRUE(WaitFor([&] { return acked.load() + failed.load() == 4; }));
  EXPECT_EQ(failed.load(), 0);
  Batcher::Stats st = b.GetStats();
  EXPECT_EQ(st.batches, 4u);
  EXPECT_EQ(st.barriers, 2u);
  EXPECT_EQ(st.awaiting_flush, 0u);
  std::lock_guard g(mu);
  EXPECT_EQ(cohorts, (std::vector<size_t>{1, 3}));
  for (const char* org : {"first", "second", "third", "fourth"}) EXPECT_EQ(testing::Verified(Conn(), org), 1);
}

// A barrier that fails (here: no connection for it within the pool's checkout timeout) fails the
// appends it covers with Unavailable; they were committed, so a retry with the same keys gets the
// original entries back instead of second ones.
TEST_F(BatcherTest, AFailedBarrierFailsItsAppendsAndRetriesGetTheOriginals) {
  auto pool = db::Pool::Create(
      {.conninfo = db_->conninfo(), .max_size = 1, .checkout_timeout = std::chrono::milliseconds(200)});
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  std::optional<db::Pool::Lease> held;
  bool first = true;
  BatcherOptions o;
  o.before_barrier = [&](size_t) {
    if (!first) return;
    first = false;
    auto lease = (*pool)->Checkout();  // the pool's only connection: the barrier finds none free
    if (lease.ok()) held.emplace(std::move(*lease));
  };
  Batcher b(pool->get(), std::move(o));
  auto r = b.AppendBlocking("acme", {Input("a"), Input("b")});
  ASSERT_TRUE(held.has_value());
  held.reset();
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status().ToString();
  EXPECT_EQ(b.GetStats().batches_failed, 1u);
  EXPECT_EQ(testing::Verified(Conn(), "acme"), 2) << "committed before its barrier failed";
  auto again = b.AppendBlocking("acme", {Input("a"), Input("b")});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_FALSE(again->created[0]);
  EXPECT_FALSE(again->created[1]);
  EXPECT_EQ(again->entries[1].entry.seq, 2u);
  EXPECT_EQ(testing::Verified(Conn(), "acme"), 2);
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
