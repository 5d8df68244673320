// LocalStore on a real temporary directory.
#include "storage/objstore/local_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace govern::objstore {
namespace {

namespace fs = std::filesystem;

class LocalStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/govern-objstore-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto store = LocalStore::Open(dir_ + "/root");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_;
  std::unique_ptr<LocalStore> store_;
};

TEST_F(LocalStoreTest, PutGetHeadDeleteRoundTrip) {
  const std::string key = "logs/org=acme/hour=01/part 0 \xC3\xA9.parquet";
  ASSERT_TRUE(store_->Put(key, "hello parquet").ok());
  EXPECT_TRUE(fs::is_regular_file(dir_ + "/root/" + key));
  auto got = store_->Get(key);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, "hello parquet");
  auto head = store_->Head(key);
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->size, 13u);
  EXPECT_EQ(head->key, key);
  EXPECT_FALSE(head->etag.empty());
  ASSERT_TRUE(store_->Delete(key).ok());
  EXPECT_EQ(store_->Get(key).status().code(), Code::kNotFound);
  EXPECT_EQ(store_->Head(key).status().code(), Code::kNotFound);
  EXPECT_TRUE(store_->Delete(key).ok()) << "delete is idempotent";
}

TEST_F(LocalStoreTest, PutReplacesWholeAndLeavesNoTempFiles) {
  ASSERT_TRUE(store_->Put("a/b", std::string(100000, 'x')).ok());
  ASSERT_TRUE(store_->Put("a/b", "short").ok());
  EXPECT_EQ(*store_->Get("a/b"), "short");
  for (const auto& e : fs::recursive_directory_iterator(dir_ + "/root")) {
    EXPECT_EQ(e.path().filename().string().find(".govern-tmp"), std::string::npos) << e.path();
  }
}

TEST_F(LocalStoreTest, EmptyObject) {
  ASSERT_TRUE(store_->Put("empty", "").ok());
  auto got = store_->Get("empty");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, "");
  EXPECT_EQ(store_->Head("empty")->size, 0u);
  EXPECT_EQ(store_->GetRange("empty", 0, 1).status().code(), Code::kOutOfRange);
}

TEST_F(LocalStoreTest, RangedGetReadsFootersAndStopsAtTheEnd) {
  ASSERT_TRUE(store_->Put("f", "0123456789").ok());
  EXPECT_EQ(*store_->GetRange("f", 2, 3), "234");
  EXPECT_EQ(*store_->GetRange("f", 6, 4), "6789");
  EXPECT_EQ(*store_->GetRange("f", 8, 100), "89");
  EXPECT_EQ(*store_->GetRange("f", 0, 0), "");
  EXPECT_EQ(store_->GetRange("f", 10, 1).status().code(), Code::kOutOfRange);
  EXPECT_EQ(store_->GetRange("missing", 0, 1).status().code(), Code::kNotFound);
}

TEST_F(LocalStoreTest, PutFileCopiesALargeFile) {
  std::string data(3 * (1 << 20) + 17, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131) ^ (i >> 9));
  const std::string src = dir_ + "/src.bin";
  std::ofstream(src, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(store_->PutFile("big/file.bin", src).ok());
  EXPECT_EQ(*store_->Get("big/file.bin"), data);
  EXPECT_EQ(store_->PutFile("x", dir_ + "/no-such-file").code(), Code::kNotFound);
}

TEST_F(LocalStoreTest, ListIsSortedByKeyAndFiltersByPrefix) {
  for (std::string k : {"b/2", "a/1", "a/10", "a/2", "a b/x", "ab", "c"}) ASSERT_TRUE(store_->Put(k, k).ok());
  auto all = store_->List("");
  ASSERT_TRUE(all.ok());
  std::vector<std::string> keys;
  for (const auto& o : *all) keys.push_back(o.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"a b/x", "a/1", "a/10", "a/2", "ab", "b/2", "c"}));
  auto a = store_->List("a/");
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 3u);
  EXPECT_EQ((*a)[1].key, "a/10");
  EXPECT_EQ((*a)[1].size, 4u);
  auto partial = store_->List("a");
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->size(), 5u);
  EXPECT_TRUE(store_->List("zzz/")->empty());
}

TEST_F(LocalStoreTest, BadKeysAreRefusedBeforeTouchingDisk) {
  EXPECT_EQ(store_->Put("../escape", "x").code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Put("/abs", "x").code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Get("a/../../etc/passwd").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->List("/").status().code(), Code::kInvalidArgument);
  EXPECT_FALSE(fs::exists(dir_ + "/escape"));
}

TEST_F(LocalStoreTest, KeyUnderAnExistingObjectIsAClearError) {
  ASSERT_TRUE(store_->Put("a", "file").ok());
  const Status s = store_->Put("a/b", "x");
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(store_->Get("a/b").status().code(), Code::kNotFound);
}

TEST_F(LocalStoreTest, StaleTempFilesAreHiddenAndRemoved) {
  ASSERT_TRUE(store_->Put("d/real", "1").ok());
  std::ofstream(dir_ + "/root/d/.govern-tmp-99-1") << "torn";
  EXPECT_EQ(store_->List("")->size(), 1u);
  ASSERT_TRUE(store_->RemoveStaleTempFiles().ok());
  EXPECT_FALSE(fs::exists(dir_ + "/root/d/.govern-tmp-99-1"));
  EXPECT_TRUE(fs::exists(dir_ + "/root/d/real"));
}

TEST_F(LocalStoreTest, ConcurrentPutsOfOneKeyLeaveOneWholeValue) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i)
        EXPECT_TRUE(store_->Put("k/v", std::string(4096, static_cast<char>('a' + t))).ok());
    });
  }
  for (auto& th : threads) th.join();
  auto got = store_->Get("k/v");
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 4096u);
  EXPECT_EQ(got->find_first_not_of((*got)[0]), std::string::npos);
}

TEST_F(LocalStoreTest, PutIntoAReadOnlyDirectoryFailsCleanly) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  ASSERT_TRUE(store_->Put("ro/x", "1").ok());
  ::chmod((dir_ + "/root/ro").c_str(), 0555);
  const Status s = store_->Put("ro/y", "2");
  ::chmod((dir_ + "/root/ro").c_str(), 0755);
  EXPECT_EQ(s.code(), Code::kPermissionDenied) << s.ToString();
  EXPECT_NE(s.message().find("ro/y"), std::string::npos);
}

}  // namespace
}  // namespace govern::objstore
