// Durable whole-file writes (see file.h).
#include "base/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace govern {

Status WriteNewFile(const std::string& path, std::string_view data, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST) return AlreadyExists(path + " exists");
    return ErrnoStatus(errno, "create " + path);
  }
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return ErrnoStatus(err, "write " + path);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus(err, "fsync " + path);
  }
  if (::close(fd) != 0) return ErrnoStatus(errno, "close " + path);
  return OkStatus();
}

Status ReplaceFileDurably(const std::string& path, std::string_view data, mode_t mode) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  ::unlink(tmp.c_str());  // left by a crashed writer with our pid
  if (Status s = WriteNewFile(tmp, data, mode); !s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoStatus(err, "rename to " + path);
  }
  size_t slash = path.rfind('/');
  return SyncDirectory(slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash));
}

Status SyncDirectory(const std::string& dir) {
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return ErrnoStatus(errno, "open directory " + dir);
  int rc = ::fsync(dfd);
  int err = errno;
  ::close(dfd);
  if (rc != 0) return ErrnoStatus(err, "fsync directory " + dir);
  return OkStatus();
}

}  // namespace govern
