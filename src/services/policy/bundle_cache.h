// BundleCache: the signed bundle bytes of each organisation's current version, in memory, so that a
// fetch reads them from PostgreSQL once per version and server, not once per request.
//
// Keyed by organisation and version. A version's bytes never change once published (store.h), so an
// entry can never be wrong, only old: the server reads the latest version from PostgreSQL on every
// fetch (as it must for the ETag check) and asks for exactly that version, so a server replica whose
// entry predates another replica's publish simply misses and reads the new bytes. One entry per
// organisation (its newest version seen); at most `max_bytes` in all, the least recently used
// organisations evicted first; a bundle larger than `max_bytes` is not kept.
//
// Thread-safety: every method may be called from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace govern::policy_service {

class BundleCache {
 public:
  explicit BundleCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  // The bytes of `org`'s `version`, or null when they are not cached.
  std::shared_ptr<const std::string> Get(std::string_view org, uint64_t version);
  // Keeps `bytes` as `org`'s `version`, replacing an older version's entry; an entry for a newer
  // version stays (a slow fetch of an old version must not push out the new one).
  void Put(std::string_view org, uint64_t version, std::shared_ptr<const std::string> bytes);
  // Forgets `org`'s entry (a publish made it old).
  void Invalidate(std::string_view org);

  struct Stats {
    uint64_t hits = 0, misses = 0;
    size_t entries = 0, bytes = 0;
  };
  Stats GetStats() const;

 private:
  struct Entry {
    uint64_t version = 0;
    std::shared_ptr<const std::string> bytes;
    std::list<std::string>::iterator lru;  // position in lru_ (front: most recently used)
  };
  void EraseLocked(std::map<std::string, Entry, std::less<>>::iterator it);

  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> entries_;
  std::list<std::string> lru_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace govern::policy_service
