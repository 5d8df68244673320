// Reads, searches, proofs, checkpoints, export, verification (and the tampering it catches) and
// retention against a real PostgreSQL.
#include "services/audit/store.h"

#include <gtest/gtest.h>

#include "services/audit/audit_testing.h"
#include "services/audit/batcher.h"

namespace govern::audit_service {
namespace {

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
      in.time_micros = t0_micros + next_ * 1000000;
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

TEST_F(StoreTest, ReadsAndSearchesNewestFirstWithPaging) {
  Fill("acme", 100);
  auto e = GetEntry(Conn(), "acme", 42);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->fields.target, "doc41");
  EXPECT_EQ(GetEntry(Conn(), "acme", 101).status().code(), Code::kNotFound);
  EXPECT_EQ(GetEntry(Conn(), "nobody", 1).status().code(), Code::kNotFound);

  SearchQuery q;
  q.limit = 10;
  auto page = Search(Conn(), "acme", q);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->entries.size(), 10u);
  EXPECT_EQ(page->entries[0].fields.seq, 100);
  ASSERT_TRUE(page->next_before_seq.has_value());
  q.before_seq = page->next_before_seq;
  auto page2 = Search(Conn(), "acme", q);
  EXPECT_EQ(page2->entries[0].fields.seq, 90);

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
  EXPECT_EQ(window->entries[0].fields.seq, 20);
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
  for (int64_t size : {1, 17, 64, 255, 300}) {
    for (int64_t seq : {int64_t{1}, size / 2 + 1, size}) {
      Hash leaf, root;
      auto proof = InclusionProofFor(Conn(), "acme", seq, size, &leaf, &root);
      ASSERT_TRUE(proof.ok()) << proof.status().message();
      EXPECT_TRUE(
          VerifyInclusion(static_cast<uint64_t>(seq - 1), static_cast<uint64_t>(size), leaf, *proof, root))
          << seq << "/" << size;
    }
  }
  Hash r1, r2;
  auto c = ConsistencyProofFor(Conn(), "acme", 37, 300, &r1, &r2);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(VerifyConsistency(37, 300, r1, r2, *c));
  Hash leaf, root;
  EXPECT_EQ(InclusionProofFor(Conn(), "acme", 1, 301, &leaf, &root).status().code(), Code::kInvalidArgument);
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

  std::vector<std::string> lines;
  ASSERT_TRUE(Export(Conn(), "acme", signer.verifier_key(), [&](std::string_view l) {
                lines.emplace_back(l);
                return OkStatus();
              }).ok());
  EXPECT_EQ(lines.size(), 1u + 80 + 2);
  Verifier v(signer.verifier_key());
  for (const std::string& l : lines) ASSERT_TRUE(v.AddLine(l).ok()) << l;
  auto report = v.Finish();
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->entries, 80);
  EXPECT_EQ(report->checkpoints_verified, 2);
}

// Every kind of tampering named in issue 5, each caught with the right entry named.
TEST_F(StoreTest, TamperingIsDetectedAndTheEntryNamed) {
  CheckpointSigner signer = Signer();
  const std::string key = signer.verifier_key();
  struct Case {
    std::string name;
    std::string sql;
    std::string expect;
  } cases[] = {
      {"change a field", "UPDATE audit_entries SET actor = 'mallory' WHERE org = 'acme' AND seq = 7",
       "entry 7: entry_hash does not match"},
      {"delete an entry", "DELETE FROM audit_entries WHERE org = 'acme' AND seq = 9", "entry 9 is missing"},
      {"reorder",
       "UPDATE audit_entries SET seq = -4 WHERE org = 'acme' AND seq = 4; UPDATE audit_entries SET seq = 4 "
       "WHERE "
       "org = 'acme' AND seq = 5; UPDATE audit_entries SET seq = 5 WHERE org = 'acme' AND seq = -4",
       "entry 4: prev_hash"},
      {"truncate the tail", "DELETE FROM audit_entries WHERE org = 'acme' AND seq > 17",
       "entries 18..20 are missing"},
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(Conn().Exec("TRUNCATE audit_entries, audit_heads, audit_tree_nodes, audit_checkpoints").ok());
    next_ = 0;
    Fill("acme", 20);
    ASSERT_TRUE(MakeCheckpoint(Conn(), "acme", signer, 1).ok());
    ASSERT_TRUE(VerifyFromDatabase(Conn(), "acme", key).ok()) << c.name;
    ASSERT_TRUE(Conn().ExecScript(c.sql).ok()) << c.sql;
    auto r = VerifyFromDatabase(Conn(), "acme", key);
    ASSERT_EQ(r.status().code(), Code::kDataLoss) << c.name;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos)
        << c.name << ": " << r.status().message();
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
  // The rewrite a DBA could do: recompute every entry_hash in SQL (same rules as chain.h), and drop
  // the database's own checkpoints.
  Status rewrite = Conn().ExecScript(R"sql(
CREATE FUNCTION u32(t text) RETURNS bytea LANGUAGE sql AS
  $$ SELECT substring(int4send(octet_length(convert_to(t, 'UTF8'))) from 1 for 4) || convert_to(t, 'UTF8') $$;
DO $$
DECLARE r record; prev bytea := '\x0000000000000000000000000000000000000000000000000000000000000000';
        canon bytea;
BEGIN
  FOR r IN SELECT * FROM audit_entries WHERE org = 'acme' ORDER BY seq LOOP
    canon := convert_to(E'govern-audit-entry/1\n', 'UTF8') || int8send(r.seq) || u32(r.org) || u32(r.idem_key) ||
             u32(r.actor) || u32(r.action) || u32(r.target) || u32(r.outcome) || u32(r.details) ||
             int8send((extract(epoch from r.time) * 1000000)::bigint);
    UPDATE audit_entries SET prev_hash = prev, entry_hash = sha256(prev || sha256(canon)),
                             leaf_hash = sha256('\x00'::bytea || canon)
      WHERE org = r.org AND seq = r.seq;
    prev := sha256(prev || sha256(canon));
  END LOOP;
  UPDATE audit_heads SET head_hash = prev WHERE org = 'acme';
END $$;
DELETE FROM audit_checkpoints;
)sql");
  ASSERT_TRUE(rewrite.ok()) << rewrite.message();
  auto chain_only = VerifyFromDatabase(Conn(), "acme", nullptr);
  ASSERT_TRUE(chain_only.ok()) << "the recomputed chain is consistent in itself: "
                               << chain_only.status().message();
  auto r = VerifyFromDatabase(Conn(), "acme", key, outside);
  ASSERT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("checkpoint of size 12"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("entry 12"), std::string::npos) << r.status().message();
}

TEST_F(StoreTest, RetentionKeepsWhatRemainsVerifiable) {
  CheckpointSigner signer = Signer();
  const int64_t t0 = 1764460800000000;
  Fill("acme", 100, t0);  // entry seq s has time t0 + (s - 1) s
  ASSERT_TRUE(MakeCheckpoint(Conn(), "acme", signer, 1).ok());
  EXPECT_EQ(*ApplyRetention(Conn(), "acme", t0 + 40 * 1000000), 32) << "cut at 32: a run of 16 before seq 41";
  auto head = GetHead(Conn(), "acme");
  EXPECT_EQ(head->first_seq, 33);
  EXPECT_EQ(GetEntry(Conn(), "acme", 32).status().code(), Code::kNotFound);
  Fill("acme", 5, t0 + 1000 * 1000000);
  auto report = VerifyFromDatabase(Conn(), "acme", signer.verifier_key());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->first_seq, 33);
  EXPECT_EQ(report->entries, 73);
  Hash leaf, root;
  auto proof = InclusionProofFor(Conn(), "acme", 50, 105, &leaf, &root);
  ASSERT_TRUE(proof.ok()) << proof.status().message();
  EXPECT_TRUE(VerifyInclusion(49, 105, leaf, *proof, root));
  // Never past the newest checkpoint (size 100), whatever the cutoff.
  EXPECT_EQ(*ApplyRetention(Conn(), "acme", t0 + 5000 * 1000000LL), 96 - 32);
  EXPECT_EQ(GetHead(Conn(), "acme")->first_seq, 97);
  ASSERT_TRUE(VerifyFromDatabase(Conn(), "acme", signer.verifier_key()).ok());
  ASSERT_TRUE(SetRetention(Conn(), "acme", 86400).ok());
  EXPECT_EQ(**GetRetention(Conn(), "acme"), 86400);
}

}  // namespace
}  // namespace govern::audit_service
