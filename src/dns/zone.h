// Zone: an immutable, compiled snapshot of one zone's records, with the answers and signatures it has
// made cached inside it. ZoneSet: the zones a server answers for, found by longest match.
//
// A Zone is built once (Zone::Build) from records and optional signing keys and never changes after;
// only its caches fill in, behind locks, so a Zone and a ZoneSet are safe to share between any number of
// threads. To change a zone, build a new Zone and a new ZoneSet and swap the shared_ptr (the server
// does this with ZoneSetHolder); queries in flight finish on the snapshot they started with.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "dns/dnssec.h"
#include "dns/zonefile.h"

namespace govern::dns {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// Authenticated denial in the zone's transfer form (SignedRecords): NSEC3 (RFC 5155) instead of NSEC.
// RFC 9276 advises 0 iterations and no salt. Online answers use it only with OnlineDenial::kNsec3.
struct Nsec3Params {
  bool enabled = false;
  bool opt_out = false;  // insecure delegations stay off the chain (flag 1 on every NSEC3)
  uint16_t iterations = 0;
  std::string salt;  // raw octets
};

// How online answers (Answer) of a signed zone prove that a name or a type does not exist.
enum class OnlineDenial : uint8_t {
  // RFC 9824 compact denial: one NSEC made for the query name and signed per answer (one signature per
  // answer for a name that does not exist; nothing about other names is revealed).
  kCompact,
  // RFC 5155: proofs from the zone's NSEC3 chain (ZoneKeys::nsec3, turned on by Build), each NSEC3
  // signed once when first needed and kept (re-made before expiry like every RRSIG): no signing per
  // answer, NXDOMAIN as the rcode, and resolvers may deny from their cache (RFC 8198).
  kNsec3,
};

// The keys that sign a zone. A CSK is one key as both ksk and zsk (flags 257).
struct ZoneKeys {
  std::shared_ptr<const SigningKey> ksk;
  std::shared_ptr<const SigningKey> zsk;
  uint32_t dnskey_ttl = 3600;
  Nsec3Params nsec3;
  OnlineDenial online_denial = OnlineDenial::kCompact;  // kNsec3 also sets nsec3.enabled
  // Key rollover (RFC 7583, RFC 6781; the service's rollover drives these): further keys in the DNSKEY
  // RRset that sign it too (a key being introduced or retired, so either key's DS validates it).
  std::vector<std::shared_ptr<const SigningKey>> dnskey_also;
  // Further keys that sign every other RRset beside zsk (an algorithm rollover: RFC 4035 section 2.2
  // wants each RRset signed with every algorithm of the DNSKEY RRset).
  std::vector<std::shared_ptr<const SigningKey>> zone_also;
  // CDS and CDNSKEY (RFC 7344, RFC 8078) at the apex for these keys: the DS set the parent should have.
  std::vector<std::shared_ptr<const SigningKey>> cds;
  uint32_t cds_ttl = 3600;
};

// RFC 5155 section 5: the SHA-1 NSEC3 hash of a lower-case wire name; and its owner label text.
std::string Nsec3Hash(std::string_view lower_name, std::string_view salt, uint16_t iterations);
// The same into out[0, 20) without allocating (the online denial path hashes per query).
void Nsec3HashInto(std::string_view lower_name, std::string_view salt, uint16_t iterations, uint8_t* out);
inline constexpr size_t kNsec3HashSize = 20;
std::string Base32HexLower(std::string_view bytes);

// A signature made for an RRset and when to make a new one.
struct CachedSig {
  std::string rrsig;              // RDATA
  uint32_t refresh_at;            // make a new one from this time on (half the validity is left)
  std::vector<std::string> more;  // RRSIGs of the further signers (during a key rollover)
};

struct RRset {
  uint16_t type = 0;
  uint32_t ttl = 0;
  std::vector<std::string> rdatas;
  // The RRSIG over this RRset, made on first need (see Zone::SigFor).
  mutable std::shared_ptr<const CachedSig> sig;
};

struct Node {
  std::string name;           // lower-case wire
  std::string owner;          // as written in the zone
  std::vector<RRset> rrsets;  // sorted by type
  const RRset* Find(uint16_t type) const;
  bool empty() const { return rrsets.empty(); }  // an empty non-terminal
};

// One NSEC3 of a zone's chain (RFC 5155), as online answers and the transfer form carry it.
struct Nsec3Record {
  std::string hash;   // kNsec3HashSize raw octets: the chain's sort key
  std::string owner;  // wire: the base32hex hash label, then the apex as written
  RRset set;          // type NSEC3, TTL the negative TTL, one RDATA; its RRSIG cached as any RRset's
};

// One prepared answer: the whole response for (qname, qtype, DO) with id 0 and the qname lower-case.
struct CachedAnswer {
  std::string bytes;
  size_t prefix_len = 0;    // length without the additional section
  uint32_t refresh_at = 0;  // stop using it from this time on (0: forever)
};

class Zone {
 public:
  // `apex` is text ("example.com."); the records must include exactly one SOA at the apex. With keys,
  // the zone is signed online: the DNSKEY RRset is added at the apex.
  static Result<std::shared_ptr<const Zone>> Build(std::string_view apex, std::vector<Record> records,
                                                   ZoneKeys keys = {});

  const std::string& apex() const { return apex_; }  // lower-case wire
  uint32_t serial() const;
  bool signed_zone() const { return keys_.zsk != nullptr; }
  const ZoneKeys& keys() const { return keys_; }
  // Every record (including DNSKEY when signed), in canonical order, for printing or export.
  std::vector<Record> Records() const;
  // A signed zone as a whole (what an AXFR of it would carry): every record, RRSIGs over every
  // authoritative RRset, and a complete NSEC chain over the names that have data (RFC 4035 section 2),
  // or with keys().nsec3 an NSEC3 chain and NSEC3PARAM (RFC 5155, opt-out when asked), signatures
  // valid at `now`. Glue stays unsigned and off the chain. Unsigned zones: Records().
  std::vector<Record> SignedRecords(uint32_t now) const { return SignedRecords(now, nullptr); }
  // The same, taking each RRSIG from `reuse` when it gives one (a signature made earlier over the very
  // same RRset and still fresh), so consecutive versions of a zone differ only where the data did: what
  // makes IXFR of a signed zone small. `reuse` gets (lower owner, type, ttl, rdatas, key) and returns
  // the RRSIG RDATA to reuse or null.
  using SignatureReuse =
      std::function<const std::string*(std::string_view owner, uint16_t type, uint32_t ttl,
                                       std::span<const std::string> rdatas, const SigningKey& key)>;
  std::vector<Record> SignedRecords(uint32_t now, const SignatureReuse* reuse) const;
  // The DS records for the parent (one per KSK, SHA-256), as records.
  std::vector<Record> DsRecords() const;

  const Node* Find(std::string_view lower_name) const;
  const Node& apex_node() const { return *apex_node_; }  // Find(apex()), kept: every denial needs it
  // Whether any name in the zone is a wildcard (its first label "*"): denial skips the wildcard lookup
  // in zones with none.
  bool has_wildcard() const { return has_wildcard_; }
  const RRset& soa() const { return *soa_; }
  uint32_t negative_ttl() const { return negative_ttl_; }

  // The NSEC3 chain in hash order: built by Build for a signed zone with keys().nsec3.enabled (one
  // NSEC3 per authoritative name and per empty non-terminal, RFC 5155 section 7.1; with opt-out
  // insecure delegations and the empty non-terminals only they make stay off it). Empty otherwise.
  const std::vector<Nsec3Record>& nsec3_chain() const { return nsec3_; }
  // Whether online answers deny from the chain (keys().online_denial is kNsec3 and the zone is signed).
  bool online_nsec3() const { return keys_.online_denial == OnlineDenial::kNsec3 && !nsec3_.empty(); }
  // The NSEC3 owned by `hash` (kNsec3HashSize octets), or null.
  const Nsec3Record* Nsec3Matching(std::string_view hash) const;
  // The NSEC3 whose interval from its owner to its next hashed owner holds `hash` (the last one wraps
  // round to the first), or null when `hash` is an owner itself or the chain is empty. Binary search.
  const Nsec3Record* Nsec3Covering(std::string_view hash) const;

  // The RRSIG for `set` owned by `owner`, made now if missing or due. Null when unsigned or on a
  // signing failure.
  std::shared_ptr<const CachedSig> SigFor(std::string_view owner, const RRset& set, uint32_t now) const;
  // Signs a one-off RRset (the NSEC records of denial) with the first signer of other RRsets. Empty
  // on failure.
  std::string SignOnce(std::string_view owner, uint16_t type, uint32_t ttl, std::string_view rdata,
                       uint32_t now) const;
  // The same with signer `i` (< Signers(type).size()) into `rrsig`, reusing its buffer: false on failure.
  bool SignOnceInto(std::string_view owner, uint16_t type, uint32_t ttl, std::string_view rdata, uint32_t now,
                    size_t i, std::string* rrsig) const;
  // The keys that sign an RRset of `type`: DNSKEY, CDS and CDNSKEY: ksk, zsk (when another key),
  // dnskey_also (the parent checks CDS with a key its DS names, RFC 7344 section 4.1, so CDS is signed as
  // DNSKEY is); every other type: zsk, zone_also. Empty when unsigned.
  const std::vector<const SigningKey*>& Signers(uint16_t type) const {
    return type == kDnskeyType || type == kCdsType || type == kCdnskeyType ? dnskey_signers_ : zone_signers_;
  }

  // The answer cache (bounded; see zone.cc). Lookup copies the shared_ptr under a shared lock.
  std::shared_ptr<const CachedAnswer> CacheLookup(std::string_view key, uint32_t now) const;
  void CacheStore(std::string_view key, std::shared_ptr<const CachedAnswer> answer) const;
  // How many answers the cache holds. Only names that exist in the zone get one (Answer caches by
  // qname, qtype and DO): a flood of names that do not exist leaves it as it was.
  size_t cached_answers() const { return cached_.load(std::memory_order_relaxed); }

 private:
  Zone() = default;
  std::string apex_;
  std::unordered_map<std::string, Node, StringHash, std::equal_to<>> nodes_;
  const Node* apex_node_ = nullptr;
  bool has_wildcard_ = false;
  const RRset* soa_ = nullptr;
  uint32_t negative_ttl_ = 0;
  static constexpr uint16_t kDnskeyType = 48, kCdsType = 59, kCdnskeyType = 60;
  void BuildNsec3Chain();
  std::vector<Nsec3Record> nsec3_;
  std::string nsec3_param_;  // NSEC3PARAM RDATA (when the chain is built)
  ZoneKeys keys_;
  std::vector<const SigningKey*> dnskey_signers_, zone_signers_;
  mutable std::mutex sig_mu_;
  static constexpr int kShards = 16;
  struct Shard {
    mutable std::shared_mutex mu;
    std::unordered_map<std::string, std::shared_ptr<const CachedAnswer>, StringHash, std::equal_to<>> map;
  };
  mutable Shard shards_[kShards];
  mutable std::atomic<size_t> cached_{0};
};

// The zones served, immutable once made.
class ZoneSet {
 public:
  explicit ZoneSet(std::vector<std::shared_ptr<const Zone>> zones);
  // The zone with the longest apex that `lower_qname` is at or below, or null.
  const Zone* Find(std::string_view lower_qname) const;
  const std::vector<std::shared_ptr<const Zone>>& zones() const { return zones_; }

 private:
  std::vector<std::shared_ptr<const Zone>> zones_;
  std::unordered_map<std::string, const Zone*, StringHash, std::equal_to<>> by_apex_;
};

// Signature validity: inception an hour before the start of the current day, expiration 14 days
// later, refresh after 7 days: every signature made on one day is identical in its times, and a
// cached one is replaced a week before it would expire.
struct Validity {
  uint32_t inception, expiration, refresh_at;
};
Validity ValidityAt(uint32_t now);

}  // namespace govern::dns
