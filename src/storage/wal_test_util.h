// Helpers shared by the write-ahead log tests: a temporary directory and whole-file reads and writes.
// Not thread-safe; test code only.
#pragma once

#include <string>
#include <vector>

namespace govern::wal::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadFileOrDie(const std::string& path);
void WriteFileOrDie(const std::string& path, const std::string& data);
// Segment file names in dir, sorted.
std::vector<std::string> SegmentFiles(const std::string& dir);

}  // namespace govern::wal::testing
