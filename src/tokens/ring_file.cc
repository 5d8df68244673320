// Ring file: serialise + durable replace; bounded read.
#include "tokens/ring_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/file.h"

namespace govern::tokens {

namespace {
constexpr size_t kMaxRingFile = 1 << 20;
}  // namespace

Status WriteRingFile(const std::string& path, const KeyRing& ring) {
  GOVERN_ASSIGN_OR_RETURN(crypto::SecretBytes bytes, ring.Serialize());
  return ReplaceFileDurably(path, crypto::AsString(bytes.span()), 0600);
}

Result<crypto::SecretBytes> ReadRingFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rbe");
  if (f == nullptr) {
    int e = errno;
    std::string why = path + ": " + std::strerror(e);
    if (e == ENOENT) return NotFound("ring file " + why);
    if (e == EACCES || e == EPERM) return PermissionDenied("ring file " + why);
    return Unavailable("ring file " + why);
  }
  crypto::SecretBytes buf(kMaxRingFile + 1);
  size_t n = std::fread(buf.data(), 1, buf.size(), f);
  bool error = std::ferror(f) != 0;
  std::fclose(f);
  if (error) return Unavailable("ring file " + path + ": read error");
  if (n > kMaxRingFile) return InvalidArgument("ring file " + path + " is larger than 1 MiB");
  return crypto::SecretBytes(buf.span().first(n));
}

Result<KeySet> LoadRingFile(const std::string& path, int64_t now_s) {
  GOVERN_ASSIGN_OR_RETURN(crypto::SecretBytes bytes, ReadRingFile(path));
  auto set = KeySetFromRing(bytes.span(), now_s);
  if (!set.ok()) return set.status().WithContext("ring file " + path);
  return set;
}

}  // namespace govern::tokens
