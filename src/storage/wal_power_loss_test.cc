// Power-loss test: SIGKILL keeps the page cache, so it cannot show that an acknowledged record was
// really synced. Here a file system wrapper remembers every byte range written since its file's last
// fdatasync; at a random moment it freezes the log, copies the directory and, in the copy, replaces each
// unsynced 4 KiB page by the old bytes' fate after a power cut: kept, zeroed or garbage. Recovery of
// the copy must find every acknowledged record intact, in order, once, and nothing partial. Buffered
// records written but not yet synced may be lost, but only whole and only as a suffix: what survives
// of each appender is a prefix of what it appended, with no gap.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "storage/wal.h"
#include "storage/wal_crash_payload.h"
#include "storage/wal_test_util.h"

namespace govern::wal {
namespace {

using namespace std::chrono_literals;

class PowerLossFs : public Fs {
 public:
  Result<int> Open(const std::string& path, int flags, int mode) override {
    Result<int> fd = Fs::Open(path, flags, mode);
    if (fd.ok()) {
      std::lock_guard lk(mu_);
      paths_[*fd] = path;
      unsynced_.erase(*fd);
    }
    return fd;
  }
  Status PwriteAll(int fd, const void* data, size_t n, uint64_t offset) override {
    std::unique_lock lk(mu_);
    if (frozen_) return Frozen(lk);
    // Written under the lock, so a freeze never sees a write half done in this process's view.
    Status st = Fs::PwriteAll(fd, data, n, offset);
    unsynced_[fd].emplace_back(offset, n);
    return st;
  }
  Status Fdatasync(int fd) override {
    size_t covered;
    {
      std::unique_lock lk(mu_);
      if (frozen_) return Frozen(lk);
      covered = unsynced_[fd].size();  // what this sync makes durable; later writes are not covered
    }
    Status st = Fs::Fdatasync(fd);  // without the lock: the power can go out during a sync
    std::unique_lock lk(mu_);
    if (frozen_) return Frozen(lk);  // the cut came first: the caller must not learn of success
    if (st.ok()) {
      auto& r = unsynced_[fd];
      r.erase(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(covered));
    }
    return st;
  }
  Status Rename(const std::string& from, const std::string& to) override {
    std::lock_guard lk(mu_);
    Status st = Fs::Rename(from, to);
    for (auto& [fd, path] : paths_) {
      if (path == from) path = to;
    }
    return st;
  }

  // Stops every later write and sync (they fail once Thaw is called), then copies `dir` to `copy`
  // with each unsynced page kept, zeroed or filled with garbage.
  void FreezeAndCopy(const std::string& dir, const std::string& copy, std::mt19937_64& rng) {
    std::lock_guard lk(mu_);
    frozen_ = true;
    std::filesystem::copy(dir, copy, std::filesystem::copy_options::recursive);
    for (const auto& [fd, ranges] : unsynced_) {
      std::string path = paths_[fd];
      std::string target = copy + path.substr(dir.size());
      if (!std::filesystem::exists(target)) continue;
      std::fstream f(target, std::ios::in | std::ios::out | std::ios::binary);
      for (const auto& [off, len] : ranges) {
        // Only the unsynced bytes can be lost: bytes synced earlier in the same page are on the disk
        // in every version of that page (sector writes are atomic), so they are never damaged.
        for (uint64_t start = off; start < off + len;) {
          uint64_t end = std::min<uint64_t>(off + len, (start / 4096 + 1) * 4096);
          int fate = static_cast<int>(rng() % 3);
          if (fate != 0) {  // 0: this page reached the disk
            std::string bytes(end - start, '\0');
            if (fate == 2) {
              for (char& c : bytes) c = static_cast<char>(rng());
            }
            f.seekp(static_cast<std::streamoff>(start));
            f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
          }
          start = end;
        }
      }
    }
  }
  void Thaw() {
    std::lock_guard lk(mu_);
    thawed_ = true;
    cv_.notify_all();
  }

 private:
  Status Frozen(std::unique_lock<std::mutex>& lk) {
    cv_.wait(lk, [&] { return thawed_; });
    return ErrnoStatus(EIO, "power lost");
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool frozen_ = false;
  bool thawed_ = false;
  std::map<int, std::string> paths_;
  std::map<int, std::vector<std::pair<uint64_t, size_t>>> unsynced_;
};

TEST(WalPowerLoss, AcknowledgedRecordsSurviveLostPages) {
  std::mt19937_64 rng(std::random_device{}());
  for (int round = 0; round < 12; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    testing::TempDir tmp;
    const std::string dir = tmp.path() + "/wal", copy = tmp.path() + "/after-power-loss";
    PowerLossFs fs;
    Options opt;
    opt.fs = &fs;
    opt.segment_size = 64 << 10;  // rotations happen during the run
    opt.buffered_interval = std::chrono::milliseconds(2);
    auto log = Log::Open(dir, opt);
    ASSERT_TRUE(log.ok()) << log.status().ToString();

    std::mutex acked_mu;
    std::map<uint64_t, std::string> acked;
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    // Buffered appenders (threads 8-11): a few async appends, then wait until they are written; each
    // is acknowledged by its callback, after its sync.
    for (int t = 8; t < 12; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 trng(static_cast<uint64_t>(round * 100 + t));
        for (uint64_t i = 0; !stop;) {
          for (int k = 0; k < 8; ++k, ++i) {
            auto p = std::make_shared<std::string>(testing::MakePayload(round, t, i, trng));
            (*log)->AppendAsync(
                *p,
                [&, p](Result<uint64_t> r) {
                  if (!r.ok()) return;  // after the power cut
                  std::lock_guard lk(acked_mu);
                  acked.emplace(*r, *p);
                },
                Durability::kBuffered);
          }
          if (!(*log)->WaitWritten().ok()) return;
        }
      });
    }
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 trng(static_cast<uint64_t>(round * 100 + t));
        for (uint64_t i = 0; !stop; ++i) {
          std::string p = testing::MakePayload(round, t, i, trng);
          auto seq = (*log)->Append(p);
          if (!seq.ok()) return;  // after the power cut
          std::lock_guard lk(acked_mu);
          acked.emplace(*seq, p);
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 200));
    // On a loaded machine (sanitizers, parallel tests) the window may pass before the first
    // acknowledgement: cut only once something was acknowledged, or the round proves nothing.
    for (int waited = 0; waited < 30'000; ++waited) {
      {
        std::lock_guard lk(acked_mu);
        if (!acked.empty()) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::map<uint64_t, std::string> acked_at_cut;
    {
      // Anything acknowledged before the freeze must survive it.
      std::lock_guard lk(acked_mu);
      acked_at_cut = acked;
    }
    fs.FreezeAndCopy(dir, copy, rng);
    stop = true;
    fs.Thaw();
    for (auto& th : threads) th.join();
    log->reset();

    std::filesystem::remove(copy + "/LOCK");
    auto recovered = Log::Open(copy, Options{.segment_size = opt.segment_size});
    ASSERT_TRUE(recovered.ok()) << recovered.status().ToString();
    auto reader = (*recovered)->NewReader(1);
    ASSERT_TRUE(reader.ok());
    uint64_t expect = 1;
    std::map<std::string, uint64_t> next_index;  // "round:thread" -> the index its next record must have
    for (;;) {
      auto r = (*reader)->Next();
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (!r->has_value()) break;
      ASSERT_EQ((*r)->seq, expect++);
      ASSERT_TRUE(testing::PayloadIntact((*r)->data)) << "partial record at " << (*r)->seq;
      std::string id(testing::PayloadId((*r)->data));
      size_t colon = id.rfind(':');
      uint64_t index = std::stoull(id.substr(colon + 1));
      ASSERT_EQ(index, next_index[id.substr(0, colon)]++)
          << "a gap before record " << (*r)->seq << " (" << id << ")";
      auto a = acked_at_cut.find((*r)->seq);
      if (a != acked_at_cut.end()) {
        ASSERT_EQ(a->second, (*r)->data) << "content of " << (*r)->seq;
      }
    }
    ASSERT_FALSE(acked_at_cut.empty());
    EXPECT_GE(expect - 1, acked_at_cut.rbegin()->first) << "acknowledged records lost";
  }
}

}  // namespace
}  // namespace govern::wal
