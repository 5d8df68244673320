// Budget spend leases against a real PostgreSQL (ctest's pg fixture): two replicas sharing one budget,
// sequentially and concurrently with their background syncs; a replica that stops renewing loses its
// lease to the other; and the proxy's budget refusal in each SDK's shape, recorded.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/clock.h"
#include "db/connection.h"
#include "db/pool.h"
#include "db/testing.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/gateway/budget.h"
#include "services/gateway/governance.h"
#include "services/gateway/schema.h"
#include "services/gateway/test_util.h"
#include "services/model_stub/server.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

class BudgetPgTest : public testing::PgFixture {
 protected:
  void SetUp() override { OpenDatabase(6); }

  std::unique_ptr<db::Connection> Conn() {
    auto c = db::Connection::Connect(db_->conninfo());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  static std::vector<BudgetConfig> Budget(std::string_view json) {
    auto b = ParseBudgets(json);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? *b : std::vector<BudgetConfig>{};
  }

  // (claimed, spent) of the budget's row in its only period.
  std::pair<int64_t, int64_t> Row(std::string_view id) {
    auto c = Conn();
    auto rows = c->Exec("SELECT claimed_micros, spent_micros FROM gateway_budgets WHERE budget_id = $1",
                        db::Params(id));
    EXPECT_TRUE(rows.ok() && rows->size() == 1);
    if (!rows.ok() || rows->size() != 1) return {-1, -1};
    return {*rows->Int64(0, 0), *rows->Int64(0, 1)};
  }
};

// Spends `cost` per request on alternating replicas, renewing a lease every third request and after
// every refusal, until neither admits anything even right after a renewal. Returns the total spent.
int64_t SpendUntilRefused(BudgetBook* books[2], db::Connection* conns[2], double cost,
                          const BudgetSubject& who) {
  int64_t spent = 0;
  int refused_in_a_row = 0;
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(books[r]->SyncOnce(*conns[r]).ok());  // as at start
  for (int i = 0; i < 100000 && refused_in_a_row < 4; ++i) {
    BudgetBook& book = *books[i % 2];
    db::Connection& conn = *conns[i % 2];
    if (i % 3 == 0) {
      EXPECT_TRUE(book.SyncOnce(conn).ok());
    }
    auto t = book.Admit(who);
    if (t.ok()) {
      book.Settle(*t, cost);
      spent += CostToMicros(cost);
      refused_in_a_row = 0;
    } else {
      EXPECT_EQ(t.status().code(), Code::kResourceExhausted) << t.status().ToString();
      ++refused_in_a_row;
      EXPECT_TRUE(book.SyncOnce(conn).ok());
    }
  }
  EXPECT_EQ(refused_in_a_row, 4);
  return spent;
}

TEST_F(BudgetPgTest, TwoReplicasShareOneBudgetWithoutOvershootWhenTheReserveCoversARequest) {
  // Limit 1.00 in leases of 0.10; each request reserves 0.03 and costs 0.03: no request can run past
  // what its replica holds, so the two together never spend more than the limit.
  const char* kBudget = R"({"budgets": [{"id": "acme", "scope": "org", "org": "acme", "limit": 1,
                            "lease": 0.1, "reserve": 0.03}]})";
  BudgetBook r1(Budget(kBudget), {.replica = "r1"});
  BudgetBook r2(Budget(kBudget), {.replica = "r2"});
  auto c1 = Conn(), c2 = Conn();
  BudgetBook* books[2] = {&r1, &r2};
  db::Connection* conns[2] = {c1.get(), c2.get()};
  int64_t spent = SpendUntilRefused(books, conns, 0.03, {.org = "acme"});
  EXPECT_LE(spent, 1'000'000);
  // Nearly all of it was usable: what is left is less than a request per replica and in the row.
  EXPECT_GT(spent, 1'000'000 - 3 * 30'000);
  // Both replicas spent from it.
  EXPECT_GT(r1.ViewOf("acme").spent, 0);
  EXPECT_GT(r2.ViewOf("acme").spent, 0);
  ASSERT_TRUE(r1.SyncOnce(*c1).ok());
  ASSERT_TRUE(r2.SyncOnce(*c2).ok());
  auto [claimed, row_spent] = Row("acme");
  EXPECT_EQ(row_spent, spent);
  EXPECT_LE(claimed, 1'000'000);
  // Another organisation is not charged to it.
  auto other = r1.Admit({.org = "globex"});
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->empty());
  // Releasing gives the unspent part back: the row then claims exactly what was spent.
  ASSERT_TRUE(r1.ReleaseAll(*c1).ok());
  ASSERT_TRUE(r2.ReleaseAll(*c2).ok());
  auto [claimed2, spent2] = Row("acme");
  EXPECT_EQ(claimed2, spent);
  EXPECT_EQ(spent2, spent);
}

TEST_F(BudgetPgTest, WithoutAReserveTheOvershootIsAtMostOneRequestPerReplica) {
  // No reserve: a request is admitted while its replica holds any room at all, and its cost (0.07) is
  // known only afterwards; run sequentially, each replica overshoots by less than one request.
  const char* kBudget = R"({"budgets": [{"id": "k", "scope": "key", "key": "gvg_k1", "limit": 1,
                            "lease": 0.2}]})";
  BudgetBook r1(Budget(kBudget), {.replica = "r1"});
  BudgetBook r2(Budget(kBudget), {.replica = "r2"});
  auto c1 = Conn(), c2 = Conn();
  BudgetBook* books[2] = {&r1, &r2};
  db::Connection* conns[2] = {c1.get(), c2.get()};
  int64_t spent = SpendUntilRefused(books, conns, 0.07, {.org = "acme", .key = "gvg_k1"});
  EXPECT_GE(spent, 1'000'000);
  EXPECT_LT(spent, 1'000'000 + 2 * 70'000);
  ASSERT_TRUE(r1.SyncOnce(*c1).ok());
  ASSERT_TRUE(r2.SyncOnce(*c2).ok());
  auto [claimed, row_spent] = Row("k");
  EXPECT_EQ(row_spent, spent);
  EXPECT_EQ(claimed, spent);  // the overrun was claimed past the limit, so the row shows it
}

TEST_F(BudgetPgTest, ConcurrentReplicasWithBackgroundSyncStayWithinTheLimit) {
  const char* kBudget = R"({"budgets": [{"id": "team", "scope": "team", "members": ["Agent:a1", "gvg_k2"],
                            "limit": 2, "lease": 0.05, "reserve": 0.01}]})";
  BudgetBook r1(Budget(kBudget), {.replica = "r1"});
  BudgetBook r2(Budget(kBudget), {.replica = "r2"});
  BudgetSync s1(r1, *pool_, std::chrono::milliseconds(2));
  BudgetSync s2(r2, *pool_, std::chrono::milliseconds(2));
  ASSERT_TRUE(s1.Start().ok());
  ASSERT_TRUE(s2.Start().ok());
  std::atomic<int64_t> spent{0};
  std::atomic<int> exhausted{0};
  auto worker = [&](BudgetBook& book, BudgetSubject who) {
    int refused = 0;
    // Until this worker has seen the budget exhausted many times over (the leases keep renewing).
    for (int i = 0; i < 2'000'000 && refused < 200; ++i) {
      auto t = book.Admit(who);
      if (!t.ok()) {
        if (t.status().code() == Code::kResourceExhausted) ++refused;
        std::this_thread::yield();
        continue;
      }
      book.Settle(*t, 0.01);
      spent += 10'000;
    }
    if (refused >= 200) ++exhausted;
  };
  std::vector<std::thread> threads;
  threads.emplace_back(worker, std::ref(r1), BudgetSubject{.org = "acme", .principal = "Agent:a1"});
  threads.emplace_back(worker, std::ref(r1), BudgetSubject{.org = "acme", .key = "gvg_k2"});
  threads.emplace_back(worker, std::ref(r2), BudgetSubject{.org = "acme", .principal = "Agent:a1"});
  threads.emplace_back(worker, std::ref(r2), BudgetSubject{.org = "acme", .key = "gvg_k2"});
  for (auto& t : threads) t.join();
  EXPECT_EQ(exhausted.load(), 4);
  // Reserve == cost: never past the limit, however the syncs and requests interleave.
  EXPECT_LE(spent.load(), 2'000'000);
  EXPECT_GT(spent.load(), 0);
  s1.Stop();
  s2.Stop();
  auto [claimed, row_spent] = Row("team");
  EXPECT_EQ(row_spent, spent.load());
  EXPECT_EQ(claimed, spent.load());  // both released their leases at Stop
}

TEST_F(BudgetPgTest, AnExpiredLeaseIsTakenBackByTheOtherReplica) {
  const char* kBudget = R"({"budgets": [{"id": "acme", "scope": "org", "org": "acme", "limit": 1,
                            "lease": 0.5}]})";
  // A lease counts as dead in the row once its renewal is 2 s old (PostgreSQL's clock: r2 takes it back
  // then); a replica stops spending from its own lease 1 s after it sent the renewal (its own monotonic
  // clock: manual here, so that a slow machine cannot expire a lease between two lines of the test).
  ManualClock clock1, clock2;
  BudgetBook r1(Budget(kBudget), {.replica = "r1", .lease_ttl = std::chrono::seconds(2), .clock = &clock1});
  BudgetBook r2(Budget(kBudget), {.replica = "r2", .lease_ttl = std::chrono::seconds(2), .clock = &clock2});
  auto c1 = Conn(), c2 = Conn();
  ASSERT_TRUE(r1.SyncOnce(*c1).ok());
  auto t = r1.Admit({.org = "acme"});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  r1.Settle(*t, 0.1);
  ASSERT_TRUE(r1.SyncOnce(*c1).ok());  // reports 0.1 spent, holds 0.5
  ASSERT_TRUE(r2.SyncOnce(*c2).ok());  // gets the other 0.5
  EXPECT_EQ(r2.ViewOf("acme").held, 500'000);
  // r1 stops renewing (a pause, a partition, a crash). Half a TTL after its renewal it spends nothing
  // more from its lease ...
  clock1.Advance(std::chrono::milliseconds(1001));
  EXPECT_EQ(r1.Admit({.org = "acme"}).status().code(), Code::kUnavailable);
  // ... and once the renewal is a TTL old in PostgreSQL's time, r2 takes back its unspent 0.4.
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  ASSERT_TRUE(r2.SyncOnce(*c2).ok());  // ... r2 takes back its unspent 0.4
  // r2 spends its lease down; its next claims get what r1 held unspent.
  for (int i = 0; i < 5; ++i) {
    auto u = r2.Admit({.org = "acme"});
    ASSERT_TRUE(u.ok()) << u.status().ToString();
    r2.Settle(*u, 0.1);
  }
  ASSERT_TRUE(r2.SyncOnce(*c2).ok());
  EXPECT_EQ(r2.ViewOf("acme").held, 900'000);
  // r1 comes back: its row is gone, so it holds only what it had reported spent, and has nothing left.
  ASSERT_TRUE(r1.SyncOnce(*c1).ok());
  EXPECT_EQ(r1.ViewOf("acme").held, 100'000);
  EXPECT_EQ(r1.Admit({.org = "acme"}).status().code(), Code::kResourceExhausted);
  auto [claimed, spent] = Row("acme");
  EXPECT_EQ(claimed, 1'000'000);
  EXPECT_EQ(spent, 600'000);
}

// With reserve 0 a request admitted in one period and settled after the period ended holds nothing, yet
// its cost must still reach the old period's row: the lease stays (neither released nor forgotten) while
// a ticket of it is out.
TEST_F(BudgetPgTest, ARequestSettledAfterItsPeriodEndedIsStillCounted) {
  const char* kBudget = R"({"budgets": [{"id": "acme", "scope": "org", "org": "acme", "limit": 1,
                            "lease": 0.5, "period": "hour"}]})";
  ManualClock clock;
  BudgetBook r1(Budget(kBudget), {.replica = "r1", .lease_ttl = std::chrono::hours(10), .clock = &clock});
  auto c1 = Conn();
  ASSERT_TRUE(r1.SyncOnce(*c1).ok());
  const std::string first = PeriodKey(BudgetPeriod::kHour, clock.UnixMicros());
  auto settled = r1.Admit({.org = "acme"});
  ASSERT_TRUE(settled.ok()) << settled.status().ToString();
  r1.Settle(*settled, 0.1);
  auto late = r1.Admit({.org = "acme"});  // still in flight when the hour ends
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  clock.Advance(std::chrono::hours(1));
  ASSERT_NE(PeriodKey(BudgetPeriod::kHour, clock.UnixMicros()), first);
  ASSERT_TRUE(r1.SyncOnce(*c1).ok());  // the past period's lease would be released here
  r1.Settle(*late, 0.25);
  ASSERT_TRUE(r1.SyncOnce(*c1).ok());  // now it is, with the late cost
  ASSERT_TRUE(r1.SyncOnce(*c1).ok());
  auto rows = c1->Exec(
      "SELECT claimed_micros, spent_micros FROM gateway_budgets WHERE budget_id = 'acme' AND period = $1",
      db::Params(first));
  ASSERT_TRUE(rows.ok() && rows->size() == 1);
  EXPECT_EQ(*rows->Int64(0, 1), 350'000);
  EXPECT_EQ(*rows->Int64(0, 0), 350'000);  // what was unspent went back
  auto leases = c1->Exec("SELECT count(*) FROM gateway_budget_leases WHERE period = $1", db::Params(first));
  ASSERT_TRUE(leases.ok());
  EXPECT_EQ(*leases->Int64(0, 0), 0);
}

// The proxy refuses a request once the budget is spent: OpenAI's insufficient_quota and Anthropic's
// rate_limit_error, recorded as budget_exhausted.
TEST_F(BudgetPgTest, TheProxyAnswersAnExhaustedBudgetInEachSdksShape) {
  auto stub = model_stub::StubServer::Start({.port = 0, .threads = 1});
  ASSERT_TRUE(stub.ok()) << stub.status().ToString();
  std::string base = "http://127.0.0.1:" + std::to_string((*stub)->port());
  auto gov = std::make_shared<Governance>();
  gov->budgets = std::make_unique<BudgetBook>(
      Budget(R"({"budgets": [{"id": "acme-month", "scope": "org", "org": "acme", "limit": 0.001,
                  "lease": 0.001}]})"),
      BudgetOptions{.replica = "p1"});
  auto conn = Conn();
  ASSERT_TRUE(gov->budgets->SyncOnce(*conn).ok());
  std::vector<UsageRecord> records;
  std::mutex mu;
  ProxyConfig c;
  c.routes = {{"gpt-stub", base, WireFormat::kOpenAI, ""}, {"claude-stub", base, WireFormat::kAnthropic, ""}};
  c.keys = {{"gvg_budget_key_1", "acme", 0, 0}};
  // Expensive enough that a few answers spend the 0.001.
  c.prices["gpt-stub"] = {100.0, 100.0, 100.0};
  c.prices["claude-stub"] = {100.0, 100.0, 100.0};
  c.governance = gov;
  c.on_record = [&](const UsageRecord& r) {
    std::lock_guard lock(mu);
    records.push_back(r);
  };
  auto served = testing::ServeProxy(std::move(c), net::ServerConfig{}.workers);
  ASSERT_TRUE(served.ok()) << served.status().ToString();
  const std::string& url = served->url;
  net::HttpClient client;
  auto post = [&](bool anthropic) {
    net::ClientRequest r;
    r.method = net::Method::kPost;
    r.headers.Set("Content-Type", "application/json");
    if (anthropic) {
      r.url = url + "/v1/messages";
      r.headers.Set("x-api-key", "gvg_budget_key_1");
      r.body = R"({"model":"claude-stub","max_tokens":16,"messages":[{"role":"user","content":"hi"}]})";
    } else {
      r.url = url + "/v1/chat/completions";
      r.headers.Set("Authorization", "Bearer gvg_budget_key_1");
      r.body = R"({"model":"gpt-stub","messages":[{"role":"user","content":"hi"}]})";
    }
    auto resp = client.Send(std::move(r));
    EXPECT_TRUE(resp.ok()) << resp.status().ToString();
    return resp.ok() ? *resp : net::ClientResponse{};
  };
  int answered = 0;
  net::ClientResponse refused;
  for (int i = 0; i < 100; ++i) {
    refused = post(false);
    if (refused.status != 200) break;
    ++answered;
  }
  EXPECT_GE(answered, 1);
  ASSERT_EQ(refused.status, 429) << refused.body;
  Json j = Json::parse(refused.body);
  EXPECT_EQ(j["error"]["type"], "insufficient_quota");
  EXPECT_EQ(j["error"]["code"], "insufficient_quota");
  EXPECT_EQ(refused.headers.Get("x-should-retry").value_or(""), "false");
  auto a = post(true);
  EXPECT_EQ(a.status, 429);
  j = Json::parse(a.body);
  EXPECT_EQ(j["type"], "error");
  EXPECT_EQ(j["error"]["type"], "rate_limit_error");
  served->server->Stop();
  served->proxy.reset();
  (*stub)->Stop();
  std::lock_guard lock(mu);
  ASSERT_EQ(records.size(), static_cast<size_t>(answered + 2));
  EXPECT_GT(records[0].cost, 0);
  EXPECT_EQ(records[answered].status, 429);
  EXPECT_EQ(records[answered].decision, "budget_exhausted");
  EXPECT_EQ(records[answered].decision_reason, "acme-month");
  EXPECT_EQ(records[answered + 1].decision, "budget_exhausted");
  // What the answered requests cost was settled against the budget.
  int64_t total = 0;
  for (int i = 0; i < answered; ++i) total += CostToMicros(records[i].cost);
  EXPECT_EQ(gov->budgets->ViewOf("acme-month").spent, total);
  EXPECT_GE(total, 1'000);
}

}  // namespace
}  // namespace govern::gateway
