// Key rings and their schedule, token minting, refresh tokens.
#include "tokens/issuer.h"

#include <openssl/evp.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "crypto/encoding.h"
#include "crypto/random.h"
#include "crypto/sha256.h"
#include "tokens/b64.h"

namespace govern::tokens {

KeyState StateAt(const RingKey& k, int64_t now_s) {
  if (now_s < k.activate_at) return KeyState::kPending;
  if (now_s < k.retire_at) return KeyState::kActive;
  if (now_s < k.drop_at) return KeyState::kRetired;
  return KeyState::kDropped;
}

namespace {

RingKey Schedule(SigningKey key, int64_t activate_at, const RotationPolicy& p) {
  RingKey k{std::move(key), activate_at, 0, 0};
  k.retire_at = activate_at + p.rotate_every.count();
  k.drop_at = k.retire_at + p.keep_after.count();
  return k;
}

Status CheckPolicy(const RotationPolicy& p) {
  if (p.rotate_every.count() <= 0 || p.publish_ahead.count() < 0 || p.keep_after.count() < 0) {
    return InvalidArgument("rotation policy: periods must be positive");
  }
  if (p.publish_ahead >= p.rotate_every) {
    return InvalidArgument("rotation policy: publish_ahead must be shorter than rotate_every");
  }
  return OkStatus();
}

}  // namespace

Result<KeyRing> KeyRing::Create(Alg alg, const RotationPolicy& policy, int64_t now_s) {
  GOVERN_RETURN_IF_ERROR(CheckPolicy(policy));
  GOVERN_ASSIGN_OR_RETURN(auto key, SigningKey::Generate(alg));
  KeyRing r;
  r.alg_ = alg;
  r.keys_.push_back(Schedule(std::move(key), now_s, policy));
  return r;
}

RotationPlan KeyRing::PlanAt(const RotationPolicy& policy, int64_t now_s) const {
  RotationPlan plan;
  int64_t last_retire = 0;
  bool any_active = false;
  for (const auto& k : keys_) {
    KeyState s = StateAt(k, now_s);
    if (s == KeyState::kDropped) plan.drop.push_back(k.key.kid());
    if (s == KeyState::kActive) any_active = true;
    if (s != KeyState::kDropped) last_retire = std::max(last_retire, k.retire_at);
  }
  if (!any_active && std::none_of(keys_.begin(), keys_.end(), [&](const RingKey& k) {
        return StateAt(k, now_s) == KeyState::kPending;
      })) {
    // Nothing signs now and nothing will: the ring lapsed. Start a key at once (verifiers that have not
    // fetched it yet refuse its tokens until they do; better than signing with a retired key).
    plan.introduce = true;
    plan.new_activate_at = now_s;
  } else if (last_retire != 0 && now_s >= last_retire - policy.publish_ahead.count()) {
    // The last scheduled key retires within publish_ahead: publish its successor now.
    plan.introduce = true;
    plan.new_activate_at = last_retire;
  }
  return plan;
}

Result<KeyRing> KeyRing::Rotate(const RotationPolicy& policy, int64_t now_s) const {
  GOVERN_RETURN_IF_ERROR(CheckPolicy(policy));
  RotationPlan plan = PlanAt(policy, now_s);
  KeyRing r;
  r.alg_ = alg_;
  for (const auto& k : keys_) {
    if (std::find(plan.drop.begin(), plan.drop.end(), k.key.kid()) == plan.drop.end()) r.keys_.push_back(k);
  }
  if (plan.introduce) {
    GOVERN_ASSIGN_OR_RETURN(auto key, SigningKey::Generate(alg_));
    r.keys_.push_back(Schedule(std::move(key), plan.new_activate_at, policy));
  }
  std::stable_sort(r.keys_.begin(), r.keys_.end(),
                   [](const RingKey& a, const RingKey& b) { return a.activate_at < b.activate_at; });
  return r;
}

Result<const RingKey*> KeyRing::SignerAt(int64_t now_s) const {
  const RingKey* best = nullptr;
  for (const auto& k : keys_) {
    if (StateAt(k, now_s) == KeyState::kActive && (best == nullptr || k.activate_at >= best->activate_at)) {
      best = &k;
    }
  }
  if (best == nullptr) return FailedPrecondition("key ring: no key signs now (rotate the ring)");
  return best;
}

KeySet KeyRing::VerifyKeysAt(int64_t now_s) const {
  std::vector<VerifyKey> keys;
  for (const auto& k : keys_) {
    if (StateAt(k, now_s) != KeyState::kDropped) keys.push_back(k.key.verify_key());
  }
  return KeySet(std::move(keys));
}

Result<std::string> KeyRing::JwksAt(int64_t now_s) const {
  std::vector<Jwk> jwks;
  for (const auto& k : keys_) {
    if (StateAt(k, now_s) == KeyState::kDropped) continue;
    GOVERN_ASSIGN_OR_RETURN(Jwk j, ToJwk(k.key.verify_key()));
    jwks.push_back(std::move(j));
  }
  return JwksToJson(jwks);
}

Result<crypto::SecretBytes> KeyRing::Serialize() const {
  // {"alg":"EdDSA","keys":[{"activate_at":..,"retire_at":..,"drop_at":..,"key":{private key}}]}
  std::string out = "{\"alg\":\"" + std::string(AlgName(alg_)) + "\",\"keys\":[";
  for (size_t i = 0; i < keys_.size(); ++i) {
    const RingKey& k = keys_[i];
    GOVERN_ASSIGN_OR_RETURN(auto priv, k.key.ExportPrivate());
    if (i) out.push_back(',');
    out += "{\"activate_at\":" + std::to_string(k.activate_at) +
           ",\"retire_at\":" + std::to_string(k.retire_at) + ",\"drop_at\":" + std::to_string(k.drop_at) +
           ",\"key\":";
    out.append(crypto::AsString(priv.span()));
    out.push_back('}');
  }
  out += "]}";
  auto secret = crypto::SecretBytes::FromString(out);
  std::fill(out.begin(), out.end(), '\0');
  return secret;
}

Result<KeyRing> KeyRing::Deserialize(std::span<const uint8_t> bytes) {
  auto j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("key ring: not a JSON object");
  auto alg = j.find("alg");
  auto keys = j.find("keys");
  if (alg == j.end() || !alg->is_string() || keys == j.end() || !keys->is_array()) {
    return InvalidArgument("key ring: needs \"alg\" and \"keys\"");
  }
  KeyRing r;
  GOVERN_ASSIGN_OR_RETURN(r.alg_, ParseAlg(alg->get<std::string>()));
  for (const auto& kj : *keys) {
    if (!kj.is_object()) return InvalidArgument("key ring: a key is not an object");
    RingKey k{SigningKey(nullptr)};
    for (auto [name, field] :
         {std::pair{"activate_at", &k.activate_at}, {"retire_at", &k.retire_at}, {"drop_at", &k.drop_at}}) {
      auto it = kj.find(name);
      if (it == kj.end() || !it->is_number_integer()) {
        return InvalidArgument(std::string("key ring: \"") + name + "\" missing");
      }
      *field = it->get<int64_t>();
    }
    auto key = kj.find("key");
    if (key == kj.end() || !key->is_object()) return InvalidArgument("key ring: \"key\" missing");
    std::string text = key->dump();
    auto sk = SigningKey::ImportPrivate(crypto::AsBytes(text));
    std::fill(text.begin(), text.end(), '\0');
    if (!sk.ok()) return sk.status();
    if (sk->alg() != r.alg_) return InvalidArgument("key ring: a key's algorithm differs from the ring's");
    k.key = std::move(*sk);
    r.keys_.push_back(std::move(k));
  }
  return r;
}

Result<KeySet> KeySetFromRing(std::span<const uint8_t> serialized_ring, int64_t now_s) {
  GOVERN_ASSIGN_OR_RETURN(auto ring, KeyRing::Deserialize(serialized_ring));
  return ring.VerifyKeysAt(now_s);
}

// ---------------------------------------------------------------------------------------------------
// Refresh tokens

namespace {

constexpr std::string_view kRefreshPrefix = "gvr_";

// Appends `bytes` random bytes, base64url-encoded, to *out.
Status AppendRandomId(std::string* out, size_t bytes) {
  uint8_t b[32];
  GOVERN_RETURN_IF_ERROR(crypto::RandomBytes(std::span<uint8_t>(b, bytes)));
  internal::AppendB64Url(out, std::span<const uint8_t>(b, bytes));
  return OkStatus();
}

Result<std::string> RandomId(size_t bytes) {
  std::string out;
  GOVERN_RETURN_IF_ERROR(AppendRandomId(&out, bytes));
  return out;
}

std::string HexSha256(std::string_view s) {
  auto d = crypto::Sha256(s);
  return d.ok() ? crypto::HexEncode(*d) : std::string();
}

}  // namespace

Result<RefreshToken> NewRefreshToken(std::string_view family) {
  RefreshToken t;
  t.token.reserve(kRefreshPrefix.size() + 43);
  t.token = kRefreshPrefix;
  GOVERN_RETURN_IF_ERROR(AppendRandomId(&t.token, 32));
  if (family.empty()) {
    GOVERN_ASSIGN_OR_RETURN(t.family, RandomId(16));
  } else {
    t.family = family;
  }
  GOVERN_ASSIGN_OR_RETURN(auto d, crypto::Sha256(t.token));
  t.hash = crypto::HexEncode(d);
  return t;
}

Result<std::string> HashRefreshToken(std::string_view token) {
  if (token.size() != kRefreshPrefix.size() + 43 ||
      token.substr(0, kRefreshPrefix.size()) != kRefreshPrefix) {
    return InvalidArgument("refresh token: not a gvr_ token");
  }
  if (!crypto::Base64UrlDecode(token.substr(kRefreshPrefix.size())).ok()) {
    return InvalidArgument("refresh token: not a gvr_ token");
  }
  return HexSha256(token);
}

Result<std::string> HalfHash(Alg alg, std::string_view value) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const char* name = alg == Alg::kEdDSA ? "SHA512" : "SHA256";
  EVP_MD* algo = EVP_MD_fetch(nullptr, name, nullptr);
  bool ok = algo != nullptr && EVP_Digest(value.data(), value.size(), md, &len, algo, nullptr) == 1;
  EVP_MD_free(algo);
  if (!ok) return Internal("half hash: digest failed");
  return crypto::Base64UrlEncode(std::span<const uint8_t>(md, len / 2));
}

// ---------------------------------------------------------------------------------------------------
// Issuer

Issuer::Issuer(IssuerOptions options, std::shared_ptr<const KeyRing> access_ring,
               std::shared_ptr<const KeyRing> id_ring, const Clock& clock)
    : options_(std::move(options)),
      access_ring_(std::move(access_ring)),
      id_ring_(std::move(id_ring)),
      clock_(clock) {}

void Issuer::SetRings(std::shared_ptr<const KeyRing> access_ring, std::shared_ptr<const KeyRing> id_ring) {
  access_ring_.store(std::move(access_ring));
  id_ring_.store(std::move(id_ring));
}

Result<std::string> Issuer::Sign(const KeyRing& ring, Claims& claims, std::chrono::seconds lifetime,
                                 std::string_view typ) const {
  if (lifetime.count() <= 0) return InvalidArgument("issue: lifetime must be positive");
  const int64_t now_s = clock_.UnixMicros() / 1'000'000;
  GOVERN_ASSIGN_OR_RETURN(const RingKey* signer, ring.SignerAt(now_s));
  claims.iss = options_.issuer;
  claims.iat = now_s;
  claims.exp = now_s + lifetime.count();
  if (claims.jti.empty()) {
    GOVERN_ASSIGN_OR_RETURN(claims.jti, RandomId(16));
  }
  return SignCompact(signer->key, ClaimsToJson(claims), typ);
}

Result<std::string> Issuer::IssueAccess(Claims claims, std::chrono::seconds lifetime) const {
  auto ring = access_ring_.load();
  if (!ring) return FailedPrecondition("issue: no access key ring");
  if (claims.aud.empty()) return InvalidArgument("issue: an access token needs an audience");
  return Sign(*ring, claims, lifetime, "at+jwt");
}

Result<TokenPair> Issuer::IssuePair(Claims claims, std::chrono::seconds access_lifetime) const {
  TokenPair pair;
  GOVERN_ASSIGN_OR_RETURN(pair.refresh, NewRefreshToken(claims.sid));
  claims.sid = pair.refresh.family;
  auto ring = access_ring_.load();
  if (!ring) return FailedPrecondition("issue: no access key ring");
  if (claims.aud.empty()) return InvalidArgument("issue: an access token needs an audience");
  GOVERN_ASSIGN_OR_RETURN(pair.access, Sign(*ring, claims, access_lifetime, "at+jwt"));
  pair.access_expires_at = claims.exp;
  return pair;
}

Result<std::string> Issuer::IssueId(Claims claims, std::chrono::seconds lifetime,
                                    std::string_view access_token) const {
  auto ring = id_ring_.load();
  if (!ring) return FailedPrecondition("issue: no ID token key ring");
  if (claims.sub.empty() || claims.aud.empty())
    return InvalidArgument("issue: an ID token needs sub and aud");
  if (!access_token.empty()) {
    GOVERN_ASSIGN_OR_RETURN(claims.at_hash, HalfHash(ring->alg(), access_token));
  }
  return Sign(*ring, claims, lifetime, "JWT");
}

}  // namespace govern::tokens
