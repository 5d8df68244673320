#include "generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "services/telemetry/ndjson.h"
#include "services/telemetry/otlp_proto.h"

namespace govern::telemetry::benchgen {
namespace {

std::vector<Event> Make(GeneratorOptions o, int n) {
  Generator g(std::move(o));
  std::vector<Event> out(static_cast<size_t>(n));
  for (Event& e : out) g.Next(&e);
  return out;
}

TEST(Generator, SameSeedSameEventsOtherStreamOtherEvents) {
  GeneratorOptions o;
  o.seed = 7;
  auto a = Make(o, 200), b = Make(o, 200);
  EXPECT_EQ(a, b);
  o.stream = 1;
  auto c = Make(o, 200);
  std::set<std::string> hashes;
  for (const Event& e : a) hashes.insert(ContentHash(e));
  for (const Event& e : c) hashes.insert(ContentHash(e));
  EXPECT_EQ(hashes.size(), 400u) << "every generated event is distinct content";
}

TEST(Generator, TimeAdvancesAtTheConfiguredRate) {
  GeneratorOptions o;
  o.events_per_second = 1000;
  auto ev = Make(o, 20000);
  for (size_t i = 1; i < ev.size(); ++i) ASSERT_GE(ev[i].time_unix_nanos, ev[i - 1].time_unix_nanos);
  const double secs = static_cast<double>(ev.back().time_unix_nanos - ev.front().time_unix_nanos) / 1e9;
  EXPECT_GT(secs, 18.0);
  EXPECT_LT(secs, 22.0);
}

TEST(Generator, OtlpProtoDecodesBackToTheSameEvents) {
  GeneratorOptions o;
  o.org = "org_x";
  auto ev = Make(o, 300);
  const std::string body = RenderOtlpProto(ev);
  auto decoded = DecodeOtlpLogsProto(body, "org_x");
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->rejected, 0);
  ASSERT_EQ(decoded->events.size(), ev.size());
  // Records are grouped by resource and scope, so compare as multisets of content hashes, then fully.
  std::multiset<std::string> want, got;
  for (const Event& e : ev) want.insert(ContentHash(e));
  for (const Event& e : decoded->events) got.insert(ContentHash(e));
  EXPECT_EQ(want, got);
}

TEST(Generator, NdjsonDecodesWithTimesTypesBodiesAndAttributes) {
  GeneratorOptions o;
  o.org = "org_x";
  auto ev = Make(o, 300);
  const std::string body = RenderNdjson(ev, /*with_org=*/true);
  auto decoded = DecodeNdjson(body, "org_x");
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  ASSERT_EQ(decoded->events.size(), ev.size());
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& d = decoded->events[i];
    EXPECT_EQ(d.time_unix_nanos, ev[i].time_unix_nanos);
    EXPECT_EQ(d.type, ev[i].type);
    EXPECT_EQ(d.body, ev[i].body);
    EXPECT_EQ(d.severity_number, ev[i].severity_number);
    // service.name, host.name, trace_id, span_id, then the event's own attributes
    ASSERT_EQ(d.attributes.size(), ev[i].attributes.size() + 4);
    EXPECT_EQ(d.attributes[0].value_json, "\"" + ev[i].service_name + "\"");
    for (size_t k = 0; k < ev[i].attributes.size(); ++k) {
      const Attribute &got = d.attributes[k + 4], &want = ev[i].attributes[k];
      EXPECT_EQ(got.key, want.key);
      // The NDJSON decoder keeps strings as sent but may re-render a number ("0.000649" can come back
      // as "0.0006489999999999999"): compare numbers by value.
      if (want.value_json[0] == '"' || want.value_json[0] == 't' || want.value_json[0] == 'f')
        EXPECT_EQ(got.value_json, want.value_json);
      else
        EXPECT_DOUBLE_EQ(std::stod(got.value_json), std::stod(want.value_json)) << want.key;
    }
  }
}

TEST(Generator, ContentHashIgnoresAttributeOrderAndIdButNotValues) {
  Event e = Make({}, 1)[0];
  const std::string h = ContentHash(e);
  Event reordered = e;
  std::reverse(reordered.attributes.begin(), reordered.attributes.end());
  std::reverse(reordered.resource_attributes.begin(), reordered.resource_attributes.end());
  reordered.id = "given-by-sender";
  EXPECT_EQ(ContentHash(reordered), h);
  Event changed = e;
  changed.attributes.back().value_json += "0";
  EXPECT_NE(ContentHash(changed), h);
  changed = e;
  changed.time_unix_nanos += 1;
  EXPECT_NE(ContentHash(changed), h);
}

TEST(Generator, EventsAreAboutFiveHundredFiftyBytesAsNdjson) {
  auto ev = Make({}, 5000);
  const double avg = static_cast<double>(RenderNdjson(ev).size()) / 5000;
  EXPECT_GT(avg, 450);
  EXPECT_LT(avg, 650);
}

}  // namespace
}  // namespace govern::telemetry::benchgen
