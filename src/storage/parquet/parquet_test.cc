// Writer and Reader together: round trips of every type and encoding, statistics, row groups, files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include "storage/parquet/delta.h"
#include "storage/parquet/metadata.h"
#include "storage/parquet/reader.h"
#include "storage/parquet/writer.h"

namespace govern::parquet {
namespace {

Schema AllTypes() {
  return {{"b", Type::kBoolean, true},  {"i32", Type::kInt32, false}, {"i64", Type::kInt64, true},
          {"d", Type::kDouble, true},   {"s", Type::kString, true},   {"t", Type::kTimestampMicros, false},
          {"tag", Type::kString, false}};
}

// Rows with nulls, repeats, unique values, empty strings, unicode and extremes.
std::vector<ColumnVector> MakeRows(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ColumnVector> cols;
  for (const Column& c : AllTypes()) cols.emplace_back(c.type);
  const char* tags[] = {"alpha", "β-beta", "", "日本語", "emoji 🚀", "x"};
  for (size_t i = 0; i < n; ++i) {
    if (rng() % 5 == 0)
      cols[0].AppendNull();
    else
      cols[0].AppendBool(rng() % 2);
    cols[1].AppendInt32(i % 3 == 0 ? std::numeric_limits<int32_t>::min() + static_cast<int32_t>(i)
                                   : static_cast<int32_t>(rng() % 1000) - 500);
    if (rng() % 4 == 0) {
      cols[2].AppendNull();
    } else {
      cols[2].AppendInt64(i == 1 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(rng()));
    }
    if (rng() % 6 == 0)
      cols[3].AppendNull();
    else
      cols[3].AppendDouble(static_cast<double>(rng() % 100000) / 7.0 - 1000);
    if (rng() % 7 == 0) {
      cols[4].AppendNull();
    } else if (rng() % 9 == 0) {
      cols[4].AppendString("");
    } else {
      cols[4].AppendString("message " + std::to_string(rng() % 5000) + " ünïcødé");
    }
    cols[5].AppendInt64(1'767'225'600'000'000LL + static_cast<int64_t>(i) * 997);
    cols[6].AppendString(tags[rng() % 6]);
  }
  return cols;
}

void AppendCell(ColumnVector& out, const ColumnVector& v, size_t i) {
  if (v.IsNull(i)) {
    out.AppendNull();
    return;
  }
  switch (v.type()) {
    case Type::kBoolean:
      out.AppendBool(v.GetBool(i));
      break;
    case Type::kInt32:
      out.AppendInt32(v.GetInt32(i));
      break;
    case Type::kInt64:
    case Type::kTimestampMicros:
      out.AppendInt64(v.GetInt64(i));
      break;
    case Type::kDouble:
      out.AppendDouble(v.GetDouble(i));
      break;
    case Type::kString:
      out.AppendString(v.GetString(i));
      break;
  }
}

std::vector<ColumnVector> Slice(const std::vector<ColumnVector>& cols, size_t begin, size_t end) {
  std::vector<ColumnVector> out;
  for (const ColumnVector& c : cols) {
    ColumnVector v(c.type());
    for (size_t i = begin; i < end; ++i) AppendCell(v, c, i);
    out.push_back(std::move(v));
  }
  return out;
}

std::string WriteToString(const Schema& schema, const std::vector<ColumnVector>& cols, WriterOptions options,
                          WriteSummary* summary = nullptr) {
  std::string bytes;
  auto w = Writer::Create(std::make_unique<StringSink>(&bytes), schema, std::move(options));
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  Status s = (*w)->Write(cols);
  EXPECT_TRUE(s.ok()) << s.ToString();
  auto closed = (*w)->Close();
  EXPECT_TRUE(closed.ok()) << closed.status().ToString();
  if (summary != nullptr && closed.ok()) *summary = *closed;
  EXPECT_EQ(closed->file_bytes, bytes.size());
  return bytes;
}

std::unique_ptr<Reader> OpenBytes(const std::string& bytes, ReaderOptions options = {}) {
  auto r = Reader::Open(MemorySource(bytes), options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : nullptr;
}

// Reads every row group and concatenates them.
std::vector<ColumnVector> ReadAll(const Reader& r) {
  std::vector<ColumnVector> all;
  for (const Column& c : r.schema()) all.emplace_back(c.type);
  for (size_t g = 0; g < r.row_groups().size(); ++g) {
    auto cols = r.ReadRowGroup(g);
    EXPECT_TRUE(cols.ok()) << cols.status().ToString();
    if (!cols.ok()) return all;
    EXPECT_EQ((*cols)[0].size(), static_cast<size_t>(r.row_groups()[g].num_rows));
    for (size_t c = 0; c < all.size(); ++c) {
      for (size_t i = 0; i < (*cols)[c].size(); ++i) AppendCell(all[c], (*cols)[c], i);
    }
  }
  return all;
}

struct Variant {
  Compression compression;
  bool dictionary;
};

class RoundTrip : public ::testing::TestWithParam<Variant> {};

TEST_P(RoundTrip, EveryTypeWithNullsAcrossRowGroupsAndPages) {
  WriterOptions o;
  o.compression = GetParam().compression;
  o.dictionary = GetParam().dictionary;
  o.row_group_rows = 700;
  o.page_rows = 128;
  o.dictionary_page_bytes = 2000;  // "s" overflows its dictionary and falls back to PLAIN
  auto rows = MakeRows(2500, 42);
  WriteSummary summary;
  std::string bytes = WriteToString(AllTypes(), rows, o, &summary);
  EXPECT_EQ(summary.rows, 2500);
  EXPECT_EQ(summary.row_groups, 4);
  auto r = OpenBytes(bytes);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->schema().size(), AllTypes().size());
  for (size_t c = 0; c < AllTypes().size(); ++c) {
    EXPECT_EQ(r->schema()[c].name, AllTypes()[c].name);
    EXPECT_EQ(r->schema()[c].type, AllTypes()[c].type);
    EXPECT_EQ(r->schema()[c].optional, AllTypes()[c].optional);
  }
  EXPECT_EQ(r->num_rows(), 2500);
  ASSERT_EQ(r->row_groups().size(), 4u);
  EXPECT_EQ(r->row_groups()[3].num_rows, 400);
  auto back = ReadAll(*r);
  ASSERT_EQ(back.size(), rows.size());
  for (size_t c = 0; c < rows.size(); ++c) EXPECT_TRUE(back[c] == rows[c]) << "column " << c;
  const ColumnChunkInfo& tag = r->row_groups()[0].columns[6];
  EXPECT_EQ(tag.has_dictionary, GetParam().dictionary);
  const ColumnChunkInfo& s = r->row_groups()[0].columns[4];
  if (GetParam().dictionary) {
    // Fell back: the chunk lists both the dictionary and PLAIN.
    EXPECT_NE(std::find(s.encodings.begin(), s.encodings.end(), 8), s.encodings.end());
    EXPECT_NE(std::find(s.encodings.begin(), s.encodings.end(), 0), s.encodings.end());
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, RoundTrip,
                         ::testing::Values(Variant{Compression::kZstd, true},
                                           Variant{Compression::kZstd, false},
                                           Variant{Compression::kSnappy, true},
                                           Variant{Compression::kUncompressed, true},
                                           Variant{Compression::kUncompressed, false}));

// The encodings of the data pages of column `column` in row group 0, read straight from the bytes.
std::vector<int32_t> DataPageEncodings(const std::string& file, size_t column) {
  uint32_t footer_len = 0;
  std::memcpy(&footer_len, file.data() + file.size() - 8, 4);
  format::FileMetaData meta;
  EXPECT_TRUE(
      format::DecodeFileMetaData(reinterpret_cast<const uint8_t*>(file.data()) + file.size() - 8 - footer_len,
                                 footer_len, &meta)
          .ok());
  const format::ColumnMetaData& m = *meta.row_groups.at(0).columns.at(column).meta_data;
  size_t pos = static_cast<size_t>(m.dictionary_page_offset.value_or(m.data_page_offset));
  const size_t end = pos + static_cast<size_t>(m.total_compressed_size);
  std::vector<int32_t> out;
  while (pos < end) {
    format::PageHeader h;
    size_t used = 0;
    EXPECT_TRUE(
        format::DecodePageHeader(reinterpret_cast<const uint8_t*>(file.data()) + pos, end - pos, &h, &used)
            .ok());
    if (h.data_page_header) {
      out.push_back(h.data_page_header->encoding);
      // Every data page carries its own statistics too.
      const auto& st = h.data_page_header->statistics;
      EXPECT_TRUE(st && st->null_count && st->min_value && st->max_value);
    }
    pos += used + static_cast<size_t>(h.compressed_page_size);
  }
  return out;
}

TEST(Parquet, DictionaryGivesWayToPlainWhenValuesAreUnique) {
  Schema schema = {{"id", Type::kInt64, false}, {"kind", Type::kInt64, false}};
  std::vector<ColumnVector> cols = {ColumnVector(Type::kInt64), ColumnVector(Type::kInt64)};
  for (int64_t i = 0; i < 6000; ++i) {
    cols[0].AppendInt64(i * 7919);
    cols[1].AppendInt64(i % 3);
  }
  WriterOptions o;
  o.page_rows = 2000;
  std::string bytes = WriteToString(schema, cols, o);
  auto r = OpenBytes(bytes);
  ASSERT_TRUE(r);
  // The unique column keeps its first page's dictionary and continues in PLAIN; the repetitive one
  // stays dictionary-encoded throughout.
  EXPECT_EQ(DataPageEncodings(bytes, 0), (std::vector<int32_t>{8, 0, 0}));
  EXPECT_EQ(DataPageEncodings(bytes, 1), (std::vector<int32_t>{8, 8, 8}));
  auto back = ReadAll(*r);
  EXPECT_TRUE(back[0] == cols[0]);
  EXPECT_TRUE(back[1] == cols[1]);
}

std::vector<int64_t> DeltaRoundTrip(const std::vector<int64_t>& v, int width) {
  std::string enc;
  EncodeDeltaBinaryPacked(v.data(), v.size(), width, &enc);
  enc += "trailing";  // the decoder reports what it used and ignores the rest
  std::vector<int64_t> out(v.size());
  size_t used = 0;
  Status s = DecodeDeltaBinaryPacked(reinterpret_cast<const uint8_t*>(enc.data()), enc.size(), v.size(),
                                     width, out.data(), &used);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(used, enc.size() - 8);
  // Every truncation fails cleanly or (when only padding is cut) still gives the same values.
  for (size_t cut = 0; cut < enc.size() - 8; cut += 1 + cut / 16) {
    std::vector<int64_t> part(v.size());
    size_t u = 0;
    Status t = DecodeDeltaBinaryPacked(reinterpret_cast<const uint8_t*>(enc.data()), cut, v.size(), width,
                                       part.data(), &u);
    if (t.ok()) {
      EXPECT_EQ(part, v) << "cut at " << cut;
    }
  }
  // A different count is refused.
  std::vector<int64_t> more(v.size() + 1);
  EXPECT_FALSE(DecodeDeltaBinaryPacked(reinterpret_cast<const uint8_t*>(enc.data()), enc.size(), v.size() + 1,
                                       width, more.data(), &used)
                   .ok());
  return out;
}

TEST(Parquet, DeltaBinaryPackedRoundTripsAnySequence) {
  std::mt19937_64 rng(7);
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<int64_t>> cases = {{}, {42}, {kMin, kMax, kMin, 0, -1, kMax, kMax}};
  for (size_t n : {2, 31, 32, 33, 127, 128, 129, 1000}) {
    std::vector<int64_t> sorted, random, equal(n, -5);
    int64_t t = 1'796'083'200'000'000'000LL;
    for (size_t i = 0; i < n; ++i) {
      t += static_cast<int64_t>(rng() % 40'000);
      sorted.push_back(t);
      random.push_back(static_cast<int64_t>(rng()));
    }
    cases.push_back(sorted);
    cases.push_back(random);
    cases.push_back(equal);
  }
  for (const auto& c : cases) EXPECT_EQ(DeltaRoundTrip(c, 64), c) << "size " << c.size();

  // INT32 arithmetic wraps at 32 bits.
  std::vector<int64_t> i32 = {std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), 0,
                              -1};
  for (int i = 0; i < 300; ++i) i32.push_back(static_cast<int32_t>(rng()));
  EXPECT_EQ(DeltaRoundTrip(i32, 32), i32);

  // Sorted times take a few bits each.
  std::string enc;
  EncodeDeltaBinaryPacked(cases[6].data(), cases[6].size(), 64, &enc);  // 129 sorted times
  EXPECT_LT(enc.size(), 129u * 3);
}

TEST(Parquet, DeltaDecoderRefusesMalformedHeaders) {
  std::vector<int64_t> out(4);
  size_t used = 0;
  auto decode = [&](std::string bytes) {
    return DecodeDeltaBinaryPacked(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 4, 64,
                                   out.data(), &used);
  };
  EXPECT_FALSE(decode(std::string("\x00\x04\x04\x00", 4)).ok());      // block of 0 values
  EXPECT_FALSE(decode(std::string("\x80\x01\x03\x04\x00", 5)).ok());  // 128 / 3 miniblocks
  EXPECT_FALSE(decode(std::string("\x80\x01\x04\x04\x00\x00\x41\x00\x00\x00", 10)).ok());  // width 65
  EXPECT_FALSE(decode(std::string("\x80\x01\x04\x04\x00\x00", 6)).ok());  // bit widths missing
  EXPECT_TRUE(decode(std::string("\x80\x01\x04\x04\x02\x01\x00\x00\x00\x00", 10)).ok());
  EXPECT_EQ(out, (std::vector<int64_t>{1, 0, -1, -2}));
}

TEST(Parquet, DeltaIntegersAndAnEarlyDictionaryProbe) {
  Schema schema = {{"time", Type::kInt64, false}, {"n32", Type::kInt32, false},
                   {"kind", Type::kInt64, false}, {"id", Type::kString, false},
                   {"maybe", Type::kInt64, true}, {"tag", Type::kString, false}};
  std::vector<ColumnVector> cols;
  for (const Column& c : schema) cols.emplace_back(c.type);
  std::mt19937_64 rng(3);
  int64_t t = 1'796'083'200'000'000'000LL;
  for (int64_t i = 0; i < 5000; ++i) {
    t += static_cast<int64_t>(rng() % 100'000);
    cols[0].AppendInt64(t);
    cols[1].AppendInt32(static_cast<int32_t>(rng()));
    cols[2].AppendInt64(i % 3);
    cols[3].AppendString("id-" + std::to_string(rng()));
    if (i % 4 == 0) {
      cols[4].AppendNull();
    } else {
      cols[4].AppendInt64(i * 1000 + static_cast<int64_t>(rng() % 7));
    }
    cols[5].AppendString(i % 2 ? "a" : "b");
  }
  WriterOptions o;
  o.delta_integers = true;
  o.dictionary_probe_values = 500;
  o.page_rows = 1'000'000;
  o.row_group_rows = 2000;
  std::string bytes = WriteToString(schema, cols, o);
  auto r = OpenBytes(bytes);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->row_groups().size(), 3u);
  // Unique values: no dictionary at all, one DELTA_BINARY_PACKED (5) or PLAIN (0) page per row group,
  // in every row group (the probe's verdict holds for the file). Repeating values keep the dictionary.
  for (size_t g = 0; g < 3; ++g) {
    const auto& c = r->row_groups()[g].columns;
    EXPECT_FALSE(c[0].has_dictionary);
    EXPECT_FALSE(c[1].has_dictionary);
    EXPECT_TRUE(c[2].has_dictionary);
    EXPECT_FALSE(c[3].has_dictionary);
    EXPECT_FALSE(c[4].has_dictionary);
    EXPECT_TRUE(c[5].has_dictionary);
    EXPECT_NE(std::find(c[0].encodings.begin(), c[0].encodings.end(), 5), c[0].encodings.end());
  }
  EXPECT_EQ(DataPageEncodings(bytes, 0), (std::vector<int32_t>{5}));
  EXPECT_EQ(DataPageEncodings(bytes, 1), (std::vector<int32_t>{5}));
  EXPECT_EQ(DataPageEncodings(bytes, 2), (std::vector<int32_t>{8}));
  EXPECT_EQ(DataPageEncodings(bytes, 3), (std::vector<int32_t>{0}));
  EXPECT_EQ(DataPageEncodings(bytes, 4), (std::vector<int32_t>{5}));
  auto back = ReadAll(*r);
  for (size_t c = 0; c < cols.size(); ++c) EXPECT_TRUE(back[c] == cols[c]) << "column " << c;
  // Statistics still bound the values.
  const auto& st = r->row_groups()[0].columns[0].statistics;
  ASSERT_TRUE(st.min && st.max);
  EXPECT_EQ(std::get<int64_t>(*st.min), cols[0].GetInt64(0));
  EXPECT_EQ(std::get<int64_t>(*st.max), cols[0].GetInt64(1999));
}

TEST(Parquet, DeltaLengthByteArrayStrings) {
  Schema schema = {{"id", Type::kString, false},
                   {"span", Type::kString, true},
                   {"text", Type::kString, true},
                   {"tag", Type::kString, false}};
  std::vector<ColumnVector> cols;
  for (const Column& c : schema) cols.emplace_back(c.type);
  std::mt19937_64 rng(5);
  auto hex = [&](int digits) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
    return std::string(buf, static_cast<size_t>(digits));
  };
  for (int64_t i = 0; i < 3000; ++i) {
    cols[0].AppendString(hex(16) + hex(16));  // one length throughout
    if (i % 5 == 0) {
      cols[1].AppendNull();
      cols[2].AppendNull();
    } else {
      cols[1].AppendString(hex(8));
      // Mostly distinct, of varied lengths, one much longer than the rest, one empty.
      cols[2].AppendString(i == 12 ? std::string()
                                   : std::string(i == 11 ? 70'000 : static_cast<size_t>(rng() % 40), 'x') +
                                         std::to_string(i));
    }
    cols[3].AppendString(i % 3 ? "a" : "b");
  }
  for (Compression compression : {Compression::kUncompressed, Compression::kZstd}) {
    WriterOptions o;
    o.compression = compression;
    o.delta_strings = true;
    o.dictionary_probe_values = 500;
    o.page_rows = 1'000'000;
    o.row_group_rows = 1000;
    std::string bytes = WriteToString(schema, cols, o);
    auto r = OpenBytes(bytes);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->row_groups().size(), 3u);
    // Distinct strings of one length: DELTA_LENGTH_BYTE_ARRAY (6), listed in the chunk's encodings;
    // of varying lengths: PLAIN (0); repeating ones keep the dictionary (8).
    EXPECT_EQ(DataPageEncodings(bytes, 0), (std::vector<int32_t>{6}));
    EXPECT_EQ(DataPageEncodings(bytes, 1), (std::vector<int32_t>{6}));
    EXPECT_EQ(DataPageEncodings(bytes, 2), (std::vector<int32_t>{0}));
    EXPECT_EQ(DataPageEncodings(bytes, 3), (std::vector<int32_t>{8}));
    for (const RowGroupInfo& g : r->row_groups()) {
      const auto& e = g.columns[0].encodings;
      EXPECT_NE(std::find(e.begin(), e.end(), 6), e.end());
      EXPECT_EQ(std::find(e.begin(), e.end(), 0), e.end());  // no PLAIN page
    }
    auto back = ReadAll(*r);
    for (size_t c = 0; c < cols.size(); ++c) EXPECT_TRUE(back[c] == cols[c]) << "column " << c;
  }

  // Lengths that run past the page are refused, not read beyond it.
  Schema one = {{"s", Type::kString, false}};
  std::vector<ColumnVector> abc(1, ColumnVector(Type::kString));
  abc[0].AppendString("abc");
  WriterOptions o;
  o.compression = Compression::kUncompressed;
  o.dictionary = false;
  o.delta_strings = true;
  std::string bytes = WriteToString(one, abc, o);
  // Block of 128, 4 miniblocks, 1 value, first length zigzag(3) = 6, then the bytes.
  const std::string page_values("\x80\x01\x04\x01\x06" "abc", 8);
  const size_t at = bytes.find(page_values);
  ASSERT_NE(at, std::string::npos);
  auto good = OpenBytes(bytes);
  ASSERT_TRUE(good);
  auto col = good->ReadColumn(0, 0);
  ASSERT_TRUE(col.ok()) << col.status().ToString();
  EXPECT_EQ(col->GetString(0), "abc");
  bytes[at + 4] = '\x08';  // length 4, 3 bytes left
  auto bad = OpenBytes(bytes);
  ASSERT_TRUE(bad);
  auto read = bad->ReadColumn(0, 0);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Code::kDataLoss) << read.status().ToString();
  bytes[at + 4] = '\x05';  // length -3
  auto negative = OpenBytes(bytes);
  ASSERT_TRUE(negative);
  EXPECT_FALSE(negative->ReadColumn(0, 0).ok());
}

TEST(Parquet, StatisticsMatchTheData) {
  WriterOptions o;
  o.row_group_rows = 300;
  auto rows = MakeRows(1000, 7);
  auto r = OpenBytes(WriteToString(AllTypes(), rows, o));
  ASSERT_TRUE(r);
  size_t begin = 0;
  for (const RowGroupInfo& g : r->row_groups()) {
    size_t end = begin + static_cast<size_t>(g.num_rows);
    for (size_t c = 0; c < rows.size(); ++c) {
      const ColumnVector& v = rows[c];
      int64_t nulls = 0;
      std::optional<Scalar> lo, hi;
      for (size_t i = begin; i < end; ++i) {
        if (v.IsNull(i)) {
          ++nulls;
          continue;
        }
        Scalar x;
        switch (v.type()) {
          case Type::kBoolean:
            x = v.GetBool(i);
            break;
          case Type::kInt32:
            x = v.GetInt32(i);
            break;
          case Type::kInt64:
          case Type::kTimestampMicros:
            x = v.GetInt64(i);
            break;
          case Type::kDouble:
            x = v.GetDouble(i);
            break;
          case Type::kString:
            x = std::string(v.GetString(i));
            break;
        }
        if (!lo || x < *lo) lo = x;
        if (!hi || *hi < x) hi = x;
      }
      const ColumnStatistics& st = g.columns[c].statistics;
      EXPECT_EQ(st.null_count, nulls) << "column " << c;
      EXPECT_EQ(st.min, lo) << "column " << c;
      EXPECT_EQ(st.max, hi) << "column " << c;
      EXPECT_EQ(g.columns[c].num_values, g.num_rows);
    }
    begin = end;
  }
  // Time statistics are what archive queries prune by: consecutive row groups cover disjoint ranges.
  const auto& groups = r->row_groups();
  for (size_t g = 1; g < groups.size(); ++g) {
    EXPECT_LT(std::get<int64_t>(*groups[g - 1].columns[5].statistics.max),
              std::get<int64_t>(*groups[g].columns[5].statistics.min));
  }
}

TEST(Parquet, RowGroupsArePrunedByTime) {
  Schema schema = {{"time", Type::kTimestampMicros, false}, {"n", Type::kInt32, true}};
  std::vector<ColumnVector> cols = {ColumnVector(Type::kTimestampMicros), ColumnVector(Type::kInt32)};
  for (int64_t i = 0; i < 1000; ++i) {
    cols[0].AppendInt64(1000 * i);  // row group g holds times [100000 g, 100000 g + 99000]
    if (i < 500)
      cols[1].AppendNull();
    else
      cols[1].AppendInt32(static_cast<int32_t>(i));
  }
  WriterOptions o;
  o.row_group_rows = 100;
  auto r = OpenBytes(WriteToString(schema, cols, o));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->RowGroupsOverlapping(0, 250'000, 420'000), (std::vector<size_t>{2, 3, 4}));
  EXPECT_EQ(r->RowGroupsOverlapping(0, 199'000, 199'000), (std::vector<size_t>{1}));
  EXPECT_EQ(r->RowGroupsOverlapping(0, 2'000'000, 3'000'000), (std::vector<size_t>{}));
  // An all-null row group holds no value in any range.
  EXPECT_EQ(r->RowGroupsOverlapping(1, 0, 1'000'000), (std::vector<size_t>{5, 6, 7, 8, 9}));
}

TEST(Parquet, LongStringStatisticsAreTruncatedToValidBounds) {
  Schema schema = {{"s", Type::kString, false}};
  std::vector<ColumnVector> cols(1, ColumnVector(Type::kString));
  std::string a = std::string(100, 'a') + "zzz";
  std::string m = "mmm" + std::string(100, 'q');
  std::string z = std::string(70, 'z') + "é" + std::string(30, 'y');
  std::string ff = std::string(80, '\x7f');  // no byte below 0x7f: the max stays exact
  for (const auto& s : {a, m, z}) cols[0].AppendString(s);
  WriterOptions o;
  auto r = OpenBytes(WriteToString(schema, cols, o));
  ASSERT_TRUE(r);
  const ColumnStatistics& st = r->row_groups()[0].columns[0].statistics;
  std::string lo = std::get<std::string>(*st.min);
  std::string hi = std::get<std::string>(*st.max);
  EXPECT_LE(lo.size(), 64u);
  EXPECT_LE(hi.size(), 64u);
  EXPECT_LE(lo, a);
  EXPECT_GT(hi, z);
  EXPECT_EQ(lo, std::string(64, 'a'));

  std::vector<ColumnVector> sevens(1, ColumnVector(Type::kString));
  sevens[0].AppendString(ff);
  auto r2 = OpenBytes(WriteToString(schema, sevens, o));
  ASSERT_TRUE(r2);
  EXPECT_EQ(std::get<std::string>(*r2->row_groups()[0].columns[0].statistics.max), ff);
}

TEST(Parquet, DoubleStatisticsSkipNaNAndNormaliseZero) {
  Schema schema = {{"d", Type::kDouble, true}};
  std::vector<ColumnVector> cols(1, ColumnVector(Type::kDouble));
  cols[0].AppendDouble(std::nan(""));
  cols[0].AppendDouble(0.0);
  cols[0].AppendDouble(-0.0);
  cols[0].AppendNull();
  auto r = OpenBytes(WriteToString(schema, cols, {}));
  ASSERT_TRUE(r);
  const ColumnStatistics& st = r->row_groups()[0].columns[0].statistics;
  EXPECT_TRUE(std::signbit(std::get<double>(*st.min)));
  EXPECT_FALSE(std::signbit(std::get<double>(*st.max)));
  EXPECT_EQ(*st.null_count, 1);
  auto back = ReadAll(*r);
  EXPECT_TRUE(back[0] == cols[0]);  // NaN and -0.0 come back bit for bit
}

TEST(Parquet, AllNullColumnHasOnlyANullCount) {
  Schema schema = {{"s", Type::kString, true}, {"i", Type::kInt64, true}};
  std::vector<ColumnVector> cols = {ColumnVector(Type::kString), ColumnVector(Type::kInt64)};
  for (int i = 0; i < 100; ++i) {
    cols[0].AppendNull();
    cols[1].AppendNull();
  }
  auto r = OpenBytes(WriteToString(schema, cols, {}));
  ASSERT_TRUE(r);
  for (const ColumnChunkInfo& c : r->row_groups()[0].columns) {
    EXPECT_EQ(*c.statistics.null_count, 100);
    EXPECT_FALSE(c.statistics.min);
    EXPECT_FALSE(c.statistics.max);
  }
  auto back = ReadAll(*r);
  EXPECT_TRUE(back[0] == cols[0]);
  EXPECT_TRUE(back[1] == cols[1]);
}

TEST(Parquet, LargeValuesAndManyRowGroups) {
  Schema schema = {{"blob", Type::kString, false}, {"n", Type::kInt64, false}};
  std::vector<ColumnVector> cols = {ColumnVector(Type::kString), ColumnVector(Type::kInt64)};
  std::string big(3 << 20, 'x');  // larger than a page and than the dictionary limit
  for (int i = 0; i < 5; ++i) {
    big[static_cast<size_t>(i)] = static_cast<char>('a' + i);
    cols[0].AppendString(big);
    cols[1].AppendInt64(i);
  }
  for (int i = 5; i < 2000; ++i) {
    cols[0].AppendString(std::to_string(i));
    cols[1].AppendInt64(i);
  }
  WriterOptions o;
  o.row_group_rows = 97;
  WriteSummary summary;
  auto r = OpenBytes(WriteToString(schema, cols, o, &summary));
  ASSERT_TRUE(r);
  EXPECT_EQ(summary.row_groups, (2000 + 96) / 97);
  EXPECT_EQ(r->row_groups().size(), static_cast<size_t>(summary.row_groups));
  auto back = ReadAll(*r);
  EXPECT_TRUE(back[0] == cols[0]);
  EXPECT_TRUE(back[1] == cols[1]);
}

TEST(Parquet, RowGroupsAreCutByBytesToo) {
  Schema schema = {{"s", Type::kString, false}};
  std::vector<ColumnVector> cols(1, ColumnVector(Type::kString));
  for (int i = 0; i < 1000; ++i)
    cols[0].AppendString(std::string(1000, static_cast<char>('a' + i % 26)) + std::to_string(i));
  WriterOptions o;
  o.row_group_bytes = 100'000;
  o.dictionary = false;
  WriteSummary summary;
  std::string bytes;
  auto w = Writer::Create(std::make_unique<StringSink>(&bytes), schema, o);
  ASSERT_TRUE(w.ok());
  for (size_t b = 0; b < 1000; b += 50) ASSERT_TRUE((*w)->Write(Slice(cols, b, b + 50)).ok());
  auto closed = (*w)->Close();
  ASSERT_TRUE(closed.ok());
  EXPECT_GE(closed->row_groups, 8);
  auto r = OpenBytes(bytes);
  ASSERT_TRUE(r);
  EXPECT_TRUE(ReadAll(*r)[0] == cols[0]);
}

TEST(Parquet, RowWiseAndColumnWiseInputMix) {
  Schema schema = {
      {"i", Type::kInt32, true}, {"s", Type::kString, false}, {"t", Type::kTimestampMicros, false}};
  std::string bytes;
  auto w = Writer::Create(std::make_unique<StringSink>(&bytes), schema, {});
  ASSERT_TRUE(w.ok());
  std::vector<Value> row = {int32_t{1}, std::string_view("one"), int64_t{10}};
  ASSERT_TRUE((*w)->AppendRow(row).ok());
  std::vector<ColumnVector> batch = {ColumnVector(Type::kInt32), ColumnVector(Type::kString),
                                     ColumnVector(Type::kTimestampMicros)};
  batch[0].AppendNull();
  batch[1].AppendString("two");
  batch[2].AppendInt64(20);
  ASSERT_TRUE((*w)->Write(batch).ok());
  row = {std::monostate{}, std::string_view("three"), int64_t{30}};
  ASSERT_TRUE((*w)->AppendRow(row).ok());
  EXPECT_EQ((*w)->rows_written(), 3);
  ASSERT_TRUE((*w)->Close().ok());
  auto r = OpenBytes(bytes);
  ASSERT_TRUE(r);
  auto cols = r->ReadRowGroup(0);
  ASSERT_TRUE(cols.ok());
  EXPECT_EQ((*cols)[1].GetString(0), "one");
  EXPECT_EQ((*cols)[1].GetString(1), "two");
  EXPECT_EQ((*cols)[1].GetString(2), "three");
  EXPECT_TRUE((*cols)[0].IsNull(1));
  EXPECT_TRUE((*cols)[0].IsNull(2));
  EXPECT_EQ((*cols)[2].GetInt64(2), 30);
}

TEST(Parquet, BadInputToTheWriterIsRefused) {
  Schema schema = {{"i", Type::kInt32, false}, {"s", Type::kString, true}};
  std::string bytes;
  auto w = Writer::Create(std::make_unique<StringSink>(&bytes), schema, {});
  ASSERT_TRUE(w.ok());
  std::vector<ColumnVector> wrong_type = {ColumnVector(Type::kInt64), ColumnVector(Type::kString)};
  EXPECT_EQ((*w)->Write(wrong_type).code(), Code::kInvalidArgument);
  std::vector<ColumnVector> null_required = {ColumnVector(Type::kInt32), ColumnVector(Type::kString)};
  null_required[0].AppendNull();
  null_required[1].AppendString("x");
  EXPECT_EQ((*w)->Write(null_required).code(), Code::kInvalidArgument);
  std::vector<ColumnVector> ragged = {ColumnVector(Type::kInt32), ColumnVector(Type::kString)};
  ragged[0].AppendInt32(1);
  EXPECT_EQ((*w)->Write(ragged).code(), Code::kInvalidArgument);
  std::vector<Value> short_row = {int32_t{1}};
  EXPECT_EQ((*w)->AppendRow(short_row).code(), Code::kInvalidArgument);
  std::vector<Value> bad_row = {std::string_view("x"), std::monostate{}};
  EXPECT_EQ((*w)->AppendRow(bad_row).code(), Code::kInvalidArgument);
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ((*w)->Write(ragged).code(), Code::kFailedPrecondition);
  auto r = OpenBytes(bytes);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->num_rows(), 0);  // nothing refused was written

  EXPECT_EQ(Writer::Create(std::make_unique<StringSink>(&bytes), {}, {}).status().code(),
            Code::kInvalidArgument);
  Schema dup = {{"a", Type::kInt32, false}, {"a", Type::kInt32, false}};
  EXPECT_EQ(Writer::Create(std::make_unique<StringSink>(&bytes), dup, {}).status().code(),
            Code::kInvalidArgument);
}

TEST(Parquet, KeyValueMetadataAndCreatedBy) {
  WriterOptions o;
  o.metadata = {{"govern.org", "org-1"}, {"empty", ""}, {"ünï", "cødé"}};
  Schema schema = {{"i", Type::kInt32, false}};
  std::vector<ColumnVector> cols(1, ColumnVector(Type::kInt32));
  cols[0].AppendInt32(5);
  auto r = OpenBytes(WriteToString(schema, cols, o));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->key_value_metadata(), o.metadata);
  EXPECT_EQ(r->created_by(), "govern version 0.1");
}

TEST(Parquet, EmptyFileIsValid) {
  Schema schema = {{"i", Type::kInt32, true}};
  std::string bytes;
  auto w = Writer::Create(std::make_unique<StringSink>(&bytes), schema, {});
  ASSERT_TRUE(w.ok());
  auto summary = (*w)->Close();
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->rows, 0);
  EXPECT_EQ(bytes.substr(0, 4), "PAR1");
  EXPECT_EQ(bytes.substr(bytes.size() - 4), "PAR1");
  auto r = OpenBytes(bytes);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->num_rows(), 0);
  EXPECT_TRUE(r->row_groups().empty());
}

TEST(Parquet, ReaderLimitsBoundWhatItMaterialises) {
  auto rows = MakeRows(500, 3);
  std::string bytes = WriteToString(AllTypes(), rows, {});
  ReaderOptions small;
  small.max_row_group_rows = 100;
  auto r = OpenBytes(bytes, small);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ReadColumn(0, 0).status().code(), Code::kResourceExhausted);
  ReaderOptions few_bytes;
  few_bytes.max_column_bytes = 1000;
  auto r2 = OpenBytes(bytes, few_bytes);
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->ReadColumn(0, 4).status().code(), Code::kResourceExhausted);
  EXPECT_TRUE(r2->ReadColumn(0, 1).ok());
  EXPECT_EQ(r2->ReadColumn(1, 0).status().code(), Code::kOutOfRange);
}

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("govern-parquet-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  size_t Entries() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_)) ++n;
    return n;
  }
  std::filesystem::path dir_;
};

TEST_F(FileTest, FileAppearsOnlyWhenClosed) {
  const std::string path = (dir_ / "org-1").string() + "-2026-01-01T00.parquet";
  auto rows = MakeRows(300, 9);
  auto w = Writer::Open(path, AllTypes(), {});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->Write(rows).ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  auto summary = (*w)->Close();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(std::filesystem::file_size(path), summary->file_bytes);
  EXPECT_EQ(summary->rows, 300);
  EXPECT_EQ(Entries(), 1u);  // no temporary file left behind
  auto r = Reader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto back = ReadAll(**r);
  for (size_t c = 0; c < rows.size(); ++c) EXPECT_TRUE(back[c] == rows[c]);
}

TEST_F(FileTest, AbandonedWriterLeavesNothing) {
  const std::string path = (dir_ / "x.parquet").string();
  {
    auto w = Writer::Open(path, AllTypes(), {});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write(MakeRows(10, 1)).ok());
    EXPECT_EQ(Entries(), 1u);  // the temporary file
  }
  EXPECT_EQ(Entries(), 0u);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(FileTest, OpenErrorsAreClear) {
  auto missing = Reader::Open((dir_ / "missing.parquet").string());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  auto no_dir = Writer::Open((dir_ / "no" / "such" / "dir.parquet").string(), AllTypes(), {});
  EXPECT_EQ(no_dir.status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace govern::parquet
