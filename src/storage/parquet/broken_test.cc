// Every malformed file in testdata/broken/ (made by `parquet_tool broken`) gets a clear error: the
// code and a message naming what is wrong, on Open or on reading the damaged column, never a crash.
#include <gtest/gtest.h>

#include <filesystem>

#include "storage/parquet/reader.h"

namespace govern::parquet {
namespace {

struct Broken {
  const char* file;
  Code code;
  const char* message;  // a substring of the error
  bool on_open;         // the error comes from Open (else from reading column `column`)
  size_t column = 0;
};

std::string Path(const char* file) {
  return std::string(GOVERN_PARQUET_TESTDATA) + "/broken/" + file + ".parquet";
}

Status OpenAndReadAll(const std::string& path, bool* opened) {
  auto r = Reader::Open(path);
  *opened = r.ok();
  if (!r.ok()) return r.status();
  for (size_t g = 0; g < (*r)->row_groups().size(); ++g)
    GOVERN_RETURN_IF_ERROR((*r)->ReadRowGroup(g).status());
  return OkStatus();
}

class BrokenFile : public ::testing::TestWithParam<Broken> {};

TEST_P(BrokenFile, GetsAClearError) {
  const Broken& b = GetParam();
  bool opened = false;
  Status s = OpenAndReadAll(Path(b.file), &opened);
  EXPECT_EQ(s.code(), b.code) << s.ToString();
  EXPECT_NE(s.message().find(b.message), std::string::npos) << s.ToString();
  EXPECT_EQ(opened, !b.on_open) << s.ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, BrokenFile,
    ::testing::Values(
        Broken{"too_short", Code::kInvalidArgument, "not a Parquet file", true},
        Broken{"bad_magic", Code::kInvalidArgument, "no PAR1 at the start", true},
        Broken{"truncated", Code::kDataLoss, "no PAR1 at the end", true},
        Broken{"footer_length_too_large", Code::kDataLoss, "exceeds the file", true},
        Broken{"footer_length_too_small", Code::kDataLoss, "parquet metadata", true},
        Broken{"footer_missing_fields", Code::kDataLoss, "FileMetaData lacks a required field", true},
        Broken{"corrupt_page_header", Code::kDataLoss, "PageHeader lacks a required field", false},
        Broken{"corrupt_zstd_page", Code::kDataLoss, "zstd", false},
        Broken{"page_size_too_large", Code::kDataLoss, "page runs past the end of its column chunk", false},
        Broken{"string_length_too_large", Code::kDataLoss, "PLAIN string runs past the page", false},
        Broken{"dictionary_bit_width", Code::kDataLoss, "bit width above 32", false}),
    [](const auto& param_info) { return std::string(param_info.param.file); });

TEST(BrokenFiles, EveryFixtureHasATest) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e :
       std::filesystem::directory_iterator(std::string(GOVERN_PARQUET_TESTDATA) + "/broken"))
    ++n;
  EXPECT_EQ(n, 11u);
}

TEST(BrokenFiles, ErrorsNameTheColumnAndRowGroup) {
  auto r = Reader::Open(Path("string_length_too_large"));
  ASSERT_TRUE(r.ok());
  Status s = (*r)->ReadColumn(0, 4).status();
  EXPECT_NE(s.message().find("row group 0, column service"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace govern::parquet
