// Deterministic event ids: retries give the same ids, duplicates inside a batch differ, every field counts.
#include "services/telemetry/event.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "services/telemetry/ndjson.h"

namespace govern::telemetry {
namespace {

Event Sample() {
  Event e;
  e.org = "acme";
  e.time_unix_nanos = 1795986592185000000;
  e.type = "log";
  e.body_kind = BodyKind::kString;
  e.body = "hello";
  e.attributes = {{"k", "\"v\""}};
  return e;
}

TEST(EventId, IsHexSha256AndDeterministic) {
  const std::string id = EventId("acme", Sample(), 0);
  EXPECT_EQ(id.size(), 64u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(id, EventId("acme", Sample(), 0));
  EXPECT_NE(id, EventId("acme", Sample(), 1));
  EXPECT_NE(id, EventId("other", Sample(), 0));
}

TEST(EventId, EveryFieldChangesTheId) {
  const std::string base = EventId("acme", Sample(), 0);
  std::vector<void (*)(Event&)> edits = {
      [](Event& e) { e.time_unix_nanos++; },
      [](Event& e) { e.observed_unix_nanos = 1; },
      [](Event& e) { e.type = "log2"; },
      [](Event& e) { e.severity_text = "INFO"; },
      [](Event& e) { e.severity_number = 9; },
      [](Event& e) { e.body_kind = BodyKind::kJson; },
      [](Event& e) { e.body = "hello!"; },
      [](Event& e) { e.attributes[0].value_json = "\"w\""; },
      [](Event& e) {
        e.attributes.push_back({"", ""});
      },
      [](Event& e) {
        e.resource_attributes.push_back({"k", "\"v\""});
      },
      [](Event& e) { e.service_name = "s"; },
      [](Event& e) { e.scope_name = "s"; },
      [](Event& e) { e.scope_version = "1"; },
      [](Event& e) { e.trace_id_hex = "00"; },
      [](Event& e) { e.span_id_hex = "00"; },
      [](Event& e) { e.flags = 1; },
      [](Event& e) { e.dropped_attributes_count = 1; },
      // Moving bytes between adjacent fields must not collide (length prefixes).
      [](Event& e) {
        e.body = "hell";
        e.trace_id_hex = "o";
      },
  };
  std::set<std::string> ids = {base};
  for (auto edit : edits) {
    Event e = Sample();
    edit(e);
    EXPECT_TRUE(ids.insert(EventId("acme", e, 0)).second);
  }
  // The id field itself is not part of the content.
  Event with_id = Sample();
  with_id.id = "x";
  EXPECT_EQ(EventId("acme", with_id, 0), base);
}

TEST(EventId, RetriedBatchGetsSameIdsAndDuplicatesDiffer) {
  const std::string batch =
      "{\"time\":1,\"type\":\"t\",\"body\":\"same\"}\n"
      "{\"time\":1,\"type\":\"t\",\"body\":\"same\"}\n"
      "{\"id\":\"mine\",\"time\":1,\"type\":\"t\",\"body\":\"same\"}\n"
      "{\"time\":2,\"type\":\"t\",\"body\":\"other\"}\n"
      "{\"time\":1,\"type\":\"t\",\"body\":\"same\"}\n";
  auto first = DecodeNdjson(batch, "acme");
  auto retry = DecodeNdjson(batch, "acme");
  ASSERT_TRUE(first.ok() && retry.ok());
  AssignMissingIds(first->events);
  AssignMissingIds(retry->events);
  ASSERT_EQ(first->events.size(), 5u);
  std::set<std::string> ids;
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(first->events[i].id, retry->events[i].id);
    ids.insert(first->events[i].id);
  }
  EXPECT_EQ(ids.size(), 5u);  // the three identical records got three ids
  EXPECT_EQ(first->events[2].id, "mine");
  EXPECT_EQ(first->events[0].id, EventId("acme", first->events[1], 0));
  EXPECT_EQ(first->events[1].id, EventId("acme", first->events[1], 1));
  EXPECT_EQ(first->events[4].id, EventId("acme", first->events[1], 2));
}

TEST(Severity, Names) {
  EXPECT_EQ(SeverityNumberFromName("INFO"), 9);
  EXPECT_EQ(SeverityNumberFromName("Warning"), 13);
  EXPECT_EQ(SeverityNumberFromName("SEVERITY_NUMBER_TRACE"), 1);
  EXPECT_EQ(SeverityNumberFromName("SEVERITY_NUMBER_ERROR3"), 19);
  EXPECT_EQ(SeverityNumberFromName("SEVERITY_NUMBER_FATAL4"), 24);
  EXPECT_EQ(SeverityNumberFromName("SEVERITY_NUMBER_UNSPECIFIED"), 0);
  EXPECT_EQ(SeverityNumberFromName("SEVERITY_NUMBER_INFO5"), 0);
  EXPECT_EQ(SeverityNumberFromName("loud"), 0);
}

}  // namespace
}  // namespace govern::telemetry

namespace govern::telemetry {
namespace {

TEST(UnstorableReasonTest, FindsNulInEveryForm) {
  Event e;
  e.type = "t";
  e.body_kind = BodyKind::kJson;
  e.body = R"({"a":"\\u0000 is text, not NUL"})";
  e.attributes = {{"k", R"("fine")"}};
  EXPECT_EQ(UnstorableReason(e), "");
  e.body = R"({"a":"x\u0000"})";
  EXPECT_NE(UnstorableReason(e).find("body"), std::string::npos);
  e.body = "{}";
  e.attributes.push_back({"k2", R"(["\u0000"])"});
  EXPECT_NE(UnstorableReason(e).find("\"k2\""), std::string::npos);
  e.attributes.pop_back();
  e.type = std::string("a\0b", 3);
  EXPECT_NE(UnstorableReason(e).find("type"), std::string::npos);
  e.type = "t";
  e.body_kind = BodyKind::kString;
  e.body = R"(\u0000 in a string body is just text)";
  EXPECT_EQ(UnstorableReason(e), "");
}

}  // namespace
}  // namespace govern::telemetry

namespace govern::telemetry {
namespace {

// Ids are stored and compared across versions: the canonical encoding and its hash must not change.
TEST(EventIdTest, KnownValue) {
  Event e;
  e.org = "acme";
  e.type = "gateway.request";
  e.time_unix_nanos = 1'796'000'400'000'000'000;
  e.body_kind = BodyKind::kString;
  e.body = "hello";
  e.attributes = {{"k", "\"v\""}, {"n", "1"}};
  e.resource_attributes = {{"service.name", "\"api\""}};
  e.service_name = "api";
  EXPECT_EQ(EventId("acme", e, 0), "a31bbee2423258ec9ccf562be380e4d089b90dec10f4e271aecf2eb090d20d23");
  std::vector<Event> two = {e, e};
  AssignMissingIds(two);
  EXPECT_EQ(two[1].id, EventId("acme", e, 1));
  EXPECT_NE(two[0].id, two[1].id);
}

TEST(EventIdTest, RepeatsCountPerContentInOrder) {
  // Three contents interleaved, with sender ids between them: each repeat counts only the earlier
  // events of its own content, in batch order, whatever order their ids sort in.
  std::vector<Event> base(3);
  for (int c = 0; c < 3; ++c) {
    base[c].org = "acme";
    base[c].type = "t" + std::to_string(c);
    base[c].body = "b";
  }
  const int order[] = {2, 0, 1, 0, -1, 2, 0, 1, 2, 2};
  std::vector<Event> batch;
  for (int c : order) {
    Event e = c < 0 ? base[0] : base[c];
    if (c < 0) e.id = "sender-given";
    batch.push_back(e);
  }
  AssignMissingIds(batch);
  int seen[3] = {0, 0, 0};
  std::set<std::string> ids;
  for (size_t i = 0; i < batch.size(); ++i) {
    const int c = order[i];
    if (c < 0) {
      EXPECT_EQ(batch[i].id, "sender-given");
      continue;
    }
    EXPECT_EQ(batch[i].id, EventId("acme", base[c], seen[c]++)) << i;
    ids.insert(batch[i].id);
  }
  EXPECT_EQ(ids.size(), batch.size() - 1);
}

}  // namespace
}  // namespace govern::telemetry
