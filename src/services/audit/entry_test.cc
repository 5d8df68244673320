// The append request parser and the entry JSON form: what is accepted, and the exact 400 for the rest.
#include "services/audit/entry.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

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

// ParseAppendRequest reads plain one-entry bodies without a JSON tree; whatever it accepts or refuses
// must be exactly what the tree parser does (the same entry, byte for byte, or the same refusal).
void ExpectSameAsTree(const std::string& body, std::optional<std::string_view> header) {
  ParseLimits limits{.max_details_bytes = 80, .max_entries = 3};
  auto fast = ParseAppendRequest(body, header, limits);
  auto tree = internal::ParseAppendRequestTree(body, header, limits);
  ASSERT_EQ(fast.ok(), tree.ok()) << body;
  if (!fast.ok()) {
    EXPECT_EQ(fast.status().message(), tree.status().message()) << body;
    return;
  }
  EXPECT_EQ(fast->batch, tree->batch) << body;
  ASSERT_EQ(fast->entries.size(), tree->entries.size()) << body;
  for (size_t i = 0; i < fast->entries.size(); ++i) {
    const AppendInput& a = fast->entries[i];
    const AppendInput& b = tree->entries[i];
    EXPECT_EQ(a.idempotency_key, b.idempotency_key) << body;
    EXPECT_EQ(a.time_micros, b.time_micros) << body;
    EXPECT_EQ(a.actor, b.actor) << body;
    EXPECT_EQ(a.action, b.action) << body;
    EXPECT_EQ(a.target, b.target) << body;
    EXPECT_EQ(a.outcome, b.outcome) << body;
    EXPECT_EQ(a.details, b.details) << body;
  }
}

TEST(AppendRequestTest, FastPathAgreesWithTheTreeParser) {
  // What the benchmark's writers send, and variations at every edge of the fast subset.
  const std::vector<std::string> bodies = {
      R"({"actor":"user5","action":"doc.read","target":"doc5","outcome":"success","details":{"writer":3,"n":5}})",
      R"({ "actor" : "a" , "action":"b" ,"details" : { } } )",
      "\t\r\n{\"actor\":\"a\",\"action\":\"b\"}\n",
      R"({"actor":"a","action":"b","details":{"z":"1","a":true,"m":null,"b":false,"c":-12,"d":0}})",
      R"({"actor":"a","action":"b","details":{"x":1,"x":2}})",
      R"({"actor":"a","action":"b","details":{"x":1.0}})",
      R"({"actor":"a","action":"b","details":{"x":1e3}})",
      R"({"actor":"a","action":"b","details":{"x":-0}})",
      R"({"actor":"a","action":"b","details":{"x":01}})",
      R"({"actor":"a","action":"b","details":{"x":123456789012345678}})",
      R"({"actor":"a","action":"b","details":{"x":1234567890123456789}})",
      R"({"actor":"a","action":"b","details":{"x":99999999999999999999}})",
      R"({"actor":"a","action":"b","details":{"x":[1]}})",
      R"({"actor":"a","action":"b","details":{"x":{"y":1}}})",
      R"({"actor":"a","action":"b","details":{"x":"caf\u00e9"}})",
      "{\"actor\":\"a\",\"action\":\"b\",\"details\":{\"x\":\"caf\xc3\xa9\"}}",
      "{\"actor\":\"a\",\"action\":\"b\",\"details\":{\"x\":\"del\x7f\"}}",
      R"({"actor":"a","action":"b","details":{"x":"q\"uote"}})",
      R"({"actor":"a","action":"b","details":{"B":1,"a":2,"_":3,"~":4}})",
      R"({"actor":"a","action":"b","details":{"x":"1234567890123456789012345678901234567890123456789012345678901234567890"}})",
      R"({"actor":"a","action":"b","details":{"x":truex}})",
      R"({"actor":"a","action":"b","details":null})",
      R"({"actor":"a","action":"b","details":[]})",
      R"({"actor":"a","action":"b","details":"x"})",
      R"({"actor":"a","action":"b","time":"2026-11-30T10:00:00.123456Z","target":"t","outcome":"o"})",
      R"({"actor":"a","action":"b","time":"2026-11-30T10:00:00+02:00"})",
      R"({"actor":"a","action":"b","time":"yesterday"})",
      R"({"actor":"a","action":"b","time":null,"target":null,"outcome":null})",
      R"({"actor":"a","action":"b","time":5})",
      R"({"actor":"a","action":"b","idempotency_key":"own-key"})",
      R"({"actor":"a","action":"b","idempotency_key":""})",
      R"({"actor":"a","action":"b","idempotency_key":"bad key"})",
      R"({"actor":"a","action":"b","idempotency_key":null})",
      R"({"actor":"a","action":"b","idempotency_key":")" + std::string(129, 'k') + "\"}",
      R"({"actor":"a","action":"b","idempotency_key":")" + std::string(128, 'k') + "\"}",
      R"({"actor":")" + std::string(256, 'a') + R"(","action":"b"})",
      R"({"actor":")" + std::string(257, 'a') + R"(","action":"b"})",
      R"({"actor":"a","action":"b","outcome":")" + std::string(65, 'o') + "\"}",
      R"({"actor":"","action":"b"})",
      R"({"actor":null,"action":"b"})",
      R"({"action":"b"})",
      R"({"actor":"a","action":"b","actor":"c"})",
      R"({"actor":"a","action":"b","colour":"red"})",
      R"({"actor":"a\u0041","action":"b"})",
      R"({"actor":"a\\b","action":"b"})",
      R"({"actor":1,"action":"b"})",
      R"({"actor":"a","action":"b"} x)",
      R"({"actor":"a","action":"b",})",
      R"({"actor":"a","action":"b"})"
      "}",
      R"({"actor":"a" "action":"b"})",
      R"({"actor":"a","action":"b")",
      R"({"entries":[{"idempotency_key":"k","actor":"a","action":"b"}]})",
      R"([])",
      "",
      "{}",
      "\xef\xbb\xbf{\"actor\":\"a\",\"action\":\"b\"}",
  };
  for (const std::string& body : bodies) {
    ExpectSameAsTree(body, "hdr-key");
    ExpectSameAsTree(body, std::nullopt);
    ExpectSameAsTree(body, "bad header key");
    // Every prefix: cut-off bodies must be refused alike.
    for (size_t n = 0; n < body.size(); n += 7) ExpectSameAsTree(body.substr(0, n), "hdr-key");
    // Every byte replaced by one of the characters that matter to the fast reader.
    for (size_t i = 0; i < body.size(); ++i) {
      for (char c :
           {'"', '\\', '{', '}', '[', ',', ':', ' ', '0', '-', '.', 'e', 'n', 'x', '\x01', '\x7f', '\xc3'}) {
        std::string m = body;
        m[i] = c;
        ExpectSameAsTree(m, "hdr-key");
        if (::testing::Test::HasFailure()) return;
      }
    }
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
