// Telemetry API keys: creation, listing, revocation, and the cache that verifies them per request.
#include "services/telemetry/api_keys.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "base/log.h"
#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "crypto/random.h"
#include "crypto/sha256.h"
#include "db/connection.h"
#include "db/pool.h"

namespace govern::telemetry {
namespace {

constexpr std::string_view kPrefix = "gvk_";
constexpr std::string_view kBase32 = "abcdefghijklmnopqrstuvwxyz234567";
// One message for every way a key can be wrong: a caller must not learn which key_ids exist.
constexpr std::string_view kBadKey = "invalid, revoked or wrong-scope API key";

bool IsBase32(char c) { return (c >= 'a' && c <= 'z') || (c >= '2' && c <= '7'); }
bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

Result<crypto::Sha256Digest> KeyHash(std::string_view key) { return crypto::Sha256(key); }

constexpr const char* kTimeFormat = R"(to_char(%s AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))";

std::string TimeColumn(const char* column) {
  char buf[128];
  std::snprintf(buf, sizeof buf, kTimeFormat, column);
  return buf;
}

}  // namespace

std::string_view ScopeName(KeyScope scope) { return scope == KeyScope::kIngest ? "ingest" : "query"; }

Result<KeyScope> ParseScope(std::string_view name) {
  if (name == "ingest") return KeyScope::kIngest;
  if (name == "query") return KeyScope::kQuery;
  return InvalidArgument("scope must be 'ingest' or 'query', not '" + std::string(name) + "'");
}

Status ValidateOrg(std::string_view org) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument("organisation name '" + std::string(org.substr(0, 80)) + "' " + std::string(why) +
                           " (use 1-63 of a-z, 0-9, '_' and '-', starting with a letter or digit)");
  };
  if (org.empty()) return InvalidArgument("organisation name is empty");
  if (org.size() > 63) return bad("is longer than 63 characters");
  for (size_t i = 0; i < org.size(); ++i) {
    char c = org[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (alnum) continue;
    if (i > 0 && (c == '_' || c == '-')) continue;
    return bad("has '" + std::string(1, c) + "' at position " + std::to_string(i + 1));
  }
  return OkStatus();
}

Result<ParsedKey> ParseKey(std::string_view key) {
  // gvk_ + 12 + _ + 64
  constexpr size_t kLength = 4 + kKeyIdLength + 1 + 2 * kKeySecretBytes;
  if (key.size() != kLength || key.substr(0, kPrefix.size()) != kPrefix || key[4 + kKeyIdLength] != '_') {
    return Unauthenticated(std::string(kBadKey));
  }
  ParsedKey p{key.substr(4, kKeyIdLength), key.substr(4 + kKeyIdLength + 1)};
  for (char c : p.key_id) {
    if (!IsBase32(c)) return Unauthenticated(std::string(kBadKey));
  }
  for (char c : p.secret) {
    if (!IsLowerHex(c)) return Unauthenticated(std::string(kBadKey));
  }
  return p;
}

Result<std::string> CreateKey(db::Connection& conn, std::string_view org, KeyScope scope,
                              std::string_view name) {
  GOVERN_RETURN_IF_ERROR(ValidateOrg(org));
  if (name.size() > 200) return InvalidArgument("key name is longer than 200 bytes");
  std::array<uint8_t, 8 + kKeySecretBytes> random{};
  GOVERN_RETURN_IF_ERROR(crypto::RandomBytes(random));
  std::string key(kPrefix);
  // 12 base32 characters from 60 of the first 64 random bits.
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits = (bits << 8) | random[i];
  for (size_t i = 0; i < kKeyIdLength; ++i) key.push_back(kBase32[(bits >> (5 * i)) & 31]);
  key.push_back('_');
  key += crypto::HexEncode(std::span<const uint8_t>(random).subspan(8));
  OPENSSL_cleanse(random.data(), random.size());
  GOVERN_ASSIGN_OR_RETURN(crypto::Sha256Digest hash, KeyHash(key));
  std::string_view key_id = std::string_view(key).substr(4, kKeyIdLength);
  auto rows = conn.Exec(
      "INSERT INTO telemetry_ingest_keys (key_id, org, secret_hash, scope, name) VALUES ($1, $2, $3, $4, $5)",
      db::Params(key_id, org, db::Bytea{crypto::AsString(hash)}, ScopeName(scope), name));
  if (!rows.ok()) return rows.status().WithContext("store the new key");
  return key;
}

Result<std::vector<KeyInfo>> ListKeys(db::Connection& conn, std::string_view org) {
  std::string sql = "SELECT key_id, org, scope, name, " + TimeColumn("created_at") + ", " +
                    TimeColumn("revoked_at") +
                    " FROM telemetry_ingest_keys WHERE ($1 = '' OR org = $1) ORDER BY created_at, key_id";
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, conn.Exec(sql, db::Params(org)));
  std::vector<KeyInfo> out;
  out.reserve(rows.size());
  for (int r = 0; r < rows.size(); ++r) {
    KeyInfo k;
    k.key_id = rows.Text(r, 0);
    k.org = rows.Text(r, 1);
    GOVERN_ASSIGN_OR_RETURN(k.scope, ParseScope(rows.Text(r, 2)));
    k.name = rows.Text(r, 3);
    k.created_at = rows.Text(r, 4);
    if (auto t = rows.OptText(r, 5)) k.revoked_at = std::string(*t);
    out.push_back(std::move(k));
  }
  return out;
}

Status RevokeKey(db::Connection& conn, std::string_view key_id) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      conn.Exec("UPDATE telemetry_ingest_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE key_id = $1",
                db::Params(key_id)));
  if (rows.affected() == 0) return NotFound("no key with id '" + std::string(key_id.substr(0, 64)) + "'");
  return OkStatus();
}

// ---- KeyCache ----

struct KeyCache::Impl {
  // What the table says about one key_id.
  struct Entry {
    bool found = false;
    bool revoked = false;
    KeyScope scope = KeyScope::kIngest;
    std::string org;
    crypto::Sha256Digest hash{};
    int64_t expires_nanos = 0;  // monotonic
  };
  struct Waiter {
    std::string key;
    KeyScope scope;
    Callback done;
  };

  db::Pool* pool;
  KeyCacheOptions opt;
  const Clock* clock;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<std::string, Entry> cache;
  std::unordered_map<std::string, std::vector<Waiter>> waiting;  // key_id -> callers of its lookup
  std::deque<std::string> queue;                                 // key_ids to look up
  bool stop = false;
  std::vector<std::thread> threads;
  Stats stats;

  static Result<std::string> Check(const Entry& e, std::string_view key, KeyScope scope) {
    if (!e.found) return Unauthenticated(std::string(kBadKey));
    GOVERN_ASSIGN_OR_RETURN(crypto::Sha256Digest hash, KeyHash(key));
    // Always compare, so a wrong secret costs the same whatever else is wrong.
    bool same = crypto::ConstantTimeEquals(hash, e.hash);
    if (!same || e.revoked || e.scope != scope) return Unauthenticated(std::string(kBadKey));
    return e.org;
  }

  Result<Entry> Lookup(const std::string& key_id) {
    auto lease = pool->Checkout();
    if (!lease.ok()) return Unavailable("key lookup: " + lease.status().message());
    auto rows = (*lease)->ExecPrepared(
        "SELECT org, scope, secret_hash, revoked_at IS NOT NULL FROM telemetry_ingest_keys WHERE key_id = $1",
        db::Params(key_id));
    if (!rows.ok()) return Unavailable("key lookup: " + rows.status().message());
    Entry e;
    if (rows->empty()) return e;
    e.found = true;
    e.org = rows->Text(0, 0);
    auto scope = ParseScope(rows->Text(0, 1));
    auto hash = rows->Bytes(0, 2);
    auto revoked = rows->Bool(0, 3);
    if (!scope.ok() || !hash.ok() || !revoked.ok() || hash->size() != e.hash.size()) {
      return Internal("key lookup: malformed row for key " + key_id);
    }
    e.scope = *scope;
    e.revoked = *revoked;
    std::copy(hash->begin(), hash->end(), e.hash.begin());
    return e;
  }

  void Insert(const std::string& key_id, Entry e) {  // mu held
    if (opt.ttl.count() <= 0) return;
    if (cache.size() >= opt.max_entries && !cache.contains(key_id)) {
      int64_t now = clock->MonotonicNanos();
      std::erase_if(cache, [&](const auto& kv) { return kv.second.expires_nanos <= now; });
      if (cache.size() >= opt.max_entries) {
        std::erase_if(cache, [](const auto& kv) { return !kv.second.found; });
      }
      if (cache.size() >= opt.max_entries) cache.clear();
    }
    e.expires_nanos = clock->MonotonicNanos() + std::chrono::nanoseconds(opt.ttl).count();
    cache[key_id] = std::move(e);
  }

  void Run() {
    std::unique_lock lk(mu);
    for (;;) {
      cv.wait(lk, [&] { return stop || !queue.empty(); });
      if (stop) return;
      std::string key_id = std::move(queue.front());
      queue.pop_front();
      ++stats.misses;
      lk.unlock();
      Result<Entry> e = Lookup(key_id);
      if (!e.ok()) {
        log::Warn("telemetry", "API key lookup failed",
                  {{"key_id", key_id}, {"error", e.status().message()}});
      }
      lk.lock();
      if (e.ok()) {
        Insert(key_id, *e);
      } else {
        ++stats.lookups_failed;
      }
      std::vector<Waiter> waiters = std::move(waiting[key_id]);
      waiting.erase(key_id);
      lk.unlock();
      for (Waiter& w : waiters) {
        if (e.ok()) {
          w.done(Check(*e, w.key, w.scope));
        } else {
          w.done(Unavailable("the key store is unavailable; retry later"));
        }
      }
      lk.lock();
    }
  }
};

KeyCache::KeyCache(db::Pool* pool, KeyCacheOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->pool = pool;
  impl_->opt = options;
  impl_->clock = options.clock != nullptr ? options.clock : &Clock::Real();
  int n = std::max(1, options.threads);
  for (int i = 0; i < n; ++i) impl_->threads.emplace_back([impl = impl_.get()] { impl->Run(); });
}

KeyCache::~KeyCache() { Shutdown(); }

void KeyCache::Shutdown() {
  std::unordered_map<std::string, std::vector<Impl::Waiter>> left;
  {
    std::lock_guard lk(impl_->mu);
    if (impl_->stop && impl_->threads.empty()) return;
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  for (std::thread& t : impl_->threads) t.join();
  {
    std::lock_guard lk(impl_->mu);
    impl_->threads.clear();
    left.swap(impl_->waiting);
    impl_->queue.clear();
  }
  for (auto& [id, waiters] : left) {
    for (auto& w : waiters) w.done(Unavailable("shutting down"));
  }
}

void KeyCache::Verify(std::string_view key, KeyScope scope, Callback done) {
  auto parsed = ParseKey(key);
  if (!parsed.ok()) {
    done(parsed.status());
    return;
  }
  std::string key_id(parsed->key_id);
  std::unique_lock lk(impl_->mu);
  if (auto it = impl_->cache.find(key_id); it != impl_->cache.end()) {
    if (it->second.expires_nanos > impl_->clock->MonotonicNanos()) {
      Impl::Entry e = it->second;
      ++impl_->stats.hits;
      lk.unlock();
      done(Impl::Check(e, key, scope));
      return;
    }
  }
  if (impl_->stop) {
    lk.unlock();
    done(Unavailable("shutting down"));
    return;
  }
  auto w = impl_->waiting.find(key_id);
  if (w == impl_->waiting.end()) {
    if (impl_->queue.size() >= impl_->opt.max_queued) {
      lk.unlock();
      done(Unavailable("too many API key lookups waiting; retry later"));
      return;
    }
    w = impl_->waiting.emplace(key_id, std::vector<Impl::Waiter>{}).first;
    impl_->queue.push_back(key_id);
    impl_->cv.notify_one();
  }
  w->second.push_back({std::string(key), scope, std::move(done)});
}

Result<std::string> KeyCache::VerifyBlocking(std::string_view key, KeyScope scope) {
  std::promise<Result<std::string>> p;
  auto f = p.get_future();
  Verify(key, scope, [&p](Result<std::string> r) { p.set_value(std::move(r)); });
  return f.get();
}

void KeyCache::Forget(std::string_view key_id) {
  std::lock_guard lk(impl_->mu);
  impl_->cache.erase(std::string(key_id));
}

KeyCache::Stats KeyCache::GetStats() const {
  std::lock_guard lk(impl_->mu);
  return impl_->stats;
}

}  // namespace govern::telemetry
