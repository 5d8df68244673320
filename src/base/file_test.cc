// Durable whole-file writes against real files in a temporary directory.
#include "base/file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace govern {
namespace {

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/govern-file-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string dir_;
};

TEST_F(FileTest, WriteNewFileCreatesWithModeAndRefusesToOverwrite) {
  std::string p = dir_ + "/key";
  ASSERT_TRUE(WriteNewFile(p, "secret", 0600).ok());
  EXPECT_EQ(Read(p), "secret");
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  Status again = WriteNewFile(p, "other", 0600);
  EXPECT_EQ(again.code(), Code::kAlreadyExists);
  EXPECT_EQ(Read(p), "secret");
  EXPECT_EQ(WriteNewFile(dir_ + "/no/such/dir/f", "x", 0644).code(), Code::kNotFound);
}

TEST_F(FileTest, ReplaceFileDurablyReplacesWholeAndLeavesNoTemporary) {
  std::string p = dir_ + "/bundle.tar.gz";
  ASSERT_TRUE(ReplaceFileDurably(p, "v1").ok());
  ASSERT_TRUE(ReplaceFileDurably(p, std::string(1 << 20, 'x')).ok());
  EXPECT_EQ(Read(p), std::string(1 << 20, 'x'));
  ASSERT_TRUE(ReplaceFileDurably(p, "").ok());
  EXPECT_EQ(Read(p), "");
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1u);
}

TEST_F(FileTest, ReplaceFileDurablyFailureLeavesTheOldFile) {
  std::string p = dir_ + "/target";
  ASSERT_TRUE(ReplaceFileDurably(p, "old").ok());
  // A directory where the file should go: the rename fails, the temporary is removed.
  std::string d = dir_ + "/adir";
  std::filesystem::create_directory(d);
  std::filesystem::create_directory(d + "/child");
  EXPECT_FALSE(ReplaceFileDurably(d, "new").ok());
  EXPECT_TRUE(std::filesystem::is_directory(d));
  EXPECT_EQ(Read(p), "old");
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 2u);  // target and adir
}

}  // namespace
}  // namespace govern
