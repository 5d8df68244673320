// RFC 9162 (Certificate Transparency 2.0) Merkle trees over an organisation's entries: the compact
// range (frontier) kept with the chain head, inclusion and consistency proofs, and which complete
// subtrees the service stores so a proof reads O(log n) rows.
//
// Leaf i of an organisation's tree is LeafHash(CanonicalEntry(entry with seq i+1)). Hashes follow RFC
// 9162 section 2.1.1: MTH({}) = SHA-256(""), MTH({d}) = SHA-256(0x00 || d), and for n > 1 with k the
// largest power of two below n, MTH(D[n]) = SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n])).
//
// Free functions are pure and thread-safe. CompactRange, MemoryTree and StoredNodeSource are values:
// one thread at a time.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "audit/entry.h"
#include "base/status.h"

namespace govern::audit {

// The hashes of the perfect subtrees that make up a tree of `size` leaves: one per set bit of size,
// largest (leftmost) first, so at most 64. Appending needs only these; so does the root.
class CompactRange {
 public:
  CompactRange() = default;  // the empty tree

  uint64_t size() const { return size_; }
  const std::vector<Hash>& hashes() const { return hashes_; }

  // Adds one leaf (a LeafHash). Cost: 1 + (number of trailing one bits of size()) NodeHash calls.
  void Append(const Hash& leaf_hash);
  // The same, and calls `completed(level, index, hash)` for every complete subtree the append completes
  // whose level is a positive multiple of `stride` (the subtrees the service stores, see
  // CompletedSubtrees), smallest first: the merges Append does anyway, so this costs nothing extra.
  // `index` is the subtree's position at its level (its first leaf is index << level).
  template <typename F>
  void Append(const Hash& leaf_hash, unsigned stride, F&& completed) {
    hashes_.push_back(leaf_hash);
    ++size_;
    uint32_t level = 0;
    for (uint64_t s = size_; (s & 1) == 0; s >>= 1) {
      const Hash right = hashes_.back();
      hashes_.pop_back();
      hashes_.back() = NodeHash(hashes_.back(), right);
      ++level;
      if (stride != 0 && level % stride == 0) completed(level, (size_ - 1) >> level, hashes_.back());
    }
  }
  // MTH of the tree so far; EmptyTreeHash() for size 0.
  Hash Root() const;

  // Bytes for a bytea column: 8-byte big-endian size, then the hashes in order (32 bytes each).
  std::string Encode() const;
  // Refuses anything but Encode's output shape (length 8 + 32 * popcount(size)): kInvalidArgument.
  static Result<CompactRange> Decode(std::string_view bytes);
  // From a size and its hashes (as the export header carries them); checks the count.
  static Result<CompactRange> FromHashes(uint64_t size, std::vector<Hash> hashes);

  friend bool operator==(const CompactRange&, const CompactRange&) = default;

 private:
  uint64_t size_ = 0;
  std::vector<Hash> hashes_;
};

// Where proofs get their subtree hashes from.
class NodeSource {
 public:
  virtual ~NodeSource() = default;
  // MTH of leaves [start, start + size), size >= 1. The proof functions ask only for ranges that lie
  // inside the tree they were given; a range beyond what the source holds is kOutOfRange.
  virtual Result<Hash> Subtree(uint64_t start, uint64_t size) = 0;
};

// All leaf hashes in memory; Subtree recomputes from the leaves (O(size)). For tests, export
// verification and small trees.
class MemoryTree : public NodeSource {
 public:
  MemoryTree() = default;
  explicit MemoryTree(std::vector<Hash> leaves) : leaves_(std::move(leaves)) {}

  void Append(const Hash& leaf_hash) { leaves_.push_back(leaf_hash); }
  uint64_t size() const { return leaves_.size(); }
  const std::vector<Hash>& leaves() const { return leaves_; }
  // MTH of the first `size` leaves (size <= this->size()).
  Result<Hash> Root(uint64_t size) const;

  Result<Hash> Subtree(uint64_t start, uint64_t size) override;

 private:
  std::vector<Hash> leaves_;
};

// PATH(index, D[tree_size]) of RFC 9162 section 2.1.3.1, deepest sibling first.
// kInvalidArgument when index >= tree_size.
Result<std::vector<Hash>> InclusionProof(NodeSource& source, uint64_t index, uint64_t tree_size);
// PROOF(old_size, D[new_size]) of RFC 9162 section 2.1.4.1. Empty when old_size is 0 or equals
// new_size; kInvalidArgument when old_size > new_size.
Result<std::vector<Hash>> ConsistencyProof(NodeSource& source, uint64_t old_size, uint64_t new_size);

// RFC 9162 section 2.1.3.2. Ok, or kDataLoss ("inclusion proof does not verify") / kInvalidArgument
// (index out of range, proof of the wrong length).
Status VerifyInclusion(const Hash& leaf_hash, uint64_t index, uint64_t tree_size, std::span<const Hash> proof,
                       const Hash& root);
// RFC 9162 section 2.1.4.2, plus the cases it leaves out: old_size == new_size needs an empty proof
// and equal roots; old_size == 0 needs an empty proof and old_root == EmptyTreeHash() (an empty tree
// is consistent with any tree).
Status VerifyConsistency(uint64_t old_size, uint64_t new_size, const Hash& old_root, const Hash& new_root,
                         std::span<const Hash> proof);

// ---- Stored subtrees ------------------------------------------------------------------------------
//
// The service stores, besides each entry's leaf hash, the hash of every complete aligned subtree whose
// level (log2 of its leaf count) is a positive multiple of `stride`: with stride 4, subtrees of 16,
// 256, 4096, ... leaves, one row per 16 leaves in all (1/16 + 1/256 + ... < 1/15 rows per entry). Any
// subtree hash is then composed from at most 2^stride - 1 stored hashes per level, so a proof reads
// O(stride-bounded log n) rows. The stride is part of the service's storage format: choose it once.
inline constexpr unsigned kDefaultStride = 4;

// A node of the tree: the complete subtree of 2^level leaves starting at leaf `start` (a multiple of
// 2^level). Level 0 is a leaf.
struct NodeId {
  uint64_t start = 0;
  uint32_t level = 0;
  friend auto operator<=>(const NodeId&, const NodeId&) = default;
};

// The complete subtrees at levels k > 0 with k % stride == 0 that a tree grown from old_size to
// new_size leaves completed (end in (old_size, new_size]), as (start, level), in order of completion
// (by end, then by level). The service stores their hashes in the same transaction as the entries.
std::vector<std::pair<uint64_t, uint32_t>> CompletedSubtrees(uint64_t old_size, uint64_t new_size,
                                                             unsigned stride);

// The stored nodes (leaves, and levels that are positive multiples of stride) whose hashes compose
// MTH of leaves [start, start + size), appended to `out` in left-to-right order.
void StoredNodesFor(uint64_t start, uint64_t size, unsigned stride, std::vector<NodeId>& out);
// Every stored node an inclusion (or consistency) proof needs, sorted and without duplicates, so the
// service can read them all in one query and hand them to StoredNodeSource::Add before proving.
Result<std::vector<NodeId>> InclusionProofNodes(uint64_t index, uint64_t tree_size, unsigned stride);
Result<std::vector<NodeId>> ConsistencyProofNodes(uint64_t old_size, uint64_t new_size, unsigned stride);

// A NodeSource that composes stored hashes. Hashes already added are used first; for any others it
// calls `fetch` once per Subtree call with the missing ids (in StoredNodesFor order), which must return
// one hash per id, in order (or an error, passed on). With no fetch, a missing id is kNotFound.
class StoredNodeSource : public NodeSource {
 public:
  using Fetch = std::function<Result<std::vector<Hash>>(std::span<const NodeId>)>;

  explicit StoredNodeSource(unsigned stride, Fetch fetch = nullptr)
      : stride_(stride), fetch_(std::move(fetch)) {}

  void Add(NodeId id, const Hash& hash) { known_[id] = hash; }
  Result<Hash> Subtree(uint64_t start, uint64_t size) override;

 private:
  unsigned stride_;
  Fetch fetch_;
  std::map<NodeId, Hash> known_;
};

}  // namespace govern::audit
