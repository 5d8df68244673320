// wal::Fs: the few file-system calls the write-ahead log makes, behind one interface so a test can
// inject faults (a failing fdatasync, a full disk on write) while the log code stays unchanged.
//
// PosixFs() is the real implementation (a process-wide stateless object). Implementations must be
// thread-safe: the log calls them from appender, sync and reader threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace govern::wal {

class Fs {
 public:
  virtual ~Fs() = default;

  // open(2); returns the descriptor. Errors carry the path.
  virtual Result<int> Open(const std::string& path, int flags, int mode = 0644);
  virtual void Close(int fd);
  // Writes all n bytes at offset or fails; a short write that cannot continue is an error (ENOSPC
  // becomes ResourceExhausted). Bytes before the failure may have reached the file.
  virtual Status PwriteAll(int fd, const void* data, size_t n, uint64_t offset);
  // Reads up to n bytes at offset; fewer only at end of file.
  virtual Result<size_t> Pread(int fd, void* data, size_t n, uint64_t offset);
  virtual Status Fdatasync(int fd);
  virtual Status Fsync(int fd);
  // Reserves [0, size) so later writes there cannot fail for space; extends the file to `size`.
  // Where the file system has no fallocate it extends the file with ftruncate (sparse) instead.
  virtual Status Preallocate(int fd, uint64_t size);
  virtual Status Truncate(int fd, uint64_t size);
  virtual Result<uint64_t> FileSize(int fd);
  virtual Status Rename(const std::string& from, const std::string& to);
  virtual Status Unlink(const std::string& path);
  // Creates the directory if missing (one level).
  virtual Status MakeDir(const std::string& path);
  // fsyncs a directory so a create, rename or unlink in it survives a crash.
  virtual Status SyncDir(const std::string& path);
  // Opens (creating) `path` and takes an exclusive flock on it without waiting; FailedPrecondition if
  // another open file holds it. Returns the descriptor, which keeps the lock until closed.
  virtual Result<int> LockFile(const std::string& path);
  // Names (not paths) of the entries of a directory, without "." and "..".
  virtual Result<std::vector<std::string>> ListDir(const std::string& path);
};

// The real file system.
Fs* PosixFs();

}  // namespace govern::wal
