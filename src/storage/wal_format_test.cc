// The segment format as bytes in and bytes out: the exact file the log writes, and table-driven damage
// (truncated tails, flipped bytes, zero tails, garbage after zeros) detected and cut at the right place,
// both by the scanner and by Log::Open's recovery. Corruption in a sealed segment is DataLoss, not cut.
#include "storage/wal_format.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "storage/crc32c.h"
#include "storage/wal.h"
#include "storage/wal_test_util.h"

namespace govern::wal {
namespace {

using testing::ReadFileOrDie;
using testing::TempDir;
using testing::WriteFileOrDie;

struct Built {
  std::string bytes;
  std::vector<size_t> ends;  // ends[k]: file offset after record k (0-based)
};

// The bytes a segment starting at `first` holding `payloads` must have, built from the spec by hand.
Built BuildSegment(uint64_t first, const std::vector<std::string>& payloads) {
  Built b;
  b.bytes = EncodeSegmentHeader(first);
  for (size_t i = 0; i < payloads.size(); ++i) {
    char h[kRecordHeaderSize];
    const std::string& p = payloads[i];
    EncodeRecordHeader(h, storage::Crc32c(p), static_cast<uint32_t>(p.size()), first + i);
    b.bytes.append(h, sizeof(h));
    b.bytes += p;
    b.ends.push_back(b.bytes.size());
  }
  return b;
}

std::vector<std::string> Payloads(size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(std::string(i * 3 % 23, static_cast<char>('A' + i % 26)));
  return out;
}

// How many whole records end at or before `offset`, and where the last of them ends.
std::pair<uint64_t, size_t> WholeBefore(const Built& b, size_t offset) {
  uint64_t k = 0;
  size_t end = kSegmentHeaderSize;
  for (size_t e : b.ends) {
    if (e > offset) break;
    ++k;
    end = e;
  }
  return {k, end};
}

TEST(WalFormat, HeaderAndRecordBytesAreExact) {
  std::string h = EncodeSegmentHeader(0x0102030405060708ull);
  ASSERT_EQ(h.size(), 32u);
  EXPECT_EQ(h.substr(0, 8), std::string("GOVWAL\r\n"));
  EXPECT_EQ(h.substr(8, 8), std::string("\x01\x00\x00\x00\x20\x00\x00\x00", 8));
  EXPECT_EQ(h.substr(16, 8), std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  EXPECT_EQ(GetU32(h.data() + 24), storage::Crc32c(h.data(), 24));
  EXPECT_EQ(h.substr(28), std::string(4, '\0'));
  EXPECT_EQ(*DecodeSegmentHeader(h), 0x0102030405060708ull);

  char r[kRecordHeaderSize];
  EncodeRecordHeader(r, storage::Crc32c("abc"), 3, 7);
  std::string expect_tail("\x03\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00", 12);
  EXPECT_EQ(std::string(r + 4, 12), expect_tail);
  // CRC32C over the payload, then the length and sequence bytes.
  EXPECT_EQ(GetU32(r), storage::Crc32c(std::string("abc") + expect_tail));

  EXPECT_EQ(SegmentFileName(42), "00000000000000000042.wal");
  uint64_t first = 0;
  EXPECT_TRUE(ParseSegmentFileName("00000000000000000042.wal", &first));
  EXPECT_EQ(first, 42u);
  for (const char* bad :
       {"00000000000000000000.wal", "0000000000000000004.wal", "00000000000000000042.wal.tmp",
        "0000000000000000004x.wal", "99999999999999999999.wal"}) {
    EXPECT_FALSE(ParseSegmentFileName(bad, &first)) << bad;
  }
}

TEST(WalFormat, LogWritesExactlyTheSpecifiedBytes) {
  TempDir dir;
  auto payloads = Payloads(20);
  {
    Options opt;
    opt.preallocate = false;
    auto log = Log::Open(dir.path(), opt);
    ASSERT_TRUE(log.ok());
    for (const auto& p : payloads) ASSERT_TRUE((*log)->Append(p).ok());
  }
  EXPECT_EQ(ReadFileOrDie(dir.path() + "/" + SegmentFileName(1)), BuildSegment(1, payloads).bytes);
}

TEST(WalFormat, BadHeadersAreRefused) {
  std::string h = EncodeSegmentHeader(1);
  struct Case {
    const char* name;
    size_t offset;
  } cases[] = {{"magic", 0}, {"version", 8}, {"header size", 12}, {"first sequence", 16}, {"checksum", 24}};
  for (const Case& c : cases) {
    std::string bad = h;
    bad[c.offset] ^= 0x40;
    EXPECT_EQ(DecodeSegmentHeader(bad).status().code(), Code::kDataLoss) << c.name;
    EXPECT_FALSE(ScanSegment(bad).ok()) << c.name;
  }
  EXPECT_FALSE(DecodeSegmentHeader(h.substr(0, 31)).ok());
}

// Named damage, each with where the scan must stop and how it must classify the tail.
TEST(WalFormat, DamageTable) {
  Built b = BuildSegment(5, Payloads(10));
  const size_t rec3 = b.ends[2];  // offset of record index 3 (sequence 8)
  struct Case {
    std::string name;
    std::string file;
    uint64_t count;
    size_t valid_end;
    TailKind tail;
  };
  std::string wrong_seq = b.bytes.substr(0, rec3);
  {
    // A record with a valid checksum but a sequence that does not belong here (a stale record).
    char h[kRecordHeaderSize];
    EncodeRecordHeader(h, storage::Crc32c("zz"), 2, 99);
    wrong_seq.append(h, sizeof(h));
    wrong_seq += "zz";
  }
  std::string huge_len = b.bytes;
  PutU32(huge_len.data() + rec3 + 4, kMaxRecordSize + 1);
  std::string zeros_then_data = b.bytes + std::string(4096, '\0') + "x" + std::string(100, '\0');
  std::vector<Case> cases = {
      {"clean", b.bytes, 10, b.bytes.size(), TailKind::kClean},
      {"header only", b.bytes.substr(0, 32), 0, 32, TailKind::kClean},
      {"preallocated zero tail", b.bytes + std::string(1 << 16, '\0'), 10, b.bytes.size(), TailKind::kClean},
      {"short zero tail", b.bytes + std::string(5, '\0'), 10, b.bytes.size(), TailKind::kClean},
      {"torn header", b.bytes.substr(0, rec3 + 7), 3, rec3, TailKind::kTruncated},
      {"torn payload", b.bytes.substr(0, b.ends[3] - 1), 3, rec3, TailKind::kTruncated},
      {"torn then zeros", b.bytes.substr(0, b.ends[3] - 1) + std::string(64, '\0'), 3, rec3,
       TailKind::kCorrupt},
      {"wrong sequence", wrong_seq, 3, rec3, TailKind::kCorrupt},
      {"length over the limit", huge_len, 3, rec3, TailKind::kCorrupt},
      {"zeros then data", zeros_then_data, 10, b.bytes.size(), TailKind::kZerosThenData},
  };
  for (const Case& c : cases) {
    auto s = ScanSegment(c.file);
    ASSERT_TRUE(s.ok()) << c.name;
    EXPECT_EQ(s->first_seq, 5u) << c.name;
    EXPECT_EQ(s->count, c.count) << c.name;
    EXPECT_EQ(s->valid_end, c.valid_end) << c.name;
    EXPECT_EQ(s->tail, c.tail) << c.name << ": " << s->reason;
    EXPECT_EQ(s->reason.empty(), c.tail == TailKind::kClean) << c.name;
  }
}

TEST(WalFormat, EveryTruncationIsCutAtTheLastWholeRecord) {
  Built b = BuildSegment(1, Payloads(25));
  for (size_t cut = kSegmentHeaderSize; cut <= b.bytes.size(); ++cut) {
    auto s = ScanSegment(std::string_view(b.bytes).substr(0, cut));
    ASSERT_TRUE(s.ok());
    auto [count, end] = WholeBefore(b, cut);
    EXPECT_EQ(s->count, count) << "cut at " << cut;
    EXPECT_EQ(s->valid_end, end) << "cut at " << cut;
    EXPECT_NE(s->tail, TailKind::kCorrupt) << "cut at " << cut;
    if (cut == end) {
      EXPECT_EQ(s->tail, TailKind::kClean) << "cut at " << cut;
    }
  }
}

TEST(WalFormat, EveryFlippedByteIsCaughtInItsRecord) {
  Built b = BuildSegment(1, Payloads(25));
  for (size_t pos = kSegmentHeaderSize; pos < b.bytes.size(); ++pos) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::string bad = b.bytes;
      bad[pos] = static_cast<char>(bad[pos] ^ mask);
      auto s = ScanSegment(bad);
      ASSERT_TRUE(s.ok());
      auto [count, end] = WholeBefore(b, pos);  // records wholly before the flipped byte survive
      EXPECT_EQ(s->count, count) << "flip at " << pos;
      EXPECT_EQ(s->valid_end, end) << "flip at " << pos;
      EXPECT_NE(s->tail, TailKind::kClean) << "flip at " << pos;
    }
  }
}

// Recovery through Log::Open on real files: damage in the last segment is cut (and the log appends
// right after the cut); damage in a sealed segment is DataLoss.
class WalRecoveryTest : public ::testing::Test {
 protected:
  Options opt_;
  void SetUp() override { opt_.preallocate = false; }

  void ExpectRecovered(const TempDir& dir, const std::vector<std::string>& payloads, uint64_t count,
                       size_t valid_end, const std::string& what) {
    SCOPED_TRACE(what);
    std::string path = dir.path() + "/" + SegmentFileName(1);
    auto log = Log::Open(dir.path(), opt_);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    EXPECT_EQ((*log)->DurableSequence(), count);
    EXPECT_EQ(std::filesystem::file_size(path), valid_end);
    auto reader = (*log)->NewReader(1);
    ASSERT_TRUE(reader.ok());
    for (uint64_t k = 0; k < count; ++k) {
      auto r = (*reader)->Next();
      ASSERT_TRUE(r.ok() && r->has_value());
      EXPECT_EQ((*r)->data, payloads[k]);
    }
    auto none = (*reader)->Next();
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value());
    auto seq = (*log)->Append("new");
    ASSERT_TRUE(seq.ok());
    EXPECT_EQ(*seq, count + 1);
  }
};

TEST_F(WalRecoveryTest, TruncatedAndFlippedTailsAreCutAtTheRightPlace) {
  auto payloads = Payloads(12);
  Built b = BuildSegment(1, payloads);
  for (size_t pos = kSegmentHeaderSize; pos < b.bytes.size(); pos += 5) {
    auto [count, end] = WholeBefore(b, pos);
    {
      TempDir dir;
      WriteFileOrDie(dir.path() + "/" + SegmentFileName(1), b.bytes.substr(0, pos));
      ExpectRecovered(dir, payloads, count, end, "truncated at " + std::to_string(pos));
    }
    {
      TempDir dir;
      std::string bad = b.bytes;
      bad[pos] = static_cast<char>(bad[pos] ^ 0x10);
      WriteFileOrDie(dir.path() + "/" + SegmentFileName(1), bad);
      ExpectRecovered(dir, payloads, count, end, "flipped at " + std::to_string(pos));
    }
  }
}

TEST_F(WalRecoveryTest, ZeroTailIsKeptAndGarbageAfterZerosIsCut) {
  auto payloads = Payloads(6);
  Built b = BuildSegment(1, payloads);
  TempDir dir;
  std::string path = dir.path() + "/" + SegmentFileName(1);
  opt_.preallocate = true;
  opt_.segment_size = 1 << 16;
  WriteFileOrDie(path, b.bytes + std::string((1 << 16) - b.bytes.size(), '\0'));
  {
    auto log = Log::Open(dir.path(), opt_);
    ASSERT_TRUE(log.ok());
    EXPECT_EQ((*log)->DurableSequence(), 6u);
  }
  EXPECT_EQ(ReadFileOrDie(path), b.bytes + std::string((1 << 16) - b.bytes.size(), '\0'));  // untouched
  std::string torn = b.bytes + std::string(1000, '\0') + "stray bytes of an unsynced write";
  torn.resize(1 << 16, '\0');
  WriteFileOrDie(path, torn);
  {
    auto log = Log::Open(dir.path(), opt_);
    ASSERT_TRUE(log.ok());
    EXPECT_EQ((*log)->DurableSequence(), 6u);
  }
  // The stray bytes are gone: the file is the records, then zeros.
  EXPECT_EQ(ReadFileOrDie(path), b.bytes + std::string((1 << 16) - b.bytes.size(), '\0'));
}

TEST_F(WalRecoveryTest, CorruptSealedSegmentIsDataLoss) {
  auto p1 = Payloads(8);
  Built s1 = BuildSegment(1, p1);
  Built s2 = BuildSegment(9, Payloads(3));
  for (size_t pos : {s1.ends[2] + 3, s1.ends[0] + 17}) {
    TempDir dir;
    std::string bad = s1.bytes;
    bad[pos] ^= 0x01;
    WriteFileOrDie(dir.path() + "/" + SegmentFileName(1), bad);
    WriteFileOrDie(dir.path() + "/" + SegmentFileName(9), s2.bytes);
    auto log = Log::Open(dir.path(), opt_);
    EXPECT_EQ(log.status().code(), Code::kDataLoss) << log.status().ToString();
    // Nothing was cut: the damaged file is left for an operator.
    EXPECT_EQ(ReadFileOrDie(dir.path() + "/" + SegmentFileName(1)), bad);
  }
  {
    // A sealed segment that ends early (a gap before the next segment) is DataLoss too.
    TempDir dir;
    WriteFileOrDie(dir.path() + "/" + SegmentFileName(1), s1.bytes.substr(0, s1.ends[5]));
    WriteFileOrDie(dir.path() + "/" + SegmentFileName(9), s2.bytes);
    EXPECT_EQ(Log::Open(dir.path(), opt_).status().code(), Code::kDataLoss);
  }
}

TEST_F(WalRecoveryTest, InterruptedRotationDropsTheEmptyNewSegment) {
  // The crash came after the new segment was created but before the old one's last group was synced:
  // the old segment is torn and the new one empty. Nothing was acknowledged past the tear.
  auto payloads = Payloads(8);
  Built s1 = BuildSegment(1, payloads);
  TempDir dir;
  WriteFileOrDie(dir.path() + "/" + SegmentFileName(1), s1.bytes.substr(0, s1.ends[5] + 4));
  // The new segment holds only a torn first record: it was never synced either.
  WriteFileOrDie(dir.path() + "/" + SegmentFileName(9), EncodeSegmentHeader(9) + "\x11\x22\x33");
  auto log = Log::Open(dir.path(), opt_);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->DurableSequence(), 6u);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/" + SegmentFileName(9)));
  EXPECT_EQ(*(*log)->Append("seventh"), 7u);
}

TEST_F(WalRecoveryTest, CorruptionInAnOlderSegmentIsDataLossForTheReader) {
  // Open checks only headers of segments older than the last two; the reader finds the damage.
  Built s1 = BuildSegment(1, Payloads(4));
  Built s2 = BuildSegment(5, Payloads(4));
  Built s3 = BuildSegment(9, Payloads(4));
  TempDir dir;
  std::string bad = s1.bytes;
  bad[s1.ends[1] + 20] ^= 0x04;
  WriteFileOrDie(dir.path() + "/" + SegmentFileName(1), bad);
  WriteFileOrDie(dir.path() + "/" + SegmentFileName(5), s2.bytes);
  WriteFileOrDie(dir.path() + "/" + SegmentFileName(9), s3.bytes);
  auto log = Log::Open(dir.path(), opt_);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  auto reader = (*log)->NewReader(1);
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE((*reader)->Next().ok());
  ASSERT_TRUE((*reader)->Next().ok());
  EXPECT_EQ((*reader)->Next().status().code(), Code::kDataLoss);
  // Reading from the next segment on works.
  auto later = (*log)->NewReader(5);
  ASSERT_TRUE(later.ok());
  auto r = (*later)->Next();
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->seq, 5u);
}

TEST(WalFormat, CursorFiles) {
  std::string c = EncodeCursor("indexer", 1234);
  auto d = DecodeCursor(c);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->name, "indexer");
  EXPECT_EQ(d->next_seq, 1234u);
  for (size_t i = 0; i < c.size(); ++i) {
    std::string bad = c;
    bad[i] ^= 0x20;
    EXPECT_FALSE(DecodeCursor(bad).ok()) << i;
  }
  EXPECT_FALSE(DecodeCursor(c.substr(0, c.size() - 1)).ok());
  EXPECT_FALSE(ValidCursorName(".hidden"));
  EXPECT_FALSE(ValidCursorName("a/b"));
  EXPECT_FALSE(ValidCursorName(std::string(65, 'a')));
  EXPECT_TRUE(ValidCursorName("telemetry.pg-writer_1"));
}

}  // namespace
}  // namespace govern::wal
