// The hashing rules: compact range against a plain RFC 9162 tree, proofs for every (leaf, size) pair of
// small trees through a node source that stores only what the service stores, checkpoints.
#include "services/audit/chain.h"

#include <gtest/gtest.h>

#include <map>

namespace govern::audit_service {
namespace {

Hash Leaf(uint64_t i) { return LeafHash("leaf " + std::to_string(i)); }

// RFC 9162 MTH, straight from the definition.
Hash Mth(uint64_t start, uint64_t end) {
  uint64_t n = end - start;
  if (n == 1) return Leaf(start);
  uint64_t k = 1;
  while (k * 2 < n) k *= 2;
  return NodeHash(Mth(start, start + k), Mth(start + k, end));
}

// What the service stores: leaves, and the subtrees at stride levels that Append reports.
struct Store {
  std::map<std::pair<int, uint64_t>, Hash> nodes;
  CompactRange range;
  void Add(uint64_t i) {
    nodes[{0, i}] = Leaf(i);
    range.Append(Leaf(i), [&](int level, uint64_t index, const Hash& h) {
      if (level % kNodeStride == 0) nodes[{level, index}] = h;
    });
  }
  NodeSource Source() {
    return [this](int level, uint64_t index) -> std::optional<Hash> {
      auto it = nodes.find({level, index});
      if (it == nodes.end()) return std::nullopt;
      return it->second;
    };
  }
};

TEST(ChainTest, CompactRangeMatchesTheDefinition) {
  Store s;
  for (uint64_t n = 1; n <= 70; ++n) {
    s.Add(n - 1);
    EXPECT_EQ(s.range.Root(), Mth(0, n)) << n;
    auto again = CompactRange::Decode(n, s.range.Encode());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->Root(), s.range.Root());
    EXPECT_EQ(*TreeRoot(n, s.Source()), Mth(0, n)) << n;
  }
  EXPECT_FALSE(CompactRange::Decode(3, std::string(32, 'x')).ok());
  // Rebuilt from stored nodes alone, without leaves below a multiple of 16 (what retention keeps).
  for (uint64_t n : {16u, 32u, 48u, 64u}) {
    Store partial;
    for (uint64_t i = 0; i < 70; ++i) partial.Add(i);
    for (uint64_t i = 0; i < n; ++i) partial.nodes.erase({0, i});
    auto cr = CompactRangeAt(n, partial.Source());
    ASSERT_TRUE(cr.ok()) << n << ": " << cr.status().message();
    EXPECT_EQ(cr->Root(), Mth(0, n));
    for (const NodeRef& r : CompactRangeNodes(n)) EXPECT_GE(r.level, kNodeStride);
  }
}

TEST(ChainTest, ProofsVerifyAndNeedOnlyStoredNodes) {
  Store s;
  for (uint64_t i = 0; i < 40; ++i) s.Add(i);
  for (uint64_t n = 1; n <= 40; ++n) {
    Hash root = Mth(0, n);
    for (uint64_t m = 0; m < n; ++m) {
      auto proof = InclusionProof(m, n, s.Source());
      ASSERT_TRUE(proof.ok()) << proof.status().message();
      EXPECT_TRUE(VerifyInclusion(m, n, Leaf(m), *proof, root)) << m << "/" << n;
      EXPECT_FALSE(VerifyInclusion(m, n, Leaf(m + 1), *proof, root));
      for (const NodeRef& r : InclusionProofNodes(m, n)) EXPECT_TRUE(r.level % kNodeStride == 0);
    }
    for (uint64_t m = 1; m <= n; ++m) {
      auto proof = ConsistencyProof(m, n, s.Source());
      ASSERT_TRUE(proof.ok());
      EXPECT_TRUE(VerifyConsistency(m, n, Mth(0, m), root, *proof)) << m << "->" << n;
      if (m < n) {
        EXPECT_FALSE(VerifyConsistency(m, n, Mth(0, m), Mth(0, n - 1), *proof));
      }
    }
  }
}

TEST(ChainTest, ChainAndCanonicalEncodingCoverEveryField) {
  EntryFields e{.org = "acme",
                .seq = 1,
                .idempotency_key = "k",
                .time_micros = 5,
                .actor = "a",
                .action = "b",
                .target = "c",
                .outcome = "d",
                .details = "{}"};
  std::string base = CanonicalEncoding(e);
  for (int f = 0; f < 9; ++f) {
    EntryFields x = e;
    switch (f) {
      case 0:
        x.org = "acmf";
        break;
      case 1:
        x.seq = 2;
        break;
      case 2:
        x.idempotency_key = "l";
        break;
      case 3:
        x.time_micros = 6;
        break;
      case 4:
        x.actor = "ab";
        x.action = "";
        break;  // moved bytes between fields
      case 5:
        x.action = "x";
        break;
      case 6:
        x.target = "x";
        break;
      case 7:
        x.outcome = "x";
        break;
      case 8:
        x.details = "{\"a\":1}";
        break;
    }
    EXPECT_NE(CanonicalEncoding(x), base) << f;
  }
  EXPECT_NE(ChainHash(ZeroHash(), base), ChainHash(LeafHash("x"), base));
}

TEST(ChainTest, CheckpointsSignAndOpen) {
  auto signer = CheckpointSigner::FromSeed(std::string(32, '\x07'));
  ASSERT_TRUE(signer.ok());
  Checkpoint c{.org = "acme", .size = 12, .root = Mth(0, 12), .chain_head = Leaf(3), .time_unix = 1700000000};
  auto note = signer->Sign(c);
  ASSERT_TRUE(note.ok());
  auto opened = OpenCheckpoint(*note, signer->verifier_key());
  ASSERT_TRUE(opened.ok()) << opened.status().message() << "\n" << *note;
  EXPECT_EQ(opened->org, "acme");
  EXPECT_EQ(opened->size, 12u);
  EXPECT_EQ(opened->root, c.root);
  EXPECT_EQ(opened->chain_head, c.chain_head);
  EXPECT_EQ(opened->time_unix, c.time_unix);

  std::string forged = *note;
  forged[forged.find("\n12\n") + 2] = '3';  // size 13
  EXPECT_EQ(OpenCheckpoint(forged, signer->verifier_key()).status().code(), Code::kUnauthenticated);
  auto other = CheckpointSigner::FromSeed(std::string(32, '\x08'));
  EXPECT_FALSE(OpenCheckpoint(*note, other->verifier_key()).ok());
  EXPECT_FALSE(OpenCheckpoint("garbage", signer->verifier_key()).ok());
}

}  // namespace
}  // namespace govern::audit_service
