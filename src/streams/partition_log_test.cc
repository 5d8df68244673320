// PartitionLog on real files: append and read, indexes across segments, idempotence, recovery of a torn
// tail, truncation, retention, group commit, and a SIGKILLed writer that loses nothing it acknowledged.
#include "streams/partition_log.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "streams/errors.h"

namespace govern::streams {
namespace {

namespace fs = std::filesystem;

class PartitionLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/streams_log_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<PartitionLog> Open(LogOptions o = {}) {
    auto log = PartitionLog::Open(dir_ + "/p0", o, &syncer_);
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return log.ok() ? std::move(*log) : nullptr;
  }

  // Appends and waits for durability; returns the offset.
  int64_t AppendSync(PartitionLog& log, std::string batch, int32_t epoch = 0,
                     AppendInfo* info_out = nullptr) {
    auto h = ParseBatch(batch);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    AppendInfo info = log.Append(batch, *h, epoch, [&](Status s) {
      EXPECT_TRUE(s.ok());
      std::lock_guard<std::mutex> l(mu);
      done = true;
      cv.notify_all();
    });
    if (info_out) *info_out = info;
    if (info.error != 0) return -1;
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return done; });
    return info.base_offset;
  }

  // Every batch from `from` up to the high watermark, as (offset, first value).
  std::vector<std::pair<int64_t, std::string>> ReadAll(PartitionLog& log, int64_t from = 0) {
    std::vector<std::pair<int64_t, std::string>> out;
    auto data = log.Read(from, SIZE_MAX, log.high_watermark());
    EXPECT_TRUE(data.ok()) << data.status().ToString();
    EXPECT_TRUE(ForEachBatch(*data,
                             [&](std::string_view b) {
                               auto h = ParseBatch(b);
                               if (!h.ok()) return h.status();
                               // The first record's value: after length, attrs, ts delta, offset delta, key
                               // len -1, value len (all one byte here).
                               std::string_view rec = b.substr(kBatchHeaderSize);
                               auto vlen = static_cast<unsigned char>(rec[5]) / 2;
                               out.emplace_back(h->base_offset, std::string(rec.substr(6, vlen)));
                               return OkStatus();
                             })
                    .ok() ||
                data->empty());
    return out;
  }

  std::string dir_;
  Syncer syncer_;
};

TEST_F(PartitionLogTest, AppendReadAcrossSegments) {
  LogOptions o;
  o.segment_bytes = 300;
  o.index_interval_bytes = 100;
  auto log = Open(o);
  for (int i = 0; i < 20; i++)
    EXPECT_EQ(AppendSync(*log, BuildBatch({"v" + std::to_string(i), "w"}, 1000 + i)), 2 * i);
  EXPECT_GT(log->segment_count(), 3u);
  EXPECT_EQ(log->log_end_offset(), 40);
  EXPECT_EQ(log->high_watermark(), 40);
  auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), 20u);
  for (int i = 0; i < 20; i++) EXPECT_EQ(all[i], std::make_pair(int64_t{2 * i}, "v" + std::to_string(i)));
  // From an offset inside a batch: that whole batch comes first.
  auto mid = ReadAll(*log, 13);
  ASSERT_FALSE(mid.empty());
  EXPECT_EQ(mid[0].first, 12);
  // max_bytes small: exactly one whole batch.
  auto one = log->Read(20, 1, 40);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(PeekHeader(*one).total_size(), one->size());
  EXPECT_TRUE(log->Read(40, 100, 40)->empty());
  EXPECT_FALSE(log->Read(41, 100, 40).ok());
  EXPECT_EQ(log->OffsetForTime(1010), 20);
  EXPECT_EQ(log->OffsetForTime(0), 0);
  EXPECT_EQ(log->OffsetForTime(5000), -1);

  // Reopen: same content, indexes reloaded.
  log.reset();
  log = Open(o);
  EXPECT_EQ(log->log_end_offset(), 40);
  EXPECT_EQ(ReadAll(*log).size(), 20u);
  EXPECT_EQ(AppendSync(*log, BuildBatch({"z"}, 2000)), 40);
}

TEST_F(PartitionLogTest, IdempotentSequences) {
  auto log = Open();
  EXPECT_EQ(AppendSync(*log, BuildBatch({"a", "b"}, 1, 9, 0, 0)), 0);
  EXPECT_EQ(AppendSync(*log, BuildBatch({"c"}, 1, 9, 0, 2)), 2);
  // A retry of the first batch: its original offset, not written again.
  AppendInfo info;
  EXPECT_EQ(AppendSync(*log, BuildBatch({"a", "b"}, 1, 9, 0, 0), 0, &info), 0);
  EXPECT_TRUE(info.duplicate);
  EXPECT_EQ(log->log_end_offset(), 3);
  // A gap.
  EXPECT_EQ(AppendSync(*log, BuildBatch({"d"}, 1, 9, 0, 5), 0, &info), -1);
  EXPECT_EQ(info.error, kerr::kOutOfOrderSequenceNumber);
  // Unknown producer with a nonzero sequence.
  EXPECT_EQ(AppendSync(*log, BuildBatch({"d"}, 1, 10, 0, 3), 0, &info), -1);
  EXPECT_EQ(info.error, kerr::kUnknownProducerId);
  // State survives a reopen (rebuilt from the batch headers).
  log.reset();
  log = Open();
  EXPECT_EQ(AppendSync(*log, BuildBatch({"c"}, 1, 9, 0, 2), 0, &info), 2);
  EXPECT_TRUE(info.duplicate);
  EXPECT_EQ(AppendSync(*log, BuildBatch({"e"}, 1, 9, 0, 3)), 3);
}

TEST_F(PartitionLogTest, RecoveryCutsTornTail) {
  auto log = Open();
  for (int i = 0; i < 5; i++) AppendSync(*log, BuildBatch({"r" + std::to_string(i)}, 1));
  log.reset();
  std::string seg = dir_ + "/p0/00000000000000000000.log";
  auto size = fs::file_size(seg);
  {  // A torn write: half a batch appended.
    std::string half = BuildBatch({"torn"}, 1).substr(0, 30);
    std::ofstream(seg, std::ios::app | std::ios::binary) << half;
  }
  log = Open();
  EXPECT_EQ(log->log_end_offset(), 5);
  EXPECT_EQ(fs::file_size(seg), size);
  EXPECT_EQ(AppendSync(*log, BuildBatch({"after"}, 1)), 5);
  log.reset();
  {  // A flipped byte in the last batch: CRC fails, the batch goes.
    std::fstream f(seg, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(seg) - 2));
    f.put('#');
  }
  log = Open();
  EXPECT_EQ(log->log_end_offset(), 5);
  auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[4].second, "r4");
}

TEST_F(PartitionLogTest, TruncateAndEpochs) {
  LogOptions o;
  o.segment_bytes = 200;
  auto log = Open(o);
  for (int i = 0; i < 10; i++) AppendSync(*log, BuildBatch({"t" + std::to_string(i)}, 1), i < 5 ? 1 : 3);
  EXPECT_EQ(log->latest_epoch(), 3);
  EXPECT_EQ(log->EndOffsetForEpoch(1), 5);
  EXPECT_EQ(log->EndOffsetForEpoch(2), 5);
  EXPECT_EQ(log->EndOffsetForEpoch(3), 10);
  EXPECT_EQ(log->EndOffsetForEpoch(0), -1);
  ASSERT_TRUE(log->TruncateTo(4).ok());
  EXPECT_EQ(log->log_end_offset(), 4);
  EXPECT_EQ(log->high_watermark(), 4);
  EXPECT_EQ(log->latest_epoch(), 1);
  EXPECT_EQ(AppendSync(*log, BuildBatch({"new"}, 1), 4), 4);
  log.reset();
  log = Open(o);
  auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[4].second, "new");
  EXPECT_EQ(log->EpochEntries().size(), 2u);
}

TEST_F(PartitionLogTest, RetentionDeletesWholeOldSegments) {
  LogOptions o;
  o.segment_bytes = 150;
  o.retention_ms = 1000;
  auto log = Open(o);
  for (int i = 0; i < 6; i++) AppendSync(*log, BuildBatch({"old"}, 1000));
  for (int i = 0; i < 2; i++) AppendSync(*log, BuildBatch({"new"}, 100000));
  size_t before = log->segment_count();
  auto deleted = log->ApplyRetention(100500);
  ASSERT_TRUE(deleted.ok());
  EXPECT_GT(*deleted, 0);
  EXPECT_EQ(log->segment_count(), before - static_cast<size_t>(*deleted));
  EXPECT_GT(log->log_start_offset(), 0);
  EXPECT_FALSE(log->Read(0, 100, 100).ok());
  auto rest = ReadAll(*log, log->log_start_offset());
  EXPECT_EQ(rest.back().second, "new");

  LogOptions by_size;
  by_size.segment_bytes = 150;
  by_size.retention_bytes = 300;
  log.reset();
  log = Open(by_size);
  for (int i = 0; i < 10; i++) AppendSync(*log, BuildBatch({"s"}, 1));
  ASSERT_TRUE(log->ApplyRetention(0).ok());
  uint64_t total = 0;
  for (auto& e : fs::directory_iterator(dir_ + "/p0"))
    if (e.path().extension() == ".log") total += fs::file_size(e.path());
  EXPECT_LE(total, 300u + 150u);
}

TEST_F(PartitionLogTest, GroupCommitSharesSyncs) {
  auto log = Open();
  constexpr int kThreads = 64, kEach = 20;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; i++) AppendSync(*log, BuildBatch({std::to_string(t)}, 1));
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(log->log_end_offset(), kThreads * kEach);
  // Each produce waited for its own sync, yet the syncs were shared.
  EXPECT_LT(syncer_.syncs(), static_cast<uint64_t>(kThreads * kEach));
}

// The child appends batches, reporting "offset value" on a pipe only after each is durable; the parent
// kills it mid-stream and checks that every acknowledged value is at its offset, exactly once.
TEST_F(PartitionLogTest, SigkillLosesNothingAcknowledged) {
  for (int round = 0; round < 3; round++) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      Syncer syncer;
      LogOptions o;
      o.segment_bytes = 4096;
      auto log = PartitionLog::Open(dir_ + "/p0", o, &syncer);
      if (!log.ok()) ::_exit(2);
      std::atomic<int> inflight{0};
      for (int i = 0;; i++) {
        std::string v = "k" + std::to_string(round) + "-" + std::to_string(i);
        std::string b = BuildBatch({v, v}, 1);
        auto h = ParseBatch(b);
        while (inflight.load() > 32) std::this_thread::yield();
        inflight++;
        std::shared_ptr<int64_t> off = std::make_shared<int64_t>(-1);
        std::mutex* mu = new std::mutex;  // leaked: the process dies anyway
        std::lock_guard<std::mutex> l(*mu);
        AppendInfo info = (*log)->Append(b, *h, 0, [fd = fds[1], off, mu, v, &inflight](Status s) {
          std::lock_guard<std::mutex> l2(*mu);
          if (s.ok()) {
            std::string line = std::to_string(*off) + " " + v + "\n";
            if (::write(fd, line.data(), line.size()) < 0) ::_exit(3);
          }
          inflight--;
        });
        *off = info.base_offset;
      }
    }
    ::close(fds[1]);
    std::string acked;
    char buf[4096];
    while (acked.size() < 6000) {
      ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      acked.append(buf, static_cast<size_t>(n));
    }
    ::kill(pid, SIGKILL);
    int status;
    ::waitpid(pid, &status, 0);
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) acked.append(buf, static_cast<size_t>(n));
    ::close(fds[0]);

    auto log = Open({.segment_bytes = 4096});
    ASSERT_NE(log, nullptr);
    std::map<int64_t, std::string> stored;
    std::map<std::string, int> seen;
    for (auto& [off, v] : ReadAll(*log)) {
      stored[off] = v;
      seen[v]++;
    }
    std::istringstream lines(acked);
    int64_t off;
    std::string v;
    int count = 0;
    while (lines >> off >> v) {
      count++;
      ASSERT_EQ(stored[off], v) << "acknowledged record missing at offset " << off;
      ASSERT_EQ(seen[v], 1);
    }
    EXPECT_GT(count, 0);
    // Offsets are contiguous batches of two.
    int64_t expect = 0;
    for (auto& [o, val] : stored) {
      ASSERT_EQ(o, expect);
      expect += 2;
    }
  }
}

}  // namespace
}  // namespace govern::streams

namespace govern::streams {
namespace {

// Power loss, modelled: a Syncer whose sync records how many bytes of each file (by inode) were durable
// when it returned. Every acknowledgement must find its batch inside that durable prefix; then every
// file is cut back to its durable prefix (what a power cut may leave) and the reopened log must still
// hold every acknowledged batch at its offset.
TEST(PartitionLogPowerLoss, AcksOnlyDurableBytesAndSurvivesLosingTheRest) {
  char tmpl[] = "/tmp/streams_power_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  std::mutex mu;
  std::map<ino_t, off_t> durable;
  auto sync_fn = [&](int fd) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return -1;
    int rc = ::fdatasync(fd);
    std::lock_guard<std::mutex> l(mu);
    durable[st.st_ino] = std::max(durable[st.st_ino], st.st_size);
    return rc;
  };
  std::vector<std::pair<int64_t, std::string>> acked;
  int violations = 0;
  {
    Syncer syncer(4, sync_fn);
    auto log = PartitionLog::Open(dir + "/p0", {}, &syncer);
    ASSERT_TRUE(log.ok());
    std::string seg = dir + "/p0/00000000000000000000.log";
    struct stat st;
    ASSERT_EQ(::stat(seg.c_str(), &st), 0);
    const ino_t ino = st.st_ino;
    off_t end = 0;
    std::atomic<int> pending{0};
    for (int i = 0; i < 2000; i++) {
      std::string v = "p" + std::to_string(i);
      std::string b = BuildBatch({v}, 1);
      auto h = ParseBatch(b);
      end += static_cast<off_t>(b.size());
      pending++;
      auto offset = std::make_shared<std::atomic<int64_t>>(-1);
      AppendInfo info = (*log)->Append(b, *h, 0, [&, end, v, offset](Status s) {
        std::lock_guard<std::mutex> l(mu);
        if (!s.ok() || durable[ino] < end) violations++;
        while (offset->load() < 0) {
        }
        acked.emplace_back(offset->load(), v);
        pending--;
      });
      offset->store(info.base_offset);
    }
    while (pending.load() > 0) std::this_thread::yield();
    // Whatever was never synced is lost.
    std::lock_guard<std::mutex> l(mu);
    ASSERT_EQ(::truncate(seg.c_str(), durable[ino]), 0);
  }
  EXPECT_EQ(violations, 0);
  Syncer syncer;
  auto log = PartitionLog::Open(dir + "/p0", {}, &syncer);
  ASSERT_TRUE(log.ok());
  auto data = (*log)->Read(0, SIZE_MAX, (*log)->high_watermark());
  ASSERT_TRUE(data.ok());
  std::map<int64_t, std::string> stored;
  ASSERT_TRUE(ForEachBatch(*data, [&](std::string_view b) {
                auto h = ParseBatch(b);
                if (!h.ok()) return h.status();
                std::string_view rec = b.substr(kBatchHeaderSize);
                stored[h->base_offset] = std::string(rec.substr(6, static_cast<unsigned char>(rec[5]) / 2));
                return OkStatus();
              }).ok());
  ASSERT_EQ(acked.size(), 2000u);
  for (auto& [off, v] : acked) EXPECT_EQ(stored[off], v) << "offset " << off;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace govern::streams
