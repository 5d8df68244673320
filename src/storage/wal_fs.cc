// The POSIX implementation of wal::Fs.
#include "storage/wal_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace govern::wal {

Result<int> Fs::Open(const std::string& path, int flags, int mode) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoStatus(errno, "open " + path);
  return fd;
}

void Fs::Close(int fd) {
  if (fd >= 0) ::close(fd);
}

Status Fs::PwriteAll(int fd, const void* data, size_t n, uint64_t offset) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "pwrite");
    }
    if (w == 0) return ErrnoStatus(ENOSPC, "pwrite");
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return OkStatus();
}

Result<size_t> Fs::Pread(int fd, void* data, size_t n, uint64_t offset) {
  char* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, p + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "pread");
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

Status Fs::Fdatasync(int fd) {
  if (::fdatasync(fd) != 0) return ErrnoStatus(errno, "fdatasync");
  return OkStatus();
}

Status Fs::Fsync(int fd) {
  if (::fsync(fd) != 0) return ErrnoStatus(errno, "fsync");
  return OkStatus();
}

Status Fs::Preallocate(int fd, uint64_t size) {
  int rc;
  do {
    rc = ::fallocate(fd, 0, 0, static_cast<off_t>(size));
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return OkStatus();
  if (errno == EOPNOTSUPP || errno == ENOSYS) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "fstat");
    if (static_cast<uint64_t>(st.st_size) >= size) return OkStatus();
    return Truncate(fd, size);
  }
  return ErrnoStatus(errno, "fallocate");
}

Status Fs::Truncate(int fd, uint64_t size) {
  int rc;
  do {
    rc = ::ftruncate(fd, static_cast<off_t>(size));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return ErrnoStatus(errno, "ftruncate");
  return OkStatus();
}

Result<uint64_t> Fs::FileSize(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "fstat");
  return static_cast<uint64_t>(st.st_size);
}

Status Fs::Rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoStatus(errno, "rename " + from + " to " + to);
  return OkStatus();
}

Status Fs::Unlink(const std::string& path) {
  if (::unlink(path.c_str()) != 0) return ErrnoStatus(errno, "unlink " + path);
  return OkStatus();
}

Status Fs::MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoStatus(errno, "mkdir " + path);
  return OkStatus();
}

Status Fs::SyncDir(const std::string& path) {
  GOVERN_ASSIGN_OR_RETURN(int fd, Open(path, O_RDONLY | O_DIRECTORY));
  Status st = Fsync(fd);
  Close(fd);
  return st.WithContext("sync directory " + path);
}

Result<int> Fs::LockFile(const std::string& path) {
  GOVERN_ASSIGN_OR_RETURN(int fd, Open(path, O_RDWR | O_CREAT));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    Close(fd);
    if (err == EWOULDBLOCK) return FailedPrecondition(path + " is locked: the log is open elsewhere");
    return ErrnoStatus(err, "flock " + path);
  }
  return fd;
}

Result<std::vector<std::string>> Fs::ListDir(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return ErrnoStatus(errno, "opendir " + path);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(d);
  return names;
}

Fs* PosixFs() {
  static Fs fs;
  return &fs;
}

}  // namespace govern::wal
