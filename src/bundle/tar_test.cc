// The ustar reader and writer, gzip, and the path rules: bytes in, verdict out.
#include "bundle/tar.h"

#include <gtest/gtest.h>

#include <cstring>

#include "bundle/test_util.h"

namespace govern::bundle {
namespace {

using testing::EndMarker;
using testing::RawMember;

TEST(Tar, RoundTripAndLayout) {
  std::vector<TarEntry> in = {{"a.txt", "hello"}, {"dir/b.bin", std::string(512, 'x')}, {"empty", ""}};
  auto tar = WriteTar(in, 1700000000);
  ASSERT_TRUE(tar.ok()) << tar.status().ToString();
  // header + 1 block, header + 1 block, header, end marker
  EXPECT_EQ(tar->size(), 512u * (2 + 2 + 1 + 2));
  EXPECT_EQ(tar->substr(257, 8), std::string("ustar\0"
                                             "00",
                                             8));
  EXPECT_EQ(tar->substr(124, 12), std::string("00000000005\0", 12));
  auto out = ReadTar(*tar, {});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*out)[i].name, in[i].name);
    EXPECT_EQ((*out)[i].data, in[i].data);
  }
}

TEST(Tar, PathRules) {
  for (const char* ok : {"a", "policies.cedar", "a/b/c.json", "x..y", ".hidden", "a-b_c.d"}) {
    EXPECT_TRUE(ValidatePath(ok).ok()) << ok;
  }
  for (const char* bad :
       {"", "/etc/passwd", "../x", "a/../b", "a/..", "..", ".", "./a", "a//b", "a/", "a\\b", "tab\there"}) {
    EXPECT_EQ(ValidatePath(bad).code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ValidatePath(std::string(101, 'a')).code(), Code::kInvalidArgument);
  EXPECT_TRUE(ValidatePath(std::string(100, 'a')).ok());
  EXPECT_EQ(ValidatePath(std::string("a\0b", 3)).code(), Code::kInvalidArgument);
  EXPECT_FALSE(WriteTar({{"../x", ""}}, 0).ok());
  EXPECT_EQ(WriteTar({{"a", ""}, {"a", ""}}, 0).status().code(), Code::kAlreadyExists);
}

TEST(Tar, RefusesUnsafeNamesInArchives) {
  for (const char* bad : {"../../etc/cron.d/x", "/abs", "a/./b", "a//b"}) {
    auto r = ReadTar(RawMember(bad, "x") + EndMarker(), {});
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad << " " << r.status().ToString();
  }
}

TEST(Tar, RefusesDuplicates) {
  auto r = ReadTar(RawMember("a", "1") + RawMember("a", "2") + EndMarker(), {});
  EXPECT_EQ(r.status().code(), Code::kAlreadyExists) << r.status().ToString();
}

TEST(Tar, RefusesOtherEntryTypes) {
  for (char type : {'1', '2', '3', '5', 'x', 'g', 'L'}) {
    auto r = ReadTar(RawMember("link", "", type) + EndMarker(), {});
    EXPECT_EQ(r.status().code(), Code::kUnimplemented) << type << " " << r.status().ToString();
  }
}

TEST(Tar, RefusesCorruptHeaders) {
  std::string good = RawMember("a", "data") + EndMarker();
  ASSERT_TRUE(ReadTar(good, {}).ok());
  {  // a flipped bit anywhere in the header fails the checksum
    std::string t = good;
    t[20] ^= 1;
    EXPECT_EQ(ReadTar(t, {}).status().code(), Code::kDataLoss);
  }
  {  // GNU magic "ustar  \0"
    std::string t = RawMember("a", "data");
    std::memcpy(t.data() + 257, "ustar  ", 8);
    std::memset(t.data() + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(t[i]);
    std::snprintf(t.data() + 148, 8, "%06o", sum);
    EXPECT_EQ(ReadTar(t + EndMarker(), {}).status().code(), Code::kDataLoss);
  }
  {  // non-zero padding after the data
    std::string t = good;
    t[512 + 10] = 'z';
    EXPECT_EQ(ReadTar(t, {}).status().code(), Code::kDataLoss);
  }
  {  // data after the end marker
    EXPECT_EQ(ReadTar(good + "x", {}).status().code(), Code::kDataLoss);
    EXPECT_EQ(ReadTar(good + RawMember("b", ""), {}).status().code(), Code::kDataLoss);
  }
  {  // trailing zero blocks are fine (tar pads to 10 KiB records)
    EXPECT_TRUE(ReadTar(good + std::string(8192, '\0'), {}).ok());
  }
}

TEST(Tar, EveryTruncationIsRefused) {
  std::string good = RawMember("a", std::string(700, 'q')) + RawMember("b", "x") + EndMarker();
  for (size_t cut = 0; cut < good.size(); ++cut) {
    auto r = ReadTar(std::string_view(good).substr(0, cut), {});
    EXPECT_EQ(r.status().code(), Code::kDataLoss) << "cut at " << cut;
  }
}

TEST(Tar, Limits) {
  std::string two = RawMember("a", "12345") + RawMember("b", "67") + EndMarker();
  TarLimits l;
  l.max_entries = 1;
  EXPECT_EQ(ReadTar(two, l).status().code(), Code::kResourceExhausted);
  l = {};
  l.max_entry_bytes = 4;
  EXPECT_EQ(ReadTar(two, l).status().code(), Code::kResourceExhausted);
  l = {};
  l.max_total_bytes = 6;
  EXPECT_EQ(ReadTar(two, l).status().code(), Code::kResourceExhausted);
  l.max_total_bytes = 7;
  EXPECT_TRUE(ReadTar(two, l).ok());
  // A size field claiming far more than the archive holds: refused by the limit, then as truncated.
  std::string huge = RawMember("a", "");
  std::memcpy(huge.data() + 124, "77777777777", 11);
  std::memset(huge.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(huge[i]);
  std::snprintf(huge.data() + 148, 8, "%06o", sum);
  EXPECT_EQ(ReadTar(huge + EndMarker(), {}).status().code(), Code::kResourceExhausted);
  l = {};
  l.max_entry_bytes = l.max_total_bytes = UINT64_MAX;
  EXPECT_EQ(ReadTar(huge + EndMarker(), l).status().code(), Code::kDataLoss);
}

TEST(Gzip, RoundTripDeterministicAndBounded) {
  std::string data(100000, 'a');
  auto gz = Gzip(data);
  ASSERT_TRUE(gz.ok());
  EXPECT_TRUE(IsGzip(*gz));
  EXPECT_EQ(*gz, *Gzip(data));
  EXPECT_LT(gz->size(), 1000u);
  auto back = Gunzip(*gz, data.size());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, data);
  EXPECT_EQ(Gunzip(*gz, data.size() - 1).status().code(), Code::kResourceExhausted);
  EXPECT_EQ(Gunzip(*gz + "x", data.size()).status().code(), Code::kDataLoss);
  for (size_t cut = 0; cut < gz->size(); ++cut) {
    EXPECT_EQ(Gunzip(gz->substr(0, cut), data.size()).status().code(), Code::kDataLoss) << cut;
  }
  std::string bad = *gz;
  bad[bad.size() - 6] ^= 0x55;  // the CRC-32 trailer
  EXPECT_EQ(Gunzip(bad, data.size()).status().code(), Code::kDataLoss);
}

}  // namespace
}  // namespace govern::bundle
