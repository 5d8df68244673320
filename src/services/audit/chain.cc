// The audit log's hashes, Merkle proofs and signed checkpoints (rules in chain.h and docs/audit.md).
#include "services/audit/chain.h"

#include <openssl/sha.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>

#include "crypto/encoding.h"
#include "crypto/signature.h"

namespace govern::audit_service {
namespace {

constexpr std::string_view kDomain = "govern-audit-entry/1\n";

Hash Sha(std::string_view a, std::string_view b = {}, std::string_view c = {}) {
  thread_local std::string buf;
  buf.assign(a);
  buf.append(b);
  buf.append(c);
  Hash out(kHashSize, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(buf.data()), buf.size(),
         reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

void PutBig(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutField(std::string* out, std::string_view s) {
  PutBig(out, s.size(), 4);
  out->append(s);
}

uint64_t LargestPow2Below(uint64_t n) {  // n >= 2
  return uint64_t{1} << (63 - std::countl_zero(n - 1));
}

// Computes (or, when collecting, lists the stored nodes needed for) subtree and range hashes.
class Prover {
 public:
  Prover(const NodeSource* source, std::vector<NodeRef>* collect) : source_(source), collect_(collect) {}

  Result<Hash> Subtree(int level, uint64_t index) {
    if (level == 0 || level % kNodeStride == 0) {
      if (collect_ != nullptr) {
        collect_->push_back({level, index});
        return ZeroHash();
      }
      std::optional<Hash> h = (*source_)(level, index);
      if (h) return *h;
      if (level == 0) {
        return FailedPrecondition("the entry with seq " + std::to_string(index + 1) + " is not stored");
      }
    }
    GOVERN_ASSIGN_OR_RETURN(Hash l, Subtree(level - 1, 2 * index));
    GOVERN_ASSIGN_OR_RETURN(Hash r, Subtree(level - 1, 2 * index + 1));
    return NodeHash(l, r);
  }

  // MTH(D[start:end]), end > start.
  Result<Hash> Range(uint64_t start, uint64_t end) {
    uint64_t n = end - start;
    if (std::has_single_bit(n) && start % n == 0) {
      int level = std::countr_zero(n);
      return Subtree(level, start >> level);
    }
    uint64_t k = n == 1 ? 1 : LargestPow2Below(n);
    GOVERN_ASSIGN_OR_RETURN(Hash l, Range(start, start + k));
    GOVERN_ASSIGN_OR_RETURN(Hash r, Range(start + k, end));
    return NodeHash(l, r);
  }

  Status Path(uint64_t m, uint64_t start, uint64_t end, std::vector<Hash>* out) {
    uint64_t n = end - start;
    if (n <= 1) return OkStatus();
    uint64_t k = LargestPow2Below(n);
    if (m < k) {
      GOVERN_RETURN_IF_ERROR(Path(m, start, start + k, out));
      GOVERN_ASSIGN_OR_RETURN(Hash h, Range(start + k, end));
      out->push_back(h);
    } else {
      GOVERN_RETURN_IF_ERROR(Path(m - k, start + k, end, out));
      GOVERN_ASSIGN_OR_RETURN(Hash h, Range(start, start + k));
      out->push_back(h);
    }
    return OkStatus();
  }

  Status SubProof(uint64_t m, uint64_t start, uint64_t end, bool b, std::vector<Hash>* out) {
    uint64_t n = end - start;
    if (m == n) {
      if (!b) {
        GOVERN_ASSIGN_OR_RETURN(Hash h, Range(start, end));
        out->push_back(h);
      }
      return OkStatus();
    }
    uint64_t k = LargestPow2Below(n);
    if (m <= k) {
      GOVERN_RETURN_IF_ERROR(SubProof(m, start, start + k, b, out));
      GOVERN_ASSIGN_OR_RETURN(Hash h, Range(start + k, end));
      out->push_back(h);
    } else {
      GOVERN_RETURN_IF_ERROR(SubProof(m - k, start + k, end, false, out));
      GOVERN_ASSIGN_OR_RETURN(Hash h, Range(start, start + k));
      out->push_back(h);
    }
    return OkStatus();
  }

 private:
  const NodeSource* source_;
  std::vector<NodeRef>* collect_;
};

void Dedup(std::vector<NodeRef>* refs) {
  std::sort(refs->begin(), refs->end());
  refs->erase(std::unique(refs->begin(), refs->end(),
                          [](const NodeRef& a, const NodeRef& b) {
                            return a.level == b.level && a.index == b.index;
                          }),
              refs->end());
}

std::string Base64(std::string_view s) { return crypto::Base64Encode(s); }

std::string KeyHash(std::string_view name, std::string_view pub32) {
  std::string material(name);
  material.push_back('\n');
  material.push_back('\x01');
  material.append(pub32);
  return Sha(material).substr(0, 4);
}

constexpr std::string_view kSigPrefix = "\xE2\x80\x94 ";  // U+2014 EM DASH, space

}  // namespace

Hash ZeroHash() { return Hash(kHashSize, '\0'); }

std::string CanonicalEncoding(const EntryFields& e) {
  std::string out;
  out.reserve(kDomain.size() + 8 + 7 * 4 + 8 + e.org.size() + e.idempotency_key.size() + e.actor.size() +
              e.action.size() + e.target.size() + e.outcome.size() + e.details.size());
  out.append(kDomain);
  PutBig(&out, static_cast<uint64_t>(e.seq), 8);
  PutField(&out, e.org);
  PutField(&out, e.idempotency_key);
  PutField(&out, e.actor);
  PutField(&out, e.action);
  PutField(&out, e.target);
  PutField(&out, e.outcome);
  PutField(&out, e.details);
  PutBig(&out, static_cast<uint64_t>(e.time_micros), 8);
  return out;
}

Hash LeafHash(std::string_view canonical) { return Sha(std::string_view("\0", 1), canonical); }
Hash ChainHash(const Hash& prev, std::string_view canonical) { return Sha(prev, Sha(canonical)); }
Hash NodeHash(const Hash& left, const Hash& right) { return Sha(std::string_view("\x01", 1), left, right); }

Result<CompactRange> CompactRange::Decode(uint64_t size, std::string_view bytes) {
  size_t n = static_cast<size_t>(std::popcount(size));
  if (bytes.size() != n * kHashSize) {
    return InvalidArgument("a compact range of size " + std::to_string(size) + " holds " + std::to_string(n) +
                           " hashes, not " + std::to_string(bytes.size()) + " bytes");
  }
  CompactRange r;
  r.size_ = size;
  for (size_t i = 0; i < n; ++i) r.hashes_.emplace_back(bytes.substr(i * kHashSize, kHashSize));
  return r;
}

std::string CompactRange::Encode() const {
  std::string out;
  for (const Hash& h : hashes_) out += h;
  return out;
}

void CompactRange::Append(const Hash& leaf,
                          const std::function<void(int level, uint64_t index, const Hash&)>& completed) {
  Hash h = leaf;
  uint64_t index = size_;  // index of the new node at the current level
  int level = 0;
  // Each trailing 1 bit of size_ is a perfect subtree that the new leaf completes into a larger one.
  for (uint64_t s = size_; s & 1; s >>= 1) {
    h = NodeHash(hashes_.back(), h);
    hashes_.pop_back();
    ++level;
    index >>= 1;
    if (completed) completed(level, index, h);
  }
  hashes_.push_back(std::move(h));
  ++size_;
}

Hash CompactRange::Root() const {
  if (hashes_.empty()) return Sha("");
  Hash h = hashes_.back();
  for (size_t i = hashes_.size() - 1; i-- > 0;) h = NodeHash(hashes_[i], h);
  return h;
}

std::vector<NodeRef> InclusionProofNodes(uint64_t leaf_index, uint64_t size) {
  std::vector<NodeRef> refs;
  if (leaf_index >= size) return refs;
  Prover p(nullptr, &refs);
  std::vector<Hash> ignored;
  (void)p.Path(leaf_index, 0, size, &ignored);
  Dedup(&refs);
  return refs;
}

std::vector<NodeRef> ConsistencyProofNodes(uint64_t old_size, uint64_t new_size) {
  std::vector<NodeRef> refs;
  if (old_size == 0 || old_size >= new_size) return refs;
  Prover p(nullptr, &refs);
  std::vector<Hash> ignored;
  (void)p.SubProof(old_size, 0, new_size, true, &ignored);
  Dedup(&refs);
  return refs;
}

std::vector<NodeRef> RootNodes(uint64_t size) {
  std::vector<NodeRef> refs;
  if (size == 0) return refs;
  Prover p(nullptr, &refs);
  (void)p.Range(0, size);
  Dedup(&refs);
  return refs;
}

Result<std::vector<Hash>> InclusionProof(uint64_t leaf_index, uint64_t size, const NodeSource& nodes) {
  if (leaf_index >= size) return InvalidArgument("the leaf is not in a tree of this size");
  Prover p(&nodes, nullptr);
  std::vector<Hash> out;
  GOVERN_RETURN_IF_ERROR(p.Path(leaf_index, 0, size, &out));
  return out;
}

Result<std::vector<Hash>> ConsistencyProof(uint64_t old_size, uint64_t new_size, const NodeSource& nodes) {
  if (old_size > new_size) return InvalidArgument("the old size is larger than the new size");
  std::vector<Hash> out;
  if (old_size == 0 || old_size == new_size) return out;
  Prover p(&nodes, nullptr);
  GOVERN_RETURN_IF_ERROR(p.SubProof(old_size, 0, new_size, true, &out));
  return out;
}

Result<Hash> TreeRoot(uint64_t size, const NodeSource& nodes) {
  if (size == 0) return Sha("");
  Prover p(&nodes, nullptr);
  return p.Range(0, size);
}

namespace {

// The perfect subtrees of size's binary decomposition, largest first: (level, index).
std::vector<std::pair<int, uint64_t>> Decomposition(uint64_t size) {
  std::vector<std::pair<int, uint64_t>> out;
  uint64_t start = 0;
  for (int level = 63; level >= 0; --level) {
    if (size & (uint64_t{1} << level)) {
      out.emplace_back(level, start >> level);
      start += uint64_t{1} << level;
    }
  }
  return out;
}

}  // namespace

std::vector<NodeRef> CompactRangeNodes(uint64_t size) {
  std::vector<NodeRef> refs;
  Prover p(nullptr, &refs);
  for (auto [level, index] : Decomposition(size)) (void)p.Subtree(level, index);
  Dedup(&refs);
  return refs;
}

Result<CompactRange> CompactRangeAt(uint64_t size, const NodeSource& nodes) {
  Prover p(&nodes, nullptr);
  std::string bytes;
  for (auto [level, index] : Decomposition(size)) {
    GOVERN_ASSIGN_OR_RETURN(Hash h, p.Subtree(level, index));
    bytes += h;
  }
  return CompactRange::Decode(size, bytes);
}

bool VerifyInclusion(uint64_t leaf_index, uint64_t size, const Hash& leaf, const std::vector<Hash>& proof,
                     const Hash& root) {
  if (leaf_index >= size) return false;
  uint64_t fn = leaf_index, sn = size - 1;
  Hash r = leaf;
  for (const Hash& p : proof) {
    if (sn == 0) return false;
    if ((fn & 1) || fn == sn) {
      r = NodeHash(p, r);
      if (!(fn & 1)) {
        while (!(fn & 1) && fn != 0) {
          fn >>= 1;
          sn >>= 1;
        }
      }
    } else {
      r = NodeHash(r, p);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return sn == 0 && r == root;
}

bool VerifyConsistency(uint64_t old_size, uint64_t new_size, const Hash& old_root, const Hash& new_root,
                       const std::vector<Hash>& proof_in) {
  if (old_size > new_size) return false;
  if (old_size == new_size) return proof_in.empty() && old_root == new_root;
  if (old_size == 0) return proof_in.empty();
  if (proof_in.empty()) return false;
  std::vector<Hash> path;
  if (std::has_single_bit(old_size)) path.push_back(old_root);
  path.insert(path.end(), proof_in.begin(), proof_in.end());
  uint64_t fn = old_size - 1, sn = new_size - 1;
  while (fn & 1) {
    fn >>= 1;
    sn >>= 1;
  }
  Hash fr = path[0], sr = path[0];
  for (size_t i = 1; i < path.size(); ++i) {
    const Hash& c = path[i];
    if (sn == 0) return false;
    if ((fn & 1) || fn == sn) {
      fr = NodeHash(c, fr);
      sr = NodeHash(c, sr);
      if (!(fn & 1)) {
        while (!(fn & 1) && fn != 0) {
          fn >>= 1;
          sn >>= 1;
        }
      }
    } else {
      sr = NodeHash(sr, c);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return fr == old_root && sr == new_root && sn == 0;
}

std::string CheckpointBody(const Checkpoint& c) {
  return "govern.audit/" + c.org + "\n" + std::to_string(c.size) + "\n" + Base64(c.root) + "\nchain " +
         Base64(c.chain_head) + "\ntime " + std::to_string(c.time_unix) + "\n";
}

struct CheckpointSigner::Key {
  crypto::Ed25519PrivateKey priv;
  std::string key_hash;
};

CheckpointSigner::~CheckpointSigner() = default;
CheckpointSigner::CheckpointSigner(CheckpointSigner&&) noexcept = default;
CheckpointSigner& CheckpointSigner::operator=(CheckpointSigner&&) noexcept = default;

Result<CheckpointSigner> CheckpointSigner::FromSeed(std::string_view seed32) {
  if (seed32.size() != 32) return InvalidArgument("an Ed25519 seed is 32 bytes");
  GOVERN_ASSIGN_OR_RETURN(crypto::Ed25519PrivateKey priv,
                          crypto::Ed25519PrivateKey::FromRaw(crypto::AsBytes(seed32)));
  GOVERN_ASSIGN_OR_RETURN(crypto::Ed25519PublicKey pub, priv.PublicKey());
  auto raw = pub.Raw();
  std::string pub32(reinterpret_cast<const char*>(raw.data()), raw.size());
  CheckpointSigner s;
  std::string kh = KeyHash(kCheckpointKeyName, pub32);
  s.key_ = std::make_unique<Key>(Key{std::move(priv), kh});
  s.verifier_key_ = std::string(kCheckpointKeyName) + "+" + crypto::HexEncode(crypto::AsBytes(kh)) + "+" +
                    Base64(std::string("\x01", 1) + pub32);
  return s;
}

Result<std::string> CheckpointSigner::Sign(const Checkpoint& c) const {
  std::string body = CheckpointBody(c);
  GOVERN_ASSIGN_OR_RETURN(auto sig, key_->priv.Sign(crypto::AsBytes(body)));
  std::string blob = key_->key_hash + std::string(reinterpret_cast<const char*>(sig.data()), sig.size());
  return body + "\n" + std::string(kSigPrefix) + std::string(kCheckpointKeyName) + " " + Base64(blob) + "\n";
}

Result<Checkpoint> OpenCheckpoint(std::string_view note, std::string_view verifier_key) {
  // Verifier key: name+hexhash+base64(0x01 || pub).
  size_t p1 = verifier_key.find('+');
  size_t p2 = p1 == std::string_view::npos ? p1 : verifier_key.find('+', p1 + 1);
  if (p2 == std::string_view::npos) return InvalidArgument("the verifier key is not name+hash+key");
  std::string_view name = verifier_key.substr(0, p1);
  auto keybytes = crypto::Base64Decode(verifier_key.substr(p2 + 1));
  if (!keybytes.ok() || keybytes->size() != 33 || (*keybytes)[0] != 1) {
    return InvalidArgument("the verifier key does not hold an Ed25519 public key");
  }
  std::string pub32(reinterpret_cast<const char*>(keybytes->data()) + 1, 32);
  std::string kh = KeyHash(name, pub32);
  GOVERN_ASSIGN_OR_RETURN(crypto::Ed25519PublicKey pub,
                          crypto::Ed25519PublicKey::FromRaw(crypto::AsBytes(pub32)));

  size_t split = note.find("\n\n");
  if (split == std::string_view::npos) return InvalidArgument("the checkpoint has no signature block");
  std::string_view body = note.substr(0, split + 1);
  std::string_view sigs = note.substr(split + 2);
  bool verified = false;
  while (!sigs.empty()) {
    size_t nl = sigs.find('\n');
    std::string_view line = sigs.substr(0, nl);
    sigs = nl == std::string_view::npos ? std::string_view() : sigs.substr(nl + 1);
    if (line.substr(0, kSigPrefix.size()) != kSigPrefix) return InvalidArgument("malformed signature line");
    line.remove_prefix(kSigPrefix.size());
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos) return InvalidArgument("malformed signature line");
    if (line.substr(0, sp) != name) continue;
    auto blob = crypto::Base64Decode(line.substr(sp + 1));
    if (!blob.ok() || blob->size() != 68) return InvalidArgument("malformed signature");
    if (std::memcmp(blob->data(), kh.data(), 4) != 0) continue;
    if (pub.Verify(crypto::AsBytes(body), std::span<const uint8_t>(blob->data() + 4, 64)).ok())
      verified = true;
  }
  if (!verified) return Unauthenticated("the checkpoint is not signed by this key");

  // Body lines.
  std::vector<std::string_view> lines;
  for (std::string_view b = body; !b.empty();) {
    size_t nl = b.find('\n');
    lines.push_back(b.substr(0, nl));
    b = b.substr(nl + 1);
  }
  if (lines.size() < 5) return InvalidArgument("the checkpoint body is too short");
  Checkpoint c;
  constexpr std::string_view kOrigin = "govern.audit/";
  if (lines[0].substr(0, kOrigin.size()) != kOrigin)
    return InvalidArgument("the checkpoint origin is not ours");
  c.org = std::string(lines[0].substr(kOrigin.size()));
  auto num = [](std::string_view s, auto* v) {
    auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
  };
  if (!num(lines[1], &c.size)) return InvalidArgument("bad checkpoint size");
  auto root = crypto::Base64Decode(lines[2]);
  if (!root.ok() || root->size() != kHashSize) return InvalidArgument("bad checkpoint root");
  c.root.assign(root->begin(), root->end());
  if (lines[3].substr(0, 6) != "chain ") return InvalidArgument("the checkpoint has no chain line");
  auto head = crypto::Base64Decode(lines[3].substr(6));
  if (!head.ok() || head->size() != kHashSize) return InvalidArgument("bad checkpoint chain head");
  c.chain_head.assign(head->begin(), head->end());
  if (lines[4].substr(0, 5) != "time " || !num(lines[4].substr(5), &c.time_unix)) {
    return InvalidArgument("bad checkpoint time");
  }
  return c;
}

std::string HexHash(const Hash& h) { return crypto::HexEncode(crypto::AsBytes(h)); }

Result<Hash> ParseHexHash(std::string_view hex) {
  auto b = crypto::HexDecode(hex);
  if (!b.ok() || b->size() != kHashSize) return InvalidArgument("not a 64-digit hex SHA-256");
  return Hash(b->begin(), b->end());
}

}  // namespace govern::audit_service
