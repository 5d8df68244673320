#include "dns/zone.h"

// SHA1_Init/Update/Final (deprecated in OpenSSL 3.0, still there): the NSEC3 hash per query without the
// provider fetch and allocation of EVP_Digest.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <map>

#include "dns/rdata.h"
#include "dns/wire.h"

namespace govern::dns {
namespace {
// Enough for every (existing name, type, DO) of a large zone; past it answers are rendered each time.
constexpr size_t kMaxCachedAnswers = 1 << 20;
}  // namespace

Validity ValidityAt(uint32_t now) {
  uint32_t day = now / 86400 * 86400;
  uint32_t inception = day - 3600;
  return {inception, inception + 14 * 86400, inception + 7 * 86400};
}

const RRset* Node::Find(uint16_t type) const {
  for (const auto& s : rrsets)
    if (s.type == type) return &s;
  return nullptr;
}

Result<std::shared_ptr<const Zone>> Zone::Build(std::string_view apex_text, std::vector<Record> records,
                                                ZoneKeys keys) {
  std::shared_ptr<Zone> z(new Zone());
  GOVERN_ASSIGN_OR_RETURN(z->apex_, NameFromText(apex_text));
  LowerName(z->apex_);
  if ((keys.ksk == nullptr) != (keys.zsk == nullptr))
    return InvalidArgument("a signed zone needs both keys (or one CSK as both)");
  z->keys_ = keys;
  if (keys.zsk && keys.online_denial == OnlineDenial::kNsec3) z->keys_.nsec3.enabled = true;
  const bool nsec3 = keys.zsk && z->keys_.nsec3.enabled;
  if (nsec3 && z->keys_.nsec3.salt.size() > 255) return InvalidArgument("NSEC3 salt longer than 255 octets");
  if (keys.zsk) {
    Record r{z->apex_, kDNSKEY, keys.dnskey_ttl, keys.ksk->dnskey_rdata()};
    records.push_back(r);
    if (keys.zsk != keys.ksk)
      records.push_back(Record{z->apex_, kDNSKEY, keys.dnskey_ttl, keys.zsk->dnskey_rdata()});
    z->dnskey_signers_.push_back(keys.ksk.get());
    if (keys.zsk != keys.ksk) z->dnskey_signers_.push_back(keys.zsk.get());
    z->zone_signers_.push_back(keys.zsk.get());
    for (const auto& k : keys.dnskey_also) {
      if (!k) return InvalidArgument("a null rollover key");
      records.push_back(Record{z->apex_, kDNSKEY, keys.dnskey_ttl, k->dnskey_rdata()});
      z->dnskey_signers_.push_back(k.get());
    }
    for (const auto& k : keys.zone_also) {
      if (!k) return InvalidArgument("a null rollover key");
      z->zone_signers_.push_back(k.get());
    }
    for (const auto& k : keys.cds) {
      if (!k) return InvalidArgument("a null CDS key");
      records.push_back(Record{z->apex_, kCDS, keys.cds_ttl, k->DsRdata(z->apex_)});
      records.push_back(Record{z->apex_, kCDNSKEY, keys.cds_ttl, k->dnskey_rdata()});
    }
  } else if (!keys.dnskey_also.empty() || !keys.zone_also.empty() || !keys.cds.empty()) {
    return InvalidArgument("rollover keys for an unsigned zone");
  }
  for (auto& r : records) {
    std::string lower = r.owner;
    LowerName(lower);
    if (!IsSubdomain(lower, z->apex_))
      return InvalidArgument(NameToText(r.owner) + " is outside the zone " + NameToText(z->apex_));
    if (r.type == kRRSIG || r.type == kNSEC || r.type == kNSEC3 || r.type == kNSEC3PARAM) {
      if (keys.zsk) continue;  // online signing makes its own
    }
    auto [it, fresh] = z->nodes_.try_emplace(lower);
    if (lower.size() > 1 && lower[0] == 1 && lower[1] == '*') z->has_wildcard_ = true;
    Node& n = it->second;
    if (fresh) {
      n.name = lower;
      n.owner = r.owner;
    }
    RRset* set = nullptr;
    for (auto& s : n.rrsets)
      if (s.type == r.type) set = &s;
    if (!set) {
      n.rrsets.push_back(RRset{r.type, r.ttl, {}, nullptr});
      set = &n.rrsets.back();
    }
    set->ttl = std::min(set->ttl, r.ttl);  // RFC 2181 section 5.2: one TTL per RRset
    if (std::find(set->rdatas.begin(), set->rdatas.end(), r.rdata) == set->rdatas.end())
      set->rdatas.push_back(r.rdata);
  }
  // Empty non-terminals: every ancestor up to the apex exists as a node.
  std::vector<std::string> names;
  for (auto& [name, node] : z->nodes_) names.push_back(name);
  for (auto& name : names) {
    std::string_view p = name;
    while (p.size() > z->apex_.size()) {
      p = ParentName(p);
      auto [it, fresh] = z->nodes_.try_emplace(std::string(p));
      if (!fresh) break;
      it->second.name = std::string(p);
      it->second.owner = std::string(p);
    }
  }
  const Nsec3Params& p3 = z->keys_.nsec3;
  if (nsec3) {
    z->nsec3_param_ = {1, 0, static_cast<char>(p3.iterations >> 8), static_cast<char>(p3.iterations),
                       static_cast<char>(p3.salt.size())};
    z->nsec3_param_ += p3.salt;
    // Answers that deny from the chain have NSEC3PARAM at the apex as the transfer form does (and as
    // the apex NSEC3's bitmap says).
    auto apex_it = z->nodes_.find(z->apex_);
    if (keys.online_denial == OnlineDenial::kNsec3 && apex_it != z->nodes_.end())
      apex_it->second.rrsets.push_back(RRset{kNSEC3PARAM, 0, {z->nsec3_param_}, nullptr});
  }
  for (auto& [name, node] : z->nodes_) {
    std::sort(node.rrsets.begin(), node.rrsets.end(),
              [](const RRset& a, const RRset& b) { return a.type < b.type; });
    if (node.Find(kCNAME) && node.rrsets.size() > 1) {
      for (auto& s : node.rrsets)
        if (s.type != kCNAME && s.type != kRRSIG && s.type != kNSEC)
          return InvalidArgument(NameToText(node.owner) +
                                 " has a CNAME and other data (RFC 1034 section 3.6.2)");
    }
    if (node.Find(kCNAME) && node.Find(kCNAME)->rdatas.size() > 1)
      return InvalidArgument(NameToText(node.owner) + " has more than one CNAME");
  }
  auto apex = z->nodes_.find(z->apex_);
  if (apex == z->nodes_.end() || !apex->second.Find(kSOA))
    return InvalidArgument("the zone has no SOA at its apex");
  z->apex_node_ = &apex->second;
  z->soa_ = apex->second.Find(kSOA);
  if (z->soa_->rdatas.size() != 1) return InvalidArgument("the zone has more than one SOA");
  if (apex->second.Find(kCNAME)) return InvalidArgument("CNAME at the zone apex");
  const std::string& soa = z->soa_->rdatas[0];
  z->negative_ttl_ =
      std::min(z->soa_->ttl, Get32(reinterpret_cast<const uint8_t*>(soa.data()) + soa.size() - 4));
  if (nsec3) z->BuildNsec3Chain();
  return std::shared_ptr<const Zone>(std::move(z));
}

// RFC 5155 section 7.1: one NSEC3 per authoritative name and per empty non-terminal above one, owned by
// the base32hex hash of the name, in hash order, each naming the next hash and the types at its name.
// With opt-out, insecure delegations (and the empty non-terminals only they make) are left out, and
// every NSEC3 has the opt-out flag. Glue and names below a cut are never on the chain.
void Zone::BuildNsec3Chain() {
  const Nsec3Params& p = keys_.nsec3;
  auto cut_of = [&](std::string_view name) -> const Node* {  // the topmost cut at or above `name`
    const Node* cut = nullptr;
    for (std::string_view q = name; q.size() > apex_.size(); q = ParentName(q)) {
      const Node* n = Find(q);
      if (n && n->Find(kNS)) cut = n;
    }
    return cut;
  };
  std::map<std::string, std::vector<uint16_t>> by_name;  // lower wire name -> types at it
  for (const auto& [name, node] : nodes_) {
    if (node.empty()) continue;  // empty non-terminals come in below, from the names under them
    const Node* cut = cut_of(name);
    if (cut && cut != &node) continue;
    bool delegation = name != apex_ && node.Find(kNS);
    bool secure_delegation = delegation && node.Find(kDS);
    if (delegation && !secure_delegation && p.opt_out) continue;
    auto& types = by_name[name];
    for (const auto& set : node.rrsets) types.push_back(set.type);
    if (!delegation || secure_delegation) types.push_back(kRRSIG);
    if (name == apex_) types.push_back(kNSEC3PARAM);
    for (std::string_view q = ParentName(name); q.size() > apex_.size(); q = ParentName(q))
      by_name.try_emplace(std::string(q));
  }
  std::vector<std::pair<std::string, std::vector<uint16_t>>> hashed;
  hashed.reserve(by_name.size());
  for (auto& [name, types] : by_name) {
    std::sort(types.begin(), types.end());
    types.erase(std::unique(types.begin(), types.end()), types.end());
    hashed.emplace_back(Nsec3Hash(name, p.salt, p.iterations), std::move(types));
  }
  std::sort(hashed.begin(), hashed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const std::string& suffix = apex_node_ ? apex_node_->owner : apex_;
  nsec3_.reserve(hashed.size());
  for (size_t i = 0; i < hashed.size(); ++i) {
    const auto& [hash, types] = hashed[i];
    std::string label = Base32HexLower(hash);
    std::string rd;
    rd.push_back(1);  // SHA-1
    rd.push_back(p.opt_out ? 1 : 0);
    rd.push_back(static_cast<char>(p.iterations >> 8));
    rd.push_back(static_cast<char>(p.iterations));
    rd.push_back(static_cast<char>(p.salt.size()));
    rd += p.salt;
    const std::string& next = hashed[(i + 1) % hashed.size()].first;
    rd.push_back(static_cast<char>(next.size()));
    rd += next;
    if (!types.empty()) rd += TypeBitmap(types);
    Nsec3Record r;
    r.hash = hash;
    r.owner = std::string(1, static_cast<char>(label.size())) + label + suffix;
    r.set = RRset{kNSEC3, negative_ttl_, {std::move(rd)}, nullptr};
    nsec3_.push_back(std::move(r));
  }
}

const Nsec3Record* Zone::Nsec3Matching(std::string_view hash) const {
  auto it =
      std::lower_bound(nsec3_.begin(), nsec3_.end(), hash,
                       [](const Nsec3Record& r, std::string_view h) { return std::string_view(r.hash) < h; });
  return it != nsec3_.end() && it->hash == hash ? &*it : nullptr;
}

const Nsec3Record* Zone::Nsec3Covering(std::string_view hash) const {
  if (nsec3_.empty()) return nullptr;
  auto it =
      std::upper_bound(nsec3_.begin(), nsec3_.end(), hash,
                       [](std::string_view h, const Nsec3Record& r) { return h < std::string_view(r.hash); });
  // Below the first owner: the last NSEC3 covers it (its next wraps round to the first).
  const Nsec3Record& r = it == nsec3_.begin() ? nsec3_.back() : *(it - 1);
  return r.hash == hash ? nullptr : &r;
}

uint32_t Zone::serial() const {
  const std::string& soa = soa_->rdatas[0];
  return Get32(reinterpret_cast<const uint8_t*>(soa.data()) + soa.size() - 20);
}

const Node* Zone::Find(std::string_view lower_name) const {
  auto it = nodes_.find(lower_name);
  return it == nodes_.end() ? nullptr : &it->second;
}

std::vector<Record> Zone::Records() const {
  std::vector<const Node*> ns;
  for (auto& [name, node] : nodes_) ns.push_back(&node);
  std::sort(ns.begin(), ns.end(),
            [](const Node* a, const Node* b) { return CanonicalCompare(a->name, b->name) < 0; });
  std::vector<Record> out;
  for (const Node* n : ns) {
    // SOA first so the printed file reads as zone files do.
    std::vector<const RRset*> sets;
    for (auto& s : n->rrsets) sets.push_back(&s);
    std::stable_sort(sets.begin(), sets.end(),
                     [](const RRset* a, const RRset* b) { return (a->type == kSOA) > (b->type == kSOA); });
    for (const RRset* s : sets)
      for (auto& rd : s->rdatas) out.push_back(Record{n->owner, s->type, s->ttl, rd});
  }
  return out;
}

std::vector<Record> Zone::SignedRecords(uint32_t now, const SignatureReuse* reuse) const {
  if (!keys_.zsk) return Records();
  auto cut_of = [&](std::string_view name) -> const Node* {
    // The topmost delegation at or above `name` (below the apex), or null.
    const Node* cut = nullptr;
    std::string_view p = name;
    while (p.size() > apex_.size()) {
      const Node* n = Find(p);
      if (n && n->Find(kNS)) cut = n;
      p = ParentName(p);
    }
    return cut;
  };
  std::vector<const Node*> chain, glue;
  for (auto& [name, node] : nodes_) {
    if (node.empty()) continue;  // empty non-terminals have no NSEC
    const Node* cut = cut_of(name);
    (cut && cut != &node ? glue : chain).push_back(&node);
  }
  auto order = [](const Node* a, const Node* b) { return CanonicalCompare(a->name, b->name) < 0; };
  std::sort(chain.begin(), chain.end(), order);
  std::sort(glue.begin(), glue.end(), order);
  Validity v = ValidityAt(now);
  auto sign_at = [&](const SigningKey& key, std::string_view lower, std::string_view owner, uint16_t type,
                     uint32_t ttl, std::span<const std::string> rdatas) -> Result<std::string> {
    if (reuse && *reuse) {
      const std::string* old = (*reuse)(lower, type, ttl, rdatas, key);
      if (old) return *old;
    }
    return SignRRset(key, apex_, owner, type, ttl, rdatas, v.inception, v.expiration);
  };
  auto sign = [&](const SigningKey& key, const Node* n, uint16_t type, uint32_t ttl,
                  std::span<const std::string> rdatas) {
    return sign_at(key, n->name, n->owner, type, ttl, rdatas);
  };
  const bool nsec3 = keys_.nsec3.enabled;
  std::vector<Record> out;
  for (size_t i = 0; i < chain.size(); ++i) {
    const Node* n = chain[i];
    bool delegation = n->name != apex_ && n->Find(kNS);
    std::vector<uint16_t> types;
    for (const auto& set : n->rrsets) {
      types.push_back(set.type);
      for (const auto& rd : set.rdatas) out.push_back(Record{n->owner, set.type, set.ttl, rd});
      if (delegation && set.type != kDS) continue;  // NS and glue at a cut belong to the child
      for (const SigningKey* key : Signers(set.type)) {
        auto sig = sign(*key, n, set.type, set.ttl, set.rdatas);
        if (sig.ok()) out.push_back(Record{n->owner, kRRSIG, set.ttl, *sig});
      }
    }
    if (nsec3) continue;      // the NSEC3 chain follows below
    types.push_back(kRRSIG);  // at least the NSEC's own signature
    types.push_back(kNSEC);
    std::sort(types.begin(), types.end());
    types.erase(std::unique(types.begin(), types.end()), types.end());
    std::string nsec = chain[(i + 1) % chain.size()]->owner + TypeBitmap(types);
    out.push_back(Record{n->owner, kNSEC, negative_ttl_, nsec});
    const std::string one[1] = {nsec};
    for (const SigningKey* key : zone_signers_) {
      auto sig = sign(*key, n, kNSEC, negative_ttl_, std::span<const std::string>(one));
      if (sig.ok()) out.push_back(Record{n->owner, kRRSIG, negative_ttl_, *sig});
    }
  }
  if (nsec3) {
    // RFC 5155: NSEC3PARAM at the apex (unless the apex holds it already: online NSEC3 denial), then
    // the chain Build made (BuildNsec3Chain), each NSEC3 signed.
    const Node* apex_node = Find(apex_);
    std::string apex_owner = apex_node ? apex_node->owner : apex_;
    if (!apex_node || !apex_node->Find(kNSEC3PARAM)) {
      out.push_back(Record{apex_owner, kNSEC3PARAM, 0, nsec3_param_});
      const std::string one_param[1] = {nsec3_param_};
      for (const SigningKey* key : zone_signers_) {
        auto psig = sign_at(*key, apex_, apex_owner, kNSEC3PARAM, 0, std::span<const std::string>(one_param));
        if (psig.ok()) out.push_back(Record{apex_owner, kRRSIG, 0, *psig});
      }
    }
    for (const Nsec3Record& r : nsec3_) {
      std::string lower = r.owner;
      LowerName(lower);
      out.push_back(Record{r.owner, kNSEC3, r.set.ttl, r.set.rdatas[0]});
      for (const SigningKey* key : zone_signers_) {
        auto sig = sign_at(*key, lower, r.owner, kNSEC3, r.set.ttl, r.set.rdatas);
        if (sig.ok()) out.push_back(Record{r.owner, kRRSIG, r.set.ttl, *sig});
      }
    }
  }
  for (const Node* n : glue)
    for (const auto& set : n->rrsets)
      for (const auto& rd : set.rdatas) out.push_back(Record{n->owner, set.type, set.ttl, rd});
  return out;
}

std::string Nsec3Hash(std::string_view lower_name, std::string_view salt, uint16_t iterations) {
  uint8_t md[kNsec3HashSize];
  Nsec3HashInto(lower_name, salt, iterations, md);
  return std::string(reinterpret_cast<char*>(md), sizeof md);
}

void Nsec3HashInto(std::string_view lower_name, std::string_view salt, uint16_t iterations, uint8_t* out) {
  // RFC 5155 section 5: IH(salt, x, 0) = H(x || salt), IH(salt, x, k) = H(IH(salt, x, k-1) || salt).
  static_assert(kNsec3HashSize == SHA_DIGEST_LENGTH);
  SHA_CTX c;
  SHA1_Init(&c);
  SHA1_Update(&c, lower_name.data(), lower_name.size());
  SHA1_Update(&c, salt.data(), salt.size());
  SHA1_Final(out, &c);
  for (int k = 1; k <= iterations; ++k) {
    SHA1_Init(&c);
    SHA1_Update(&c, out, kNsec3HashSize);
    SHA1_Update(&c, salt.data(), salt.size());
    SHA1_Final(out, &c);
  }
}

std::string Base32HexLower(std::string_view bytes) {
  static const char kAlphabet[] = "0123456789abcdefghijklmnopqrstuv";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buffer = buffer << 8 | c;
    bits += 8;
    while (bits >= 5) {
      out.push_back(kAlphabet[(buffer >> (bits - 5)) & 31]);
      bits -= 5;
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(buffer << (5 - bits)) & 31]);
  return out;
}

std::vector<Record> Zone::DsRecords() const {
  std::vector<Record> out;
  if (keys_.ksk) out.push_back(Record{apex_, kDS, keys_.dnskey_ttl, keys_.ksk->DsRdata(apex_)});
  return out;
}

std::shared_ptr<const CachedSig> Zone::SigFor(std::string_view owner, const RRset& set, uint32_t now) const {
  if (!keys_.zsk) return nullptr;
  {
    std::lock_guard lock(sig_mu_);
    if (set.sig && now < set.sig->refresh_at) return set.sig;
  }
  Validity v = ValidityAt(now);
  const auto& signers = Signers(set.type);
  auto made = std::make_shared<CachedSig>();
  made->refresh_at = v.refresh_at;
  for (size_t i = 0; i < signers.size(); ++i) {
    auto rrsig =
        SignRRset(*signers[i], apex_, owner, set.type, set.ttl, set.rdatas, v.inception, v.expiration);
    if (!rrsig.ok()) return nullptr;
    if (i == 0) {
      made->rrsig = std::move(*rrsig);
    } else {
      made->more.push_back(std::move(*rrsig));
    }
  }
  std::shared_ptr<const CachedSig> done = std::move(made);
  std::lock_guard lock(sig_mu_);
  set.sig = done;
  return done;
}

std::string Zone::SignOnce(std::string_view owner, uint16_t type, uint32_t ttl, std::string_view rdata,
                           uint32_t now) const {
  std::string rrsig;
  if (!SignOnceInto(owner, type, ttl, rdata, now, 0, &rrsig)) return {};
  return rrsig;
}

bool Zone::SignOnceInto(std::string_view owner, uint16_t type, uint32_t ttl, std::string_view rdata,
                        uint32_t now, size_t i, std::string* rrsig) const {
  const auto& signers = Signers(type);
  if (i >= signers.size()) return false;
  Validity v = ValidityAt(now);
  return SignOneInto(*signers[i], apex_, owner, type, ttl, rdata, v.inception, v.expiration, rrsig).ok();
}

std::shared_ptr<const CachedAnswer> Zone::CacheLookup(std::string_view key, uint32_t now) const {
  const Shard& s = shards_[StringHash{}(key) % kShards];
  std::shared_lock lock(s.mu);
  auto it = s.map.find(key);
  if (it == s.map.end()) return nullptr;
  if (it->second->refresh_at != 0 && now >= it->second->refresh_at) return nullptr;
  return it->second;
}

void Zone::CacheStore(std::string_view key, std::shared_ptr<const CachedAnswer> answer) const {
  Shard& s = shards_[StringHash{}(key) % kShards];
  std::unique_lock lock(s.mu);
  auto it = s.map.find(key);
  if (it != s.map.end()) {
    it->second = std::move(answer);
    return;
  }
  if (cached_.load(std::memory_order_relaxed) >= kMaxCachedAnswers) return;
  cached_.fetch_add(1, std::memory_order_relaxed);
  s.map.emplace(std::string(key), std::move(answer));
}

ZoneSet::ZoneSet(std::vector<std::shared_ptr<const Zone>> zones) : zones_(std::move(zones)) {
  for (auto& z : zones_) by_apex_[z->apex()] = z.get();
}

const Zone* ZoneSet::Find(std::string_view q) const {
  while (true) {
    auto it = by_apex_.find(q);
    if (it != by_apex_.end()) return it->second;
    if (q.empty() || q[0] == 0) return nullptr;
    q = ParentName(q);
  }
}

}  // namespace govern::dns
