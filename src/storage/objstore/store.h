// objstore::Store: the object store interface the telemetry archive writes Parquet files through, with
// a local-directory implementation (LocalStore) and an S3-compatible one (S3Store).
//
// Contract, for every implementation:
// - Keys are validated by ValidateKey() before anything else; a bad key is kInvalidArgument.
// - Put() is all-or-nothing and durable on success: after it returns ok the whole object survives a
//   crash or power loss (LocalStore: fsync of file and directory; S3: the server acknowledged it). A
//   failed Put leaves the previous object, if any, unchanged.
// - Get() of a missing key is kNotFound. GetRange() returns up to `length` bytes from `offset` (fewer at
//   the end of the object); an offset at or past the end is kOutOfRange.
// - List() returns every object whose key starts with `prefix`, sorted by key (byte order), handling
//   pagination inside.
// - Delete() is idempotent: deleting a missing key is ok.
// - Every error is a Status with a clear message naming the key; nothing throws.
//
// Implementations are thread-safe: each method may be called from many threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::objstore {

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  // An opaque version tag: the S3 ETag without quotes; LocalStore gives size and mtime in hex.
  std::string etag;
};

class Store {
 public:
  virtual ~Store() = default;

  virtual Status Put(std::string_view key, std::string_view bytes) = 0;
  // Stores the contents of the local file at `path` (streamed: large files are not read into memory
  // at once by S3Store's multipart path).
  virtual Status PutFile(std::string_view key, const std::string& path) = 0;
  virtual Result<std::string> Get(std::string_view key) = 0;
  virtual Result<std::string> GetRange(std::string_view key, uint64_t offset, uint64_t length) = 0;
  virtual Result<ObjectInfo> Head(std::string_view key) = 0;
  virtual Result<std::vector<ObjectInfo>> List(std::string_view prefix) = 0;
  virtual Status Delete(std::string_view key) = 0;
};

// The longest key accepted, in bytes (S3's limit).
inline constexpr size_t kMaxKeyBytes = 1024;

// Checks a key: 1..1024 bytes of valid UTF-8; no control characters or backslash; no leading or
// trailing '/', no empty segment ("a//b"), no "." or ".." segment, no segment starting with
// ".govern-tmp" (reserved for LocalStore's temporary files). Spaces and non-ASCII letters are fine.
Status ValidateKey(std::string_view key);

// Checks a List() prefix: empty, or a key prefix under the same rules (it may end with '/').
Status ValidatePrefix(std::string_view prefix);

}  // namespace govern::objstore
