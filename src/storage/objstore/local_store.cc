// LocalStore: a directory of files with crash-safe, durable replacement.
#include "storage/objstore/local_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <functional>

#include "base/file.h"

namespace govern::objstore {
namespace {

constexpr std::string_view kTempPrefix = ".govern-tmp-";

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now and reports the error (close can report a deferred write error on some file systems).
  Status Close(std::string_view what) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return ErrnoStatus(errno, std::string("close ") + std::string(what));
    return OkStatus();
  }

 private:
  int fd_;
};

Status WriteAll(int fd, const char* data, size_t n, const std::string& what) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "write " + what);
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return OkStatus();
}

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

// Creates every missing directory from `root` down to `dir`, fsyncing the parent of each new one so
// the new entry itself is durable.
Status MakeParents(const std::string& root, const std::string& dir) {
  if (dir.size() <= root.size()) return OkStatus();
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return FailedPrecondition(dir + " exists and is not a directory");
    return OkStatus();
  }
  GOVERN_RETURN_IF_ERROR(MakeParents(root, Parent(dir)));
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoStatus(errno, "mkdir " + dir);
  return SyncDirectory(Parent(dir));
}

std::string EtagOf(const struct stat& st) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%llx-%llx", static_cast<unsigned long long>(st.st_size),
                static_cast<unsigned long long>(st.st_mtim.tv_sec) * 1000000000ull +
                    static_cast<unsigned long long>(st.st_mtim.tv_nsec));
  return buf;
}

std::atomic<uint64_t> temp_counter{0};

}  // namespace

Result<std::unique_ptr<LocalStore>> LocalStore::Open(std::string root) {
  if (root.empty()) return InvalidArgument("local object store: root directory is empty");
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, "local object store: mkdir " + root);
  }
  struct stat st;
  if (::stat(root.c_str(), &st) != 0) return ErrnoStatus(errno, "local object store: stat " + root);
  if (!S_ISDIR(st.st_mode)) return FailedPrecondition("local object store: " + root + " is not a directory");
  return std::unique_ptr<LocalStore>(new LocalStore(std::move(root)));
}

template <typename Fill>
Status LocalStore::PutWith(std::string_view key, Fill&& fill) {
  GOVERN_RETURN_IF_ERROR(ValidateKey(key));
  const std::string target = root_ + "/" + std::string(key);
  const std::string dir = Parent(target);
  GOVERN_RETURN_IF_ERROR(MakeParents(root_, dir));
  const std::string temp = dir + "/" + std::string(kTempPrefix) + std::to_string(::getpid()) + "-" +
                           std::to_string(temp_counter.fetch_add(1));
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ErrnoStatus(errno, "create " + temp);
  Status s = fill(fd.get(), temp);
  if (s.ok() && ::fsync(fd.get()) != 0) s = ErrnoStatus(errno, "fsync " + temp);
  if (s.ok()) s = fd.Close(temp);
  if (s.ok() && ::rename(temp.c_str(), target.c_str()) != 0) {
    s = ErrnoStatus(errno, "rename to " + target);
  }
  if (!s.ok()) {
    ::unlink(temp.c_str());
    return s.WithContext("put \"" + std::string(key) + "\"");
  }
  return SyncDirectory(dir).WithContext("put \"" + std::string(key) + "\"");
}

Status LocalStore::Put(std::string_view key, std::string_view bytes) {
  return PutWith(
      key, [&](int fd, const std::string& temp) { return WriteAll(fd, bytes.data(), bytes.size(), temp); });
}

Status LocalStore::PutFile(std::string_view key, const std::string& path) {
  Fd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) return ErrnoStatus(errno, "open " + path);
  return PutWith(key, [&](int fd, const std::string& temp) -> Status {
    std::string buf(1 << 20, '\0');
    for (;;) {
      const ssize_t r = ::read(in.get(), buf.data(), buf.size());
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "read " + path);
      }
      if (r == 0) return OkStatus();
      GOVERN_RETURN_IF_ERROR(WriteAll(fd, buf.data(), static_cast<size_t>(r), temp));
    }
  });
}

Result<std::string> LocalStore::GetRange(std::string_view key, uint64_t offset, uint64_t length) {
  GOVERN_RETURN_IF_ERROR(ValidateKey(key));
  const std::string path = root_ + "/" + std::string(key);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFound("object \"" + std::string(key) + "\" not found");
    return ErrnoStatus(errno, "open " + path);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) return NotFound("object \"" + std::string(key) + "\" not found");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (offset >= size && !(offset == 0 && size == 0 && length == UINT64_MAX)) {
    return OutOfRange("object \"" + std::string(key) + "\": offset " + std::to_string(offset) +
                      " is at or past its end (" + std::to_string(size) + " bytes)");
  }
  const uint64_t n = std::min(length, size - offset);
  std::string out(n, '\0');
  uint64_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd.get(), out.data() + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "read " + path);
    }
    if (r == 0) break;  // truncated under us: return what is there
    done += static_cast<uint64_t>(r);
  }
  out.resize(done);
  return out;
}

Result<std::string> LocalStore::Get(std::string_view key) { return GetRange(key, 0, UINT64_MAX); }

Result<ObjectInfo> LocalStore::Head(std::string_view key) {
  GOVERN_RETURN_IF_ERROR(ValidateKey(key));
  const std::string path = root_ + "/" + std::string(key);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFound("object \"" + std::string(key) + "\" not found");
    return ErrnoStatus(errno, "stat " + path);
  }
  if (!S_ISREG(st.st_mode)) return NotFound("object \"" + std::string(key) + "\" not found");
  return ObjectInfo{std::string(key), static_cast<uint64_t>(st.st_size), EtagOf(st)};
}

namespace {

// Walks `dir` (the directory for key prefix `rel`, "" or ending in '/'), appending regular files.
Status Walk(const std::string& dir, const std::string& rel, std::string_view prefix,
            std::vector<ObjectInfo>& out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT || errno == ENOTDIR) return OkStatus();
    return ErrnoStatus(errno, "opendir " + dir);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> closer(d, ::closedir);
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || name.starts_with(".govern-tmp")) continue;
    const std::string key = rel + name;
    // Descend only where keys below could match the prefix.
    const std::string path = dir + "/" + name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) continue;  // deleted meanwhile
    if (S_ISDIR(st.st_mode)) {
      const std::string sub = key + "/";
      const size_t common = std::min(sub.size(), prefix.size());
      if (sub.compare(0, common, prefix.substr(0, common)) != 0) continue;
      GOVERN_RETURN_IF_ERROR(Walk(path, sub, prefix, out));
    } else if (S_ISREG(st.st_mode) && key.starts_with(prefix) && ValidateKey(key).ok()) {
      out.push_back(ObjectInfo{key, static_cast<uint64_t>(st.st_size), EtagOf(st)});
    }
  }
  return OkStatus();
}

}  // namespace

Result<std::vector<ObjectInfo>> LocalStore::List(std::string_view prefix) {
  GOVERN_RETURN_IF_ERROR(ValidatePrefix(prefix));
  std::vector<ObjectInfo> out;
  GOVERN_RETURN_IF_ERROR(Walk(root_, "", prefix, out));
  std::sort(out.begin(), out.end(), [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

Status LocalStore::Delete(std::string_view key) {
  GOVERN_RETURN_IF_ERROR(ValidateKey(key));
  const std::string path = root_ + "/" + std::string(key);
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return OkStatus();  // not an object
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return OkStatus();
    return ErrnoStatus(errno, "delete " + path);
  }
  return SyncDirectory(Parent(path));
}

Status LocalStore::RemoveStaleTempFiles() {
  std::function<Status(const std::string&)> sweep = [&](const std::string& dir) -> Status {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return ErrnoStatus(errno, "opendir " + dir);
    std::unique_ptr<DIR, int (*)(DIR*)> closer(d, ::closedir);
    while (struct dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      const std::string path = dir + "/" + name;
      struct stat st;
      if (::lstat(path.c_str(), &st) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        GOVERN_RETURN_IF_ERROR(sweep(path));
      } else if (name.starts_with(kTempPrefix) && ::unlink(path.c_str()) != 0 && errno != ENOENT) {
        return ErrnoStatus(errno, "unlink " + path);
      }
    }
    return OkStatus();
  };
  return sweep(root_);
}

}  // namespace govern::objstore

