// Merkle tree: RFC 6962/9162 reference vectors (from the Certificate Transparency test suite), and
// every proof for every pair of sizes up to 70 against a brute-force tree.
#include "audit/merkle.h"

#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <vector>

#include "crypto/bytes.h"
#include "crypto/encoding.h"

namespace govern::audit {
namespace {

Hash H(std::string_view hex) { return HashFromHex(hex).value(); }

std::vector<Hash> CtLeaves() {
  const char* data[] = {
      "", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"};
  std::vector<Hash> out;
  for (const char* d : data) {
    auto bytes = crypto::HexDecode(d).value();
    out.push_back(LeafHash(crypto::AsString(bytes)));
  }
  return out;
}

const char* kCtRoots[] = {
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
};

// The definition of RFC 9162 section 2.1.1, written as plainly as possible.
Hash Mth(const std::vector<Hash>& d, size_t begin, size_t end) {
  const size_t n = end - begin;
  if (n == 0) return EmptyTreeHash();
  if (n == 1) return d[begin];
  size_t k = 1;
  while (k * 2 < n) k *= 2;
  return NodeHash(Mth(d, begin, begin + k), Mth(d, begin + k, end));
}

std::vector<Hash> Leaves(size_t n) {
  std::vector<Hash> out;
  for (size_t i = 0; i < n; ++i) out.push_back(LeafHash("leaf " + std::to_string(i)));
  return out;
}

TEST(MerkleTest, EmptyTreeIsSha256OfNothing) {
  EXPECT_EQ(HashToHex(EmptyTreeHash()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(CompactRange().Root(), EmptyTreeHash());
}

TEST(MerkleTest, CtReferenceRoots) {
  auto leaves = CtLeaves();
  CompactRange range;
  MemoryTree tree;
  for (size_t i = 0; i < leaves.size(); ++i) {
    range.Append(leaves[i]);
    tree.Append(leaves[i]);
    EXPECT_EQ(HashToHex(range.Root()), kCtRoots[i]) << "size " << i + 1;
    EXPECT_EQ(HashToHex(tree.Root(i + 1).value()), kCtRoots[i]);
  }
}

TEST(MerkleTest, CtReferenceInclusionProofs) {
  struct Case {
    uint64_t index, size;
    std::vector<const char*> path;
  };
  const Case cases[] = {
      {0, 1, {}},
      {0,
       8,
       {"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"}},
      {5,
       8,
       {"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}},
      {2, 3, {"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"}},
      {1,
       5,
       {"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"}},
  };
  auto leaves = CtLeaves();
  MemoryTree tree(leaves);
  for (const Case& c : cases) {
    std::vector<Hash> want;
    for (const char* p : c.path) want.push_back(H(p));
    auto proof = InclusionProof(tree, c.index, c.size);
    ASSERT_TRUE(proof.ok()) << proof.status().ToString();
    EXPECT_EQ(*proof, want) << c.index << "/" << c.size;
    EXPECT_TRUE(VerifyInclusion(leaves[c.index], c.index, c.size, want, H(kCtRoots[c.size - 1])).ok());
  }
}

TEST(MerkleTest, CtReferenceConsistencyProofs) {
  struct Case {
    uint64_t old_size, new_size;
    std::vector<const char*> path;
  };
  const Case cases[] = {
      {1, 1, {}},
      {1,
       8,
       {"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"}},
      {6,
       8,
       {"0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
        "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}},
      {2,
       5,
       {"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"}},
  };
  MemoryTree tree(CtLeaves());
  for (const Case& c : cases) {
    std::vector<Hash> want;
    for (const char* p : c.path) want.push_back(H(p));
    auto proof = ConsistencyProof(tree, c.old_size, c.new_size);
    ASSERT_TRUE(proof.ok()) << proof.status().ToString();
    EXPECT_EQ(*proof, want) << c.old_size << "->" << c.new_size;
    EXPECT_TRUE(VerifyConsistency(c.old_size, c.new_size, H(kCtRoots[c.old_size - 1]),
                                  H(kCtRoots[c.new_size - 1]), want)
                    .ok());
  }
}

constexpr size_t kMaxBrute = 70;

TEST(MerkleTest, CompactRangeMatchesBruteForceAndRoundTrips) {
  auto leaves = Leaves(kMaxBrute);
  CompactRange range;
  for (size_t n = 1; n <= kMaxBrute; ++n) {
    range.Append(leaves[n - 1]);
    ASSERT_EQ(range.size(), n);
    ASSERT_EQ(range.hashes().size(), static_cast<size_t>(std::popcount(n)));
    ASSERT_EQ(range.Root(), Mth(leaves, 0, n)) << n;
    auto back = CompactRange::Decode(range.Encode());
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, range);
  }
}

TEST(MerkleTest, CompactRangeDecodeRefusesWrongLengths) {
  CompactRange r;
  for (int i = 0; i < 5; ++i) r.Append(LeafHash(std::to_string(i)));
  std::string enc = r.Encode();  // size 5: two hashes
  EXPECT_FALSE(CompactRange::Decode(enc.substr(0, enc.size() - 1)).ok());
  EXPECT_FALSE(CompactRange::Decode(enc + "x").ok());
  EXPECT_FALSE(CompactRange::Decode("").ok());
  EXPECT_FALSE(CompactRange::Decode(std::string(7, '\0')).ok());
  EXPECT_TRUE(CompactRange::Decode(std::string(8, '\0')).ok());
  std::string huge(8, '\xff');  // size 2^64-1 would need 64 hashes
  EXPECT_FALSE(CompactRange::Decode(huge).ok());
  EXPECT_FALSE(CompactRange::FromHashes(3, {Hash{}}).ok());
}

TEST(MerkleTest, EveryInclusionProofUpTo70) {
  auto leaves = Leaves(kMaxBrute);
  MemoryTree tree(leaves);
  for (uint64_t n = 1; n <= kMaxBrute; ++n) {
    const Hash root = Mth(leaves, 0, n);
    for (uint64_t i = 0; i < n; ++i) {
      auto proof = InclusionProof(tree, i, n);
      ASSERT_TRUE(proof.ok());
      ASSERT_TRUE(VerifyInclusion(leaves[i], i, n, *proof, root).ok()) << i << "/" << n;
      // Every wrong input fails.
      if (n > 1) {
        EXPECT_FALSE(VerifyInclusion(leaves[(i + 1) % n], i, n, *proof, root).ok());
        EXPECT_FALSE(VerifyInclusion(leaves[i], (i + 1) % n, n, *proof, root).ok());
      }
      EXPECT_FALSE(VerifyInclusion(leaves[i], i, n, *proof, LeafHash("x")).ok());
      if (!proof->empty()) {
        auto shorter = *proof;
        shorter.pop_back();
        EXPECT_FALSE(VerifyInclusion(leaves[i], i, n, shorter, root).ok());
        auto flipped = *proof;
        flipped[0][0] ^= 1;
        EXPECT_FALSE(VerifyInclusion(leaves[i], i, n, flipped, root).ok());
      }
      auto longer = *proof;
      longer.push_back(Hash{});
      EXPECT_FALSE(VerifyInclusion(leaves[i], i, n, longer, root).ok());
    }
  }
  EXPECT_FALSE(InclusionProof(tree, 5, 5).ok());
  EXPECT_FALSE(VerifyInclusion(leaves[0], 5, 5, {}, leaves[0]).ok());
}

TEST(MerkleTest, EveryConsistencyProofUpTo70) {
  auto leaves = Leaves(kMaxBrute);
  MemoryTree tree(leaves);
  for (uint64_t n = 1; n <= kMaxBrute; ++n) {
    const Hash new_root = Mth(leaves, 0, n);
    for (uint64_t m = 0; m <= n; ++m) {
      const Hash old_root = Mth(leaves, 0, m);
      auto proof = ConsistencyProof(tree, m, n);
      ASSERT_TRUE(proof.ok());
      ASSERT_TRUE(VerifyConsistency(m, n, old_root, new_root, *proof).ok()) << m << "->" << n;
      if (m == 0) {
        EXPECT_FALSE(VerifyConsistency(0, n, LeafHash("x"), new_root, *proof).ok());
        continue;
      }
      if (m < n) {
        EXPECT_FALSE(VerifyConsistency(m, n, LeafHash("x"), new_root, *proof).ok());
        EXPECT_FALSE(VerifyConsistency(m, n, old_root, LeafHash("x"), *proof).ok());
        auto flipped = *proof;
        flipped.back()[31] ^= 1;
        EXPECT_FALSE(VerifyConsistency(m, n, old_root, new_root, flipped).ok());
        auto longer = *proof;
        longer.push_back(Hash{});
        EXPECT_FALSE(VerifyConsistency(m, n, old_root, new_root, longer).ok());
        auto shorter = *proof;
        shorter.pop_back();
        EXPECT_FALSE(VerifyConsistency(m, n, old_root, new_root, shorter).ok());
      } else {
        EXPECT_FALSE(VerifyConsistency(m, n, old_root, LeafHash("x"), *proof).ok());
        EXPECT_FALSE(VerifyConsistency(m, n, old_root, new_root, std::vector<Hash>{Hash{}}).ok());
      }
    }
  }
  EXPECT_FALSE(ConsistencyProof(tree, 5, 4).ok());
}

TEST(MerkleTest, CompletedSubtreesAreExactlyTheNewlyCompleteOnes) {
  for (unsigned stride : {1u, 2u, 3u, 4u}) {
    // Growing one leaf at a time and in uneven batches lists every stored subtree exactly once.
    for (uint64_t batch : {1u, 3u, 7u, 16u, 33u}) {
      std::vector<std::pair<uint64_t, uint32_t>> all;
      for (uint64_t size = 0; size < 300; size += batch) {
        auto got = CompletedSubtrees(size, size + batch, stride);
        for (auto [start, level] : got) {
          const uint64_t end = start + (uint64_t{1} << level);
          EXPECT_GT(end, size);
          EXPECT_LE(end, size + batch);
          EXPECT_EQ(start % (uint64_t{1} << level), 0u);
          EXPECT_EQ(level % stride, 0u);
          EXPECT_GT(level, 0u);
        }
        all.insert(all.end(), got.begin(), got.end());
      }
      const uint64_t final_size = (300 + batch - 1) / batch * batch;
      size_t expected = 0;
      for (unsigned level = stride; level < 64; level += stride) expected += final_size >> level;
      EXPECT_EQ(all.size(), expected) << "stride " << stride << " batch " << batch;
    }
  }
  EXPECT_EQ(CompletedSubtrees(15, 16, 4), (std::vector<std::pair<uint64_t, uint32_t>>{{0, 4}}));
  EXPECT_EQ(CompletedSubtrees(250, 256, 4), (std::vector<std::pair<uint64_t, uint32_t>>{{240, 4}, {0, 8}}));
}

// Append's completion callback reports exactly CompletedSubtrees, in the same order, with the hashes a
// brute-force tree gives.
TEST(MerkleTest, AppendReportsTheSubtreesItCompletes) {
  for (unsigned stride : {1u, 2u, 4u}) {
    CompactRange range;
    MemoryTree tree;
    for (uint64_t n = 0; n < 600; ++n) {
      Hash leaf = LeafHash(std::to_string(n));
      tree.Append(leaf);
      std::vector<std::pair<uint64_t, uint32_t>> got;
      range.Append(leaf, stride, [&](uint32_t level, uint64_t index, const Hash& h) {
        got.emplace_back(index << level, level);
        EXPECT_EQ(h, tree.Subtree(index << level, uint64_t{1} << level).value());
      });
      EXPECT_EQ(got, CompletedSubtrees(n, n + 1, stride)) << "size " << n + 1 << " stride " << stride;
      EXPECT_EQ(range.Root(), tree.Root(n + 1).value());
    }
  }
}

// A store as the service keeps it: leaf hashes and every completed subtree at multiples of stride.
TEST(MerkleTest, StoredNodeSourceGivesTheSameProofs) {
  constexpr uint64_t kN = 300;
  auto leaves = Leaves(kN);
  MemoryTree tree(leaves);
  for (unsigned stride : {1u, 2u, 4u}) {
    std::map<NodeId, Hash> db;
    for (uint64_t i = 0; i < kN; ++i) db[{i, 0}] = leaves[i];
    for (auto [start, level] : CompletedSubtrees(0, kN, stride)) {
      db[{start, level}] = tree.Subtree(start, uint64_t{1} << level).value();
    }
    int fetches = 0;
    StoredNodeSource source(stride, [&](std::span<const NodeId> ids) -> Result<std::vector<Hash>> {
      ++fetches;
      std::vector<Hash> out;
      for (const NodeId& id : ids) {
        auto it = db.find(id);
        if (it == db.end()) return NotFound("no node");
        out.push_back(it->second);
      }
      return out;
    });
    for (uint64_t n : {1u, 2u, 17u, 255u, 256u, 257u, 300u}) {
      for (uint64_t i : {uint64_t{0}, n / 3, n - 1}) {
        auto want = InclusionProof(tree, i, n).value();
        auto got = InclusionProof(source, i, n);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ(*got, want) << stride << " " << i << "/" << n;
        // The prefetch list covers it: a source without fetch, given just those nodes, also works.
        StoredNodeSource prefetched(stride);
        const auto ids = InclusionProofNodes(i, n, stride).value();  // not a temporary: value()&& moves
        for (const NodeId& id : ids) {
          ASSERT_TRUE(db.count(id)) << stride << " " << i << "/" << n << " " << id.start << "@" << id.level;
          prefetched.Add(id, db.at(id));
        }
        auto again = InclusionProof(prefetched, i, n);
        ASSERT_TRUE(again.ok()) << again.status().ToString();
        EXPECT_EQ(*again, want);
      }
      for (uint64_t m : {uint64_t{1}, n / 2, n}) {
        if (m == 0) continue;
        auto want = ConsistencyProof(tree, m, n).value();
        EXPECT_EQ(ConsistencyProof(source, m, n).value(), want);
        StoredNodeSource prefetched(stride);
        const auto ids = ConsistencyProofNodes(m, n, stride).value();
        for (const NodeId& id : ids) {
          ASSERT_TRUE(db.count(id)) << stride << " " << m << "->" << n << " " << id.start << "@" << id.level;
          prefetched.Add(id, db.at(id));
        }
        EXPECT_EQ(ConsistencyProof(prefetched, m, n).value(), want);
      }
    }
    EXPECT_GT(fetches, 0);
  }
  // Few rows per proof with stride 4 at a million entries.
  auto ids = InclusionProofNodes(123456, 1000000, 4).value();
  EXPECT_LT(ids.size(), 150u);
  StoredNodeSource empty(4);
  EXPECT_EQ(empty.Subtree(0, 4).status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace govern::audit
