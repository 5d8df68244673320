// RFC 9162 Merkle tree hashes, proofs and their verification.
#include "audit/merkle.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace govern::audit {
namespace {

// The largest power of two strictly below n (n >= 2): RFC 9162's k.
uint64_t SplitPoint(uint64_t n) { return std::bit_floor(n - 1); }

Status InclusionPath(NodeSource& src, uint64_t m, uint64_t start, uint64_t n, std::vector<Hash>& out) {
  if (n == 1) return OkStatus();
  const uint64_t k = SplitPoint(n);
  if (m < k) {
    GOVERN_RETURN_IF_ERROR(InclusionPath(src, m, start, k, out));
    GOVERN_ASSIGN_OR_RETURN(Hash h, src.Subtree(start + k, n - k));
    out.push_back(h);
  } else {
    GOVERN_RETURN_IF_ERROR(InclusionPath(src, m - k, start + k, n - k, out));
    GOVERN_ASSIGN_OR_RETURN(Hash h, src.Subtree(start, k));
    out.push_back(h);
  }
  return OkStatus();
}

Status SubProof(NodeSource& src, uint64_t m, uint64_t start, uint64_t n, bool b, std::vector<Hash>& out) {
  if (m == n) {
    if (!b) {
      GOVERN_ASSIGN_OR_RETURN(Hash h, src.Subtree(start, n));
      out.push_back(h);
    }
    return OkStatus();
  }
  const uint64_t k = SplitPoint(n);
  if (m <= k) {
    GOVERN_RETURN_IF_ERROR(SubProof(src, m, start, k, b, out));
    GOVERN_ASSIGN_OR_RETURN(Hash h, src.Subtree(start + k, n - k));
    out.push_back(h);
  } else {
    GOVERN_RETURN_IF_ERROR(SubProof(src, m - k, start + k, n - k, false, out));
    GOVERN_ASSIGN_OR_RETURN(Hash h, src.Subtree(start, k));
    out.push_back(h);
  }
  return OkStatus();
}

Hash MthOf(const Hash* leaves, uint64_t n) {
  if (n == 1) return leaves[0];
  const uint64_t k = SplitPoint(n);
  return NodeHash(MthOf(leaves, k), MthOf(leaves + k, n - k));
}

// Walks the composition of MTH(D[start:start+n]) from stored nodes. With `ids`, records the stored
// nodes it needs; with `known`, computes the hash from them.
struct Composer {
  unsigned stride;
  std::vector<NodeId>* ids = nullptr;
  const std::map<NodeId, Hash>* known = nullptr;
  bool missing = false;

  Hash Node(uint64_t start, uint32_t level) {
    if (level == 0 || level % stride == 0) {
      NodeId id{start, level};
      if (ids) {
        ids->push_back(id);
        return {};
      }
      auto it = known->find(id);
      if (it == known->end()) {
        missing = true;
        return {};
      }
      return it->second;
    }
    const uint64_t half = uint64_t{1} << (level - 1);
    Hash l = Node(start, level - 1);
    Hash r = Node(start + half, level - 1);
    return ids ? Hash{} : NodeHash(l, r);
  }

  Hash Range(uint64_t start, uint64_t n) {
    if (std::has_single_bit(n) && start % n == 0) {
      return Node(start, static_cast<uint32_t>(std::countr_zero(n)));
    }
    const uint64_t k = SplitPoint(n);
    Hash l = Range(start, k);
    Hash r = Range(start + k, n - k);
    return ids ? Hash{} : NodeHash(l, r);
  }
};

// Records the ranges a proof asks for, answering with zeros.
class RecordingSource : public NodeSource {
 public:
  Result<Hash> Subtree(uint64_t start, uint64_t size) override {
    ranges.emplace_back(start, size);
    return Hash{};
  }
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
};

std::vector<NodeId> NodesOf(const RecordingSource& rec, unsigned stride) {
  std::vector<NodeId> ids;
  for (auto [start, size] : rec.ranges) StoredNodesFor(start, size, stride, ids);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace

// ---- CompactRange -------------------------------------------------------------------------------

void CompactRange::Append(const Hash& leaf_hash) {
  hashes_.push_back(leaf_hash);
  ++size_;
  for (uint64_t s = size_; (s & 1) == 0; s >>= 1) {
    const Hash right = hashes_.back();
    hashes_.pop_back();
    hashes_.back() = NodeHash(hashes_.back(), right);
  }
}

Hash CompactRange::Root() const {
  if (hashes_.empty()) return EmptyTreeHash();
  Hash r = hashes_.back();
  for (size_t i = hashes_.size() - 1; i-- > 0;) r = NodeHash(hashes_[i], r);
  return r;
}

std::string CompactRange::Encode() const {
  std::string out(8 + 32 * hashes_.size(), '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>(size_ >> (56 - 8 * i));
  for (size_t i = 0; i < hashes_.size(); ++i) std::memcpy(&out[8 + 32 * i], hashes_[i].data(), 32);
  return out;
}

Result<CompactRange> CompactRange::Decode(std::string_view bytes) {
  if (bytes.size() < 8) return InvalidArgument("compact range: shorter than its 8-byte size");
  uint64_t size = 0;
  for (size_t i = 0; i < 8; ++i) size = (size << 8) | static_cast<uint8_t>(bytes[i]);
  const size_t want = 8 + 32 * static_cast<size_t>(std::popcount(size));
  if (bytes.size() != want) {
    return InvalidArgument("compact range: " + std::to_string(bytes.size()) + " bytes for size " +
                           std::to_string(size) + ", expected " + std::to_string(want));
  }
  CompactRange r;
  r.size_ = size;
  r.hashes_.resize(static_cast<size_t>(std::popcount(size)));
  for (size_t i = 0; i < r.hashes_.size(); ++i) std::memcpy(r.hashes_[i].data(), &bytes[8 + 32 * i], 32);
  return r;
}

Result<CompactRange> CompactRange::FromHashes(uint64_t size, std::vector<Hash> hashes) {
  if (hashes.size() != static_cast<size_t>(std::popcount(size))) {
    return InvalidArgument("compact range: " + std::to_string(hashes.size()) + " hashes for size " +
                           std::to_string(size) + ", expected " + std::to_string(std::popcount(size)));
  }
  CompactRange r;
  r.size_ = size;
  r.hashes_ = std::move(hashes);
  return r;
}

// ---- MemoryTree ---------------------------------------------------------------------------------

Result<Hash> MemoryTree::Root(uint64_t size) const {
  if (size > leaves_.size()) return OutOfRange("tree has only " + std::to_string(leaves_.size()) + " leaves");
  if (size == 0) return EmptyTreeHash();
  return MthOf(leaves_.data(), size);
}

Result<Hash> MemoryTree::Subtree(uint64_t start, uint64_t size) {
  if (size == 0 || start > leaves_.size() || size > leaves_.size() - start) {
    return OutOfRange("subtree [" + std::to_string(start) + ", +" + std::to_string(size) +
                      ") is outside a tree of " + std::to_string(leaves_.size()) + " leaves");
  }
  return MthOf(leaves_.data() + start, size);
}

// ---- Proofs -------------------------------------------------------------------------------------

Result<std::vector<Hash>> InclusionProof(NodeSource& source, uint64_t index, uint64_t tree_size) {
  if (index >= tree_size) {
    return InvalidArgument("inclusion proof: index " + std::to_string(index) + " is not below tree size " +
                           std::to_string(tree_size));
  }
  std::vector<Hash> out;
  GOVERN_RETURN_IF_ERROR(InclusionPath(source, index, 0, tree_size, out));
  return out;
}

Result<std::vector<Hash>> ConsistencyProof(NodeSource& source, uint64_t old_size, uint64_t new_size) {
  if (old_size > new_size) {
    return InvalidArgument("consistency proof: old size " + std::to_string(old_size) + " is above new size " +
                           std::to_string(new_size));
  }
  std::vector<Hash> out;
  if (old_size == 0 || old_size == new_size) return out;
  GOVERN_RETURN_IF_ERROR(SubProof(source, old_size, 0, new_size, true, out));
  return out;
}

Status VerifyInclusion(const Hash& leaf_hash, uint64_t index, uint64_t tree_size, std::span<const Hash> proof,
                       const Hash& root) {
  if (index >= tree_size) {
    return InvalidArgument("inclusion proof: index " + std::to_string(index) + " is not below tree size " +
                           std::to_string(tree_size));
  }
  uint64_t fn = index, sn = tree_size - 1;
  Hash r = leaf_hash;
  for (const Hash& p : proof) {
    if (sn == 0) return InvalidArgument("inclusion proof: longer than the tree allows");
    if ((fn & 1) || fn == sn) {
      r = NodeHash(p, r);
      while (!(fn & 1) && fn != 0) {
        fn >>= 1;
        sn >>= 1;
      }
    } else {
      r = NodeHash(r, p);
    }
    fn >>= 1;
    sn >>= 1;
  }
  if (sn != 0) return InvalidArgument("inclusion proof: shorter than the tree needs");
  if (r != root) return DataLoss("inclusion proof does not lead to the root");
  return OkStatus();
}

Status VerifyConsistency(uint64_t old_size, uint64_t new_size, const Hash& old_root, const Hash& new_root,
                         std::span<const Hash> proof) {
  if (old_size > new_size) {
    return InvalidArgument("consistency proof: old size " + std::to_string(old_size) + " is above new size " +
                           std::to_string(new_size));
  }
  if (old_size == new_size) {
    if (!proof.empty()) return InvalidArgument("consistency proof: must be empty for equal sizes");
    if (old_root != new_root) return DataLoss("consistency proof: equal sizes with different roots");
    return OkStatus();
  }
  if (old_size == 0) {
    if (!proof.empty()) return InvalidArgument("consistency proof: must be empty from an empty tree");
    if (old_root != EmptyTreeHash()) return DataLoss("consistency proof: wrong root for the empty tree");
    return OkStatus();
  }
  if (proof.empty()) return InvalidArgument("consistency proof: empty");
  std::vector<Hash> path;
  path.reserve(proof.size() + 1);
  if (std::has_single_bit(old_size)) path.push_back(old_root);
  path.insert(path.end(), proof.begin(), proof.end());
  uint64_t fn = old_size - 1, sn = new_size - 1;
  while (fn & 1) {
    fn >>= 1;
    sn >>= 1;
  }
  Hash fr = path[0], sr = path[0];
  for (size_t i = 1; i < path.size(); ++i) {
    const Hash& c = path[i];
    if (sn == 0) return InvalidArgument("consistency proof: longer than the trees allow");
    if ((fn & 1) || fn == sn) {
      fr = NodeHash(c, fr);
      sr = NodeHash(c, sr);
      while (!(fn & 1) && fn != 0) {
        fn >>= 1;
        sn >>= 1;
      }
    } else {
      sr = NodeHash(sr, c);
    }
    fn >>= 1;
    sn >>= 1;
  }
  if (sn != 0) return InvalidArgument("consistency proof: shorter than the trees need");
  if (fr != old_root) return DataLoss("consistency proof does not lead to the old root");
  if (sr != new_root) return DataLoss("consistency proof does not lead to the new root");
  return OkStatus();
}

// ---- Stored subtrees ----------------------------------------------------------------------------

std::vector<std::pair<uint64_t, uint32_t>> CompletedSubtrees(uint64_t old_size, uint64_t new_size,
                                                             unsigned stride) {
  std::vector<std::pair<uint64_t, uint32_t>> out;
  if (stride == 0 || new_size <= old_size) return out;
  for (unsigned level = stride; level < 64; level += stride) {
    const uint64_t width = uint64_t{1} << level;
    if (width > new_size) break;
    for (uint64_t end = (old_size / width + 1) * width; end <= new_size; end += width) {
      out.emplace_back(end - width, level);
      if (end > new_size - width) break;  // the next end would overflow or pass new_size
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    const uint64_t ea = a.first + (uint64_t{1} << a.second), eb = b.first + (uint64_t{1} << b.second);
    return ea != eb ? ea < eb : a.second < b.second;
  });
  return out;
}

void StoredNodesFor(uint64_t start, uint64_t size, unsigned stride, std::vector<NodeId>& out) {
  if (size == 0) return;
  Composer c{stride == 0 ? 64u : stride, &out, nullptr};
  c.Range(start, size);
}

Result<std::vector<NodeId>> InclusionProofNodes(uint64_t index, uint64_t tree_size, unsigned stride) {
  RecordingSource rec;
  GOVERN_RETURN_IF_ERROR(InclusionProof(rec, index, tree_size).status());
  return NodesOf(rec, stride);
}

Result<std::vector<NodeId>> ConsistencyProofNodes(uint64_t old_size, uint64_t new_size, unsigned stride) {
  RecordingSource rec;
  GOVERN_RETURN_IF_ERROR(ConsistencyProof(rec, old_size, new_size).status());
  return NodesOf(rec, stride);
}

Result<Hash> StoredNodeSource::Subtree(uint64_t start, uint64_t size) {
  if (size == 0) return InvalidArgument("subtree of no leaves");
  std::vector<NodeId> ids;
  StoredNodesFor(start, size, stride_, ids);
  std::vector<NodeId> missing;
  for (const NodeId& id : ids) {
    if (!known_.count(id)) missing.push_back(id);
  }
  if (!missing.empty()) {
    if (!fetch_) {
      return NotFound("stored node (start " + std::to_string(missing[0].start) + ", level " +
                      std::to_string(missing[0].level) + ") is not known");
    }
    GOVERN_ASSIGN_OR_RETURN(auto hashes, fetch_(missing));
    if (hashes.size() != missing.size()) {
      return Internal("stored node fetch returned " + std::to_string(hashes.size()) + " hashes for " +
                      std::to_string(missing.size()) + " ids");
    }
    for (size_t i = 0; i < missing.size(); ++i) known_[missing[i]] = hashes[i];
  }
  Composer c{stride_ == 0 ? 64u : stride_, nullptr, &known_};
  Hash h = c.Range(start, size);
  if (c.missing) return Internal("stored node missing after fetch");
  return h;
}

}  // namespace govern::audit
