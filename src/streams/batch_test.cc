// Record batch v2: CRC-32C vectors, parse checks, offset stamping outside the CRC.
#include "streams/batch.h"

#include <gtest/gtest.h>

#include "storage/crc32c.h"
#include "streams/wire.h"

namespace govern::streams {
namespace {

TEST(Crc32c, KnownVectors) {
  // RFC 3720 (iSCSI) B.4 and the classic check value.
  EXPECT_EQ(storage::Crc32c("123456789"), 0xE3069283u);
  std::string zeros(32, '\0');
  EXPECT_EQ(storage::Crc32c(zeros), 0x8A9136AAu);
  std::string ones(32, '\xff');
  EXPECT_EQ(storage::Crc32c(ones), 0x62A8AB43u);
  std::string inc;
  for (int i = 0; i < 32; i++) inc.push_back(static_cast<char>(i));
  EXPECT_EQ(storage::Crc32c(inc), 0x46DD794Eu);
  if (storage::Crc32cHardwareAvailable()) {
    EXPECT_EQ(storage::Crc32cExtendHardware(0, inc.data(), inc.size()),
              storage::Crc32cExtendTable(0, inc.data(), inc.size()));
  }
}

TEST(Batch, BuildParseRoundTrip) {
  std::string b = BuildBatch({"a", "bb", "ccc"}, 1700000000000, 7, 1, 10);
  auto h = ParseBatch(b);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->magic, 2);
  EXPECT_EQ(h->records_count, 3);
  EXPECT_EQ(h->last_offset_delta, 2);
  EXPECT_EQ(h->producer_id, 7);
  EXPECT_EQ(h->producer_epoch, 1);
  EXPECT_EQ(h->base_sequence, 10);
  EXPECT_EQ(h->last_sequence(), 12);
  EXPECT_EQ(h->max_timestamp, 1700000000000);
  EXPECT_EQ(h->total_size(), b.size());
}

TEST(Batch, StampKeepsCrcValid) {
  std::string b = BuildBatch({"x"}, 1, -1, -1, -1);
  StampBatch(b.data(), 123456789012, 42);
  auto h = ParseBatch(b);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->base_offset, 123456789012);
  EXPECT_EQ(h->leader_epoch, 42);
}

TEST(Batch, RejectsCorruption) {
  std::string good = BuildBatch({"hello", "world"}, 5);
  std::string b = good;
  b[b.size() - 3] ^= 1;  // a payload byte: CRC
  EXPECT_EQ(ParseBatch(b).status().code(), Code::kDataLoss);
  b = good;
  b[16] = 1;  // magic
  EXPECT_EQ(ParseBatch(b).status().code(), Code::kInvalidArgument);
  EXPECT_FALSE(ParseBatch(good.substr(0, good.size() - 1)).ok());
  EXPECT_FALSE(ParseBatch(good.substr(0, 30)).ok());
  b = good;
  StoreBe32(b.data() + 23, 5);  // lastOffsetDelta disagrees with the count (CRC recomputed)
  StoreBe32(b.data() + 17, storage::Crc32c(b.data() + kBatchCrcStart, b.size() - kBatchCrcStart));
  EXPECT_EQ(ParseBatch(b).status().code(), Code::kInvalidArgument);
  b = good;
  StoreBe32(b.data() + 23, 0);  // one record claimed, two framed
  StoreBe32(b.data() + 57, 1);
  StoreBe32(b.data() + 17, storage::Crc32c(b.data() + kBatchCrcStart, b.size() - kBatchCrcStart));
  EXPECT_EQ(ParseBatch(b).status().code(), Code::kInvalidArgument);
}

TEST(Batch, ForEachBatchSplitsAndRejectsPartial) {
  std::string a = BuildBatch({"1"}, 1), b = BuildBatch({"2", "3"}, 2);
  int n = 0;
  ASSERT_TRUE(ForEachBatch(a + b, [&](std::string_view s) {
                n++;
                return ParseBatch(s).status();
              }).ok());
  EXPECT_EQ(n, 2);
  EXPECT_FALSE(
      ForEachBatch((a + b).substr(0, a.size() + 10), [](std::string_view) { return OkStatus(); }).ok());
  EXPECT_FALSE(ForEachBatch("", [](std::string_view) { return OkStatus(); }).ok());
  std::string neg = a;
  StoreBe32(neg.data() + 8, 0xffffffffu);
  EXPECT_FALSE(ForEachBatch(neg, [](std::string_view) { return OkStatus(); }).ok());
}

TEST(Wire, ReaderFailsOnShortAndHostileInput) {
  Reader r(
      std::string_view("\x00\x05"
                       "ab",
                       4));
  r.String();
  EXPECT_FALSE(r.ok());
  Reader arr(std::string_view("\x7f\xff\xff\xff", 4));
  EXPECT_EQ(arr.ArrayCount(), 0);
  EXPECT_FALSE(arr.ok());
  Writer w;
  w.UVarint(300);
  w.CompactString("hey");
  w.Int64(-2);
  Reader back(w.str());
  EXPECT_EQ(back.UVarint(), 300u);
  EXPECT_EQ(back.CompactString(), "hey");
  EXPECT_EQ(back.Int64(), -2);
  EXPECT_TRUE(back.ok());
  EXPECT_EQ(back.remaining(), 0u);
}

}  // namespace
}  // namespace govern::streams
