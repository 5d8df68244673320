// The audit log's hashes: the canonical encoding of an entry, the per-organisation hash chain, the
// RFC 9162 Merkle tree (compact range, subtree hashes, inclusion and consistency proofs) and C2SP
// signed-note checkpoints.
//
// This is the service's one seam to the hashing rules: every other file of the service calls these
// functions. (The pure core library govern_audit, built beside this service, is meant to take these
// over; until it lands this file holds a complete implementation of the rules documented in
// docs/audit.md.) Pure functions and value types: thread-safe.
//
// Rules (docs/audit.md "Hashes"):
//   canonical(e) = "govern-audit-entry/1\n" || u64be(seq) || for each of org, idempotency_key, actor,
//                  action, target, outcome, details: u32be(len) || bytes;  then i64be(time_micros)
//   leaf(e)      = SHA-256(0x00 || canonical(e))                     (RFC 9162 leaf hash)
//   chain(e)     = SHA-256(prev_hash || SHA-256(canonical(e)))        prev_hash of seq 1 = 32 zero bytes
//   node(l, r)   = SHA-256(0x01 || l || r)                            (RFC 9162 interior node)
// Sequence numbers start at 1; the Merkle leaf of seq s has index s - 1.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::audit_service {

// 32 bytes.
using Hash = std::string;
inline constexpr size_t kHashSize = 32;
Hash ZeroHash();

struct EntryFields {
  std::string org;
  int64_t seq = 0;
  std::string idempotency_key;
  int64_t time_micros = 0;  // since 1970, UTC
  std::string actor;
  std::string action;
  std::string target;
  std::string outcome;
  std::string details;  // canonical JSON text ("{}" when none)
};

std::string CanonicalEncoding(const EntryFields& e);
Hash LeafHash(std::string_view canonical);
Hash ChainHash(const Hash& prev, std::string_view canonical);
Hash NodeHash(const Hash& left, const Hash& right);

// The RFC 9162 compact range [0, size): the roots of the perfect subtrees of the binary decomposition
// of size, largest (leftmost) first. Appending a leaf costs on average one node hash.
class CompactRange {
 public:
  CompactRange() = default;
  // From its stored form (Encode()); InvalidArgument if `bytes` does not fit `size`.
  static Result<CompactRange> Decode(uint64_t size, std::string_view bytes);
  std::string Encode() const;

  uint64_t size() const { return size_; }
  // Appends one leaf hash. For each perfect subtree completed by it (levels >= 1), calls
  // `completed(level, index, hash)` (the subtree covers leaves [index << level, (index + 1) << level)).
  void Append(const Hash& leaf,
              const std::function<void(int level, uint64_t index, const Hash&)>& completed = {});
  // The Merkle tree hash of the leaves so far (SHA-256 of "" for size 0).
  Hash Root() const;

 private:
  uint64_t size_ = 0;
  std::vector<Hash> hashes_;
};

// Where proofs read perfect subtree hashes from. `Get(level, index)` answers a stored subtree or leaf;
// nullopt when it is not stored (it is then computed from its children). Stored levels are 0 (leaves)
// and the multiples of kNodeStride.
inline constexpr int kNodeStride = 4;
using NodeSource = std::function<std::optional<Hash>(int level, uint64_t index)>;

// Every stored node that proving needs, for prefetching in one query: (level, index) pairs.
struct NodeRef {
  int level;
  uint64_t index;
  bool operator<(const NodeRef& o) const { return level != o.level ? level < o.level : index < o.index; }
};
std::vector<NodeRef> InclusionProofNodes(uint64_t leaf_index, uint64_t size);
std::vector<NodeRef> ConsistencyProofNodes(uint64_t old_size, uint64_t new_size);
std::vector<NodeRef> RootNodes(uint64_t size);

// RFC 9162 section 2.1.3.1 / 2.1.4.1. FailedPrecondition when the source lacks a node it needs.
Result<std::vector<Hash>> InclusionProof(uint64_t leaf_index, uint64_t size, const NodeSource& nodes);
Result<std::vector<Hash>> ConsistencyProof(uint64_t old_size, uint64_t new_size, const NodeSource& nodes);
Result<Hash> TreeRoot(uint64_t size, const NodeSource& nodes);
// The compact range of the first `size` leaves, from stored nodes (what an export starts from after
// retention removed the entries before it).
std::vector<NodeRef> CompactRangeNodes(uint64_t size);
Result<CompactRange> CompactRangeAt(uint64_t size, const NodeSource& nodes);

// RFC 9162 section 2.1.3.2 / 2.1.4.2.
bool VerifyInclusion(uint64_t leaf_index, uint64_t size, const Hash& leaf, const std::vector<Hash>& proof,
                     const Hash& root);
bool VerifyConsistency(uint64_t old_size, uint64_t new_size, const Hash& old_root, const Hash& new_root,
                       const std::vector<Hash>& proof);

// A C2SP tlog-checkpoint as a signed note:
//   govern.audit/<org>\n<size>\n<base64 root>\nchain <base64 chain head>\ntime <unix seconds>\n\n
//   — <key name> <base64(key hash[4] || signature[64])>\n
struct Checkpoint {
  std::string org;
  uint64_t size = 0;
  Hash root;
  Hash chain_head;  // entry_hash of seq == size (zero hash for size 0)
  int64_t time_unix = 0;
};
inline constexpr std::string_view kCheckpointKeyName = "govern-audit";
std::string CheckpointBody(const Checkpoint& c);

// An Ed25519 key that signs checkpoints, with its public key in the signed-note form
// "<name>+<hex key hash>+<base64(0x01 || public key)>" (the verifier key string).
class CheckpointSigner {
 public:
  static Result<CheckpointSigner> FromSeed(std::string_view seed32);
  ~CheckpointSigner();
  CheckpointSigner(CheckpointSigner&&) noexcept;
  CheckpointSigner& operator=(CheckpointSigner&&) noexcept;
  Result<std::string> Sign(const Checkpoint& c) const;  // the whole note
  const std::string& verifier_key() const { return verifier_key_; }

 private:
  CheckpointSigner() = default;
  struct Key;
  std::unique_ptr<Key> key_;
  std::string verifier_key_;
};

// Parses and checks a note against a verifier key string; InvalidArgument (malformed) or
// Unauthenticated (bad signature, other key).
Result<Checkpoint> OpenCheckpoint(std::string_view note, std::string_view verifier_key);

std::string HexHash(const Hash& h);
Result<Hash> ParseHexHash(std::string_view hex);

}  // namespace govern::audit_service
