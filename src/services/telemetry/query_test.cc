// QueryRecent and RunQuery against the shared test PostgreSQL, with an in-memory archive.
#include "services/telemetry/query.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "db/pool.h"
#include "db/testing.h"
#include "services/telemetry/query_test_util.h"
#include "services/telemetry/schema.h"

namespace govern::telemetry {
namespace {

using testing::ExpectedKeys;
using testing::InsertEvents;
using testing::MakeEvent;
using testing::MemoryArchive;

constexpr int64_t kDay = 1'795'996'800'000'000'000;  // 2026-11-30T00:00:00Z

class QueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_.emplace(std::move(db).value());
    auto c = db::Connection::Connect(db_->conninfo());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    conn_ = std::move(c).value();
    ASSERT_TRUE(testing::ApplySchema(*conn_).ok());
    auto pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = 2});
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(pool).value();
  }
  void TearDown() override {
    pool_.reset();
    conn_.reset();
  }

  std::vector<EventKey> Keys(const EventQuery& q) {
    Result<std::vector<StoredEvent>> r = QueryRecent(*conn_, q);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<EventKey> keys;
    if (r.ok()) {
      for (const StoredEvent& s : *r) keys.push_back(s.key());
    }
    return keys;
  }

  // Walks every page of `q` through RunQuery and tokens, as a client would.
  std::vector<EventKey> WalkPages(EventQuery q, MemoryArchive* archive, int* pages = nullptr,
                                  const std::function<void()>& between_pages = {}) {
    std::vector<EventKey> got;
    const EventQuery first = q;
    int n = 0;
    while (true) {
      Result<QueryPage> page = RunQuery(pool_.get(), archive, q);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) break;
      ++n;
      EXPECT_LE(page->events.size(), q.limit);
      for (const StoredEvent& s : page->events) got.push_back(s.key());
      if (!page->next) break;
      EXPECT_EQ(*page->next, got.back());
      if (between_pages) between_pages();
      std::string token = EncodeCursor(q, *page->next);
      q = first;
      Status st = ApplyCursor(token, true, &q);
      EXPECT_TRUE(st.ok()) << st.ToString();
      if (n > 100000) break;
    }
    if (pages != nullptr) *pages = n;
    return got;
  }

  std::optional<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Connection> conn_;
  std::unique_ptr<db::Pool> pool_;
};

std::vector<StoredEvent> Mixed() {
  std::vector<StoredEvent> all;
  for (int i = 0; i < 40; ++i) {
    // Two days (two partitions), two organisations, three types, a few attribute values.
    int64_t t = kDay - 20 * kNanosPerSecond + i * kNanosPerSecond;
    StoredEvent s = MakeEvent(i % 5 == 0 ? "other" : "acme", t, "e" + std::to_string(i),
                              i % 3 == 0   ? "http"
                              : i % 3 == 1 ? "log"
                                           : "agent.action");
    s.event.attributes = {{"status", std::to_string(200 + (i % 2) * 300)},
                          {"method", i % 4 == 0 ? "\"GET\"" : "\"POST\""},
                          {"tags", i % 6 == 0 ? "[1,2]" : "[1]"}};
    all.push_back(std::move(s));
  }
  return all;
}

TEST_F(QueryTest, FiltersByOrganisationTimeTypeAndAttributes) {
  std::vector<StoredEvent> all = Mixed();
  ASSERT_TRUE(InsertEvents(*conn_, all).ok());
  std::vector<EventQuery> queries;
  EventQuery q;
  q.org = "acme";
  q.limit = 1000;
  queries.push_back(q);
  EventQuery t = q;
  t.from_ns = kDay - 10 * kNanosPerSecond;
  t.to_ns = kDay + 5 * kNanosPerSecond;
  queries.push_back(t);
  EventQuery ty = q;
  ty.type = "http";
  queries.push_back(ty);
  EventQuery a = q;
  a.attributes = {{"status", "500"}};
  queries.push_back(a);
  EventQuery a2 = q;
  a2.attributes = {{"method", "\"GET\""}, {"status", "200"}};
  queries.push_back(a2);
  EventQuery exact = q;  // containment would let [1] match [1,2]: equality must not
  exact.attributes = {{"tags", "[1]"}};
  queries.push_back(exact);
  EventQuery numeric = q;  // JSON equality: 200.0 is the number 200
  numeric.attributes = {{"status", "200.0"}};
  queries.push_back(numeric);
  EventQuery contradiction = q;  // the same key twice with different values matches nothing
  contradiction.attributes = {{"status", "200"}, {"status", "500"}};
  queries.push_back(contradiction);
  EventQuery all_filters = t;
  all_filters.type = "log";
  all_filters.attributes = {{"method", "\"POST\""}};
  queries.push_back(all_filters);
  EventQuery string_not_number = q;  // "200" (a string) is not 200
  string_not_number.attributes = {{"status", "\"200\""}};
  queries.push_back(string_not_number);

  for (size_t i = 0; i < queries.size(); ++i) {
    for (bool newest : {true, false}) {
      EventQuery x = queries[i];
      x.newest_first = newest;
      std::vector<EventKey> want = ExpectedKeys(all, x);
      EXPECT_EQ(Keys(x), want) << "query " << i << " newest " << newest;
      if (i == 0) {
        EXPECT_EQ(want.size(), 32u);
      }
      if (i == 5) {
        EXPECT_FALSE(want.empty());
      }
      if (i == 6) {
        EventQuery y = x;
        y.attributes = {{"status", "200"}};
        EXPECT_EQ(want, ExpectedKeys(all, y));
      }
      if (i == 7 || i == 9) {
        EXPECT_TRUE(want.empty());
      }
    }
  }
}

TEST_F(QueryTest, ReturnsEveryFieldAsStored) {
  StoredEvent s = MakeEvent("acme", kDay + 123, "full");
  Event& e = s.event;
  e.observed_unix_nanos = kDay + 100;
  e.severity_text = "ERROR";
  e.severity_number = 17;
  e.body_kind = BodyKind::kJson;
  e.body = R"({"k":[1,2,{"x":"y"}]})";
  e.attributes = {{"quote\"key", "\"v\\\"al\\n\""},
                  {"ключ", "\"значение\""},
                  {"n", "12345678901234567890"},
                  {"obj", "{\"a\": [true, null, 1.5]}"}};
  e.resource_attributes = {{"service.name", "\"svc\""}};
  e.scope_name = "scope";
  e.scope_version = "2.1";
  e.trace_id_hex = "0123456789abcdef0123456789abcdef";
  e.span_id_hex = "fedcba9876543210";
  e.flags = 0xFFFFFFFFu;
  e.dropped_attributes_count = 7;
  ASSERT_TRUE(InsertEvents(*conn_, {s}).ok());
  EventQuery q;
  q.org = "acme";
  Result<std::vector<StoredEvent>> r = QueryRecent(*conn_, q);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  StoredEvent got = (*r)[0];
  // jsonb orders keys its own way and normalises spacing: compare attributes as JSON.
  auto as_json = [](const std::vector<Attribute>& attrs) {
    nlohmann::json j = nlohmann::json::object();
    for (const Attribute& a : attrs) j[a.key] = nlohmann::json::parse(a.value_json);
    return j;
  };
  EXPECT_EQ(as_json(got.event.attributes), as_json(e.attributes));
  EXPECT_EQ(as_json(got.event.resource_attributes), as_json(e.resource_attributes));
  for (const Attribute& a : got.event.attributes) {
    if (a.key == "n") {
      EXPECT_EQ(a.value_json, "12345678901234567890");  // exact, not via a double
    }
    if (a.key == "obj") {
      EXPECT_EQ(a.value_json, "{\"a\":[true,null,1.5]}");  // compact
    }
  }
  EXPECT_EQ(nlohmann::json::parse(got.event.body), nlohmann::json::parse(e.body));
  got.event.attributes = e.attributes;
  got.event.resource_attributes = e.resource_attributes;
  got.event.body = e.body;
  EXPECT_EQ(got, s);
}

TEST_F(QueryTest, KeysetPagesInBothOrdersWithTiesOrderIdsAsBytes) {
  std::vector<StoredEvent> all;
  // Equal times: ids decide, byte-wise ("B" < "a" < "b"), whatever the database's collation.
  for (std::string id : {"a", "B", "b", "a1", "Z", "_"}) all.push_back(MakeEvent("acme", kDay, id));
  for (int i = 0; i < 10; ++i) all.push_back(MakeEvent("acme", kDay + 1 + i, "x" + std::to_string(i)));
  ASSERT_TRUE(InsertEvents(*conn_, all).ok());
  for (bool newest : {true, false}) {
    for (size_t limit : {1u, 2u, 3u, 5u, 100u}) {
      EventQuery q;
      q.org = "acme";
      q.newest_first = newest;
      q.limit = limit;
      std::vector<EventKey> got;
      while (true) {
        std::vector<EventKey> page = Keys(q);
        got.insert(got.end(), page.begin(), page.end());
        if (page.size() < limit) break;
        q.after = page.back();
      }
      EXPECT_EQ(got, ExpectedKeys(all, q)) << "newest " << newest << " limit " << limit;
    }
  }
}

// Events spread over PostgreSQL and the archive, interleaved in time, with ties and with some keys in
// both: every page walk returns each matching event exactly once, in order.
TEST_F(QueryTest, PagesOverPostgresAndArchiveHaveNoGapsOrRepeats) {
  std::vector<StoredEvent> all;
  MemoryArchive archive;
  std::vector<StoredEvent> recent;
  for (int i = 0; i < 600; ++i) {
    int64_t t = kDay - 300 * kNanosPerSecond + (i / 3) * kNanosPerSecond;  // three events per time
    StoredEvent s =
        MakeEvent("acme", t, "id" + std::to_string(1000 + (i * 7919) % 600), i % 4 == 0 ? "http" : "log");
    s.event.attributes = {{"n", std::to_string(i % 3)}};
    all.push_back(s);
    // Archive holds the older part and every 5th of the rest; a few are in both.
    bool archived = i < 250 || i % 5 == 0;
    if (archived) archive.events.push_back(s);
    if (!archived || i % 97 == 0) recent.push_back(s);
  }
  all.push_back(MakeEvent("other", kDay, "foreign"));
  recent.push_back(all.back());
  ASSERT_TRUE(InsertEvents(*conn_, recent).ok());

  for (bool newest : {true, false}) {
    for (size_t limit : {1u, 7u, 100u, 1000u}) {
      for (int filter = 0; filter < 3; ++filter) {
        EventQuery q;
        q.org = "acme";
        q.newest_first = newest;
        q.limit = limit;
        if (filter == 1) q.type = "http";
        if (filter == 2) {
          q.attributes = {{"n", "1"}};
          q.from_ns = kDay - 200 * kNanosPerSecond;
          q.to_ns = kDay - 50 * kNanosPerSecond;
        }
        std::vector<EventKey> want = ExpectedKeys(all, q);
        int pages = 0;
        std::vector<EventKey> got = WalkPages(q, &archive, &pages);
        EXPECT_EQ(got, want) << "newest " << newest << " limit " << limit << " filter " << filter;
        if (filter == 0) {
          EXPECT_EQ(want.size(), 600u);
        }
        EXPECT_EQ(static_cast<size_t>(pages), want.size() / limit + 1);
      }
    }
  }
}

// Compaction moves rows from PostgreSQL to the archive while a client pages: still exactly once.
TEST_F(QueryTest, RowsMovingToTheArchiveBetweenPagesAreNeitherLostNorRepeated) {
  std::vector<StoredEvent> all;
  for (int i = 0; i < 300; ++i) all.push_back(MakeEvent("acme", kDay + i * 1000, "m" + std::to_string(i)));
  ASSERT_TRUE(InsertEvents(*conn_, all).ok());
  for (bool newest : {true, false}) {
    MemoryArchive archive;
    ASSERT_TRUE(conn_->Exec("TRUNCATE telemetry_events").ok());
    ASSERT_TRUE(InsertEvents(*conn_, all).ok());
    int moved = 0;
    auto compact = [&] {
      // Move the oldest 25 rows still in PostgreSQL to the archive (copy first, as compaction does).
      Result<db::Rows> rows = conn_->Exec("SELECT time_ns FROM telemetry_events ORDER BY time_ns LIMIT 25");
      ASSERT_TRUE(rows.ok());
      for (int r = 0; r < rows->size(); ++r) {
        int64_t t = *rows->Int64(r, 0);
        for (const StoredEvent& s : all) {
          if (s.event.time_unix_nanos == t) archive.events.push_back(s);
        }
      }
      ASSERT_TRUE(conn_
                      ->Exec("DELETE FROM telemetry_events WHERE time_ns IN "
                             "(SELECT time_ns FROM telemetry_events ORDER BY time_ns LIMIT 25)")
                      .ok());
      moved += rows->size();
    };
    EventQuery q;
    q.org = "acme";
    q.newest_first = newest;
    q.limit = 20;
    std::vector<EventKey> got = WalkPages(q, &archive, nullptr, compact);
    EXPECT_EQ(got, ExpectedKeys(all, q)) << "newest " << newest;
    EXPECT_GT(moved, 100);
  }
}

TEST_F(QueryTest, AnArchiveThatBreaksItsContractCannotMakeAPageRepeat) {
  // A misbehaving archive returns everything, unsorted and ignoring the cursor.
  class Sloppy final : public ArchiveReader {
   public:
    std::vector<StoredEvent> events;
    Result<std::vector<StoredEvent>> Scan(const EventQuery&) override { return events; }
  } sloppy;
  std::vector<StoredEvent> all;
  for (int i = 0; i < 10; ++i) all.push_back(MakeEvent("acme", kDay + i, "s" + std::to_string(i)));
  for (int i = 9; i >= 0; i -= 2) sloppy.events.push_back(all[i]);
  EventQuery q;
  q.org = "acme";
  q.after = EventKey{kDay + 5, "s5"};
  q.limit = 10;
  Result<QueryPage> page = RunQuery(pool_.get(), &sloppy, q);
  ASSERT_TRUE(page.ok());
  std::set<EventKey> seen;
  for (const StoredEvent& s : page->events) {
    EXPECT_LT(s.key(), *q.after);
    EXPECT_TRUE(seen.insert(s.key()).second);
  }
}

TEST_F(QueryTest, UsesTheIndexesItWasBuiltFor) {
  std::vector<StoredEvent> all;
  for (int i = 0; i < 5000; ++i) {
    all.push_back(
        MakeEvent("acme", kDay + i * kNanosPerSecond, "p" + std::to_string(i), i % 10 ? "log" : "http"));
  }
  ASSERT_TRUE(InsertEvents(*conn_, all).ok());
  ASSERT_TRUE(conn_->ExecScript("ANALYZE telemetry_events").ok());
  auto plan = [&](const std::string& where) {
    Result<db::Rows> r = conn_->Exec(
        "EXPLAIN SELECT * FROM telemetry_events WHERE org = 'acme' AND time_ns >= 0 AND time_ns < " +
        std::to_string(INT64_MAX) + where);
    std::string text;
    if (r.ok()) {
      for (int i = 0; i < r->size(); ++i) text += std::string(r->Text(i, 0)) + "\n";
    }
    return text;
  };
  std::string newest = plan(" AND time_ns <= " + std::to_string(kDay + 4000 * kNanosPerSecond) +
                            " ORDER BY time_ns DESC, id COLLATE \"C\" DESC LIMIT 100");
  EXPECT_NE(newest.find("Index Scan Backward"), std::string::npos) << newest;
  EXPECT_EQ(newest.find("Seq Scan"), std::string::npos) << newest;
  std::string typed = plan(" AND type = 'http' ORDER BY time_ns, id COLLATE \"C\" LIMIT 100");
  EXPECT_NE(typed.find("org_type_time"), std::string::npos) << typed;
}

}  // namespace
}  // namespace govern::telemetry
