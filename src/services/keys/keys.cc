// Service API keys: creation, listing, revocation, direct checks and the cache that verifies them.
#include "services/keys/keys.h"

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

namespace govern::service_keys {
namespace {

constexpr std::string_view kBase32 = "abcdefghijklmnopqrstuvwxyz234567";
// One message for every way a key can be wrong: a caller must not learn which key_ids exist.
constexpr std::string_view kBadKey = "invalid or revoked API key";

bool IsBase32(char c) { return (c >= 'a' && c <= 'z') || (c >= '2' && c <= '7'); }
bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

std::string TimeColumn(const char* column) {
  char buf[128];
  std::snprintf(buf, sizeof buf, R"(to_char(%s AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))", column);
  return buf;
}

// The row of one key_id, or nullopt when there is none.
struct Row {
  std::string org;
  std::string scope;
  std::string hash;
  bool revoked = false;
};

Result<std::optional<Row>> LookupRow(db::Connection& conn, const KeyTable& table, std::string_view key_id) {
  auto rows = conn.ExecPrepared(
      "SELECT org, scope, secret_hash, revoked_at IS NOT NULL FROM " + table.table + " WHERE key_id = $1",
      db::Params(key_id));
  if (!rows.ok()) return Unavailable("key lookup: " + rows.status().message());
  if (rows->empty()) return std::optional<Row>();
  Row r;
  r.org = rows->Text(0, 0);
  r.scope = rows->Text(0, 1);
  auto hash = rows->Bytes(0, 2);
  auto revoked = rows->Bool(0, 3);
  if (!hash.ok() || !revoked.ok() || hash->size() != 32) {
    return Internal("key lookup: malformed row for key " + std::string(key_id));
  }
  r.hash = std::move(*hash);
  r.revoked = *revoked;
  return std::optional<Row>(std::move(r));
}

// Compares always, so a wrong secret costs the same whatever else is wrong.
Result<KeyIdentity> Check(const std::optional<Row>& row, std::string_view key_id, std::string_view key) {
  GOVERN_ASSIGN_OR_RETURN(crypto::Sha256Digest hash, crypto::Sha256(key));
  static const std::string kZero(32, '\0');
  bool same = crypto::ConstantTimeEquals(crypto::AsString(hash), row ? row->hash : kZero);
  if (!row || !same || row->revoked) return Unauthenticated(std::string(kBadKey));
  return KeyIdentity{std::string(key_id), row->org, row->scope};
}

}  // namespace

Status KeyTable::Validate() const {
  if (table.empty() || !(table[0] == '_' || (table[0] >= 'a' && table[0] <= 'z'))) {
    return InvalidArgument("key table name '" + table + "' must start with a-z or '_'");
  }
  for (char c : table) {
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
      return InvalidArgument("key table name '" + table + "' may hold only a-z, 0-9 and '_'");
    }
  }
  if (prefix.empty() || prefix.size() > 8) return InvalidArgument("key prefix must be 1-8 letters");
  for (char c : prefix) {
    if (c < 'a' || c > 'z') return InvalidArgument("key prefix '" + prefix + "' may hold only a-z");
  }
  if (scopes.empty()) return InvalidArgument("a key table needs at least one scope");
  for (const std::string& s : scopes) {
    if (s.empty() || s.size() > 32) return InvalidArgument("scope names are 1-32 characters");
    for (char c : s) {
      if (!(c == '_' || c == '-' || (c >= 'a' && c <= 'z'))) {
        return InvalidArgument("scope '" + s + "' may hold only a-z, '_' and '-'");
      }
    }
  }
  return OkStatus();
}

Status KeyTable::CheckScope(std::string_view scope) const {
  if (std::find(scopes.begin(), scopes.end(), scope) != scopes.end()) return OkStatus();
  std::string list;
  for (const std::string& s : scopes) list += (list.empty() ? "'" : ", '") + s + "'";
  return InvalidArgument("scope must be one of " + list + ", not '" + std::string(scope.substr(0, 40)) + "'");
}

std::string TableSql(const KeyTable& table) {
  std::string scopes;
  for (const std::string& s : table.scopes) scopes += (scopes.empty() ? "'" : ", '") + s + "'";
  return "CREATE TABLE " + table.table +
         " (\n"
         "  key_id      text PRIMARY KEY,\n"
         "  org         text NOT NULL,\n"
         "  secret_hash bytea NOT NULL,\n"
         "  scope       text NOT NULL CHECK (scope IN (" +
         scopes +
         ")),\n"
         "  name        text NOT NULL DEFAULT '',\n"
         "  created_at  timestamptz NOT NULL DEFAULT now(),\n"
         "  revoked_at  timestamptz\n"
         ");\n"
         "CREATE INDEX " +
         table.table + "_org ON " + table.table + " (org);\n";
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

Result<ParsedKey> ParseKey(const KeyTable& table, std::string_view key) {
  const size_t p = table.prefix.size() + 1;  // "gva_"
  const size_t length = p + kKeyIdLength + 1 + 2 * kKeySecretBytes;
  if (key.size() != length || key.substr(0, p - 1) != table.prefix || key[p - 1] != '_' ||
      key[p + kKeyIdLength] != '_') {
    return Unauthenticated(std::string(kBadKey));
  }
  ParsedKey parsed{key.substr(p, kKeyIdLength), key.substr(p + kKeyIdLength + 1)};
  for (char c : parsed.key_id) {
    if (!IsBase32(c)) return Unauthenticated(std::string(kBadKey));
  }
  for (char c : parsed.secret) {
    if (!IsLowerHex(c)) return Unauthenticated(std::string(kBadKey));
  }
  return parsed;
}

Result<std::string> CreateKey(db::Connection& conn, const KeyTable& table, std::string_view org,
                              std::string_view scope, std::string_view name) {
  GOVERN_RETURN_IF_ERROR(table.Validate());
  GOVERN_RETURN_IF_ERROR(ValidateOrg(org));
  GOVERN_RETURN_IF_ERROR(table.CheckScope(scope));
  if (name.size() > 200) return InvalidArgument("key name is longer than 200 bytes");
  std::array<uint8_t, 8 + kKeySecretBytes> random{};
  GOVERN_RETURN_IF_ERROR(crypto::RandomBytes(random));
  std::string key = table.prefix + "_";
  // 12 base32 characters from 60 of the first 64 random bits.
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits = (bits << 8) | random[i];
  for (size_t i = 0; i < kKeyIdLength; ++i) key.push_back(kBase32[(bits >> (5 * i)) & 31]);
  key.push_back('_');
  key += crypto::HexEncode(std::span<const uint8_t>(random).subspan(8));
  OPENSSL_cleanse(random.data(), random.size());
  GOVERN_ASSIGN_OR_RETURN(crypto::Sha256Digest hash, crypto::Sha256(key));
  std::string_view key_id = std::string_view(key).substr(table.prefix.size() + 1, kKeyIdLength);
  auto rows = conn.Exec(
      "INSERT INTO " + table.table + " (key_id, org, secret_hash, scope, name) VALUES ($1, $2, $3, $4, $5)",
      db::Params(key_id, org, db::Bytea{crypto::AsString(hash)}, scope, name));
  if (!rows.ok()) return rows.status().WithContext("store the new key");
  return key;
}

Result<std::vector<KeyInfo>> ListKeys(db::Connection& conn, const KeyTable& table, std::string_view org) {
  GOVERN_RETURN_IF_ERROR(table.Validate());
  std::string sql = "SELECT key_id, org, scope, name, " + TimeColumn("created_at") + ", " +
                    TimeColumn("revoked_at") + " FROM " + table.table +
                    " WHERE ($1 = '' OR org = $1) ORDER BY created_at, key_id";
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, conn.Exec(sql, db::Params(org)));
  std::vector<KeyInfo> out;
  out.reserve(rows.size());
  for (int r = 0; r < rows.size(); ++r) {
    KeyInfo k;
    k.key_id = rows.Text(r, 0);
    k.org = rows.Text(r, 1);
    k.scope = rows.Text(r, 2);
    k.name = rows.Text(r, 3);
    k.created_at = rows.Text(r, 4);
    if (auto t = rows.OptText(r, 5)) k.revoked_at = std::string(*t);
    out.push_back(std::move(k));
  }
  return out;
}

Status RevokeKey(db::Connection& conn, const KeyTable& table, std::string_view key_id) {
  GOVERN_RETURN_IF_ERROR(table.Validate());
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      conn.Exec("UPDATE " + table.table + " SET revoked_at = COALESCE(revoked_at, now()) WHERE key_id = $1",
                db::Params(key_id)));
  if (rows.affected() == 0) return NotFound("no key with id '" + std::string(key_id.substr(0, 64)) + "'");
  return OkStatus();
}

Result<KeyIdentity> CheckKey(db::Connection& conn, const KeyTable& table, std::string_view key) {
  GOVERN_ASSIGN_OR_RETURN(ParsedKey parsed, ParseKey(table, key));
  GOVERN_ASSIGN_OR_RETURN(std::optional<Row> row, LookupRow(conn, table, parsed.key_id));
  return Check(row, parsed.key_id, key);
}

// ---- KeyCache ----

struct KeyCache::Impl {
  struct Entry {
    std::optional<Row> row;     // nullopt: no such key_id
    int64_t expires_nanos = 0;  // monotonic
  };
  struct Waiter {
    std::string key;
    Callback done;
  };

  db::Pool* pool;
  KeyTable table;
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

  Result<std::optional<Row>> Lookup(const std::string& key_id) {
    auto lease = pool->Checkout();
    if (!lease.ok()) return Unavailable("key lookup: " + lease.status().message());
    return LookupRow(**lease, table, key_id);
  }

  void Insert(const std::string& key_id, std::optional<Row> row) {  // mu held
    if (opt.ttl.count() <= 0) return;
    if (cache.size() >= opt.max_entries && !cache.contains(key_id)) {
      int64_t now = clock->MonotonicNanos();
      std::erase_if(cache, [&](const auto& kv) { return kv.second.expires_nanos <= now; });
      if (cache.size() >= opt.max_entries) {
        std::erase_if(cache, [](const auto& kv) { return !kv.second.row.has_value(); });
      }
      if (cache.size() >= opt.max_entries) cache.clear();
    }
    Entry& e = cache[key_id];
    e.row = std::move(row);
    e.expires_nanos = clock->MonotonicNanos() + std::chrono::nanoseconds(opt.ttl).count();
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
      Result<std::optional<Row>> row = Lookup(key_id);
      if (!row.ok()) {
        log::Warn(table.log_component, "API key lookup failed",
                  {{"key_id", key_id}, {"error", row.status().message()}});
      }
      lk.lock();
      if (row.ok()) {
        Insert(key_id, *row);
      } else {
        ++stats.lookups_failed;
      }
      std::vector<Waiter> waiters = std::move(waiting[key_id]);
      waiting.erase(key_id);
      lk.unlock();
      for (Waiter& w : waiters) {
        if (row.ok()) {
          w.done(Check(*row, key_id, w.key));
        } else {
          w.done(Unavailable("the key store is unavailable; retry later"));
        }
      }
      lk.lock();
    }
  }
};

KeyCache::KeyCache(db::Pool* pool, KeyTable table, KeyCacheOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->pool = pool;
  impl_->table = std::move(table);
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

void KeyCache::Verify(std::string_view key, Callback done) {
  auto parsed = ParseKey(impl_->table, key);
  if (!parsed.ok()) {
    done(parsed.status());
    return;
  }
  std::string key_id(parsed->key_id);
  std::unique_lock lk(impl_->mu);
  if (auto it = impl_->cache.find(key_id); it != impl_->cache.end()) {
    if (it->second.expires_nanos > impl_->clock->MonotonicNanos()) {
      std::optional<Row> row = it->second.row;
      ++impl_->stats.hits;
      lk.unlock();
      done(Check(row, key_id, key));
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
  w->second.push_back({std::string(key), std::move(done)});
}

Result<KeyIdentity> KeyCache::VerifyBlocking(std::string_view key) {
  std::promise<Result<KeyIdentity>> p;
  auto f = p.get_future();
  Verify(key, [&p](Result<KeyIdentity> r) { p.set_value(std::move(r)); });
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

}  // namespace govern::service_keys
