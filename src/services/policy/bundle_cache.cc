// The bundle server's in-memory bundle bytes: see bundle_cache.h.
#include "services/policy/bundle_cache.h"

namespace govern::policy_service {

std::shared_ptr<const std::string> BundleCache::Get(std::string_view org, uint64_t version) {
  std::lock_guard lk(mu_);
  auto it = entries_.find(org);
  if (it == entries_.end() || it->second.version != version) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.bytes;
}

void BundleCache::Put(std::string_view org, uint64_t version, std::shared_ptr<const std::string> bytes) {
  if (!bytes || bytes->size() > max_bytes_) return;
  std::lock_guard lk(mu_);
  if (auto it = entries_.find(org); it != entries_.end()) {
    if (it->second.version >= version) return;
    EraseLocked(it);
  }
  while (bytes_ + bytes->size() > max_bytes_ && !lru_.empty()) EraseLocked(entries_.find(lru_.back()));
  lru_.emplace_front(org);
  bytes_ += bytes->size();
  entries_.emplace(std::string(org), Entry{version, std::move(bytes), lru_.begin()});
}

void BundleCache::Invalidate(std::string_view org) {
  std::lock_guard lk(mu_);
  if (auto it = entries_.find(org); it != entries_.end()) EraseLocked(it);
}

BundleCache::Stats BundleCache::GetStats() const {
  std::lock_guard lk(mu_);
  return Stats{hits_, misses_, entries_.size(), bytes_};
}

void BundleCache::EraseLocked(std::map<std::string, Entry, std::less<>>::iterator it) {
  bytes_ -= it->second.bytes->size();
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

}  // namespace govern::policy_service
