// Where Parquet bytes go and come from. A Sink takes the writer's output in order; DurableFile is the
// one the compactor uses: it writes to a temporary name beside the target, and Close() fsyncs the file,
// renames it into place and fsyncs the directory, so after Close() returns ok the file is durable under
// its final name, and before that no reader can see a partial file. A Source serves reads at offsets.
// None of these classes is thread-safe except that Source::ReadAt may be called from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::parquet {

class Sink {
 public:
  virtual ~Sink() = default;
  virtual Status Append(std::string_view data) = 0;
  // Makes everything appended durable (for a file) and releases it. Called once.
  virtual Status Close() = 0;
};

// Appends to a caller-owned string (tests, fuzz seeds, uploads that go from memory).
class StringSink : public Sink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  Status Append(std::string_view data) override {
    out_->append(data);
    return OkStatus();
  }
  Status Close() override { return OkStatus(); }

 private:
  std::string* out_;
};

// A file written under "<path>.tmp-XXXXXX" and renamed to `path` by Close(). Destroying it without a
// successful Close() removes the temporary file, so a failed write leaves nothing behind.
class DurableFile : public Sink {
 public:
  static Result<std::unique_ptr<DurableFile>> Create(const std::string& path);
  ~DurableFile() override;
  DurableFile(const DurableFile&) = delete;
  DurableFile& operator=(const DurableFile&) = delete;

  Status Append(std::string_view data) override;
  Status Close() override;  // fsync, rename, fsync the directory
  uint64_t bytes_written() const { return written_; }

 private:
  DurableFile(std::string path, std::string tmp_path, int fd)
      : path_(std::move(path)), tmp_path_(std::move(tmp_path)), fd_(fd) {}

  std::string path_;
  std::string tmp_path_;
  int fd_;
  uint64_t written_ = 0;
  bool committed_ = false;
};

// Renames `from` to `to` (same file system) and fsyncs the destination's directory.
Status RenameDurably(const std::string& from, const std::string& to);

// Random-access reads of a whole Parquet file.
class Source {
 public:
  virtual ~Source() = default;
  virtual uint64_t size() const = 0;
  // Reads exactly n bytes at offset into *out (replacing its contents); DataLoss past the end.
  virtual Status ReadAt(uint64_t offset, size_t n, std::string* out) const = 0;
};

// A file read with pread; safe to share between threads.
Result<std::unique_ptr<Source>> OpenFileSource(const std::string& path);
// Bytes held in memory.
std::unique_ptr<Source> MemorySource(std::string bytes);

}  // namespace govern::parquet
