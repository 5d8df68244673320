// TrustRefresher: pull, parse, swap; keep the last good state on any failure.
#include "tokens/trust_refresher.h"

#include "base/log.h"
#include "crypto/bytes.h"
#include "tokens/ring_file.h"

namespace govern::tokens {

TrustRefresher::TrustRefresher(TrustSources sources, Checker& checker, net::HttpClient& client)
    : sources_(std::move(sources)), checker_(checker), client_(client) {}

TrustRefresher::~TrustRefresher() { Stop(); }

namespace {

Result<std::string> Fetch(net::HttpClient& client, const std::string& url) {
  auto r = client.Get(url);
  if (!r.ok()) return r.status().WithContext("GET " + url);
  if (r->status != 200) return Unavailable("GET " + url + ": HTTP " + std::to_string(r->status));
  return std::move(r->body);
}

}  // namespace

void TrustRefresher::SwapKeys() {
  std::vector<VerifyKey> keys;
  if (sources_.local_keys) keys = sources_.local_keys->keys();
  if (ring_keys_) keys.insert(keys.end(), ring_keys_->keys().begin(), ring_keys_->keys().end());
  if (pulled_) keys.insert(keys.end(), pulled_->keys().begin(), pulled_->keys().end());
  checker_.SetKeys(std::make_shared<const KeySet>(std::move(keys)));
}

Status TrustRefresher::RefreshKeys() {
  if (sources_.jwks_url.empty()) return OkStatus();
  GOVERN_ASSIGN_OR_RETURN(std::string body, Fetch(client_, sources_.jwks_url));
  if (body == last_jwks_) return OkStatus();  // unchanged: keep the checker's cache
  auto set = KeySet::FromJwks(body);
  if (!set.ok()) return set.status().WithContext("jwks from " + sources_.jwks_url);
  pulled_ = std::make_shared<const KeySet>(std::move(*set));
  last_jwks_ = std::move(body);
  SwapKeys();
  return OkStatus();
}

Status TrustRefresher::RefreshRevocations() {
  if (sources_.revocations_url.empty()) return OkStatus();
  GOVERN_ASSIGN_OR_RETURN(std::string body, Fetch(client_, sources_.revocations_url));
  auto list = RevocationList::FromJson(body);
  if (!list.ok()) return list.status().WithContext("revocations from " + sources_.revocations_url);
  // An older list (a lagging replica answered) is ignored. One of the same version is installed: the
  // auth service leaves out entries whose tokens have expired without bumping the version, so the list
  // in place shrinks as they expire.
  checker_.SetRevocationsIfNotOlder(std::make_shared<const RevocationList>(std::move(*list)));
  return OkStatus();
}

Status TrustRefresher::RefreshRing() {
  if (sources_.ring_file.empty()) return OkStatus();
  const Clock& clock = sources_.clock ? *sources_.clock : Clock::Real();
  auto bytes = ReadRingFile(sources_.ring_file);
  Status read = bytes.status();
  if (bytes.ok() && !(ring_ && crypto::ConstantTimeEquals(bytes->span(), ring_bytes_.span()))) {
    auto ring = KeyRing::Deserialize(bytes->span());
    if (ring.ok()) {
      ring_ = std::make_shared<const KeyRing>(std::move(*ring));
      ring_bytes_ = std::move(*bytes);
    } else {
      read = ring.status().WithContext("ring file " + sources_.ring_file);  // keep the last good ring
    }
  }
  if (!ring_) return read;
  // Re-derived every time even when the file is unchanged: keys past their overlap leave on schedule.
  KeySet now = ring_->VerifyKeysAt(clock.UnixMicros() / 1'000'000);
  std::vector<std::string> kids;
  for (const auto& k : now.keys()) kids.push_back(k.kid());
  if (kids != ring_kids_) {
    ring_kids_ = std::move(kids);
    ring_keys_ = std::make_shared<const KeySet>(std::move(now));
    SwapKeys();
  }
  return read;
}

Status TrustRefresher::RefreshOnce() {
  std::lock_guard lock(mu_);
  Status ring = RefreshRing();
  Status keys = RefreshKeys();
  Status revocations = RefreshRevocations();
  if (!ring.ok()) return ring;
  return keys.ok() ? revocations : keys;
}

void TrustRefresher::SetLocalKeys(std::shared_ptr<const KeySet> keys) {
  std::lock_guard lock(mu_);
  sources_.local_keys = std::move(keys);
  SwapKeys();
}

void TrustRefresher::Start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] {
    std::unique_lock lock(stop_mu_);
    while (!stopping_) {
      lock.unlock();
      Status s = RefreshOnce();
      if (!s.ok())
        log::Warn("tokens", "refresh failed, keeping the last good keys", {{"error", s.ToString()}});
      lock.lock();
      stop_cv_.wait_for(lock, sources_.period, [this] { return stopping_; });
    }
  });
}

void TrustRefresher::Stop() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace govern::tokens
