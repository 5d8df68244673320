// Durable file output (temp name, fsync, rename, fsync directory) and pread/memory sources.
#include "storage/parquet/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "base/file.h"

namespace govern::parquet {

namespace {

std::string ParentDir(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

}  // namespace

Result<std::unique_ptr<DurableFile>> DurableFile::Create(const std::string& path) {
  std::string tmp = path + ".tmp-XXXXXX";
  std::vector<char> name(tmp.begin(), tmp.end());
  name.push_back('\0');
  int fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "create " + tmp);
  return std::unique_ptr<DurableFile>(new DurableFile(path, std::string(name.data()), fd));
}

DurableFile::~DurableFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_path_.c_str());
}

Status DurableFile::Append(std::string_view data) {
  if (fd_ < 0) return FailedPrecondition("parquet: append to a closed file");
  while (!data.empty()) {
    ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "write " + tmp_path_);
    }
    data.remove_prefix(static_cast<size_t>(n));
    written_ += static_cast<uint64_t>(n);
  }
  return OkStatus();
}

Status DurableFile::Close() {
  if (fd_ < 0) return FailedPrecondition("parquet: file closed twice");
  int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus(err, "fsync " + tmp_path_);
  }
  if (::close(fd) != 0) return ErrnoStatus(errno, "close " + tmp_path_);
  GOVERN_RETURN_IF_ERROR(RenameDurably(tmp_path_, path_));
  committed_ = true;
  return OkStatus();
}

Status RenameDurably(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoStatus(errno, "rename " + from + " to " + to);
  return SyncDirectory(ParentDir(to));
}

namespace {

class FileSource : public Source {
 public:
  FileSource(std::string path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  ~FileSource() override { ::close(fd_); }
  uint64_t size() const override { return size_; }
  Status ReadAt(uint64_t offset, size_t n, std::string* out) const override {
    if (offset > size_ || n > size_ - offset) return DataLoss("parquet: read past the end of " + path_);
    out->resize(n);
    size_t done = 0;
    while (done < n) {
      ssize_t got = ::pread(fd_, out->data() + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "read " + path_);
      }
      if (got == 0) return DataLoss("parquet: " + path_ + " shrank while being read");
      done += static_cast<size_t>(got);
    }
    return OkStatus();
  }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

class BufferSource : public Source {
 public:
  explicit BufferSource(std::string bytes) : bytes_(std::move(bytes)) {}
  uint64_t size() const override { return bytes_.size(); }
  Status ReadAt(uint64_t offset, size_t n, std::string* out) const override {
    if (offset > bytes_.size() || n > bytes_.size() - offset) return DataLoss("parquet: read past the end");
    out->assign(bytes_, static_cast<size_t>(offset), n);
    return OkStatus();
  }

 private:
  std::string bytes_;
};

}  // namespace

Result<std::unique_ptr<Source>> OpenFileSource(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus(err, "stat " + path);
  }
  return std::unique_ptr<Source>(new FileSource(path, fd, static_cast<uint64_t>(st.st_size)));
}

std::unique_ptr<Source> MemorySource(std::string bytes) {
  return std::make_unique<BufferSource>(std::move(bytes));
}

}  // namespace govern::parquet
