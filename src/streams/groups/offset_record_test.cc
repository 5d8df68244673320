// Offsets-file frames: round trips, and every truncation or flipped byte is refused, never misread.
#include "streams/groups/offset_record.h"

#include <gtest/gtest.h>

namespace govern::streams::groups {
namespace {

OffsetRecord SampleCommit() {
  OffsetRecord r;
  r.type = RecordType::kCommit;
  r.group = "group-1";
  r.commits.push_back({{"orders", 3}, {1234, 5, "meta", 1700000000000, -1}});
  r.commits.push_back({{"audit", 0}, {7, -1, "", 1700000000001, 1700000600000}});
  return r;
}

TEST(OffsetRecord, CommitAndDeleteRoundTrip) {
  std::string buf;
  OffsetRecord c = SampleCommit();
  ASSERT_TRUE(EncodeRecord(c, &buf).ok());
  OffsetRecord d;
  d.type = RecordType::kDelete;
  d.group = "group-1";
  d.deletes = {{"orders", 3}};
  ASSERT_TRUE(EncodeRecord(d, &buf).ok());

  OffsetRecord out;
  auto n = DecodeRecord(buf, &out);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(out.group, "group-1");
  ASSERT_EQ(out.commits.size(), 2u);
  EXPECT_EQ(out.commits[0].first, (TopicPartition{"orders", 3}));
  EXPECT_EQ(out.commits[0].second, c.commits[0].second);
  EXPECT_EQ(out.commits[1].second, c.commits[1].second);
  auto m = DecodeRecord(std::string_view(buf).substr(*n), &out);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*n + *m, buf.size());
  EXPECT_EQ(out.type, RecordType::kDelete);
  ASSERT_EQ(out.deletes.size(), 1u);
  EXPECT_EQ(out.deletes[0], (TopicPartition{"orders", 3}));

  std::string t;
  OffsetRecord topics;
  topics.type = RecordType::kDeleteTopics;
  topics.deletes = {{"orders", -1}, {"payments", -1}};
  ASSERT_TRUE(EncodeRecord(topics, &t).ok());
  auto k = DecodeRecord(t, &out);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(*k, t.size());
  EXPECT_EQ(out.type, RecordType::kDeleteTopics);
  EXPECT_EQ(out.group, "");
  EXPECT_EQ(out.deletes, topics.deletes);
  t[kFrameHeaderSize] = 4;  // another type: caught (by the CRC first)
  EXPECT_FALSE(DecodeRecord(t, &out).ok());
}

TEST(OffsetRecord, EveryTruncationIsTorn) {
  std::string buf;
  ASSERT_TRUE(EncodeRecord(SampleCommit(), &buf).ok());
  for (size_t len = 0; len < buf.size(); ++len) {
    OffsetRecord out;
    auto r = DecodeRecord(std::string_view(buf).substr(0, len), &out);
    ASSERT_FALSE(r.ok()) << len;
    EXPECT_EQ(r.status().code(), Code::kOutOfRange) << len;
  }
}

TEST(OffsetRecord, EveryFlippedByteIsCaught) {
  std::string buf;
  ASSERT_TRUE(EncodeRecord(SampleCommit(), &buf).ok());
  for (size_t i = 0; i < buf.size(); ++i) {
    std::string bad = buf;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    OffsetRecord out;
    auto r = DecodeRecord(bad, &out);
    EXPECT_FALSE(r.ok()) << "byte " << i;
  }
}

TEST(OffsetRecord, OversizedStringsAreRefused) {
  OffsetRecord r = SampleCommit();
  r.group = std::string(70000, 'g');
  std::string buf;
  EXPECT_EQ(EncodeRecord(r, &buf).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace govern::streams::groups
