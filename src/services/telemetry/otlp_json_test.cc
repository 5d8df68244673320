// OTLP/JSON samples in, events out: the shape the OpenTelemetry JS exporter sends, the snake_case
// spelling, the equivalence with the protobuf encoding, and malformed documents.
#include "services/telemetry/otlp_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "services/telemetry/otlp_proto.h"
#include "services/telemetry/proto_writer.h"

namespace govern::telemetry {
namespace {

using ::testing::HasSubstr;

// What @opentelemetry/exporter-logs-otlp-http (0.2xx) posts: camelCase, int64 times as decimal
// strings, hex ids, droppedAttributesCount present even when 0, scope with version, schema URLs.
constexpr std::string_view kJsExporterSample = R"({"resourceLogs":[{"resource":{"attributes":[
{"key":"service.name","value":{"stringValue":"checkout"}},
{"key":"telemetry.sdk.language","value":{"stringValue":"nodejs"}},
{"key":"telemetry.sdk.version","value":{"stringValue":"2.12.1"}}],"droppedAttributesCount":0},
"scopeLogs":[{"scope":{"name":"interop","version":"1.0.0"},"logRecords":[
{"timeUnixNano":"1795986592185000000","observedTimeUnixNano":"1795986592185123456",
 "severityNumber":9,"severityText":"INFO","body":{"stringValue":"order placed"},
 "attributes":[{"key":"order.id","value":{"intValue":"981"}},{"key":"paid","value":{"boolValue":true}},
 {"key":"amount","value":{"doubleValue":12.5}}],"droppedAttributesCount":0,"flags":1,
 "traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174"},
{"timeUnixNano":"1795986592186000000","observedTimeUnixNano":"1795986592186000000",
 "severityNumber":17,"severityText":"ERROR","body":{"stringValue":"card declined"},
 "attributes":[],"droppedAttributesCount":0}],
"schemaUrl":""}],"schemaUrl":""}]})";

Result<DecodedBatch> Decode(std::string_view json) { return DecodeOtlpLogsJson(json, "org1"); }

TEST(OtlpJson, JsExporterShape) {
  auto r = Decode(kJsExporterSample);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 2u);
  const Event& e = r->events[0];
  EXPECT_EQ(e.org, "org1");
  EXPECT_EQ(e.time_unix_nanos, 1795986592185000000);
  EXPECT_EQ(e.observed_unix_nanos, 1795986592185123456);
  EXPECT_EQ(e.severity_number, 9);
  EXPECT_EQ(e.severity_text, "INFO");
  EXPECT_EQ(e.body_kind, BodyKind::kString);
  EXPECT_EQ(e.body, "order placed");
  EXPECT_EQ(e.attributes,
            (std::vector<Attribute>{{"order.id", "981"}, {"paid", "true"}, {"amount", "12.5"}}));
  EXPECT_EQ(e.service_name, "checkout");
  EXPECT_EQ(e.resource_attributes.size(), 3u);
  EXPECT_EQ(e.scope_name, "interop");
  EXPECT_EQ(e.scope_version, "1.0.0");
  EXPECT_EQ(e.trace_id_hex, "5b8efff798038103d269b633813fc60c");
  EXPECT_EQ(e.span_id_hex, "eee19b7ec3c1b174");
  EXPECT_EQ(e.flags, 1u);
  EXPECT_EQ(e.type, "log");
  EXPECT_EQ(r->events[1].severity_number, 17);
  EXPECT_TRUE(r->events[1].attributes.empty());
}

TEST(OtlpJson, SnakeCaseNumbersAndEnumNamesDecodeTheSame) {
  constexpr std::string_view kSnake = R"({"resource_logs":[{"resource":{"attributes":[
{"key":"service.name","value":{"string_value":"checkout"}},
{"key":"telemetry.sdk.language","value":{"string_value":"nodejs"}},
{"key":"telemetry.sdk.version","value":{"string_value":"2.12.1"}}]},
"scope_logs":[{"scope":{"name":"interop","version":"1.0.0"},"log_records":[
{"time_unix_nano":1795986592185000000,"observed_time_unix_nano":1795986592185123456,
 "severity_number":"SEVERITY_NUMBER_INFO","severity_text":"INFO","body":{"string_value":"order placed"},
 "attributes":[{"key":"order.id","value":{"int_value":981}},{"key":"paid","value":{"bool_value":true}},
 {"key":"amount","value":{"double_value":12.5}}],"flags":1,"unknownField":{"x":[1,2]},
 "trace_id":"5B8EFFF798038103D269B633813FC60C","span_id":"eee19b7ec3c1b174"},
{"time_unix_nano":"1795986592186000000","observed_time_unix_nano":"1795986592186000000",
 "severity_number":"SEVERITY_NUMBER_ERROR","severity_text":"ERROR","body":{"string_value":"card declined"},
 "dropped_attributes_count":null}]}]}]})";
  auto a = Decode(kJsExporterSample);
  auto b = Decode(kSnake);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(a->events, b->events);
}

TEST(OtlpJson, SameMessageAsProtobufGivesSameEvents) {
  using namespace protowire;  // NOLINT(google-build-using-namespace)
  const std::string record =
      Fixed64Field(1, 1795986592185000000ULL) + VarintField(2, 13) + LenField(3, "WARN") +
      LenField(5,
               LenField(6, LenField(1, KeyValue("msg", StringValue("hi"))) +
                               LenField(1, KeyValue("xs", LenField(5, LenField(1, DoubleField(4, 0.25))))))) +
      LenField(6, KeyValue("bin", LenField(7, "\x01\x02\x03"))) +
      LenField(6, KeyValue("neg", VarintField(3, static_cast<uint64_t>(-42)))) +
      LenField(9, std::string("\x5b\x8e\xff\xf7\x98\x03\x81\x03\xd2\x69\xb6\x33\x81\x3f\xc6\x0c", 16)) +
      LenField(12, "checkout.warning");
  auto p = DecodeOtlpLogsProto(OneScopeRequest("svc", LenField(2, record)), "org1");
  auto j = Decode(
      R"({"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},
  "scopeLogs":[{"scope":{"name":"scope"},"logRecords":[{"timeUnixNano":"1795986592185000000",
  "severityNumber":13,"severityText":"WARN",
  "body":{"kvlistValue":{"values":[{"key":"msg","value":{"stringValue":"hi"}},
                                   {"key":"xs","value":{"arrayValue":{"values":[{"doubleValue":0.25}]}}}]}},
  "attributes":[{"key":"bin","value":{"bytesValue":"AQID"}},{"key":"neg","value":{"intValue":"-42"}}],
  "traceId":"5b8efff798038103d269b633813fc60c","eventName":"checkout.warning"}]}]}]})");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  ASSERT_EQ(p->events.size(), 1u);
  EXPECT_EQ(p->events, j->events);
  EXPECT_EQ(j->events[0].body, R"({"msg":"hi","xs":[0.25]})");
  EXPECT_EQ(j->events[0].type, "checkout.warning");
}

TEST(OtlpJson, UnusableRecordsAreRejectedOneByOne) {
  struct Case {
    std::string name, fields, message;
  };
  const std::vector<Case> cases = {
      {"base64 trace id", R"("traceId":"W47/95gDgQPSabYzgT/GDA==")", ".traceId: expected 32 hex characters"},
      {"non-hex span id", R"("spanId":"zzzzzzzzzzzzzzzz")", ".spanId: expected 16 hex characters"},
      {"time past int64", R"("timeUnixNano":"9223372036854775808")", ".timeUnixNano: beyond the year 2262"},
  };
  for (const auto& c : cases) {
    const std::string doc =
        R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[{},{)" + c.fields + R"(},{}]}]}]})";
    auto r = Decode(doc);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    EXPECT_EQ(r->events.size(), 2u) << c.name;
    EXPECT_EQ(r->rejected, 1) << c.name;
    EXPECT_THAT(r->rejected_message, HasSubstr("resourceLogs[0].scopeLogs[0].logRecords[1]" + c.message))
        << c.name;
  }
}

TEST(OtlpJson, MalformedDocumentsRejectTheRequest) {
  struct Case {
    std::string name, doc, message;
  };
  auto rec = [](std::string fields) {
    return R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[{)" + fields + R"(}]}]}]})";
  };
  const std::vector<Case> cases = {
      {"empty", "", "invalid JSON: empty body"},
      {"not json", "{\"resourceLogs\":[", "invalid JSON"},
      {"trailing garbage", "{} x", "invalid JSON"},
      {"invalid utf-8", "{\"resourceLogs\":[],\"x\":\"\xff\"}", "invalid JSON"},
      {"not an object", "[]", "expected a JSON object"},
      {"resourceLogs not array", R"({"resourceLogs":{}})", "resourceLogs: expected an array"},
      {"scopeLogs not array", R"({"resourceLogs":[{"scopeLogs":7}]})",
       "resourceLogs[0].scopeLogs: expected an array, got a number"},
      {"time is bool", rec(R"("timeUnixNano":true)"), "logRecords[0].timeUnixNano: expected an integer"},
      {"time not decimal", rec(R"("timeUnixNano":"12ab")"),
       ".timeUnixNano: \"12ab\" is not a decimal integer"},
      {"time negative", rec(R"("timeUnixNano":-1)"), ".timeUnixNano: negative value -1"},
      {"time fractional", rec(R"("timeUnixNano":1.5)"), ".timeUnixNano: expected an integer"},
      {"unknown severity name", rec(R"("severityNumber":"LOUD")"),
       ".severityNumber: unknown severity \"LOUD\""},
      {"severity too big", rec(R"("severityNumber":4294967296)"),
       ".severityNumber: value 4294967296 out of range"},
      {"body not object", rec(R"("body":"text")"), ".body: expected an object, got a string"},
      {"attributes not array", rec(R"("attributes":{})"), ".attributes: expected an array"},
      {"attribute key number", rec(R"("attributes":[{"key":1}])"), ".attributes[0].key: expected a string"},
      {"bad bytes", rec(R"("body":{"bytesValue":"!!"})"), ".body.bytesValue: not base64"},
      {"bad nested", rec(R"("body":{"arrayValue":{"values":[{"intValue":{}}]}})"),
       ".body.arrayValue.values[0].intValue: expected an integer"},
  };
  for (const auto& c : cases) {
    auto r = Decode(c.doc);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << c.name;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message)) << c.name;
  }
}

TEST(OtlpJson, UnknownKeyInsideAnyValueKeepsTheValue) {
  // Found by otlp_json_fuzz: an unknown key after stringValue used to mark the body as JSON.
  auto r = Decode(R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[
    {"body":{"stringValue":"text","extra":1},"attributes":[{"key":"k","value":{"intValue":"5","x":"y"}}]}]}]}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->events[0].body_kind, BodyKind::kString);
  EXPECT_EQ(r->events[0].body, "text");
  EXPECT_EQ(r->events[0].attributes[0].value_json, "5");
  EXPECT_FALSE(DecodeOtlpLogsJson(std::string_view(), "o").ok());  // null data pointer
}

TEST(OtlpJson, NestingDepthIsBounded) {
  auto nested = [](int depth) {
    std::string v = R"({"intValue":1})";
    for (int i = 0; i < depth; ++i) v = R"({"arrayValue":{"values":[)" + v + "]}}";
    return R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":)" + v + "}]}]}]}";
  };
  EXPECT_TRUE(Decode(nested(31)).ok());
  auto deep = Decode(nested(32));
  ASSERT_FALSE(deep.ok());
  EXPECT_THAT(deep.status().message(), HasSubstr("nested deeper than 32"));
}

TEST(OtlpJson, NullsAreAbsentAndEmptyIsNothing) {
  auto r = Decode(R"({"resourceLogs":[{"resource":null,"scopeLogs":[{"scope":null,"logRecords":[
    {"timeUnixNano":null,"body":null,"attributes":null,"traceId":""}]}]}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->events[0].body_kind, BodyKind::kNone);
  EXPECT_EQ(r->events[0].trace_id_hex, "");
  auto empty = Decode("{}");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->events.empty());
}

}  // namespace
}  // namespace govern::telemetry
