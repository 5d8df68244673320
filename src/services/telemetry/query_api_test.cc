// The query HTTP API through a real net::Server on a real socket, a real PostgreSQL, an in-memory
// archive and a fake key verifier (the real one is the intake's key store).
#include "services/telemetry/query_api.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "db/testing.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/telemetry/query.h"
#include "services/telemetry/query_test_util.h"
#include "services/telemetry/schema.h"

namespace govern::telemetry {
namespace {

using nlohmann::json;
using testing::InsertEvents;
using testing::MakeEvent;

constexpr int64_t kBase = 1'795'996'800'000'000'000;  // 2026-11-30T00:00:00Z

class QueryApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_.emplace(std::move(db).value());
    auto c = db::Connection::Connect(db_->conninfo());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    conn_ = std::move(c).value();
    ASSERT_TRUE(testing::ApplySchema(*conn_).ok());
    auto pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = 3});
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(pool).value();

    StartApi(&archive_, QueryApiOptions{.workers = 2});
  }

  void StartApi(ArchiveReader* archive, QueryApiOptions options) {
    if (server_) server_->Stop();
    api_ = std::make_unique<QueryApi>(pool_.get(), archive, options);
    net::Router router;
    api_->Register(router, [this](std::string_view key, std::function<void(Result<std::string>)> done) {
      Verify(std::string(key), std::move(done));
    });
    server_ = std::make_unique<net::Server>(net::ServerConfig{.workers = 1}, std::move(router));
    Status st = server_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }

  void TearDown() override {
    if (server_) server_->Stop();
    api_.reset();
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& t : verifier_threads_) t.join();
    verifier_threads_.clear();
    server_.reset();
    pool_.reset();
    conn_.reset();
  }

  // Like the real verifier, answers later on another thread (a key lookup in PostgreSQL).
  void Verify(std::string key, std::function<void(Result<std::string>)> done) {
    std::lock_guard<std::mutex> lock(mu_);
    verifier_threads_.emplace_back([key = std::move(key), done = std::move(done)] {
      if (key == "k-acme") return done(std::string("acme"));
      if (key == "k-other") return done(std::string("other"));
      if (key == "k-ingest") return done(PermissionDenied("ingest key"));
      if (key == "k-down") return done(Unavailable("key store down"));
      done(Unauthenticated("unknown key"));
    });
  }

  net::ClientResponse Send(net::Method method, const std::string& path_and_query, std::string key = "k-acme",
                           std::string body = {}, std::string content_type = "application/json") {
    net::ClientRequest req;
    req.method = method;
    req.url = base_ + path_and_query;
    if (!key.empty()) req.headers.Set("Authorization", "Bearer " + key);
    if (!body.empty()) {
      req.headers.Set("Content-Type", content_type);
      req.body = std::move(body);
    }
    Result<net::ClientResponse> r = client_.Send(std::move(req));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : net::ClientResponse{};
  }
  net::ClientResponse Get(const std::string& pq, std::string key = "k-acme") {
    return Send(net::Method::kGet, pq, std::move(key));
  }

  static std::string Range(int64_t from, int64_t to) {
    return "from=" + std::to_string(from) + "&to=" + std::to_string(to);
  }

  std::optional<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Connection> conn_;
  std::unique_ptr<db::Pool> pool_;
  testing::MemoryArchive archive_;
  std::unique_ptr<QueryApi> api_;
  std::unique_ptr<net::Server> server_;
  net::HttpClient client_;
  std::string base_;
  std::mutex mu_;
  std::vector<std::thread> verifier_threads_;
};

TEST_F(QueryApiTest, RefusesRequestsWithoutAValidQueryKey) {
  net::ClientResponse none = Get("/v1/query/events", "");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.headers.Get("WWW-Authenticate").value_or(""), "Bearer");
  EXPECT_EQ(none.headers.Get("Content-Type").value_or(""), "application/problem+json");
  EXPECT_EQ(Get("/v1/query/events", "k-wrong").status, 401);
  EXPECT_EQ(Get("/v1/query/events", "k-ingest").status, 403);
  net::ClientResponse down = Get("/v1/query/events", "k-down");
  EXPECT_EQ(down.status, 503);
  EXPECT_TRUE(down.headers.Has("Retry-After"));
  EXPECT_EQ(Get("/v1/query/dlp-policy", "").status, 401);
  EXPECT_EQ(Send(net::Method::kPut, "/v1/query/dlp-policy", "k-wrong", "{}").status, 401);
}

TEST_F(QueryApiTest, PagesThroughPostgresAndArchiveWithRedaction) {
  std::vector<StoredEvent> recent, all;
  for (int i = 0; i < 23; ++i) {
    StoredEvent s = MakeEvent("acme", kBase + i * kNanosPerSecond, "ev" + std::to_string(i), "login");
    s.event.body = "user" + std::to_string(i) + "@example.com signed in";
    s.event.attributes = {{"ip", "\"10.0.0." + std::to_string(i) + "\""}, {"attempt", std::to_string(i % 2)}};
    all.push_back(s);
    if (i < 9) {
      archive_.events.push_back(s);
    } else {
      recent.push_back(s);
    }
  }
  recent.push_back(MakeEvent("other", kBase, "foreign", "login"));
  ASSERT_TRUE(InsertEvents(*conn_, recent).ok());

  std::string query = "/v1/query/events?" + Range(kBase, kBase + kNanosPerHour) + "&limit=4";
  std::vector<std::string> ids;
  std::optional<std::string> cursor;
  int pages = 0;
  do {
    net::ClientResponse r = Get(query + (cursor ? "&cursor=" + *cursor : ""));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.headers.Get("Content-Type").value_or(""), "application/json");
    json page = json::parse(r.body);
    ASSERT_TRUE(page["events"].is_array());
    for (const json& e : page["events"]) {
      ids.push_back(e["id"]);
      EXPECT_EQ(e["body"], "[REDACTED:email] signed in") << e.dump();
      EXPECT_EQ(e["attributes"]["ip"], "[REDACTED:ipv4]");
      EXPECT_EQ(e["type"], "login");
      EXPECT_EQ(e["redacted"], false);
      int64_t t = std::stoll(e["time_unix_nano"].get<std::string>());
      EXPECT_EQ(e["time"], FormatRfc3339Nanos(t));
    }
    cursor = page["next_cursor"].is_null()
                 ? std::nullopt
                 : std::optional<std::string>(page["next_cursor"].get<std::string>());
    ++pages;
  } while (cursor && pages < 50);
  std::vector<std::string> want;
  for (int i = 22; i >= 0; --i) want.push_back("ev" + std::to_string(i));
  EXPECT_EQ(ids, want);
  EXPECT_EQ(pages, 6);

  // Oldest first with filters, one page.
  net::ClientResponse r = Get("/v1/query/events?" + Range(kBase, kBase + kNanosPerHour) +
                              "&order=oldest&type=login&attr=attempt:1&limit=1000");
  ASSERT_EQ(r.status, 200) << r.body;
  json page = json::parse(r.body);
  ASSERT_EQ(page["events"].size(), 11u);
  EXPECT_EQ(page["events"][0]["id"], "ev1");
  EXPECT_EQ(page["events"][10]["id"], "ev21");
  EXPECT_TRUE(page["next_cursor"].is_null());

  // Another organisation's key sees only its own events.
  json other = json::parse(Get("/v1/query/events?" + Range(kBase, kBase + kNanosPerHour), "k-other").body);
  ASSERT_EQ(other["events"].size(), 1u);
  EXPECT_EQ(other["events"][0]["id"], "foreign");
}

TEST_F(QueryApiTest, DefaultWindowIsTheLastHour) {
  int64_t now = Clock::Real().UnixMicros() * 1000;
  ASSERT_TRUE(InsertEvents(*conn_, {MakeEvent("acme", now - 10 * 60 * kNanosPerSecond, "recent"),
                                    MakeEvent("acme", now - 2 * kNanosPerHour, "old")})
                  .ok());
  json page = json::parse(Get("/v1/query/events").body);
  ASSERT_EQ(page["events"].size(), 1u);
  EXPECT_EQ(page["events"][0]["id"], "recent");
}

TEST_F(QueryApiTest, BadParametersAndForeignCursorsAre400NamingTheParameter) {
  auto detail = [&](const std::string& pq) {
    net::ClientResponse r = Get(pq);
    EXPECT_EQ(r.status, 400) << pq << " " << r.body;
    EXPECT_EQ(r.headers.Get("Content-Type").value_or(""), "application/problem+json");
    return json::parse(r.body).value("detail", "");
  };
  EXPECT_EQ(detail("/v1/query/events?limit=0").substr(0, 7), "limit: ");
  EXPECT_EQ(detail("/v1/query/events?order=up").substr(0, 7), "order: ");
  EXPECT_EQ(detail("/v1/query/events?from=soon").substr(0, 6), "from: ");
  EXPECT_EQ(detail("/v1/query/events?attr=method:GET").substr(0, 6), "attr: ");
  EXPECT_EQ(detail("/v1/query/events?colour=red").substr(0, 8), "colour: ");
  EXPECT_EQ(detail("/v1/query/events?cursor=%21%21").substr(0, 8), "cursor: ");

  // A cursor from one query used with other filters.
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(InsertEvents(*conn_, {MakeEvent("acme", kBase + i, "c" + std::to_string(i))}).ok());
  std::string range = Range(kBase, kBase + kNanosPerHour);
  json first = json::parse(Get("/v1/query/events?" + range + "&limit=1").body);
  ASSERT_TRUE(first["next_cursor"].is_string());
  std::string cursor = first["next_cursor"];
  EXPECT_EQ(detail("/v1/query/events?" + range + "&limit=1&type=log&cursor=" + cursor).substr(0, 8),
            "cursor: ");
  EXPECT_EQ(detail("/v1/query/events?" + range + "&limit=1&order=oldest&cursor=" + cursor).substr(0, 8),
            "cursor: ");
  // The same query (the time range may be left to the cursor) continues.
  json second = json::parse(Get("/v1/query/events?limit=1&cursor=" + cursor).body);
  ASSERT_EQ(second["events"].size(), 1u);
  EXPECT_EQ(second["events"][0]["id"], "c1");
}

TEST_F(QueryApiTest, PolicyEndpointsValidateStoreAndChangeRedaction) {
  StoredEvent s = MakeEvent("acme", kBase, "p1");
  s.event.body = "mail alice@example.com badge EMP-123456";
  ASSERT_TRUE(InsertEvents(*conn_, {s}).ok());
  std::string events = "/v1/query/events?" + Range(kBase, kBase + 1000);
  EXPECT_EQ(json::parse(Get(events).body)["events"][0]["body"], "mail [REDACTED:email] badge EMP-123456");

  json def = json::parse(Get("/v1/query/dlp-policy").body);
  EXPECT_EQ(def["default_action"], "mask");
  EXPECT_TRUE(def["updated_at"].is_null());

  net::ClientResponse bad = Send(net::Method::kPut, "/v1/query/dlp-policy", "k-acme",
                                 R"({"custom_rules":[{"id":"badge","pattern":7}]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["detail"], "custom_rules[0].pattern: must be a string");
  net::ClientResponse bad2 = Send(net::Method::kPut, "/v1/query/dlp-policy", "k-acme",
                                  R"({"custom_rules":[{"id":"badge","pattern":"EMP-(["}]})");
  EXPECT_EQ(bad2.status, 400);
  EXPECT_NE(json::parse(bad2.body)["detail"].get<std::string>().find("custom rule 0 (\"badge\")"),
            std::string::npos);
  EXPECT_EQ(Send(net::Method::kPut, "/v1/query/dlp-policy", "k-acme", "{}", "text/plain").status, 415);

  net::ClientResponse put = Send(net::Method::kPut, "/v1/query/dlp-policy", "k-acme",
                                 R"({"custom_rules":[{"id":"badge","pattern":"EMP-[0-9]{6}"}],
                                     "actions":{"email":"hash","badge":"drop"},"hash_key":"k3y"})");
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(put.body.find("k3y"), std::string::npos);
  json shown = json::parse(Get("/v1/query/dlp-policy").body);
  EXPECT_EQ(shown["hash_key_set"], true);
  EXPECT_FALSE(shown.contains("hash_key"));
  EXPECT_EQ(shown["custom_rules"][0]["id"], "badge");

  // The API's own change takes effect at once (its cache entry is dropped).
  json e = json::parse(Get(events).body)["events"][0];
  EXPECT_TRUE(e["body"].is_null()) << e.dump();  // badge: drop
  EXPECT_EQ(e["redacted"], true);
  s.event.id = "p2";
  s.event.body = "mail alice@example.com";
  ASSERT_TRUE(InsertEvents(*conn_, {s}).ok());
  json p2 = json::parse(Get(events + "&order=oldest").body)["events"][1];
  EXPECT_EQ(p2["body"].get<std::string>().substr(0, 17), "mail [HASH:email:") << p2.dump();

  // Another organisation's policy is untouched.
  EXPECT_TRUE(json::parse(Get("/v1/query/dlp-policy", "k-other").body)["updated_at"].is_null());

  net::ClientResponse del = Send(net::Method::kDelete, "/v1/query/dlp-policy");
  ASSERT_EQ(del.status, 200);
  EXPECT_EQ(json::parse(del.body)["deleted"], true);
  EXPECT_EQ(json::parse(Get(events + "&order=oldest").body)["events"][0]["body"],
            "mail [REDACTED:email] badge EMP-123456");
}

TEST_F(QueryApiTest, ArchiveFailuresAndAFullQueueAreServerErrorsWithoutDetail) {
  class Failing final : public ArchiveReader {
   public:
    Status status;
    Result<std::vector<StoredEvent>> Scan(const EventQuery&) override { return status; }
  } failing;
  std::string events = "/v1/query/events?" + Range(kBase, kBase + 1000);
  failing.status = Unavailable("object store unreachable");
  StartApi(&failing, QueryApiOptions{.workers = 1});
  net::ClientResponse down = Get(events);
  EXPECT_EQ(down.status, 503);
  EXPECT_TRUE(down.headers.Has("Retry-After"));
  failing.status = DataLoss("s3://bucket/secret-path.parquet: bad footer");
  net::ClientResponse broken = Get(events);
  EXPECT_EQ(broken.status, 500);
  EXPECT_EQ(broken.body.find("secret-path"), std::string::npos) << broken.body;  // logged, not shown

  // No room in the queue: refused at once with 503, never left hanging.
  StartApi(&archive_, QueryApiOptions{.workers = 1, .max_queued = 0});
  net::ClientResponse full = Get(events);
  EXPECT_EQ(full.status, 503);
  EXPECT_EQ(full.headers.Get("Retry-After").value_or(""), "1");
}

}  // namespace
}  // namespace govern::telemetry
