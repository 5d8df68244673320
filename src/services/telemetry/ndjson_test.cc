// NDJSON batches in, events or line-numbered errors out; RFC 3339 times.
#include "services/telemetry/ndjson.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace govern::telemetry {
namespace {

using ::testing::HasSubstr;

TEST(Ndjson, DecodesAFullBatch) {
  const std::string body =
      R"({"id":"evt-1","org":"acme","time":"2026-11-29T23:00:00.123456789Z","type":"agent.run",)"
      R"("attributes":{"model":"gpt","tokens":512,"tags":["a","b"],"ok":true,"cost":0.5,"nil":null},)"
      R"("body":"started","severity":"warn"})"
      "\n\n   \r\n"
      R"({"time":1795986592185000000,"type":"gateway.call","body":{"path":"/v1","status":200}})"
      "\r\n";
  auto r = DecodeNdjson(body, "acme");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 2u);
  const Event& a = r->events[0];
  EXPECT_EQ(a.id, "evt-1");
  EXPECT_EQ(a.org, "acme");
  EXPECT_EQ(a.time_unix_nanos, 1795993200123456789);
  EXPECT_EQ(a.type, "agent.run");
  EXPECT_EQ(a.attributes, (std::vector<Attribute>{{"model", "\"gpt\""},
                                                  {"tokens", "512"},
                                                  {"tags", "[\"a\",\"b\"]"},
                                                  {"ok", "true"},
                                                  {"cost", "0.5"},
                                                  {"nil", "null"}}));
  EXPECT_EQ(a.body_kind, BodyKind::kString);
  EXPECT_EQ(a.body, "started");
  EXPECT_EQ(a.severity_text, "warn");
  EXPECT_EQ(a.severity_number, 13);
  const Event& b = r->events[1];
  EXPECT_EQ(b.id, "");
  EXPECT_EQ(b.org, "acme");
  EXPECT_EQ(b.time_unix_nanos, 1795986592185000000);
  EXPECT_EQ(b.body_kind, BodyKind::kJson);
  EXPECT_EQ(b.body, R"({"path":"/v1","status":200})");
  EXPECT_EQ(b.severity_number, 0);
}

TEST(Ndjson, RepeatedAttributesKeysKeepEveryAttributeInOrder) {
  auto r = DecodeNdjson(
      R"({"time":1,"type":"t","attributes":{"a":1},"attributes":{},"attributes":{"b":"x","c":2}})", "o");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->events[0].attributes, (std::vector<Attribute>{{"a", "1"}, {"b", "\"x\""}, {"c", "2"}}));
}

TEST(Ndjson, EmptyAndBlankBatchesHaveNoEvents) {
  for (std::string_view body : {"", "\n", " \n\t\r\n"}) {
    auto r = DecodeNdjson(body, "o");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->events.empty());
  }
}

TEST(Ndjson, BadLinesRejectTheBatchWithTheLineNumber) {
  struct Case {
    std::string name, line, message;
  };
  const std::vector<Case> cases = {
      {"not json", R"({"time":)", "line 2: invalid JSON"},
      {"two objects", R"({"time":1,"type":"t"} {})", "line 2: invalid JSON"},
      {"array", R"([1])", "line 2: expected a JSON object"},
      {"bad utf-8", "{\"time\":1,\"type\":\"\xc3\x28\"}", "line 2: invalid JSON"},
      {"missing time", R"({"type":"t"})", "line 2: missing \"time\""},
      {"missing type", R"({"time":1})", "line 2: missing \"type\""},
      {"empty type", R"({"time":1,"type":""})", "line 2: type: must be 1 to 256 bytes"},
      {"type not string", R"({"time":1,"type":5})", "line 2: type: expected a string"},
      {"wrong org", R"({"org":"other","time":1,"type":"t"})",
       "line 2: org: \"other\" is not the ingest key's organisation"},
      {"negative time", R"({"time":-1,"type":"t"})", "line 2: time: integer nanoseconds must be"},
      {"huge time", R"({"time":18446744073709551615,"type":"t"})", "line 2: time: integer nanoseconds"},
      {"float time", R"({"time":1.5,"type":"t"})", "line 2: time: expected an RFC 3339 string"},
      {"bad time string", R"({"time":"yesterday","type":"t"})",
       "line 2: time: \"yesterday\" is not an RFC 3339"},
      {"id with space", R"({"id":"a b","time":1,"type":"t"})", "line 2: id: may only contain"},
      {"empty id", R"({"id":"","time":1,"type":"t"})", "line 2: id: must be 1 to 128"},
      {"attributes array", R"({"time":1,"type":"t","attributes":[]})",
       "line 2: attributes: expected an object"},
      {"body number", R"({"time":1,"type":"t","body":3})", "line 2: body: expected a string or an object"},
      {"severity number", R"({"time":1,"type":"t","severity":3})", "line 2: severity: expected a string"},
      {"unknown key", R"({"time":1,"type":"t","tme":2})", "line 2: unknown field \"tme\""},
      {"too deep", R"({"time":1,"type":"t","body":)" + std::string(40, '[') + std::string(40, ']') + "}",
       "line 2: invalid JSON"},
  };
  const std::string good = R"({"time":1,"type":"t"})";
  for (const auto& c : cases) {
    auto r = DecodeNdjson(good + "\n" + c.line + "\n" + good + "\n", "acme");
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << c.name;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message)) << c.name;
  }
}

TEST(Ndjson, BatchLimits) {
  NdjsonLimits limits;
  limits.max_events = 2;
  limits.max_line_bytes = 40;
  const std::string line = R"({"time":1,"type":"t"})";
  EXPECT_TRUE(DecodeNdjson(line + "\n\n" + line, "o", limits).ok());
  auto many = DecodeNdjson(line + "\n" + line + "\n\n" + line, "o", limits);
  ASSERT_FALSE(many.ok());
  EXPECT_THAT(many.status().message(), HasSubstr("line 4: batch has more than 2 events"));
  auto wide = DecodeNdjson(R"({"time":1,"type":")" + std::string(30, 'x') + "\"}", "o", limits);
  ASSERT_FALSE(wide.ok());
  EXPECT_THAT(wide.status().message(), HasSubstr("line 1: 50 bytes, more than the limit of 40"));
}

TEST(Rfc3339, ValidTimes) {
  struct Case {
    std::string text;
    int64_t nanos;
  };
  const std::vector<Case> cases = {
      {"1970-01-01T00:00:00Z", 0},
      {"1970-01-01t00:00:01z", 1000000000},
      {"1970-01-01 00:00:00.5Z", 500000000},
      {"2026-11-29T23:00:00.123456789Z", 1795993200123456789},
      {"2026-11-29T23:00:00.1234567891234Z", 1795993200123456789},  // digits past ns truncated
      {"2026-11-30T01:00:00+02:00", 1795993200000000000},
      {"2026-11-29T20:30:00-02:30", 1795993200000000000},
      {"2024-02-29T00:00:00Z", 1709164800000000000},
      {"2262-04-11T23:47:16.854775807Z", 9223372036854775807},
  };
  for (const auto& c : cases) {
    auto r = ParseRfc3339Nanos(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().ToString();
    EXPECT_EQ(*r, c.nanos) << c.text;
  }
}

TEST(Rfc3339, InvalidTimes) {
  for (std::string_view text :
       {"", "2026-11-29", "2026-11-29T23:00:00", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z",
        "2026-11-31T00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T23:60:00Z", "2026-11-29T23:00:00.Z",
        "2026-11-29T23:00:00+2:00", "2026-11-29T23:00:00+02:60", "2026-11-29T23:00:00Zx",
        "1969-12-31T23:59:59Z", "2262-04-11T23:47:16.854775808Z", "9999-12-31T23:59:59Z",
        "2026-11-29X23:00:00Z", "20261129T230000Z", "+026-11-29T23:00:00Z"}) {
    auto r = ParseRfc3339Nanos(text);
    EXPECT_FALSE(r.ok()) << text;
    if (!r.ok()) {
      EXPECT_THAT(r.status().message(), HasSubstr("is not an RFC 3339 date-time")) << text;
    }
  }
}

}  // namespace
}  // namespace govern::telemetry

namespace govern::telemetry {
namespace {

// Values come back as they were sent: doubles in their shortest form (simdjson::minify printed
// 0.000649 as 0.0006489999999999999), integers exactly, strings escaped only where JSON requires.
TEST(NdjsonValuesTest, NumbersAndStringsKeepTheirValue) {
  auto r = DecodeNdjson(
      R"({"time":1,"type":"t","attributes":{"cost":0.000649,"big":18446744073709551615,"neg":-9223372036854775808,"f":1.5e300,"s":"a\"\u00e9\n","n":null,"b":[true,{"x":0.1}]},"body":{"k":0.3}})"
      "\n",
      "org");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& a = r->events[0].attributes;
  ASSERT_EQ(a.size(), 7u);
  EXPECT_EQ(a[0].value_json, "0.000649");
  EXPECT_EQ(a[1].value_json, "18446744073709551615");
  EXPECT_EQ(a[2].value_json, "-9223372036854775808");
  EXPECT_EQ(a[3].value_json, "1.5e+300");
  EXPECT_EQ(a[4].value_json, "\"a\\\"\xc3\xa9\\n\"");
  EXPECT_EQ(a[5].value_json, "null");
  EXPECT_EQ(a[6].value_json, "[true,{\"x\":0.1}]");
  EXPECT_EQ(r->events[0].body, "{\"k\":0.3}");
}

}  // namespace
}  // namespace govern::telemetry
