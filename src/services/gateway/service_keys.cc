#include "services/gateway/service_keys.h"

#include "base/log.h"
#include "crypto/bytes.h"
#include "crypto/sha256.h"
#include "db/connection.h"
#include "db/pool.h"
#include "services/gateway/governance.h"

namespace govern::gateway {

namespace {
constexpr std::string_view kBadKey = "missing or unknown API key";
}

const service_keys::KeyTable& GatewayKeyTable() {
  static const service_keys::KeyTable table{"gateway_api_keys", "gvg", {"invoke"}, "gateway"};
  return table;
}

db::Migration GatewayKeysMigration(int version) {
  return {version, "gateway API keys (services/keys)", service_keys::TableSql(GatewayKeyTable())};
}

ServiceKeyRing::ServiceKeyRing(db::Pool* pool, std::chrono::milliseconds reload_interval)
    : pool_(pool), interval_(reload_interval) {}

ServiceKeyRing::~ServiceKeyRing() { Stop(); }

Status ServiceKeyRing::Reload() {
  auto conn = pool_->Checkout();
  if (!conn.ok()) return Unavailable("gateway keys: " + conn.status().message());
  auto rows = (*conn)->Exec("SELECT key_id, org, scope, secret_hash FROM " + GatewayKeyTable().table +
                            " WHERE revoked_at IS NULL");
  if (!rows.ok()) return Unavailable("gateway keys: " + rows.status().message());
  auto next = std::make_shared<Snapshot>();
  next->reserve(static_cast<size_t>(rows->size()));
  for (int i = 0; i < rows->size(); ++i) {
    auto hash = rows->Bytes(i, 3);
    if (!hash.ok() || hash->size() != 32) {
      log::Warn("gateway", "gateway key with a malformed hash skipped",
                {{"key_id", std::string(rows->Text(i, 0))}});
      continue;
    }
    next->emplace(std::string(rows->Text(i, 0)),
                  Entry{std::string(rows->Text(i, 1)), std::string(rows->Text(i, 2)), std::move(*hash)});
  }
  keys_.store(std::move(next));
  return OkStatus();
}

Status ServiceKeyRing::Start() {
  Status first = Reload();
  if (!first.ok()) log::Warn("gateway", "gateway keys not loaded yet", {{"error", first.ToString()}});
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
      lock.unlock();
      if (Status s = Reload(); !s.ok())
        log::Warn("gateway", "gateway keys not reloaded (the loaded ones stay)", {{"error", s.ToString()}});
      lock.lock();
    }
  });
  return first;
}

void ServiceKeyRing::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool ServiceKeyRing::LooksLikeKey(std::string_view credential) {
  return service_keys::ParseKey(GatewayKeyTable(), credential).ok();
}

Result<Caller> ServiceKeyRing::Check(std::string_view credential) const {
  auto parsed = service_keys::ParseKey(GatewayKeyTable(), credential);
  if (!parsed.ok()) return Unauthenticated(std::string(kBadKey));
  std::shared_ptr<const Snapshot> keys = keys_.load();
  if (!keys) return Unauthenticated("gateway API keys are not loaded yet (the database is not reachable)");
  GOVERN_ASSIGN_OR_RETURN(crypto::Sha256Digest hash, crypto::Sha256(credential));
  static const std::string kZero(32, '\0');
  auto it = keys->find(std::string(parsed->key_id));
  // Compares always, so a wrong secret costs the same as an unknown key.
  bool same = crypto::ConstantTimeEquals(crypto::AsString(hash), it == keys->end() ? kZero : it->second.hash);
  if (it == keys->end() || !same || it->second.scope != "invoke")
    return Unauthenticated(std::string(kBadKey));
  Caller c;
  c.principal_type = "Key";
  c.principal_id = "gvg_" + std::string(parsed->key_id);
  c.org = it->second.org;
  c.key = c.principal_id;  // budgets of scope key name it so
  return c;
}

size_t ServiceKeyRing::size() const {
  auto keys = keys_.load();
  return keys ? keys->size() : 0;
}

bool ServiceKeyRing::loaded() const { return keys_.load() != nullptr; }

}  // namespace govern::gateway
