#include "dns/zone.h"

#include <algorithm>

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
  if (keys.zsk) {
    Record r{z->apex_, kDNSKEY, keys.dnskey_ttl, keys.ksk->dnskey_rdata()};
    records.push_back(r);
    if (keys.zsk != keys.ksk)
      records.push_back(Record{z->apex_, kDNSKEY, keys.dnskey_ttl, keys.zsk->dnskey_rdata()});
  }
  for (auto& r : records) {
    std::string lower = r.owner;
    LowerName(lower);
    if (!IsSubdomain(lower, z->apex_))
      return InvalidArgument(NameToText(r.owner) + " is outside the zone " + NameToText(z->apex_));
    if (r.type == kRRSIG || r.type == kNSEC) {
      if (keys.zsk) continue;  // online signing makes its own
    }
    auto [it, fresh] = z->nodes_.try_emplace(lower);
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
  z->soa_ = apex->second.Find(kSOA);
  if (z->soa_->rdatas.size() != 1) return InvalidArgument("the zone has more than one SOA");
  if (apex->second.Find(kCNAME)) return InvalidArgument("CNAME at the zone apex");
  const std::string& soa = z->soa_->rdatas[0];
  z->negative_ttl_ =
      std::min(z->soa_->ttl, Get32(reinterpret_cast<const uint8_t*>(soa.data()) + soa.size() - 4));
  return std::shared_ptr<const Zone>(std::move(z));
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
  auto sign = [&](const SigningKey& key, const Node* n, uint16_t type, uint32_t ttl,
                  std::span<const std::string> rdatas) -> Result<std::string> {
    if (reuse && *reuse) {
      const std::string* old = (*reuse)(n->name, type, ttl, rdatas, key);
      if (old) return *old;
    }
    return SignRRset(key, apex_, n->owner, type, ttl, rdatas, v.inception, v.expiration);
  };
  std::vector<Record> out;
  for (size_t i = 0; i < chain.size(); ++i) {
    const Node* n = chain[i];
    bool delegation = n->name != apex_ && n->Find(kNS);
    std::vector<uint16_t> types;
    for (const auto& set : n->rrsets) {
      types.push_back(set.type);
      for (const auto& rd : set.rdatas) out.push_back(Record{n->owner, set.type, set.ttl, rd});
      if (delegation && set.type != kDS) continue;  // NS and glue at a cut belong to the child
      const SigningKey& key = set.type == kDNSKEY ? *keys_.ksk : *keys_.zsk;
      auto sig = sign(key, n, set.type, set.ttl, set.rdatas);
      if (sig.ok()) out.push_back(Record{n->owner, kRRSIG, set.ttl, *sig});
      if (set.type == kDNSKEY && keys_.ksk != keys_.zsk) {
        auto zsig = sign(*keys_.zsk, n, set.type, set.ttl, set.rdatas);
        if (zsig.ok()) out.push_back(Record{n->owner, kRRSIG, set.ttl, *zsig});
      }
    }
    types.push_back(kRRSIG);  // at least the NSEC's own signature
    types.push_back(kNSEC);
    std::sort(types.begin(), types.end());
    types.erase(std::unique(types.begin(), types.end()), types.end());
    std::string nsec = chain[(i + 1) % chain.size()]->owner + TypeBitmap(types);
    out.push_back(Record{n->owner, kNSEC, negative_ttl_, nsec});
    const std::string one[1] = {nsec};
    auto sig = sign(*keys_.zsk, n, kNSEC, negative_ttl_, std::span<const std::string>(one));
    if (sig.ok()) out.push_back(Record{n->owner, kRRSIG, negative_ttl_, *sig});
  }
  for (const Node* n : glue)
    for (const auto& set : n->rrsets)
      for (const auto& rd : set.rdatas) out.push_back(Record{n->owner, set.type, set.ttl, rd});
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
  const SigningKey& key = set.type == kDNSKEY ? *keys_.ksk : *keys_.zsk;
  auto rrsig = SignRRset(key, apex_, owner, set.type, set.ttl, set.rdatas, v.inception, v.expiration);
  if (!rrsig.ok()) return nullptr;
  auto made = std::make_shared<const CachedSig>(CachedSig{std::move(*rrsig), v.refresh_at});
  std::lock_guard lock(sig_mu_);
  set.sig = made;
  return made;
}

std::string Zone::SignOnce(std::string_view owner, uint16_t type, uint32_t ttl, std::string_view rdata,
                           uint32_t now) const {
  if (!keys_.zsk) return {};
  Validity v = ValidityAt(now);
  std::string_view one[1] = {rdata};
  auto rrsig = SignRRset(*keys_.zsk, apex_, owner, type, ttl, std::span<const std::string_view>(one),
                         v.inception, v.expiration);
  return rrsig.ok() ? std::move(*rrsig) : std::string();
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
