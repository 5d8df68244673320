#include "services/telemetry/record.h"

#include <gtest/gtest.h>

#include <limits>

namespace govern::telemetry {
namespace {

Event Sample(int i) {
  Event e;
  e.id = "id-" + std::to_string(i);
  e.org = "acme";
  e.time_unix_nanos = 1'700'000'000'000'000'000 + i;
  e.observed_unix_nanos = -5;
  e.type = "gateway.request";
  e.severity_text = "INFO";
  e.severity_number = 9;
  e.body_kind = BodyKind::kJson;
  e.body = R"({"k":[1,2]})";
  e.attributes = {{"http.method", "\"GET\""}, {"n", "200"}, {"", ""}};
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

TEST(RecordTest, RoundTripsEveryField) {
  std::vector<Event> events = {Sample(1), Sample(2), Event{}};
  events[2].severity_number = std::numeric_limits<int32_t>::min();
  events[2].time_unix_nanos = std::numeric_limits<int64_t>::max();
  std::string rec;
  EncodeRecord(events, 123456789, &rec);
  size_t expected = 0;
  for (const Event& e : events) expected += EncodedEventSize(e);
  EXPECT_LE(expected, rec.size());
  EXPECT_GE(expected + 21, rec.size());
  auto batch = DecodeRecord(rec);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->received_unix_nanos, 123456789);
  EXPECT_EQ(batch->events, events);
}

TEST(RecordTest, EmptyBatch) {
  std::string rec;
  EncodeRecord({}, -1, &rec);
  auto batch = DecodeRecord(rec);
  ASSERT_TRUE(batch.ok());
  EXPECT_TRUE(batch->events.empty());
  EXPECT_EQ(batch->received_unix_nanos, -1);
}

TEST(RecordTest, RefusesEveryTruncationAndTrailingBytes) {
  std::vector<Event> events = {Sample(1)};
  std::string rec;
  EncodeRecord(events, 1, &rec);
  for (size_t n = 0; n < rec.size(); ++n) {
    auto r = DecodeRecord(std::string_view(rec).substr(0, n));
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), Code::kDataLoss);
  }
  EXPECT_FALSE(DecodeRecord(rec + "x").ok());
  std::string bad = rec;
  bad[0] = 2;
  EXPECT_NE(DecodeRecord(bad).status().message().find("unknown version"), std::string::npos);
}

TEST(RecordTest, HugeCountIsRefusedWithoutAllocating) {
  std::string rec = "\x01\x02\xff\xff\xff\xff\xff\xff\xff\xff\x7f";
  auto r = DecodeRecord(rec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("count"), std::string::npos);
}

}  // namespace
}  // namespace govern::telemetry
