#include "services/telemetry/record_rows.h"

#include <gtest/gtest.h>

#include <limits>

#include "services/telemetry/record_rows_testing.h"

namespace govern::telemetry {
namespace {

Event SampleRowEvent(int i) {
  Event e;
  e.id = "id-" + std::to_string(i);
  e.org = "acme";
  e.time_unix_nanos = 1'700'000'000'000'000'000 + i;
  e.observed_unix_nanos = -5;
  e.type = "gateway.request";
  e.severity_text = "INFO";
  e.severity_number = -9;
  e.body_kind = BodyKind::kJson;
  e.body = R"({"k":[1,"\u00e9"]})";
  e.attributes = {{"http.method", "\"GET\""}, {"n", "200"}, {"", ""}, {"quote\"and\\ctl\x01", "null"}};
  e.resource_attributes = {{"service.name", "\"api\""}};
  e.service_name = "api";
  e.scope_name = "scope";
  e.scope_version = "1.0";
  e.trace_id_hex = std::string(32, 'a');
  e.span_id_hex = std::string(16, 'b');
  e.flags = std::numeric_limits<uint32_t>::max();
  e.dropped_attributes_count = 3;
  return e;
}

std::string Encode(const std::vector<Event>& events, int64_t received = 42) {
  std::string rec;
  EncodeRecord(events, received, &rec);
  return rec;
}

TEST(RecordRowsTest, WritesTheSameRowsAsTheEventPath) {
  std::vector<Event> events = {SampleRowEvent(1), SampleRowEvent(2), SampleRowEvent(3)};
  events[1].attributes.clear();
  events[1].resource_attributes.clear();
  events[1].body_kind = BodyKind::kNone;
  events[1].body.clear();
  events[2].time_unix_nanos = std::numeric_limits<int64_t>::min();
  events[2].severity_number = std::numeric_limits<int32_t>::min();
  const std::string rec = Encode(events, -77);
  RecordInfo info;
  ASSERT_TRUE(CheckRecord(rec, &info).ok());
  EXPECT_EQ(info.received_unix_nanos, -77);
  EXPECT_EQ(info.events, 3u);
  size_t rows = 0;
  EXPECT_EQ(testing::ViewRows(rec, &rows), testing::ReferenceRows(rec));
  EXPECT_EQ(rows, 3u);
}

TEST(RecordRowsTest, NamesOneEventTimePerDayInFirstSeenOrder) {
  std::vector<Event> events = {SampleRowEvent(1), SampleRowEvent(2), SampleRowEvent(3), SampleRowEvent(4),
                               SampleRowEvent(5)};
  const int64_t day = 1'700'006'400'000'000'000;  // 2023-11-15T00:00:00Z, a day boundary
  events[0].time_unix_nanos = day + 5;
  events[1].time_unix_nanos = day - 1;  // the day before
  events[2].time_unix_nanos = day + 9;
  events[3].time_unix_nanos = -1;  // 1969-12-31: floor, not truncation
  events[4].time_unix_nanos = 0;
  RecordInfo info;
  ASSERT_TRUE(CheckRecord(Encode(events), &info).ok());
  ASSERT_EQ(info.day_times.size(), 4u);
  EXPECT_EQ(PartitionFor(info.day_times[0]).name, PartitionFor(day).name);
  EXPECT_EQ(PartitionFor(info.day_times[1]).name, PartitionFor(day - 1).name);
  EXPECT_EQ(PartitionFor(info.day_times[2]).name, "telemetry_events_p19691231");
  EXPECT_EQ(PartitionFor(info.day_times[3]).name, "telemetry_events_p19700101");
}

TEST(RecordRowsTest, RefusesWhatIngestCannotStoreWithTheSameMessage) {
  auto expect_same = [](const std::vector<Event>& events) {
    const std::string rec = Encode(events);
    RecordInfo info;
    Status got = CheckRecord(rec, &info);
    Status want = testing::ReferenceCheck(rec);
    EXPECT_FALSE(want.ok());
    EXPECT_EQ(got.code(), want.code());
    EXPECT_EQ(got.message(), want.message());
  };
  std::vector<Event> events = {SampleRowEvent(1), SampleRowEvent(2)};
  events[1].id.clear();
  expect_same(events);
  events = {SampleRowEvent(1), SampleRowEvent(2)};
  events[1].body = std::string("a\0b", 3);
  expect_same(events);
  events = {SampleRowEvent(1), SampleRowEvent(2)};
  events[0].attributes.push_back({"k", "\"x\\u0000\""});
  expect_same(events);
  events = {SampleRowEvent(1)};
  events[0].resource_attributes.push_back({std::string("k\0", 2), "1"});
  expect_same(events);
  events = {SampleRowEvent(1)};
  events[0].span_id_hex.push_back('\0');
  expect_same(events);
  events = {SampleRowEvent(1)};
  events[0].body_kind = BodyKind::kJson;
  events[0].body = "\"\\u0000\"";
  expect_same(events);
}

TEST(RecordRowsTest, RefusesEveryMalformedRecordAsDecodeRecordDoes) {
  const std::string rec = Encode({SampleRowEvent(1), SampleRowEvent(2)});
  RecordInfo info;
  for (size_t n = 0; n < rec.size(); ++n) {
    std::string cut = rec.substr(0, n);
    Status got = CheckRecord(cut, &info);
    Status want = testing::ReferenceCheck(cut);
    ASSERT_EQ(got.code(), want.code()) << n;
    ASSERT_EQ(got.message(), want.message()) << n;
  }
  for (size_t i = 0; i < rec.size(); ++i) {
    for (int bit : {0, 7}) {
      std::string flipped = rec;
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
      Status got = CheckRecord(flipped, &info);
      Status want = testing::ReferenceCheck(flipped);
      ASSERT_EQ(got.code(), want.code()) << i;
      ASSERT_EQ(got.message(), want.message()) << i;
      if (got.ok()) {
        size_t rows = 0;
        ASSERT_EQ(testing::ViewRows(flipped, &rows), testing::ReferenceRows(flipped)) << i;
      }
    }
  }
  EXPECT_FALSE(CheckRecord(rec + "x", &info).ok());
  std::string bad_version = rec;
  bad_version[0] = 2;
  EXPECT_EQ(CheckRecord(bad_version, &info).message(), testing::ReferenceCheck(bad_version).message());
}

}  // namespace
}  // namespace govern::telemetry
