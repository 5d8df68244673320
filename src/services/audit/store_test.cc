// Reads, searches, proofs, checkpoints, export, verification (and the tampering it catches) and
// retention against a real PostgreSQL.
#include "services/audit/store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "services/audit/audit_testing.h"
#include "services/audit/batcher.h"

namespace govern::audit_service {
namespace {

// What a DBA with write access could do: recompute every hash of the chain in SQL, by the core's
// rules (RFC 8785 entry text; leaf = SHA-256(0x00 || text); entry = SHA-256(prev || leaf)), and the
// head and stored subtrees' inputs with it. (Good enough for ASCII fields, which the test uses.)
constexpr const char* kRecomputeChainSql = R"sql(
DO $$
DECLARE r record; prev bytea := '\x0000000000000000000000000000000000000000000000000000000000000000';
        canon text; leaf bytea;
BEGIN
  FOR r IN SELECT * FROM audit_entries WHERE org = 'acme' ORDER BY seq LOOP
    canon := '{"action":' || to_json(r.action)::text || ',"actor":' || to_json(r.actor)::text ||
             ',"details":' || r.details || ',"idempotency_key":' || to_json(r.idem_key)::text ||
             ',"org":' || to_json(r.org)::text || ',"outcome":' || to_json(r.outcome)::text ||
             ',"seq":' || r.seq || ',"target":' || to_json(r.target)::text || ',"time":"' ||
             to_char(r.time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') || '"}';
    leaf := sha256('\x00'::bytea || convert_to(canon, 'UTF8'));
    UPDATE audit_entries SET prev_hash = prev, entry_hash = sha256(prev || leaf), leaf_hash = leaf
      WHERE org = r.org AND seq = r.seq;
    prev := sha256(prev || leaf);
  END LOOP;
  UPDATE audit_heads SET head_hash = prev WHERE org = 'acme';
END $$;
)sql";

class StoreTest : public testing::AuditDbTest {
 protected:
  void Fill(const std::string& org, int n, int64_t t0_micros = 1764460800000000) {
    Batcher b(pool_.get(), {.max_batch = 500});
    std::vector<AppendInput> batch;
    for (int i = 0; i < n; ++i) {
      AppendInput in;
      in.idempotency_key = org + "-" + std::to_string(next_);
      in.actor = "user" + std::to_string(next_ % 5);
      in.action = next_ % 3 == 0 ? "delete" : "read";
      in.target = "doc" + std::to_string(next_);
      in.time_micros = t0_micros + int64_t{next_} * 1000000;
      ++next_;
      batch.push_back(std::move(in));
      if (batch.size() == 400) {
        ASSERT_TRUE(b.AppendBlocking(org, std::move(batch)).ok());
        batch.clear();
      }
    }
    if (!batch.empty()) {
      ASSERT_TRUE(b.AppendBlocking(org, std::move(batch)).ok());
    }
  }
  CheckpointSigner Signer() { return std::move(*CheckpointSigner::FromSeed(std::string(32, '\x05'))); }
  int next_ = 0;
};

// Index blocks of audit_entries read (from shared buffers or the disk) in this connection's open
// transaction: this backend's own count, which other connections' statistics (flushed up to a second
// later) never change, unlike pg_statio_user_indexes.
int64_t EntryIndexBlocksReadInTransaction(db::Connection& c) {
  auto r = c.Exec(
      "SELECT coalesce(sum(pg_stat_get_xact_blocks_fetched(indexrelid)), 0)::bigint FROM pg_index "
      "WHERE indrelid = 'audit_entries'::regclass");
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return -1;
  return *r->Int64(0, 0);
}

// A read by seq is a primary key lookup however small the table was when the connection first read
// an entry. (A prepared statement's generic plan, made while the table held a few hundred entries,
// took the time index, bounded by org alone, and so read every entry of the organisation for each
// GET; in the benchmark the read-after-ack GETs cost PostgreSQL more CPU than the appends.)
TEST_F(StoreTest, ReadBySeqStaysAPrimaryKeyLookupAsTheChainGrows) {
  Fill("acme", 30);
  for (int i = 1; i <= 12; ++i) ASSERT_TRUE(GetEntry(Conn(), "acme", i).ok());
  Fill("acme", 8000);
  ASSERT_TRUE(Conn().Exec("BEGIN").ok());
  const int64_t before = EntryIndexBlocksReadInTransaction(Conn());
  for (int i = 0; i < 10; ++i) {
    auto e = GetEntry(Conn(), "acme", 3000 + i);
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_EQ(e->entry.seq, static_cast<uint64_t>(3000 + i));
  }
  const int64_t read = EntryIndexBlocksReadInTransaction(Conn()) - before;
  ASSERT_TRUE(Conn().Exec("COMMIT").ok());
  // A primary key lookup reads 2-3 index blocks (planning it a few more); the time index read the
  // organisation's whole range (about 700 blocks for these 10 reads).
  EXPECT_LT(read, 300) << "10 reads by seq read " << read << " index blocks";
}

TEST_F(StoreTest, ReadsAndSearchesNewestFirstWithPaging) {
  Fill("acme", 100);
  auto e = GetEntry(Conn(), "acme", 42);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->entry.target, "doc41");
  EXPECT_EQ(GetEntry(Conn(), "acme", 101).status().code(), Code::kNotFound);
  EXPECT_EQ(GetEntry(Conn(), "nobody", 1).status().code(), Code::kNotFound);

  SearchQuery q;
  q.limit = 10;
  auto page = Search(Conn(), "acme", q);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->entries.size(), 10u);
  EXPECT_EQ(page->entries[0].entry.seq, 100u);
  ASSERT_TRUE(page->next_before_seq.has_value());
  q.before_seq = page->next_before_seq;
  auto page2 = Search(Conn(), "acme", q);
  EXPECT_EQ(page2->entries[0].entry.seq, 90u);

  SearchQuery by_action{.action = "delete", .limit = 1000};
  auto deletes = Search(Conn(), "acme", by_action);
  ASSERT_TRUE(deletes.ok());
  EXPECT_EQ(deletes->entries.size(), 34u);
  EXPECT_FALSE(deletes->next_before_seq.has_value());
  SearchQuery by_actor{.actor = "user1", .limit = 1000};
  EXPECT_EQ(Search(Conn(), "acme", by_actor)->entries.size(), 20u);
  SearchQuery by_time{.since_micros = 1764460800000000 + 10 * 1000000,
                      .until_micros = 1764460800000000 + 20 * 1000000};
  auto window = Search(Conn(), "acme", by_time);
  ASSERT_EQ(window->entries.size(), 10u);
  EXPECT_EQ(window->entries[0].entry.seq, 20u);
}

TEST_F(StoreTest, SearchesUseTheirIndexes) {
  Fill("acme", 2000);
  ASSERT_TRUE(Conn().Exec("ANALYZE audit_entries").ok());
  struct Case {
    SearchQuery q;
    std::string index;
    std::string params;
  } cases[] = {
      {{.limit = 100}, "audit_entries_pkey", "'acme', 101"},
      {{.action = "delete", .limit = 100}, "audit_entries_action", "'acme', 'delete', 101"},
      {{.actor = "user3", .limit = 100}, "audit_entries_actor", "'acme', 'user3', 101"},
  };
  for (const Case& c : cases) {
    std::string sql = SearchSql(c.q);
    // Substitute the parameters for EXPLAIN.
    std::string explained = "EXPLAIN " + sql;
    for (int i = 3; i >= 1; --i) {
      size_t at;
      std::string p = "$" + std::to_string(i);
      std::string v;
      std::string ps = c.params;
      for (int k = 1; k <= i; ++k) {
        size_t comma = ps.find(", ");
        v = ps.substr(0, comma);
        ps = comma == std::string::npos ? "" : ps.substr(comma + 2);
      }
      while ((at = explained.find(p)) != std::string::npos) explained.replace(at, p.size(), v);
    }
    auto plan = Conn().Exec(explained);
    ASSERT_TRUE(plan.ok()) << explained << ": " << plan.status().message();
    std::string text;
    for (int r = 0; r < plan->size(); ++r) text += std::string(plan->Text(r, 0)) + "\n";
    EXPECT_NE(text.find(c.index), std::string::npos) << text;
    EXPECT_EQ(text.find("Seq Scan"), std::string::npos) << text;
  }
}

TEST_F(StoreTest, ProofsFromStoredNodesVerify) {
  Fill("acme", 300);
  for (uint64_t size : {1u, 17u, 64u, 255u, 300u}) {
    for (uint64_t seq : {uint64_t{1}, size / 2 + 1, size}) {
      auto p = InclusionProofFor(Conn(), "acme", seq, size);
      ASSERT_TRUE(p.ok()) << p.status().message();
      EXPECT_TRUE(audit::VerifyInclusion(p->leaf, seq - 1, size, p->proof, p->root).ok())
          << seq << "/" << size;
    }
  }
  auto c = ConsistencyProofFor(Conn(), "acme", 37, 300);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(audit::VerifyConsistency(37, 300, c->old_root, c->new_root, c->proof).ok());
  EXPECT_EQ(InclusionProofFor(Conn(), "acme", 1, 301).status().code(), Code::kInvalidArgument);
  // Proofs read the stored subtrees: one row per 16 entries, not one per entry.
  auto nodes = Conn().Exec("SELECT count(*) FROM audit_tree_nodes WHERE org = 'acme'");
  EXPECT_EQ(*nodes->Int64(0, 0), 300 / 16 + 300 / 256);
}

TEST_F(StoreTest, CheckpointsExportAndVerify) {
  CheckpointSigner signer = Signer();
  EXPECT_EQ(MakeCheckpoint(Conn(), "acme", signer, 100).status().code(), Code::kNotFound);
  Fill("acme", 50);
  auto cp = MakeCheckpoint(Conn(), "acme", signer, 1000);
  ASSERT_TRUE(cp.ok()) << cp.status().message();
  EXPECT_TRUE(cp->created);
  EXPECT_EQ(cp->checkpoint.size, 50u);
  auto same = MakeCheckpoint(Conn(), "acme", signer, 2000);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->created);
  EXPECT_EQ(same->note, cp->note);
  EXPECT_EQ(*OrgsNeedingCheckpoint(Conn(), 10), std::vector<std::string>{});
  Fill("acme", 30);
  EXPECT_EQ(*OrgsNeedingCheckpoint(Conn(), 10), std::vector<std::string>{"acme"});
  ASSERT_TRUE(MakeCheckpoint(Conn(), "acme", signer, 3000).ok());
  EXPECT_EQ(LatestCheckpoint(Conn(), "acme")->checkpoint.size, 80u);

  // The export, written to a file and checked by the core's offline verifier.
  std::string path = ::testing::TempDir() + "/audit_export_" + std::to_string(::getpid()) + ".ndjson";
  {
    std::ofstream f(path);
    int lines = 0;
    ASSERT_TRUE(Export(Conn(), "acme", [&](std::string_view l) {
                  f << l << "\n";
                  ++lines;
                  return OkStatus();
                }).ok());
    EXPECT_EQ(lines, 1 + 80 + 2);
  }
  auto report = audit::VerifyExportFile(path, signer.verifier_keys());
  std::remove(path.c_str());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_TRUE(report->ok()) << report->reason;
  EXPECT_EQ(report->entries_verified, 80u);
  EXPECT_EQ(report->checkpoints_matched, 2u);
}

// Every kind of tampering named in issue 5, each caught with the right entry named.
TEST_F(StoreTest, TamperingIsDetectedAndTheEntryNamed) {
  CheckpointSigner signer = Signer();
  const auto keys = signer.verifier_keys();
  struct Case {
    std::string name;
    std::string sql;
    audit::Failure failure;
    uint64_t first_bad;
  } cases[] = {
      {"change a field", "UPDATE audit_entries SET actor = 'mallory' WHERE org = 'acme' AND seq = 7",
       audit::Failure::kEntryHashMismatch, 7},
      {"delete an entry", "DELETE FROM audit_entries WHERE org = 'acme' AND seq = 9", audit::Failure::kSeqGap,
       9},
      {"reorder",
       "UPDATE audit_entries SET seq = -4 WHERE org = 'acme' AND seq = 4; UPDATE audit_entries SET seq = 4 "
       "WHERE "
       "org = 'acme' AND seq = 5; UPDATE audit_entries SET seq = 5 WHERE org = 'acme' AND seq = -4",
       audit::Failure::kPrevHashMismatch, 4},
      {"truncate the tail", "DELETE FROM audit_entries WHERE org = 'acme' AND seq > 17",
       audit::Failure::kCheckpointBeyondEnd, 18},
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(Conn().Exec("TRUNCATE audit_entries, audit_heads, audit_tree_nodes, audit_checkpoints").ok());
    next_ = 0;
    Fill("acme", 20);
    ASSERT_TRUE(MakeCheckpoint(Conn(), "acme", signer, 1).ok());
    ASSERT_TRUE(VerifyFromDatabase(Conn(), "acme", keys)->ok()) << c.name;
    ASSERT_TRUE(Conn().ExecScript(c.sql).ok()) << c.sql;
    auto r = VerifyFromDatabase(Conn(), "acme", keys);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->failure, c.failure) << c.name << ": " << r->reason;
    EXPECT_EQ(r->first_bad_seq, c.first_bad) << c.name << ": " << r->reason;
  }

  // Recompute the whole chain in SQL after changing entry 12: the chain is consistent again, the
  // checkpoints (signed before) are not. With a checkpoint after every entry, the entry is named exactly.
  ASSERT_TRUE(Conn().Exec("TRUNCATE audit_entries, audit_heads, audit_tree_nodes, audit_checkpoints").ok());
  next_ = 0;
  for (int i = 0; i < 20; ++i) {
    Fill("acme", 1);
    ASSERT_TRUE(MakeCheckpoint(Conn(), "acme", signer, i).ok());
  }
  std::vector<std::string> outside;  // copies of the checkpoints kept outside the database
  auto cps = Conn().Exec("SELECT note FROM audit_checkpoints ORDER BY size");
  for (int i = 0; i < cps->size(); ++i) outside.emplace_back(cps->Text(i, 0));
  ASSERT_TRUE(
      Conn().Exec("UPDATE audit_entries SET outcome = 'denied' WHERE org = 'acme' AND seq = 12").ok());
  Status rewrite = Conn().ExecScript(kRecomputeChainSql);
  ASSERT_TRUE(rewrite.ok()) << rewrite.message();
  ASSERT_TRUE(Conn().Exec("DELETE FROM audit_checkpoints").ok());
  EXPECT_EQ(testing::Verified(Conn(), "acme"), 20) << "the recomputed chain is consistent in itself";
  auto r = VerifyFromDatabase(Conn(), "acme", keys, outside);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->failure, audit::Failure::kCheckpointMismatch) << r->reason;
  EXPECT_EQ(r->first_bad_seq, 12u) << r->reason;
}

TEST_F(StoreTest, RetentionKeepsWhatRemainsVerifiable) {
  CheckpointSigner signer = Signer();
  const auto keys = signer.verifier_keys();
  const int64_t t0 = 1764460800000000;
  Fill("acme", 100, t0);  // entry seq s has time t0 + (s - 1) s
  ASSERT_TRUE(MakeCheckpoint(Conn(), "acme", signer, 1).ok());
  EXPECT_EQ(*ApplyRetention(Conn(), "acme", t0 + 40 * 1000000), 32) << "cut at 32: a run of 16 before seq 41";
  auto head = GetHead(Conn(), "acme");
  EXPECT_EQ(head->first_seq, 33u);
  EXPECT_EQ(GetEntry(Conn(), "acme", 32).status().code(), Code::kNotFound);
  Fill("acme", 5, t0 + 1000 * 1000000);
  auto report = VerifyFromDatabase(Conn(), "acme", keys);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_TRUE(report->ok()) << report->reason;
  EXPECT_EQ(report->entries_verified, 73u);
  EXPECT_EQ(report->checkpoints_matched, 1u);
  auto proof = InclusionProofFor(Conn(), "acme", 50, 105);
  ASSERT_TRUE(proof.ok()) << proof.status().message();
  EXPECT_TRUE(audit::VerifyInclusion(proof->leaf, 49, 105, proof->proof, proof->root).ok());
  // Never past the newest checkpoint (size 100), whatever the cutoff.
  EXPECT_EQ(*ApplyRetention(Conn(), "acme", t0 + 5000 * 1000000LL), 96 - 32);
  EXPECT_EQ(GetHead(Conn(), "acme")->first_seq, 97u);
  EXPECT_TRUE(VerifyFromDatabase(Conn(), "acme", keys)->ok());
  ASSERT_TRUE(SetRetention(Conn(), "acme", 86400).ok());
  EXPECT_EQ(**GetRetention(Conn(), "acme"), std::optional<int64_t>(86400));
  ASSERT_TRUE(ClearRetention(Conn(), "acme").ok());
  EXPECT_FALSE(GetRetention(Conn(), "acme")->has_value());
}

}  // namespace
}  // namespace govern::audit_service
