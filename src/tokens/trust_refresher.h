// TrustRefresher: keeps a Checker's keys and revocation list current by pulling them over HTTP from the
// auth service (its JWKS document and its revocation list), and by re-reading the internal ring file
// (ring_file.h: the HS256 keys of Govern's own access tokens), on a timer or on demand.
//
// A failed or malformed fetch keeps what the checker had (tokens keep being checked against the last
// good keys and list) and is reported by RefreshOnce(). Keys are swapped only when the JWKS document
// changed, so the checker's cache survives the periodic pulls; a revocation list older than the one in
// place (a lagging replica) is ignored. Separate library (govern_tokens_http) so that govern_tokens
// itself never links the network layer.
//
// Thread-safe: RefreshOnce may run beside the timer thread; Start/Stop from one owner thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/status.h"
#include "net/http_client.h"
#include "tokens/checker.h"
#include "tokens/issuer.h"

namespace govern::tokens {

struct TrustSources {
  std::string jwks_url;         // "http://auth:8080/.well-known/jwks.json"; empty: keys are not pulled
  std::string revocations_url;  // empty: revocations are not pulled
  std::chrono::milliseconds period{std::chrono::seconds(5)};
  // Keys that are kept beside the pulled ones (fixed keys from configuration).
  std::shared_ptr<const KeySet> local_keys;
  // The internal ring file the auth service writes (auth.internal_ring_file); empty: none. Re-read every
  // period; its keys at the current time are trusted beside the others, swapped in only when that set
  // changed (a new or rewritten file, a pending key appearing, a retired key past its overlap).
  std::string ring_file;
  const Clock* clock = nullptr;  // for the ring's schedule; nullptr: Clock::Real()
};

class TrustRefresher {
 public:
  // `checker` and `client` must outlive this object.
  TrustRefresher(TrustSources sources, Checker& checker, net::HttpClient& client);
  ~TrustRefresher();
  TrustRefresher(const TrustRefresher&) = delete;
  TrustRefresher& operator=(const TrustRefresher&) = delete;

  // Reads the ring file and pulls both sources once, and swaps in what is new. The first error is
  // returned; the other sources are still applied.
  Status RefreshOnce();
  // Local keys changed (the internal ring rotated): swapped in together with the last pulled JWKS.
  void SetLocalKeys(std::shared_ptr<const KeySet> keys);

  // A thread calling RefreshOnce every period (errors are logged, not fatal). Stop joins it.
  void Start();
  void Stop();

 private:
  Status RefreshKeys();
  Status RefreshRevocations();
  Status RefreshRing();
  void SwapKeys();

  TrustSources sources_;
  Checker& checker_;
  net::HttpClient& client_;
  std::mutex mu_;  // guards the fields below and serialises refreshes
  std::string last_jwks_;
  std::shared_ptr<const KeySet> pulled_;
  crypto::SecretBytes ring_bytes_;           // the ring file as last read
  std::shared_ptr<const KeyRing> ring_;      // ... parsed
  std::vector<std::string> ring_kids_;       // the kids of ring_keys_, to notice a change
  std::shared_ptr<const KeySet> ring_keys_;  // ring_->VerifyKeysAt(now) when last swapped
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace govern::tokens
