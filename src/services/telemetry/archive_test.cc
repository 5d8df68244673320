// The archive layout without a database: keys, JSON helpers, events -> Parquet -> events.
#include "services/telemetry/archive.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "services/telemetry/archive_testing.h"
#include "storage/parquet/file.h"

namespace govern::telemetry {
namespace {

using testing::kDay0;
using testing::MakeEvent;

TEST(ArchiveKeys, HourAndObjectKey) {
  int64_t t = kDay0 + 13 * kNanosPerHour + 59 * 60 * kNanosPerSecond;
  EXPECT_EQ(HourOf(t), kDay0 + 13 * kNanosPerHour);
  EXPECT_EQ(HourLabel(t), "2026-11-02T13");
  EXPECT_EQ(ArchiveObjectKey("acme", t, 0), "events/org=acme/hour=2026-11-02T13/0.parquet");
  EXPECT_EQ(ArchiveObjectKey("a/b c%", t, 2), "events/org=a%2Fb%20c%25/hour=2026-11-02T13/2.parquet");
  EXPECT_TRUE(objstore::ValidateKey(ArchiveObjectKey("", t, 0)).ok());
  EXPECT_TRUE(objstore::ValidateKey(ArchiveObjectKey("..", t, 0)).ok());
  // Before 1970: floor, not truncation.
  EXPECT_EQ(HourOf(-1), -kNanosPerHour);
  EXPECT_EQ(HourLabel(-1), "1969-12-31T23");
}

TEST(ArchiveJson, CompactKeepsStringsAndDigits) {
  EXPECT_EQ(CompactJson(R"({"a b": [1, 2.50], "c": {"d": "x , y"}, "e": 123456789012345678901234})"),
            R"({"a b":[1,2.50],"c":{"d":"x , y"},"e":123456789012345678901234})");
  EXPECT_EQ(CompactJson(R"({"q": "say \"hi\" "})"), R"({"q":"say \"hi\" "})");
}

TEST(ArchiveJson, AttributesRoundTrip) {
  std::vector<Attribute> attrs = {
      {"k", "\"v\""}, {"n", "200"}, {"a\"b", "[1,{\"x\":null}]"}, {"o", "{\"p\":[]}"}, {"t", "true"}};
  auto back = AttributesFromJson(AttributesToJson(attrs));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, attrs);
  auto spaced = AttributesFromJson(R"({"k": "v", "n": 200})");
  ASSERT_TRUE(spaced.ok());
  EXPECT_EQ(*spaced, (std::vector<Attribute>{{"k", "\"v\""}, {"n", "200"}}));
  auto empty = AttributesFromJson("{}");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(ArchiveJson, RejectsWhatIsNotAnObject) {
  for (const char* bad : {"", "[]", "{", "}", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{\"a\":1}x",
                          "{\"a\":\"x}", "{a:1}", "{\"a\":[1}", "null"}) {
    EXPECT_FALSE(AttributesFromJson(bad).ok()) << bad;
  }
}

TEST(ArchiveLayout, EventsRoundTripThroughParquet) {
  std::vector<StoredEvent> events;
  for (int i = 0; i < 300; ++i) events.push_back(MakeEvent("acme", kDay0 + i * 1000, i));
  events[3].event.body_kind = BodyKind::kNone;
  events[3].event.body.clear();
  events[4].event.attributes.clear();
  events[5].event.flags = 0xffffffffu;
  events[6].event.body = "ünïcødé \"quoted\" \n line";
  EventColumns cols;
  for (const auto& e : events) cols.Append(e);
  std::string bytes;
  auto w = parquet::Writer::Create(std::make_unique<parquet::StringSink>(&bytes), EventParquetSchema(),
                                   EventWriterOptions("acme", kDay0, 128));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write(cols.columns()).ok());
  auto summary = (*w)->Close();
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->row_groups, 3);
  auto r = parquet::Reader::Open(parquet::MemorySource(bytes));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->schema().size(), size_t{kEventColumnsInFile});
  size_t i = 0;
  for (size_t g = 0; g < (*r)->row_groups().size(); ++g) {
    auto rg = (*r)->ReadRowGroup(g);
    ASSERT_TRUE(rg.ok());
    for (size_t row = 0; row < (*rg)[0].size(); ++row, ++i) {
      auto ev = EventFromColumns(*rg, row);
      ASSERT_TRUE(ev.ok());
      EXPECT_EQ(*ev, events[i]) << i;
    }
  }
  EXPECT_EQ(i, events.size());
  // Distinct values drop the dictionary after the first row group's probe (even in row groups smaller
  // than 2,048 rows): ids in DELTA_LENGTH_BYTE_ARRAY (6), times in DELTA_BINARY_PACKED (5). The
  // organisation keeps its dictionary.
  for (const auto& g : (*r)->row_groups()) {
    const auto& id = g.columns[kColId].encodings;
    const auto& time = g.columns[kColTimeNs].encodings;
    EXPECT_NE(std::find(id.begin(), id.end(), 6), id.end());
    EXPECT_FALSE(g.columns[kColId].has_dictionary);
    EXPECT_NE(std::find(time.begin(), time.end(), 5), time.end());
    EXPECT_TRUE(g.columns[kColOrg].has_dictionary);
  }
  // Statistics on time_ns let row groups be skipped.
  EXPECT_EQ((*r)->RowGroupsOverlapping(kColTimeNs, kDay0 + 130 * 1000, kDay0 + 140 * 1000),
            std::vector<size_t>{1});
  bool has_org = false;
  for (const auto& kv : (*r)->key_value_metadata())
    has_org |= kv.key == "govern.telemetry.org" && kv.value == "acme";
  EXPECT_TRUE(has_org);
}

TEST(ArchiveLayout, BadAttributesInAFileAreDataLoss) {
  EventColumns cols;
  cols.Append(MakeEvent("acme", kDay0, 1));
  auto c = cols.columns();
  parquet::ColumnVector bad(parquet::Type::kString);
  bad.AppendString("not json");
  c[kColAttributes] = bad;
  auto ev = EventFromColumns(c, 0);
  EXPECT_EQ(ev.status().code(), Code::kDataLoss);
}

}  // namespace
}  // namespace govern::telemetry
