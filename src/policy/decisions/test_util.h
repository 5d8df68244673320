// Helpers for the decision log tests: a temporary directory, a file system whose fdatasync a test can
// hold or fail, and reading every decision back from a closed log's directory. Test code only.
#pragma once

#include <stdlib.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "policy/decisions/decision_record.h"
#include "storage/wal.h"

namespace govern::policy::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "govern-decisions-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// fdatasync can be held at a gate (to look at the log while a sync is outstanding) or made to fail.
class GatedFs : public wal::Fs {
 public:
  std::atomic<bool> fail_sync{false};

  Status Fdatasync(int fd) override {
    {
      std::unique_lock lk(mu_);
      ++blocked_;
      cv_.notify_all();
      cv_.wait(lk, [&] { return open_; });
      --blocked_;
    }
    if (fail_sync) return ErrnoStatus(EIO, "fdatasync");
    return Fs::Fdatasync(fd);
  }
  void Hold() {
    std::lock_guard lk(mu_);
    open_ = false;
  }
  void Release() {
    std::lock_guard lk(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool WaitUntilBlocked() {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, std::chrono::seconds(60), [&] { return blocked_ > 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int blocked_ = 0;
  bool open_ = true;
};

// Every decision in the WAL in `dir` (which must not be open elsewhere), in order.
inline std::vector<DecisionRecord> ReadAll(const std::string& dir) {
  std::vector<DecisionRecord> out;
  auto log = wal::Log::Open(dir);
  if (!log.ok()) return out;
  auto reader = (*log)->NewReader((*log)->FirstSequence());
  if (!reader.ok()) return out;
  for (;;) {
    auto r = (*reader)->Next();
    if (!r.ok() || !r->has_value()) break;
    auto rec = DecodeDecision((*r)->data);
    if (rec.ok()) out.push_back(std::move(*rec));
  }
  return out;
}

}  // namespace govern::policy::testing
