// The append request parser and the entry JSON form: what is accepted, and the exact 400 for the rest.
#include "services/audit/entry.h"

#include <gtest/gtest.h>

namespace govern::audit_service {
namespace {

ParseLimits Limits() { return {.max_details_bytes = 64, .max_entries = 3}; }

TEST(AppendRequestTest, OneEntryWithTheHeaderKey) {
  auto r = ParseAppendRequest(R"({"actor":"alice","action":"login","details":{"b":1,"a":[true,null]}})",
                              "key-1", Limits());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->batch);
  ASSERT_EQ(r->entries.size(), 1u);
  const AppendInput& in = r->entries[0];
  EXPECT_EQ(in.idempotency_key, "key-1");
  EXPECT_EQ(in.details, R"({"a":[true,null],"b":1})") << "canonical: keys sorted, no spaces";
  EXPECT_FALSE(in.time_micros.has_value());
  EXPECT_EQ(in.target, "");
}

TEST(AppendRequestTest, Batch) {
  auto r = ParseAppendRequest(
      R"({"entries":[{"idempotency_key":"a","actor":"x","action":"y","time":"2026-11-30T01:02:03.5Z"},
                     {"idempotency_key":"b","actor":"x","action":"z","target":"t","outcome":"denied"}]})",
      std::nullopt, Limits());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->batch);
  ASSERT_EQ(r->entries.size(), 2u);
  EXPECT_EQ(*r->entries[0].time_micros, *audit::ParseTime("2026-11-30T01:02:03.500000Z"));
  EXPECT_EQ(r->entries[1].outcome, "denied");
}

TEST(AppendRequestTest, RefusalsNameTheProblem) {
  struct Case {
    std::string body;
    std::string says;
  } cases[] = {
      {"{", "not valid JSON"},
      {"[]", "must be a JSON object"},
      {R"({"action":"x","idempotency_key":"k"})", "'actor' is required"},
      {R"({"actor":"a","action":"x"})", "idempotency key is required"},
      {R"({"actor":"a","action":"x","idempotency_key":"has space"})", "may hold only"},
      {R"({"actor":1,"action":"x","idempotency_key":"k"})", "'actor' must be a string"},
      {R"({"actor":"a","action":"x","idempotency_key":"k","details":[1]})",
       "'details' must be a JSON object"},
      {R"({"actor":"a","action":"x","idempotency_key":"k","details":{"x":")" + std::string(80, 'a') + "\"}}",
       "audit.max_details_bytes"},
      {R"({"actor":"a","action":"x","idempotency_key":"k","time":"yesterday"})", "'time'"},
      {R"({"actor":"a","action":"x","idempotency_key":"k","colour":"red"})", "unknown field 'colour'"},
      {R"({"actor":"a\u0000b","action":"x","idempotency_key":"k"})", "NUL"},
      {R"({"entries":[]})", "empty"},
      {R"({"entries":[{},{},{},{}]})", "at most 3"},
      {R"({"entries":[{"idempotency_key":"k","actor":"a","action":"b"},{"actor":"a"}]})", "entries[1]"},
      {R"({"actor":")" + std::string(300, 'a') + R"(","action":"x","idempotency_key":"k"})",
       "longer than 256"},
  };
  for (const Case& c : cases) {
    auto r = ParseAppendRequest(c.body, std::nullopt, Limits());
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << c.body << " -> " << r.status().message();
  }
}

TEST(TimeTest, Rfc3339) {
  EXPECT_EQ(*ParseRfc3339Micros("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*ParseRfc3339Micros("1970-01-01T01:00:00+01:00"), 0);
  EXPECT_EQ(*ParseRfc3339Micros("2000-02-29T12:00:00.1234567Z"), 951825600123456);
  EXPECT_EQ(*ParseRfc3339Micros("2026-11-30T07:25:47.000123Z"),
            *audit::ParseTime("2026-11-30T07:25:47.000123Z"));
  for (const char* bad : {"", "2026-13-01T00:00:00Z", "2026-01-01 00:00:00", "2026-01-01T00:00:00",
                          "1969-12-31T23:59:59Z", "2026-01-01T00:00:00.Z", "2026-01-01T00:00:00Zjunk",
                          "2026-02-30T00:00:00Z"}) {  // days are checked against the month (base)
    EXPECT_FALSE(ParseRfc3339Micros(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace govern::audit_service
