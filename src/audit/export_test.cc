// Export lines and the verifier: a clean chain verifies; every kind of tampering (a field changed, an
// entry deleted, entries reordered, the tail truncated, the chain recomputed) fails naming the entry.
#include "audit/export.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace govern::audit {
namespace {

constexpr std::string_view kKeyName = "govern.test/audit";

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = std::make_unique<crypto::Ed25519PrivateKey>(crypto::Ed25519PrivateKey::Generate().value());
    keys_.push_back(VerifierKeyFor(kKeyName, *key_).value());
    dir_ = ::testing::TempDir() + "audit_export_" + std::to_string(::getpid());
    std::string cmd = "mkdir -p " + dir_;
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  void TearDown() override {
    std::string cmd = "rm -rf " + dir_;
    (void)std::system(cmd.c_str());
  }

  static std::vector<Entry> Chain(uint64_t n) {
    std::vector<Entry> out;
    Hash prev = kGenesisHash;
    for (uint64_t i = 1; i <= n; ++i) {
      Entry e;
      e.org = "acme";
      e.seq = i;
      e.time_us = 1798096547000000 + static_cast<int64_t>(i) * 1000;
      e.actor = "user:" + std::to_string(i % 7);
      e.action = i % 3 ? "policy.publish" : "token.issue";
      e.target = "thing/" + std::to_string(i);
      e.outcome = "ok";
      e.details =
          CanonicalizeDetails("{\"i\":" + std::to_string(i) + ",\"note\":\"n\\u00e9\"}", 1024).value();
      e.idempotency_key = "key-" + std::to_string(i);
      Seal(e, prev);
      prev = e.entry_hash;
      out.push_back(std::move(e));
    }
    return out;
  }

  // Renumbers from index `from` and recomputes every hash after it, as someone with database access.
  static void Recompute(std::vector<Entry>& chain) {
    Hash prev = kGenesisHash;
    for (size_t i = 0; i < chain.size(); ++i) {
      chain[i].seq = i + 1;
      Seal(chain[i], prev);
      prev = chain[i].entry_hash;
    }
  }

  std::string SignAt(const std::vector<Entry>& chain, uint64_t size) {
    CompactRange range;
    for (uint64_t i = 0; i < size; ++i) range.Append(LeafHash(CanonicalEntry(chain[i])));
    Checkpoint c{CheckpointOrigin("acme"), size, range.Root(),
                 size ? chain[size - 1].entry_hash : kGenesisHash, 1798096600000000};
    return SignCheckpoint(c, kKeyName, *key_).value();
  }

  std::vector<std::string> Checkpoints(const std::vector<Entry>& chain, std::vector<uint64_t> sizes) {
    std::vector<std::string> out;
    for (uint64_t s : sizes) out.push_back(SignAt(chain, s));
    return out;
  }

  static std::vector<uint64_t> Every(uint64_t step, uint64_t n) {
    std::vector<uint64_t> out;
    for (uint64_t s = step; s <= n; s += step) out.push_back(s);
    return out;
  }

  Report Verify(const std::vector<Entry>& entries, const std::vector<std::string>& notes,
                VerifierOptions options = {}) {
    if (options.org.empty()) options.org = "acme";
    auto v = Verifier::Create(std::move(options), keys_);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    for (const auto& n : notes) (void)v->AddCheckpoint(n);
    for (const auto& e : entries) {
      if (!v->Add(e).ok()) break;
    }
    return v->Finish();
  }

  std::string WriteFile(const std::vector<Entry>& entries, const std::vector<std::string>& notes,
                        ExportHeader header = {}) {
    if (header.org.empty()) header.org = "acme";
    const std::string path = dir_ + "/export" + std::to_string(files_++) + ".ndjson";
    std::ofstream out(path);
    ExportWriter w(out);
    EXPECT_TRUE(w.WriteHeader(header).ok());
    for (const auto& e : entries) EXPECT_TRUE(w.WriteEntry(e).ok());
    for (const auto& n : notes) EXPECT_TRUE(w.WriteCheckpoint(n).ok());
    EXPECT_TRUE(w.Finish().ok());
    return path;
  }

  std::unique_ptr<crypto::Ed25519PrivateKey> key_;
  std::vector<VerifierKey> keys_;
  std::string dir_;
  int files_ = 0;
};

void ExpectFailure(const Report& r, Failure f, uint64_t first, uint64_t last) {
  EXPECT_EQ(r.failure, f) << FailureName(r.failure) << ": " << r.reason;
  EXPECT_EQ(r.first_bad_seq, first) << r.reason;
  EXPECT_EQ(r.last_bad_seq, last) << r.reason;
  EXPECT_FALSE(r.reason.empty());
}

TEST_F(ExportTest, CleanChainVerifies) {
  auto chain = Chain(100);
  auto r = Verify(chain, Checkpoints(chain, {0, 1, 10, 37, 64, 100}));
  EXPECT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.entries_verified, 100u);
  EXPECT_EQ(r.checkpoints_matched, 6u);
  EXPECT_EQ(r.last_seq, 100u);
  EXPECT_EQ(r.chain_head, chain.back().entry_hash);
  MemoryTree tree;
  for (const auto& e : chain) tree.Append(LeafHash(CanonicalEntry(e)));
  EXPECT_EQ(r.root, tree.Root(100).value());

  // A checkpoint given after its entries is counted as late, not silently dropped.
  auto v = Verifier::Create(VerifierOptions{.org = "acme"}, keys_).value();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(v.Add(chain[i]).ok());
  EXPECT_EQ(v.AddCheckpoint(SignAt(chain, 10)).code(), Code::kFailedPrecondition);
  EXPECT_TRUE(v.AddCheckpoint(SignAt(chain, 20)).ok());
  auto late = v.Finish();
  EXPECT_TRUE(late.ok());
  EXPECT_EQ(late.checkpoints_late, 1u);
  EXPECT_EQ(late.checkpoints_matched, 1u);
}

TEST_F(ExportTest, ChangedFieldIsNamed) {
  auto chain = Chain(100);
  auto notes = Checkpoints(chain, Every(10, 100));
  for (auto mutate : std::vector<void (*)(Entry&)>{
           [](Entry& e) { e.actor = "mallory"; }, [](Entry& e) { e.details = "{\"i\":0}"; },
           [](Entry& e) { e.time_us += 1; }, [](Entry& e) { e.outcome = "denied"; },
           [](Entry& e) { e.idempotency_key = ""; }, [](Entry& e) { e.entry_hash[0] ^= 1; }}) {
    auto tampered = chain;
    mutate(tampered[41]);
    ExpectFailure(Verify(tampered, notes), Failure::kEntryHashMismatch, 42, 42);
  }
  auto tampered = chain;
  tampered[41].prev_hash[5] ^= 1;
  ExpectFailure(Verify(tampered, notes), Failure::kPrevHashMismatch, 42, 42);
}

TEST_F(ExportTest, DeletedAndReorderedEntriesAreNamed) {
  auto chain = Chain(100);
  auto notes = Checkpoints(chain, Every(10, 100));
  auto deleted = chain;
  deleted.erase(deleted.begin() + 41);
  ExpectFailure(Verify(deleted, notes), Failure::kSeqGap, 42, 42);
  auto reordered = chain;
  std::swap(reordered[41], reordered[42]);
  ExpectFailure(Verify(reordered, notes), Failure::kSeqGap, 42, 42);
  auto first_gone = chain;
  first_gone.erase(first_gone.begin());
  ExpectFailure(Verify(first_gone, notes), Failure::kSeqGap, 1, 1);
}

TEST_F(ExportTest, TruncatedTailIsCaughtByALaterCheckpoint) {
  auto chain = Chain(100);
  auto notes = Checkpoints(chain, Every(10, 100));
  auto truncated = chain;
  truncated.resize(95);
  ExpectFailure(Verify(truncated, notes), Failure::kCheckpointBeyondEnd, 96, 100);
  truncated.resize(0);
  ExpectFailure(Verify(truncated, notes), Failure::kCheckpointBeyondEnd, 1, 10);
}

TEST_F(ExportTest, RecomputedChainIsCaughtByCheckpoints) {
  auto chain = Chain(100);
  // Checkpoints every 10 entries: the suspect span is between the last matching one and the first
  // that does not.
  auto sparse = Checkpoints(chain, Every(10, 100));
  // Checkpoints after every entry (one per flush): the exact entry.
  auto dense = Checkpoints(chain, Every(1, 100));

  auto changed = chain;
  changed[41].actor = "mallory";
  Recompute(changed);
  ExpectFailure(Verify(changed, sparse), Failure::kCheckpointMismatch, 41, 50);
  ExpectFailure(Verify(changed, dense), Failure::kCheckpointMismatch, 42, 42);

  auto deleted = chain;
  deleted.erase(deleted.begin() + 41);
  Recompute(deleted);
  ExpectFailure(Verify(deleted, dense), Failure::kCheckpointMismatch, 42, 42);

  auto reordered = chain;
  std::swap(reordered[41], reordered[42]);
  Recompute(reordered);
  ExpectFailure(Verify(reordered, dense), Failure::kCheckpointMismatch, 42, 42);

  auto inserted = chain;
  inserted.insert(inserted.begin() + 41, chain[5]);
  inserted[41].org = "acme";
  Recompute(inserted);
  ExpectFailure(Verify(inserted, dense), Failure::kCheckpointMismatch, 42, 42);

  // Recomputed and truncated before the change is signed: only the tail check can tell.
  auto cut = chain;
  cut.resize(41);
  Recompute(cut);
  ExpectFailure(Verify(cut, sparse), Failure::kCheckpointBeyondEnd, 42, 50);

  // A checkpoint whose chain head matches but root does not (a rewritten Merkle frontier only).
  Checkpoint c{CheckpointOrigin("acme"), 100, LeafHash("x"), chain[99].entry_hash, 1798096600000000};
  auto r = Verify(chain, {SignCheckpoint(c, kKeyName, *key_).value()});
  ExpectFailure(r, Failure::kCheckpointMismatch, 1, 100);
  EXPECT_NE(r.reason.find("Merkle root differs"), std::string::npos) << r.reason;
}

TEST_F(ExportTest, BadCheckpointsAreReported) {
  auto chain = Chain(20);
  auto note = SignAt(chain, 10);
  std::string forged = note;
  forged[forged.find("\n10\n") + 2] = '1';  // size 11 instead of 10
  ExpectFailure(Verify(chain, {forged}), Failure::kCheckpointSignature, 11, 11);
  // Signed by a key we do not trust.
  auto other = crypto::Ed25519PrivateKey::Generate().value();
  CompactRange range;
  Checkpoint c{CheckpointOrigin("acme"), 0, EmptyTreeHash(), kGenesisHash, 1798096600000000};
  ExpectFailure(Verify(chain, {SignCheckpoint(c, kKeyName, other).value()}), Failure::kCheckpointSignature, 0,
                0);
  // Another organisation's checkpoint.
  c.origin = CheckpointOrigin("other");
  auto r = Verify(chain, {SignCheckpoint(c, kKeyName, *key_).value()});
  EXPECT_EQ(r.failure, Failure::kMalformed);
  // Two signed checkpoints at one size that disagree.
  auto changed = chain;
  changed[3].actor = "x";
  Recompute(changed);
  ExpectFailure(Verify(chain, {SignAt(chain, 10), SignAt(changed, 10)}), Failure::kCheckpointMismatch, 10,
                10);
}

TEST_F(ExportTest, RetainedSuffixVerifies) {
  auto chain = Chain(100);
  auto notes = Checkpoints(chain, Every(10, 100));
  ExportHeader h;
  h.org = "acme";
  h.first_seq = 51;
  h.prev_hash = chain[49].entry_hash;
  for (int i = 0; i < 50; ++i) h.frontier.Append(LeafHash(CanonicalEntry(chain[i])));
  std::vector<Entry> suffix(chain.begin() + 50, chain.end());
  auto v = Verifier::Create(h, keys_).value();
  for (const auto& n : notes) ASSERT_TRUE(v.AddCheckpoint(n).ok());
  for (const auto& e : suffix) ASSERT_TRUE(v.Add(e).ok());
  auto r = v.Finish();
  EXPECT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.entries_verified, 50u);
  EXPECT_EQ(r.checkpoints_matched, 6u);  // 50 (against the header) and 60..100
  EXPECT_EQ(r.checkpoints_before_range, 4u);
  // A header whose frontier was rewritten fails at the checkpoint at its own size.
  ExportHeader bad = h;
  auto hashes = bad.frontier.hashes();
  hashes[0][0] ^= 1;
  bad.frontier = CompactRange::FromHashes(50, hashes).value();
  auto v2 = Verifier::Create(bad, keys_).value();
  EXPECT_FALSE(v2.AddCheckpoint(notes[4]).ok());
  ExpectFailure(v2.Finish(), Failure::kCheckpointMismatch, 50, 50);
  // The file form of the same.
  auto path = WriteFile(suffix, notes, h);
  auto fr = VerifyExportFile(path, keys_).value();
  EXPECT_TRUE(fr.ok()) << fr.reason;
  EXPECT_EQ(fr.entries_verified, 50u);
}

TEST_F(ExportTest, LinesRoundTrip) {
  auto chain = Chain(3);
  for (const auto& e : chain) {
    auto line = ParseExportLine(FormatEntryLine(e));
    ASSERT_TRUE(line.ok()) << line.status().ToString();
    EXPECT_EQ(line->kind, ExportLine::Kind::kEntry);
    EXPECT_EQ(line->entry, e);
  }
  ExportHeader h;
  h.org = "acme";
  h.first_seq = 4;
  h.prev_hash = chain[2].entry_hash;
  for (const auto& e : chain) h.frontier.Append(LeafHash(CanonicalEntry(e)));
  auto hl = ParseExportLine(FormatHeaderLine(h));
  ASSERT_TRUE(hl.ok()) << hl.status().ToString();
  EXPECT_EQ(hl->kind, ExportLine::Kind::kHeader);
  EXPECT_EQ(hl->header, h);
  auto note = SignAt(chain, 3);
  auto cl = ParseExportLine(FormatCheckpointLine(note));
  ASSERT_TRUE(cl.ok());
  EXPECT_EQ(cl->checkpoint, note);
  // Whitespace and member order do not matter to the parser; details come back canonical.
  auto loose = ParseExportLine(
      " { \"entry_hash\":\"" + HashToHex(chain[0].entry_hash) + "\", \"prev_hash\":\"" +
      HashToHex(kGenesisHash) +
      "\",\"seq\":1,\"time\":\"2026-12-24T07:15:47.001000Z\",\"org\":\"acme\",\"actor\":\"user:1\","
      "\"action\":\"policy.publish\",\"target\":\"thing/1\",\"outcome\":\"ok\",\"details\":{ \"note\": "
      "\"n\\u00e9\", "
      "\"i\": 1.0 },\"idempotency_key\":\"key-1\" } ");
  ASSERT_TRUE(loose.ok()) << loose.status().ToString();
  EXPECT_EQ(loose->entry, chain[0]);
}

TEST_F(ExportTest, BadLinesSayWhatIsWrong) {
  const std::string entry = FormatEntryLine(Chain(1)[0]);
  auto replace = [&](std::string_view from, std::string_view to) {
    std::string s = entry;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const std::pair<std::string, const char*> cases[] = {
      {"", "expected a JSON object"},
      {"[]", "expected a JSON object"},
      {replace("\"seq\":1", "\"seq\":1.5"), "\"seq\": expected a non-negative integer"},
      {replace("\"seq\":1", "\"seq\":-1"), "\"seq\": expected a non-negative integer"},
      {replace("\"seq\":1", "\"seq\":\"1\""), "\"seq\": expected a non-negative integer"},
      {replace("\"seq\":1", "\"seq\":1,\"seq\":2"), "duplicate member name \"seq\""},
      {replace("\"seq\":1", "\"sequence\":1"), "\"sequence\": unknown member"},
      {replace(",\"outcome\":\"ok\"", ""), "\"outcome\": missing"},
      {replace("\"org\":\"acme\"", "\"org\":\"ACME\""), "org:"},
      {replace("\"time\":\"2026", "\"time\":\"2026x"), "\"time\":"},
      {replace("\"details\":{", "\"details\":[{"), "(in /details)"},
      {replace("\"prev_hash\":\"00", "\"prev_hash\":\"0"), "\"prev_hash\": expected 64 lower-case hex"},
      {replace("\"actor\":\"user:1\"", "\"actor\":\"\""), "actor:"},
  };
  for (const auto& [line, says] : cases) {
    auto r = ParseExportLine(line);
    ASSERT_FALSE(r.ok()) << line;
    EXPECT_NE(r.status().message().find(says), std::string::npos) << line << " -> " << r.status().message();
  }
}

TEST_F(ExportTest, FileVerificationFindsTamperingAndNamesTheLine) {
  auto chain = Chain(50);
  auto notes = Checkpoints(chain, Every(10, 50));
  auto path = WriteFile(chain, notes);
  auto ok = VerifyExportFile(path, keys_);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(ok->ok()) << ok->reason;
  EXPECT_EQ(ok->entries_verified, 50u);
  EXPECT_EQ(ok->checkpoints_matched, 5u);

  // Edit the file's text as an attacker would.
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  auto write = [&](const std::vector<std::string>& ls) {
    const std::string p = dir_ + "/edited" + std::to_string(files_++);
    std::ofstream out(p);
    for (const auto& l : ls) out << l << "\n";
    return p;
  };
  auto edited = lines;
  edited[21].replace(edited[21].find("user:"), 5, "USER:");  // entry 21
  ExpectFailure(VerifyExportFile(write(edited), keys_).value(), Failure::kEntryHashMismatch, 21, 21);
  edited = lines;
  edited.erase(edited.begin() + 21);
  ExpectFailure(VerifyExportFile(write(edited), keys_).value(), Failure::kSeqGap, 21, 21);
  edited = lines;
  edited[33] = "{\"seq\":33,";
  auto bad = VerifyExportFile(write(edited), keys_).value();
  ExpectFailure(bad, Failure::kMalformed, 33, 33);
  EXPECT_NE(bad.reason.find("line 34"), std::string::npos) << bad.reason;
  edited = lines;
  edited.erase(edited.begin() + 46, edited.begin() + 51);  // entries 46..50
  ExpectFailure(VerifyExportFile(write(edited), keys_).value(), Failure::kCheckpointBeyondEnd, 46, 50);
  // Checkpoints may come before the entries as well.
  edited = lines;
  std::rotate(edited.begin() + 1, edited.begin() + 51, edited.end());
  auto moved = VerifyExportFile(write(edited), keys_).value();
  EXPECT_TRUE(moved.ok()) << moved.reason;
  EXPECT_EQ(moved.checkpoints_matched, 5u);
  // A line over the limit is reported, not read without end.
  edited = lines;
  edited.insert(edited.begin() + 10, std::string(kMaxExportLineBytes + 10, ' '));
  auto overlong = VerifyExportFile(write(edited), keys_).value();
  ExpectFailure(overlong, Failure::kMalformed, 10, 10);
  EXPECT_NE(overlong.reason.find("line 11: export line: 4194314 bytes is over the limit"), std::string::npos)
      << overlong.reason;
  edited[10] = std::string(3 * kMaxExportLineBytes, ' ');  // the reader stops before the newline
  overlong = VerifyExportFile(write(edited), keys_).value();
  ExpectFailure(overlong, Failure::kMalformed, 10, 10);
  EXPECT_NE(overlong.reason.find("line 11 is longer than"), std::string::npos) << overlong.reason;
  // Checkpoints kept elsewhere catch a truncation the file's own checkpoints do not cover.
  edited = lines;
  edited.erase(edited.begin() + 41, edited.begin() + 51);  // entries 41..50
  edited.erase(edited.begin() + 45);                       // the checkpoint at 50
  auto path2 = write(edited);
  EXPECT_TRUE(VerifyExportFile(path2, keys_).value().ok());
  ExpectFailure(VerifyExportFile(path2, keys_, {SignAt(chain, 45)}).value(), Failure::kCheckpointBeyondEnd,
                41, 45);
  // Not an export at all.
  EXPECT_EQ(VerifyExportFile(write({"hello"}), keys_).value().failure, Failure::kMalformed);
  EXPECT_EQ(VerifyExportFile(write({}), keys_).value().failure, Failure::kMalformed);
  EXPECT_EQ(VerifyExportFile(dir_ + "/missing", keys_).status().code(), Code::kNotFound);
}

TEST_F(ExportTest, WriterToFd) {
  auto chain = Chain(5);
  const std::string path = dir_ + "/fd.ndjson";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  {
    ExportWriter w(fd);
    EXPECT_EQ(w.WriteEntry(chain[0]).code(), Code::kFailedPrecondition);
    ExportHeader h;
    h.org = "acme";
    ASSERT_TRUE(w.WriteHeader(h).ok());
    for (const auto& e : chain) ASSERT_TRUE(w.WriteEntry(e).ok());
    ASSERT_TRUE(w.WriteCheckpoint(SignAt(chain, 5)).ok());
    ASSERT_TRUE(w.Finish().ok());
  }
  ::close(fd);
  auto r = VerifyExportFile(path, keys_).value();
  EXPECT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.checkpoints_matched, 1u);
  // A closed fd reports the write error.
  ExportWriter broken(fd);
  ExportHeader h;
  h.org = "acme";
  (void)broken.WriteHeader(h);
  EXPECT_FALSE(broken.Finish().ok());
}

}  // namespace
}  // namespace govern::audit
