// The RLE / bit-packing hybrid: the examples of Encodings.md, round trips and hostile runs.
#include "storage/parquet/rle.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace govern::parquet {
namespace {

std::vector<uint32_t> Decode(const std::string& bytes, int width, size_t n, Status* status) {
  std::vector<uint32_t> out(n);
  *status =
      RleDecoder(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), width).Decode(out.data(), n);
  return out;
}

TEST(Rle, BitPackedExampleFromEncodingsMd) {
  // Values 0..7 at bit width 3 pack to 10001000 11000110 11111010.
  std::vector<uint32_t> v = {0, 1, 2, 3, 4, 5, 6, 7};
  std::string out;
  EncodeRleHybrid(v.data(), v.size(), 3, &out);
  EXPECT_EQ(out, std::string("\x03\x88\xc6\xfa"));
  Status s;
  EXPECT_EQ(Decode(out, 3, 8, &s), v);
  EXPECT_TRUE(s.ok());
}

TEST(Rle, RunsBecomeRleRuns) {
  std::vector<uint32_t> v(100, 5);
  std::string out;
  EncodeRleHybrid(v.data(), v.size(), 3, &out);
  EXPECT_EQ(out, std::string("\xc8\x01\x05"));  // header 100 << 1 as a varint, then the value in a byte
}

TEST(Rle, RoundTripsMixedRunsAtEveryWidth) {
  std::mt19937 rng(7);
  for (int width = 1; width <= 32; ++width) {
    std::vector<uint32_t> v;
    const uint64_t limit = width == 32 ? 0xffffffffu : (uint64_t{1} << width) - 1;
    for (int block = 0; block < 50; ++block) {
      uint32_t x = static_cast<uint32_t>(rng() & limit);
      size_t len = rng() % 3 == 0 ? 1 + rng() % 40 : 1;
      for (size_t i = 0; i < len; ++i) v.push_back(rng() % 2 ? x : static_cast<uint32_t>(rng() & limit));
    }
    std::string out;
    EncodeRleHybrid(v.data(), v.size(), width, &out);
    Status s;
    EXPECT_EQ(Decode(out, width, v.size(), &s), v) << "width " << width;
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
}

TEST(Rle, DataEndingEarlyIsDataLoss) {
  std::vector<uint32_t> v(20, 1);
  std::string out;
  EncodeRleHybrid(v.data(), v.size(), 1, &out);
  Status s;
  Decode(out, 1, 21, &s);
  EXPECT_EQ(s.code(), Code::kDataLoss);
  Decode("", 1, 1, &s);
  EXPECT_EQ(s.code(), Code::kDataLoss);
  // An RLE value wider than the bit width.
  Decode(std::string("\x02\x03", 2), 1, 1, &s);
  EXPECT_EQ(s.code(), Code::kDataLoss);
  // A run header that never ends.
  Decode(std::string(12, '\xff'), 1, 1, &s);
  EXPECT_EQ(s.code(), Code::kDataLoss);
}

TEST(Rle, HugeRunCountsCostNothing) {
  // One RLE run claiming 2^62 values: decoding 3 takes 3.
  Status s;
  auto out = Decode(std::string("\xfe\xff\xff\xff\xff\xff\xff\xff\x7f\x01", 10), 1, 3, &s);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out, (std::vector<uint32_t>{1, 1, 1}));
  // A bit-packed run claiming many groups, cut short by the end of the data, still yields what is there.
  out = Decode(std::string("\xff\x01\xff", 3), 1, 8, &s);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out, std::vector<uint32_t>(8, 1));
  Decode(std::string("\xff\x01\xff", 3), 1, 9, &s);
  EXPECT_EQ(s.code(), Code::kDataLoss);
}

}  // namespace
}  // namespace govern::parquet
