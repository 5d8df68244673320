// OffsetStore: durability across reopen, torn-tail recovery, compaction, locking, concurrent commits.
#include "streams/groups/offset_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <thread>

#include "streams/groups/test_util.h"

namespace govern::streams::groups {
namespace {

OffsetValue Value(int64_t offset, std::string metadata = "m") {
  OffsetValue v;
  v.offset = offset;
  v.leader_epoch = 2;
  v.metadata = std::move(metadata);
  v.commit_timestamp_ms = 1000 + offset;
  return v;
}

Status CommitSync(OffsetStore& s, const std::string& group, const std::string& topic, int32_t p,
                  int64_t offset) {
  Status result = Internal("not called");
  s.Commit(group, {{{topic, p}, Value(offset)}}, [&](Status st) { result = st; });
  GOVERN_RETURN_IF_ERROR(s.Flush());
  return result;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void AppendFile(const std::string& path, std::string_view data) {
  std::ofstream f(path, std::ios::binary | std::ios::app);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
}

TEST(OffsetStore, CommitIsVisibleAfterAckAndAfterReopen) {
  testing::TempDir dir;
  {
    auto s = OffsetStore::Open(dir.path());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE(CommitSync(**s, "g", "t", 0, 10).ok());
    ASSERT_TRUE(CommitSync(**s, "g", "t", 0, 11).ok());
    ASSERT_TRUE(CommitSync(**s, "g", "t", 1, 5).ok());
    ASSERT_TRUE(CommitSync(**s, "h", "u", 0, 1).ok());
    EXPECT_EQ((*s)->Get("g", {"t", 0})->offset, 11);
    Status del = Internal("not called");
    (*s)->Delete("h", {{"u", 0}}, [&](Status st) { del = st; });
    ASSERT_TRUE((*s)->Flush().ok());
    EXPECT_TRUE(del.ok());
    EXPECT_FALSE((*s)->HasOffsets("h"));
  }
  auto s = OffsetStore::Open(dir.path());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->Get("g", {"t", 0})->offset, 11);
  EXPECT_EQ((*s)->Get("g", {"t", 0})->metadata, "m");
  EXPECT_EQ((*s)->Get("g", {"t", 0})->leader_epoch, 2);
  EXPECT_EQ((*s)->GetGroup("g").size(), 2u);
  EXPECT_EQ((*s)->Groups(), std::vector<std::string>{"g"});
}

// DeleteTopics drops every group's offsets of the topics, including a commit queued just before it, and
// the deletion is replayed at reopen.
TEST(OffsetStore, DeleteTopicsAcrossGroups) {
  testing::TempDir dir;
  {
    auto s = OffsetStore::Open(dir.path());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE(CommitSync(**s, "g", "gone", 0, 10).ok());
    ASSERT_TRUE(CommitSync(**s, "g", "kept", 0, 11).ok());
    ASSERT_TRUE(CommitSync(**s, "h", "gone", 3, 12).ok());
    ASSERT_TRUE(CommitSync(**s, "h", "also-gone", 0, 13).ok());
    // Queued, not yet applied, when the deletion is queued behind it.
    (*s)->Commit("i", {{{"gone", 1}, Value(14)}}, nullptr);
    Status del = Internal("not called");
    (*s)->DeleteTopics({"gone", "also-gone"}, [&](Status st) { del = st; });
    ASSERT_TRUE((*s)->Flush().ok());
    EXPECT_TRUE(del.ok());
    EXPECT_EQ((*s)->Groups(), std::vector<std::string>{"g"});
    EXPECT_EQ((*s)->GetGroup("g").size(), 1u);
    EXPECT_EQ((*s)->Get("g", {"kept", 0})->offset, 11);
  }
  auto s = OffsetStore::Open(dir.path());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->Groups(), std::vector<std::string>{"g"});
  EXPECT_FALSE((*s)->Get("g", {"gone", 0}).has_value());
  EXPECT_EQ((*s)->Get("g", {"kept", 0})->offset, 11);
}

// A commit checked against the topics before a DeleteTopics but queued after it: the filter, asked as the
// commit is queued, drops that topic's offset (and names it) instead of putting it back after the delete.
TEST(OffsetStore, CommitFilterDropsATopicDeletedBeforeItWasQueued) {
  testing::TempDir dir;
  {
    auto s = OffsetStore::Open(dir.path());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE(CommitSync(**s, "g", "t", 0, 10).ok());
    std::atomic<bool> t_deleted{false};
    t_deleted = true;  // the broker took "t" out of its topics, then queued its offsets' deletion
    (*s)->DeleteTopics({"t"}, [](Status) {});
    auto dropped = std::make_shared<std::set<std::string>>();
    Status result = Internal("not called");
    (*s)->Commit(
        "g", {{{"t", 0}, Value(11)}, {{"u", 0}, Value(3)}}, [&](Status st) { result = st; },
        [&](const std::string& topic) { return !(topic == "t" && t_deleted); }, dropped);
    ASSERT_TRUE((*s)->Flush().ok());
    EXPECT_TRUE(result.ok()) << result.ToString();
    EXPECT_EQ(*dropped, std::set<std::string>{"t"});
    EXPECT_FALSE((*s)->Get("g", {"t", 0}).has_value());
    EXPECT_EQ((*s)->Get("g", {"u", 0})->offset, 3);
    // Every topic refused: nothing is queued, and the caller is still answered.
    result = Internal("not called");
    (*s)->Commit(
        "g", {{{"t", 0}, Value(12)}}, [&](Status st) { result = st; },
        [](const std::string&) { return false; }, nullptr);
    EXPECT_TRUE(result.ok());
  }
  auto s = OffsetStore::Open(dir.path());
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE((*s)->Get("g", {"t", 0}).has_value());
  EXPECT_EQ((*s)->Get("g", {"u", 0})->offset, 3);
}

TEST(OffsetStore, TornTailIsCutAndAppendsContinue) {
  testing::TempDir dir;
  std::string path = dir.path() + "/offsets.log";
  {
    auto s = OffsetStore::Open(dir.path());
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(CommitSync(**s, "g", "t", 0, 10).ok());
  }
  std::string good = ReadFile(path);
  // A frame cut short, as a crash in the middle of a write leaves it.
  OffsetRecord r;
  r.group = "g";
  r.commits = {{{"t", 0}, Value(99)}};
  std::string frame;
  ASSERT_TRUE(EncodeRecord(r, &frame).ok());
  AppendFile(path, frame.substr(0, frame.size() - 3));
  {
    auto s = OffsetStore::Open(dir.path());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ((*s)->Get("g", {"t", 0})->offset, 10);
    EXPECT_EQ(ReadFile(path), good);
    ASSERT_TRUE(CommitSync(**s, "g", "t", 0, 12).ok());
  }
  // A whole frame with a bad CRC at the tail is cut too.
  std::string bad = frame;
  bad[bad.size() - 1] ^= 1;
  AppendFile(path, bad);
  auto s = OffsetStore::Open(dir.path());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->Get("g", {"t", 0})->offset, 12);
}

TEST(OffsetStore, RefusesForeignFilesAndASecondOpener) {
  testing::TempDir dir;
  {
    auto s = OffsetStore::Open(dir.path());
    ASSERT_TRUE(s.ok());
    auto again = OffsetStore::Open(dir.path());
    EXPECT_EQ(again.status().code(), Code::kFailedPrecondition);
  }
  testing::TempDir other;
  AppendFile(other.path() + "/offsets.log", "not an offsets file at all");
  EXPECT_EQ(OffsetStore::Open(other.path()).status().code(), Code::kDataLoss);
  // A file cut inside its header (a crash right after creating it) is started afresh.
  testing::TempDir torn;
  AppendFile(torn.path() + "/offsets.log", "GOVG");
  EXPECT_TRUE(OffsetStore::Open(torn.path()).ok());
}

TEST(OffsetStore, CompactsWhenTheFileOutgrowsTheLiveOffsets) {
  testing::TempDir dir;
  OffsetStoreOptions o;
  o.compact_min_bytes = 4096;
  o.compact_ratio = 2.0;
  {
    auto s = OffsetStore::Open(dir.path(), o);
    ASSERT_TRUE(s.ok());
    for (int i = 0; i < 500; ++i) ASSERT_TRUE(CommitSync(**s, "g", "t", i % 3, i).ok());
    auto st = (*s)->GetStats();
    EXPECT_GE(st.compactions, 1u);
    EXPECT_LE(st.file_bytes, 4096u * 2 + 200);
    EXPECT_EQ(st.file_bytes, std::filesystem::file_size(dir.path() + "/offsets.log"));
  }
  auto s = OffsetStore::Open(dir.path(), o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->Get("g", {"t", 0})->offset, 498);
  EXPECT_EQ((*s)->Get("g", {"t", 1})->offset, 499);
  EXPECT_EQ((*s)->Get("g", {"t", 2})->offset, 497);
}

TEST(OffsetStore, CompactsAtOpen) {
  testing::TempDir dir;
  {
    auto s = OffsetStore::Open(dir.path());
    ASSERT_TRUE(s.ok());
    for (int i = 0; i < 300; ++i) ASSERT_TRUE(CommitSync(**s, "g", "t", 0, i).ok());
  }
  uint64_t before = std::filesystem::file_size(dir.path() + "/offsets.log");
  OffsetStoreOptions o;
  o.compact_min_bytes = 1024;
  auto s = OffsetStore::Open(dir.path(), o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->GetStats().compactions, 1u);
  EXPECT_LT(std::filesystem::file_size(dir.path() + "/offsets.log"), before / 10);
  EXPECT_EQ((*s)->Get("g", {"t", 0})->offset, 299);
}

TEST(OffsetStore, ConcurrentCommitsAreAllAcknowledgedAndKept) {
  testing::TempDir dir;
  auto s = OffsetStore::Open(dir.path());
  ASSERT_TRUE(s.ok());
  std::atomic<int> acked{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i)
        (*s)->Commit("g", {{{"t", t}, Value(i)}}, [&](Status st) {
          EXPECT_TRUE(st.ok());
          ++acked;
        });
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE((*s)->Flush().ok());
  EXPECT_EQ(acked.load(), 400);
  for (int t = 0; t < 4; ++t) EXPECT_EQ((*s)->Get("g", {"t", t})->offset, 99);
  EXPECT_EQ((*s)->GetStats().frames, 400u);
}

}  // namespace
}  // namespace govern::streams::groups
