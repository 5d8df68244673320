// Checker: cold path (parse, verify, validate) and the sharded cache of verified tokens.
#include "tokens/checker.h"

#include <array>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>

#include "crypto/sha256.h"

namespace govern::tokens {

// ---------------------------------------------------------------------------------------------------
// KeySet

KeySet::KeySet(std::vector<VerifyKey> keys) : keys_(std::move(keys)) {}

Result<KeySet> KeySet::FromJwks(std::string_view jwks_json) {
  GOVERN_ASSIGN_OR_RETURN(auto jwks, ParseJwks(jwks_json));
  std::vector<VerifyKey> keys;
  for (const auto& jwk : jwks) {
    if (!jwk.use.empty() && jwk.use != "sig") continue;  // encryption keys are not ours to use
    GOVERN_ASSIGN_OR_RETURN(auto k, jwk.ToKey());
    keys.push_back(std::move(k));
  }
  return KeySet(std::move(keys));
}

Result<const VerifyKey*> KeySet::Find(const JwsHeader& header) const {
  const VerifyKey* found = nullptr;
  size_t same_alg = 0;
  for (const auto& k : keys_) {
    if (k.alg() != header.alg) continue;  // the key decides the algorithm
    ++same_alg;
    if (!header.kid.empty() && k.kid() == header.kid) return &k;
    if (header.kid.empty()) found = &k;
  }
  if (header.kid.empty() && same_alg == 1) return found;
  return Unauthenticated("unknown_key: no trusted " + std::string(AlgName(header.alg)) + " key" +
                         (header.kid.empty() ? " (token names no kid)" : " with this kid"));
}

// ---------------------------------------------------------------------------------------------------
// RevocationList

bool RevocationList::Revoked(const Claims& c) const {
  if (!c.jti.empty() && jti_.count(c.jti)) return true;
  if (!c.sid.empty() && sid_.count(c.sid)) return true;
  return false;
}

RevocationList RevocationList::Pruned(int64_t now_s, int64_t leeway_s, uint64_t version) const {
  Entries j, s;
  for (const auto& [k, exp] : jti_) {
    if (exp + leeway_s >= now_s) j.emplace(k, exp);
  }
  for (const auto& [k, exp] : sid_) {
    if (exp + leeway_s >= now_s) s.emplace(k, exp);
  }
  return RevocationList(version, std::move(j), std::move(s));
}

std::string RevocationList::ToJson() const {
  nlohmann::json j;
  j["version"] = version_;
  j["jti"] = nlohmann::json::object();
  j["sid"] = nlohmann::json::object();
  for (const auto& [k, v] : jti_) j["jti"][k] = v;
  for (const auto& [k, v] : sid_) j["sid"][k] = v;
  return j.dump();
}

Result<RevocationList> RevocationList::FromJson(std::string_view text) {
  auto j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("revocations: not a JSON object");
  auto v = j.find("version");
  if (v == j.end() || !v->is_number_unsigned())
    return InvalidArgument("revocations: no unsigned \"version\"");
  Entries jti, sid;
  for (auto [name, out] : {std::pair{"jti", &jti}, {"sid", &sid}}) {
    auto it = j.find(name);
    if (it == j.end()) continue;
    if (!it->is_object())
      return InvalidArgument(std::string("revocations: \"") + name + "\" is not an object");
    for (auto e = it->begin(); e != it->end(); ++e) {
      if (!e.value().is_number_integer()) {
        return InvalidArgument(std::string("revocations: expiry in \"") + name + "\" is not an integer");
      }
      out->emplace(e.key(), e.value().get<int64_t>());
    }
  }
  return RevocationList(v->get<uint64_t>(), std::move(jti), std::move(sid));
}

// ---------------------------------------------------------------------------------------------------
// Reject reasons

namespace {

constexpr std::array<std::pair<Reject, std::string_view>, 8> kNames = {{
    {Reject::kMalformed, "malformed"},
    {Reject::kUnknownKey, "unknown_key"},
    {Reject::kBadSignature, "bad_signature"},
    {Reject::kWrongIssuer, "wrong_issuer"},
    {Reject::kWrongAudience, "wrong_audience"},
    {Reject::kExpired, "expired"},
    {Reject::kNotYetValid, "not_yet_valid"},
    {Reject::kRevoked, "revoked"},
}};

Status Refuse(Reject r, std::string_view detail) {
  std::string m(RejectName(r));
  if (!detail.empty()) {
    m += ": ";
    m += detail;
  }
  return Status(r == Reject::kMalformed ? Code::kInvalidArgument : Code::kUnauthenticated, std::move(m));
}

}  // namespace

std::string_view RejectName(Reject r) {
  for (const auto& [k, name] : kNames) {
    if (k == r) return name;
  }
  return "malformed";
}

std::string_view Describe(Reject r) {
  switch (r) {
    case Reject::kMalformed:
      return "The access token is malformed";
    case Reject::kUnknownKey:
      return "The access token is signed with an unknown key";
    case Reject::kBadSignature:
      return "The access token signature is invalid";
    case Reject::kWrongIssuer:
      return "The access token was issued by an untrusted issuer";
    case Reject::kWrongAudience:
      return "The access token is not intended for this service";
    case Reject::kExpired:
      return "The access token expired";
    case Reject::kNotYetValid:
      return "The access token is not valid yet";
    case Reject::kRevoked:
      return "The access token was revoked";
  }
  return "The access token is invalid";
}

Reject RejectOf(const Status& s) {
  std::string_view m = s.message();
  for (const auto& [k, name] : kNames) {
    if (m.size() >= name.size() && m.substr(0, name.size()) == name &&
        (m.size() == name.size() || m[name.size()] == ':')) {
      return k;
    }
  }
  return Reject::kMalformed;
}

// ---------------------------------------------------------------------------------------------------
// The cache: 16 shards, each a hash map under its own mutex. Keys are SHA-256 digests of the token (an
// attacker cannot make two tokens collide, so a hit is the same token that was verified). When a shard is
// full an arbitrary entry goes: a bounded cache only has to keep the hot tokens most of the time.

struct Checker::Cache {
  static constexpr size_t kShards = 16;
  struct DigestHash {
    size_t operator()(const crypto::Sha256Digest& d) const {
      size_t h;
      std::memcpy(&h, d.data(), sizeof h);
      return h;
    }
  };
  struct Entry {
    ClaimsPtr claims;
    uint64_t generation;
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<crypto::Sha256Digest, Entry, DigestHash> map;
  };
  explicit Cache(size_t entries) : per_shard(std::max<size_t>(1, entries / kShards)) {
    // Buckets up front: no rehash pauses while the cache fills under load.
    for (auto& s : shards) s.map.reserve(per_shard);
  }

  Shard& For(const crypto::Sha256Digest& d) { return shards[d[8] % kShards]; }

  ClaimsPtr Get(const crypto::Sha256Digest& d, uint64_t generation) {
    Shard& s = For(d);
    std::lock_guard lock(s.mu);
    auto it = s.map.find(d);
    if (it == s.map.end()) return nullptr;
    if (it->second.generation != generation) {
      s.map.erase(it);
      return nullptr;
    }
    return it->second.claims;
  }

  void Put(const crypto::Sha256Digest& d, ClaimsPtr claims, uint64_t generation) {
    Shard& s = For(d);
    std::lock_guard lock(s.mu);
    if (s.map.size() >= per_shard && !s.map.count(d)) s.map.erase(s.map.begin());
    s.map.insert_or_assign(d, Entry{std::move(claims), generation});
  }

  void Erase(const crypto::Sha256Digest& d) {
    Shard& s = For(d);
    std::lock_guard lock(s.mu);
    s.map.erase(d);
  }

  void Clear() {
    for (auto& s : shards) {
      std::lock_guard lock(s.mu);
      s.map.clear();
    }
  }

  size_t Size() {
    size_t n = 0;
    for (auto& s : shards) {
      std::lock_guard lock(s.mu);
      n += s.map.size();
    }
    return n;
  }

  size_t per_shard;
  std::array<Shard, kShards> shards;
};

// ---------------------------------------------------------------------------------------------------
// Checker

Checker::Checker(CheckerOptions options, std::shared_ptr<const KeySet> keys, const Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      keys_(keys ? std::move(keys) : std::make_shared<const KeySet>()),
      revocations_(std::make_shared<const RevocationList>()),
      cache_(std::make_unique<Cache>(options_.cache_entries)) {}

Checker::~Checker() = default;

void Checker::SetKeys(std::shared_ptr<const KeySet> keys) {
  keys_.store(keys ? std::move(keys) : std::make_shared<const KeySet>());
  key_generation_.fetch_add(1);
  cache_->Clear();
}

void Checker::SetRevocations(std::shared_ptr<const RevocationList> list) {
  revocations_.store(list ? std::move(list) : std::make_shared<const RevocationList>());
}

bool Checker::SetRevocationsIfNotOlder(std::shared_ptr<const RevocationList> list) {
  if (!list) return false;
  std::shared_ptr<const RevocationList> current = revocations_.load();
  while (current->version() <= list->version()) {
    if (revocations_.compare_exchange_weak(current, list)) return true;
  }
  return false;
}

uint64_t Checker::revocation_version() const { return revocations_.load()->version(); }

size_t Checker::CachedForTesting() const { return cache_->Size(); }

Result<ClaimsPtr> Checker::VerifyCold(std::string_view token, const KeySet& keys) const {
  auto parsed = ParseCompact(token, options_.max_token_bytes);
  if (!parsed.ok()) return Refuse(Reject::kMalformed, parsed.status().message());
  auto key = keys.Find(parsed->header);
  if (!key.ok()) return key.status();  // already "unknown_key: ..."
  Status sig = (*key)->Verify(parsed->signing_input, parsed->signature);
  if (!sig.ok()) return Refuse(Reject::kBadSignature, "");
  // Only now, with the signature good, are the claims read.
  auto claims = ClaimsFromJson(parsed->payload);
  if (!claims.ok()) return Refuse(Reject::kMalformed, claims.status().message());
  if (claims->iss != options_.issuer) return Refuse(Reject::kWrongIssuer, "");
  if (options_.require_exp && claims->exp == 0) return Refuse(Reject::kMalformed, "the token has no exp");
  // RFC 9068 section 4: an access token says so; an ID token ("JWT" or none) is refused as an access token.
  if (!parsed->header.typ.empty() && parsed->header.typ != "at+jwt" &&
      parsed->header.typ != "application/at+jwt") {
    return Refuse(Reject::kMalformed, "typ is not at+jwt");
  }
  return std::make_shared<const Claims>(std::move(*claims));
}

Status Checker::CheckTimeAndAudience(const Claims& c, std::string_view audience, int64_t now_s) const {
  const int64_t skew = options_.clock_skew.count();
  if (c.exp != 0 && now_s >= c.exp + skew) return Refuse(Reject::kExpired, "");
  if (c.nbf != 0 && now_s + skew < c.nbf) return Refuse(Reject::kNotYetValid, "");
  if (!c.HasAudience(audience)) return Refuse(Reject::kWrongAudience, "");
  return OkStatus();
}

Result<ClaimsPtr> Checker::Check(std::string_view token, std::string_view audience) const {
  if (token.size() > options_.max_token_bytes) return Refuse(Reject::kMalformed, "token too long");
  auto digest = crypto::Sha256(token);
  if (!digest.ok()) return digest.status();
  const uint64_t generation = key_generation_.load();
  const int64_t now_s = clock_.UnixMicros() / 1'000'000;
  ClaimsPtr claims = cache_->Get(*digest, generation);
  if (claims == nullptr) {
    auto keys = keys_.load();
    GOVERN_ASSIGN_OR_RETURN(claims, VerifyCold(token, *keys));
    // Cache only what could pass a later check: expired tokens stay out.
    if (claims->exp == 0 || now_s < claims->exp + options_.clock_skew.count()) {
      cache_->Put(*digest, claims, generation);
    }
  }
  Status s = CheckTimeAndAudience(*claims, audience, now_s);
  if (!s.ok()) {
    if (RejectOf(s) == Reject::kExpired) cache_->Erase(*digest);
    return s;
  }
  if (revocations_.load()->Revoked(*claims)) return Refuse(Reject::kRevoked, "");
  return claims;
}

}  // namespace govern::tokens
