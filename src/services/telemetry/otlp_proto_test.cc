// Bytes in, events (or errors) out, for the OTLP protobuf decoder. Every input is built field by field
// with proto_writer.h so each case shows exactly which bytes it sends.
#include "services/telemetry/otlp_proto.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "services/telemetry/proto_writer.h"

namespace govern::telemetry {
namespace {

using namespace protowire;  // NOLINT(google-build-using-namespace): the byte builders
using ::testing::HasSubstr;

constexpr uint64_t kTime = 1795986592185000000ULL;

std::string Record(std::string_view fields) { return LenField(2, fields); }

Result<DecodedBatch> DecodeProto(std::string_view body) { return DecodeOtlpLogsProto(body, "org1"); }

TEST(OtlpProto, DecodesEveryLogRecordField) {
  const std::string trace(16, '\xab'), span(8, '\x01');
  const std::string record =
      Fixed64Field(1, kTime) + VarintField(2, 9) + LenField(3, "INFO") +
      LenField(5, StringValue("user logged in")) + LenField(6, KeyValue("http.status", VarintField(3, 200))) +
      LenField(6, KeyValue("ok", VarintField(2, 1))) + VarintField(7, 3) + Fixed32Field(8, 1) +
      LenField(9, trace) + LenField(10, span) + Fixed64Field(11, kTime + 5) + LenField(12, "login");
  const std::string body =
      Request(ResourceLogs(LenField(1, KeyValue("service.name", StringValue("checkout"))) +
                               LenField(1, KeyValue("host.name", StringValue("h1"))),
                           LenField(1, LenField(1, "io.govern") + LenField(2, "1.2")) + Record(record)));
  auto r = DecodeProto(body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->rejected, 0);
  const Event& e = r->events[0];
  EXPECT_EQ(e.org, "org1");
  EXPECT_EQ(e.id, "");
  EXPECT_EQ(e.time_unix_nanos, static_cast<int64_t>(kTime));
  EXPECT_EQ(e.observed_unix_nanos, static_cast<int64_t>(kTime + 5));
  EXPECT_EQ(e.severity_number, 9);
  EXPECT_EQ(e.severity_text, "INFO");
  EXPECT_EQ(e.body_kind, BodyKind::kString);
  EXPECT_EQ(e.body, "user logged in");
  EXPECT_EQ(e.attributes, (std::vector<Attribute>{{"http.status", "200"}, {"ok", "true"}}));
  EXPECT_EQ(e.resource_attributes,
            (std::vector<Attribute>{{"service.name", "\"checkout\""}, {"host.name", "\"h1\""}}));
  EXPECT_EQ(e.service_name, "checkout");
  EXPECT_EQ(e.scope_name, "io.govern");
  EXPECT_EQ(e.scope_version, "1.2");
  EXPECT_EQ(e.dropped_attributes_count, 3u);
  EXPECT_EQ(e.flags, 1u);
  EXPECT_EQ(e.trace_id_hex, "abababababababababababababababab");
  EXPECT_EQ(e.span_id_hex, "0101010101010101");
  EXPECT_EQ(e.type, "login");
}

TEST(OtlpProto, EmptyRequestIsNoEvents) {
  auto r = DecodeProto("");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->events.empty());
}

TEST(OtlpProto, DefaultsWhenFieldsAbsent) {
  auto r = DecodeProto(Request(ResourceLogs("", Record(Fixed64Field(11, 42)))));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 1u);
  const Event& e = r->events[0];
  EXPECT_EQ(e.time_unix_nanos, 42);  // time 0 -> observed time
  EXPECT_EQ(e.type, "log");
  EXPECT_EQ(e.body_kind, BodyKind::kNone);
  EXPECT_EQ(e.service_name, "");
}

TEST(OtlpProto, ServiceNameIsTheUnquotedString) {
  struct Case {
    std::string resource, service;
  };
  const std::vector<Case> cases = {
      {LenField(1, KeyValue("service.name", StringValue("a\"b\\c\td\x01"))), "a\"b\\c\td\x01"},
      {LenField(1, KeyValue("service.name", VarintField(3, 5))), ""},  // not a string
      {LenField(1, KeyValue("service.name", StringValue("x"))) +
           LenField(1, KeyValue("service.name", StringValue("y"))),
       "y"},
      {LenField(1, KeyValue("service", StringValue("x"))), ""},
  };
  for (const auto& c : cases) {
    auto r = DecodeProto(Request(ResourceLogs(c.resource, LenField(2, ""))));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->events.size(), 1u);
    EXPECT_EQ(r->events[0].service_name, c.service);
  }
}

TEST(OtlpProto, ScopeAndResourceMayFollowTheirChildren) {
  // ResourceLogs with scope_logs (2) before resource (1); ScopeLogs with log_records (2) before scope (1).
  const std::string scope_logs = Record(LenField(3, "x")) + LenField(1, LenField(1, "late-scope"));
  const std::string body = Request(LenField(2, scope_logs) +
                                   LenField(1, LenField(1, KeyValue("service.name", StringValue("svc")))));
  auto r = DecodeProto(body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->events[0].scope_name, "late-scope");
  EXPECT_EQ(r->events[0].service_name, "svc");
}

TEST(OtlpProto, UnknownFieldsOfEveryWireTypeAreSkipped) {
  const std::string unknown = VarintField(99, 7) + Fixed64Field(98, 1) + LenField(97, "zz") +
                              Fixed32Field(96, 2) + VarintField(4, 1);  // 4 is reserved in LogRecord
  const std::string record = unknown + LenField(3, "WARN") + unknown;
  const std::string body =
      unknown +
      Request(unknown + ResourceLogs(unknown + LenField(1, KeyValue("k", StringValue("v"))),
                                     unknown + Record(record))) +
      unknown;
  auto r = DecodeProto(body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->events[0].severity_text, "WARN");
  EXPECT_EQ(r->events[0].resource_attributes.size(), 1u);
}

// AnyValue encodings and the JSON text each renders to (as an attribute value).
TEST(OtlpProto, AnyValueRendering) {
  struct Case {
    std::string name, any_value, json;
  };
  const std::vector<Case> cases = {
      {"string", StringValue("a\"b\\c\n\x01"), R"("a\"b\\c\n\u0001")"},
      {"utf8", StringValue("h\xc3\xa9llo"), "\"h\xc3\xa9llo\""},
      {"bool false", VarintField(2, 0), "false"},
      {"int", VarintField(3, 123456789012345ULL), "123456789012345"},
      {"negative int", VarintField(3, static_cast<uint64_t>(-5)), "-5"},
      {"int64 min", VarintField(3, 0x8000000000000000ULL), "-9223372036854775808"},
      {"double", DoubleField(4, 1.5), "1.5"},
      {"double nan", Fixed64Field(4, 0x7ff8000000000000ULL), "\"NaN\""},
      {"double -inf", Fixed64Field(4, 0xfff0000000000000ULL), "\"-Infinity\""},
      {"array", LenField(5, LenField(1, VarintField(3, 1)) + LenField(1, StringValue("x"))), R"([1,"x"])"},
      {"empty array", LenField(5, ""), "[]"},
      {"kvlist", LenField(6, LenField(1, KeyValue("a", VarintField(2, 1))) + LenField(1, KeyValue("b", ""))),
       R"({"a":true,"b":null})"},
      {"bytes", LenField(7, std::string("\x00\xff", 2)), "\"AP8=\""},
      {"no value", "", "null"},
      {"oneof last wins", StringValue("first") + VarintField(3, 2), "2"},
  };
  for (const auto& c : cases) {
    auto r = DecodeProto(OneScopeRequest("s", Record(LenField(6, KeyValue("k", c.any_value)))));
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    ASSERT_EQ(r->events.size(), 1u) << c.name;
    ASSERT_EQ(r->events[0].attributes.size(), 1u) << c.name;
    EXPECT_EQ(r->events[0].attributes[0].value_json, c.json) << c.name;
  }
}

TEST(OtlpProto, NonStringBodyIsJson) {
  auto r = DecodeProto(
      OneScopeRequest("s", Record(LenField(5, LenField(6, LenField(1, KeyValue("n", VarintField(3, 7))))))));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->events[0].body_kind, BodyKind::kJson);
  EXPECT_EQ(r->events[0].body, R"({"n":7})");
}

TEST(OtlpProto, NegativeAndHugeIntegers) {
  // severity_number is an int32 enum sent as a 10-byte varint when negative; values outside 1..24 are
  // kept (proto3 enums are open). dropped_attributes_count is uint32: the high bits are truncated.
  auto r = DecodeProto(OneScopeRequest(
      "s", Record(VarintField(2, static_cast<uint64_t>(-1)) + VarintField(7, 0x1'0000'0005ULL))));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->events[0].severity_number, -1);
  EXPECT_EQ(r->events[0].dropped_attributes_count, 5u);
}

TEST(OtlpProto, UnusableRecordsAreRejectedOneByOne) {
  struct Case {
    std::string name, record, message;
  };
  const std::vector<Case> cases = {
      {"short trace id", LenField(9, std::string(15, 'a')), ".trace_id: 15 bytes, expected 16"},
      {"long span id", LenField(10, std::string(9, 'a')), ".span_id: 9 bytes, expected 8"},
      {"time past int64", Fixed64Field(1, 0x8000000000000000ULL), ".time_unix_nano: beyond the year 2262"},
      {"observed past int64", Fixed64Field(11, ~0ULL), ".observed_time_unix_nano: beyond"},
  };
  for (const auto& c : cases) {
    const std::string good = Record(LenField(3, "ok"));
    auto r = DecodeProto(OneScopeRequest("s", good + Record(c.record) + good));
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    EXPECT_EQ(r->events.size(), 2u) << c.name;
    EXPECT_EQ(r->rejected, 1) << c.name;
    EXPECT_THAT(r->rejected_message, HasSubstr("resource_logs[0].scope_logs[0].log_records[1]" + c.message))
        << c.name;
  }
}

TEST(OtlpProto, MalformedBytesRejectTheRequest) {
  struct Case {
    std::string name, body, message;
  };
  const std::string ok_record = Record(LenField(3, "x"));
  const std::vector<Case> cases = {
      {"truncated varint tag", "\x0a\x80", "truncated varint (at byte 1)"},
      {"lone continuation byte", "\x80", "ExportLogsServiceRequest: truncated varint (at byte 0)"},
      {"varint longer than 10 bytes", VarintField(99, 0) + std::string(10, '\xff') + "\x01",
       "varint overflows 64 bits"},
      {"length past end", "\x0a\x05\x01", "length 5 runs past the end of its message (1 bytes left)"},
      {"huge length", "\x0a\xff\xff\xff\xff\x0f", "length 4294967295 runs past the end"},
      {"truncated fixed64", Tag(99, 1) + "1234", "truncated fixed64 (4 bytes left)"},
      {"truncated fixed32", Tag(99, 5) + "12", "truncated fixed32"},
      {"start group", Tag(5, 3), "field 5 uses a group (wire type 3)"},
      {"end group", Tag(5, 4), "uses a group (wire type 4)"},
      {"wire type 6", Tag(5, 6), "field 5 has invalid wire type 6"},
      {"wire type 7", Tag(5, 7), "invalid wire type 7"},
      {"field number 0", "\x02\x00", "invalid field number 0"},
      {"resource_logs as varint", VarintField(1, 3),
       "resource_logs[0]: wire type varint, expected length-delimited"},
      {"time as varint", OneScopeRequest("s", Record(VarintField(1, 5))),
       "resource_logs[0].scope_logs[0].log_records[0].time_unix_nano: wire type varint, expected fixed64"},
      {"flags as fixed64", OneScopeRequest("s", Record(Fixed64Field(8, 1))),
       ".flags: wire type fixed64, expected fixed32"},
      {"invalid utf-8 severity_text", OneScopeRequest("s", Record(LenField(3, "\xff"))),
       "log_records[0].severity_text: invalid UTF-8"},
      {"invalid utf-8 body", OneScopeRequest("s", ok_record + Record(LenField(5, StringValue("a\xc3(")))),
       "log_records[1].body.string_value: invalid UTF-8"},
      {"invalid utf-8 attribute key", OneScopeRequest("s", Record(LenField(6, KeyValue("\xed\xa0\x80", "")))),
       "log_records[0].attributes[0].key: invalid UTF-8"},
      {"invalid utf-8 nested",
       OneScopeRequest("s",
                       Record(LenField(6, KeyValue("k", LenField(5, LenField(1, StringValue("\xc0\xaf"))))))),
       "attributes[0].value.array_value.values[0].string_value: invalid UTF-8"},
      {"invalid utf-8 resource", Request(ResourceLogs(LenField(1, KeyValue("k", StringValue("\x80"))), "")),
       "resource_logs[0].resource.attributes[0].value.string_value: invalid UTF-8"},
      {"invalid utf-8 scope name", Request(ResourceLogs("", LenField(1, LenField(1, "\xfe")))),
       "resource_logs[0].scope_logs[0].scope.name: invalid UTF-8"},
      {"truncated inside record",
       OneScopeRequest("s", Record("\x1a\x09"
                                   "abc")),
       "log_records[0]: field 3 length 9 runs past the end"},
  };
  for (const auto& c : cases) {
    auto r = DecodeProto(c.body);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << c.name;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message)) << c.name;
  }
}

std::string NestedArrays(int depth) {
  std::string v = VarintField(3, 1);
  for (int i = 0; i < depth; ++i) v = LenField(5, LenField(1, v));
  return v;
}

TEST(OtlpProto, NestingDepthIsBounded) {
  // Depth 1 is the attribute value itself; each array adds one.
  auto ok = DecodeProto(OneScopeRequest("s", Record(LenField(6, KeyValue("k", NestedArrays(31))))));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->events[0].attributes[0].value_json, std::string(31, '[') + "1" + std::string(31, ']'));
  auto deep = DecodeProto(OneScopeRequest("s", Record(LenField(6, KeyValue("k", NestedArrays(32))))));
  ASSERT_FALSE(deep.ok());
  EXPECT_THAT(deep.status().message(), HasSubstr("values nested deeper than 32"));
  // Far deeper than any stack would allow if recursion were unbounded.
  auto very = DecodeProto(OneScopeRequest("s", Record(LenField(5, NestedArrays(5000)))));
  ASSERT_FALSE(very.ok());
}

TEST(OtlpProto, RecordLimit) {
  std::string records;
  for (int i = 0; i < 4; ++i) records += Record("");
  OtlpLimits limits;
  limits.max_records = 3;
  auto r = DecodeOtlpLogsProto(OneScopeRequest("s", records), "o", limits);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("more than 3 log records"));
}

TEST(OtlpProto, EveryTruncationIsAnErrorNotACrash) {
  const std::string body =
      OneScopeRequest("svc", Record(Fixed64Field(1, kTime) + LenField(5, StringValue("hello")) +
                                    LenField(6, KeyValue("k", LenField(5, LenField(1, VarintField(3, 1)))))));
  ASSERT_TRUE(DecodeProto(body).ok());
  // The request holds one resource_logs field, so every non-empty proper prefix cuts a length short.
  for (size_t n = 1; n < body.size(); ++n) {
    EXPECT_FALSE(DecodeProto(body.substr(0, n)).ok()) << "prefix of " << n << " bytes";
  }
}

}  // namespace
}  // namespace govern::telemetry
