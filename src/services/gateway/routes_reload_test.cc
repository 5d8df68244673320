// Reloading the routes file (routes_reload.h) with real files and sockets: a route added to the file
// starts answering, a broken file keeps the routes in place whole, a removed deployment gets no more
// calls, a deployment still there keeps its breaker state and its calls in flight (which finish on the
// routes they began with), DLP rules change, and the polling thread picks a change up by itself.
#include "services/gateway/routes_reload.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/file.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/gateway/proxy.h"
#include "services/gateway/test_util.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

constexpr const char* kReloadKey = "gvg_reload_test_0001";

std::string ChatAnswer() {
  return R"({"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})";
}

// An OpenAI-format provider that counts the calls it answers and can hold them until released.
class Provider {
 public:
  Provider() {
    net::Router router;
    router.AddSync(net::Method::kPost, "/v1/chat/completions", [this](net::Request& req) {
      std::unique_lock lock(mu_);
      ++calls_;
      last_body_ = req.body;
      ++arrived_;
      cv_.notify_all();
      cv_.wait(lock, [this] { return !hold_; });
      return net::Response(200, ChatAnswer(), "application/json");
    });
    net::ServerConfig sc;
    sc.workers = 2;
    server_ = std::make_unique<net::Server>(sc, std::move(router));
    EXPECT_TRUE(server_->Start().ok());
  }
  ~Provider() {
    Release();
    server_->Stop();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  int calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  std::string last_body() {
    std::lock_guard lock(mu_);
    return last_body_;
  }
  void Hold() {
    std::lock_guard lock(mu_);
    hold_ = true;
  }
  void Release() {
    std::lock_guard lock(mu_);
    hold_ = false;
    cv_.notify_all();
  }
  bool WaitArrived(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return arrived_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0, arrived_ = 0;
  bool hold_ = false;
  std::string last_body_;
  std::unique_ptr<net::Server> server_;
};

class RoutesReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/routes_reload_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    file_ = dir_ + "/routes.json";
  }
  void TearDown() override {
    reloader_.reset();
    if (server_) server_->Stop();
    proxy_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Writes the file as an operator should: a new file renamed over the old.
  void Write(const Json& j) { Write(j.dump()); }
  void Write(const std::string& text) { ASSERT_TRUE(ReplaceFileDurably(file_, text).ok()); }

  static Json Keys() { return Json::array({{{"key", kReloadKey}, {"org", "acme"}}}); }
  static Json Model(const std::string& model, std::vector<std::pair<std::string, std::string>> deployments,
                    Json breaker = nullptr) {
    Json d = Json::array();
    for (auto& [name, url] : deployments)
      d.push_back({{"name", name}, {"provider", "openai"}, {"base_url", url}});
    Json m = {{"model", model}, {"deployments", d}};
    if (!breaker.is_null()) m["breaker"] = breaker;
    return m;
  }

  void Start(const Json& routes_file, std::chrono::milliseconds interval = std::chrono::milliseconds(0)) {
    Write(routes_file);
    auto config = ParseProxyConfig(routes_file.dump());
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    config->on_record = [this](const UsageRecord& r) {
      std::lock_guard lock(records_mu_);
      records_.push_back(r);
    };
    auto served = testing::ServeProxy(std::move(*config), 2);
    ASSERT_TRUE(served.ok()) << served.status().ToString();
    proxy_ = std::move(served->proxy);
    server_ = std::move(served->server);
    reloader_ = std::make_unique<RoutesReloader>(
        *proxy_,
        RoutesReloadOptions{.file = file_, .interval = interval, .initial_text = routes_file.dump()});
    reloader_->Start();
  }

  net::ClientResponse Chat(const std::string& model, const std::string& text = "hello") {
    net::ClientRequest r;
    r.method = net::Method::kPost;
    r.url = "http://127.0.0.1:" + std::to_string(server_->port()) + "/v1/chat/completions";
    r.headers.Set("Authorization", std::string("Bearer ") + kReloadKey);
    r.headers.Set("Content-Type", "application/json");
    r.body = Json{{"model", model}, {"messages", {{{"role", "user"}, {"content", text}}}}}.dump();
    auto resp = client_.Send(std::move(r));
    EXPECT_TRUE(resp.ok()) << resp.status().ToString();
    return resp.ok() ? *resp : net::ClientResponse{};
  }

  std::vector<UsageRecord> Records() {
    std::lock_guard lock(records_mu_);
    return records_;
  }

  std::string dir_, file_;
  std::mutex records_mu_;
  std::vector<UsageRecord> records_;
  std::unique_ptr<Proxy> proxy_;
  std::unique_ptr<net::Server> server_;
  std::unique_ptr<RoutesReloader> reloader_;
  net::HttpClient client_;
};

TEST_F(RoutesReloadTest, ANewRouteAnswersOnceTheFileChanges) {
  Provider a, b;
  Json file = {{"routes", {Model("m-a", {{"a", a.url()}})}}, {"keys", Keys()}};
  Start(file);
  EXPECT_EQ(Chat("m-a").status, 200);
  EXPECT_EQ(Chat("m-b").status, 404);
  EXPECT_TRUE(reloader_->CheckOnce().ok());  // unchanged: nothing to do
  EXPECT_EQ(reloader_->reloads(), 0u);

  file["routes"].push_back(Model("m-b", {{"b", b.url()}}));
  Write(file);
  ASSERT_TRUE(reloader_->CheckOnce().ok());
  EXPECT_EQ(reloader_->reloads(), 1u);
  EXPECT_EQ(Chat("m-b").status, 200);
  EXPECT_EQ(Chat("m-a").status, 200);
  EXPECT_EQ(b.calls(), 1);
  EXPECT_EQ(a.calls(), 2);
}

TEST_F(RoutesReloadTest, ABrokenFileKeepsTheRoutesInPlaceWhole) {
  Provider a, b;
  Json good = {{"routes", {Model("m-a", {{"a", a.url()}})}}, {"keys", Keys()}};
  Start(good);
  // Each breaks one part only; the new model beside it must not appear either.
  Json bad_provider = good;
  bad_provider["routes"].push_back(Model("m-b", {{"b", b.url()}}));
  bad_provider["routes"][0]["deployments"][0]["provider"] = "nonesuch";
  Json bad_dlp = good;
  bad_dlp["routes"].push_back(Model("m-b", {{"b", b.url()}}));
  bad_dlp["dlp"] = {{"default", {{"mode", "sometimes"}}}};
  Json bad_fallback = good;
  bad_fallback["routes"].push_back(Model("m-b", {{"b", b.url()}}));
  bad_fallback["routes"][1]["fallbacks"] = {"m-nowhere"};
  Json bad_budget = good;
  bad_budget["routes"].push_back(Model("m-b", {{"b", b.url()}}));
  bad_budget["budgets"] = {{{"id", "x"}, {"scope", "galaxy"}, {"limit", 1}}};
  Json no_key = good;
  no_key["routes"].push_back(Model("m-b", {{"b", b.url()}}));
  no_key["keys"].push_back({{"key", "not-a-gvg-key"}, {"org", "acme"}});
  uint64_t failures = 0;
  for (const std::string& text : {std::string("{\"routes\": [ {\"model\": \"m-b\", "), bad_provider.dump(),
                                  bad_dlp.dump(), bad_fallback.dump(), bad_budget.dump(), no_key.dump()}) {
    Write(text);
    Status s = reloader_->CheckOnce();
    EXPECT_FALSE(s.ok()) << text;
    EXPECT_EQ(reloader_->failures(), ++failures);
    EXPECT_EQ(Chat("m-a").status, 200) << text;
    EXPECT_EQ(Chat("m-b").status, 404) << text;
    // Reported once per change, not at every poll.
    EXPECT_TRUE(reloader_->CheckOnce().ok());
  }
  EXPECT_EQ(b.calls(), 0);
  EXPECT_EQ(reloader_->reloads(), 0u);
  // A missing file fails too, and the routes stay.
  std::filesystem::remove(file_);
  EXPECT_FALSE(reloader_->ReloadNow().ok());
  EXPECT_EQ(Chat("m-a").status, 200);
  // Fixed: picked up.
  good["routes"].push_back(Model("m-b", {{"b", b.url()}}));
  Write(good);
  ASSERT_TRUE(reloader_->CheckOnce().ok());
  EXPECT_EQ(Chat("m-b").status, 200);
}

TEST_F(RoutesReloadTest, ARemovedDeploymentGetsNoMoreCalls) {
  Provider a, b;
  Start({{"routes", {Model("m", {{"a", a.url()}, {"b", b.url()}})}}, {"keys", Keys()}});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Chat("m").status, 200);
  EXPECT_EQ(a.calls(), 2);
  EXPECT_EQ(b.calls(), 2);
  Write(Json{{"routes", {Model("m", {{"a", a.url()}})}}, {"keys", Keys()}});
  ASSERT_TRUE(reloader_->ReloadNow().ok());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(Chat("m").status, 200);
  EXPECT_EQ(a.calls(), 8);
  EXPECT_EQ(b.calls(), 2);
  EXPECT_FALSE(proxy_->route_table().State("m", "b").has_value());
}

TEST_F(RoutesReloadTest, BreakerStateAndCallsInFlightCarryOverAndOldCallsFinish) {
  Provider a, held;
  // "dead" refuses connections: a closed port.
  std::string dead;
  {
    Provider gone;
    dead = gone.url();
  }
  Json breaker = {{"consecutive_failures", 1}, {"cooldown_ms", 3600000}};
  Json file = {
      {"routes", {Model("m", {{"a", a.url()}, {"dead", dead}}, breaker), Model("slow", {{"s", held.url()}})}},
      {"keys", Keys()}};
  Start(file);
  // Opens "dead"'s breaker (each deployment is tried once in turn).
  for (int i = 0; i < 2; ++i) Chat("m");
  ASSERT_TRUE(proxy_->route_table().State("m", "dead").value().open);

  // A call held by the provider while the file changes.
  held.Hold();
  auto in_flight = std::async(std::launch::async, [&] { return Chat("slow").status; });
  ASSERT_TRUE(held.WaitArrived(1));
  EXPECT_EQ(proxy_->route_table().State("slow", "s").value().in_flight, 1);

  // The reload moves "slow" to another deployment name at the same URL (new state) and adds a model.
  Provider c;
  file["routes"].push_back(Model("m-c", {{"c", c.url()}}));
  Write(file);
  ASSERT_TRUE(reloader_->ReloadNow().ok());
  // Still there: the open breaker and the call in flight.
  EXPECT_TRUE(proxy_->route_table().State("m", "dead").value().open);
  EXPECT_EQ(proxy_->route_table().State("slow", "s").value().in_flight, 1);
  EXPECT_EQ(Chat("m-c").status, 200);
  // The held call finishes (on the table it began with) and its count leaves the new table.
  held.Release();
  EXPECT_EQ(in_flight.get(), 200);
  EXPECT_EQ(proxy_->route_table().State("slow", "s").value().in_flight, 0);
  // A deployment that is new (its base URL changed) starts closed.
  file["routes"][0]["deployments"][1]["base_url"] = a.url();
  Write(file);
  ASSERT_TRUE(reloader_->ReloadNow().ok());
  EXPECT_FALSE(proxy_->route_table().State("m", "dead").value().open);
}

// A request in flight is priced from the table it began with: a reload that changes or drops the
// model's price charges only the requests that begin after it.
TEST_F(RoutesReloadTest, ARequestInFlightKeepsThePricesItBeganWith) {
  Provider held;
  // Per million tokens; the answer has 3 input and 2 output tokens.
  Json file = {{"routes", {Model("slow", {{"s", held.url()}})}},
               {"keys", Keys()},
               {"prices", {{"slow", {{"input", 1000000.0}, {"output", 2000000.0}}}}}};
  Start(file);
  held.Hold();
  auto in_flight = std::async(std::launch::async, [&] { return Chat("slow").status; });
  ASSERT_TRUE(held.WaitArrived(1));
  file["prices"]["slow"] = {{"input", 10000000.0}, {"output", 10000000.0}};
  Write(file);
  ASSERT_TRUE(reloader_->ReloadNow().ok());
  held.Release();
  ASSERT_EQ(in_flight.get(), 200);
  EXPECT_EQ(Chat("slow").status, 200);
  // Dropped altogether: the next request costs nothing, one held across the drop keeps its price.
  held.Hold();
  auto across_drop = std::async(std::launch::async, [&] { return Chat("slow").status; });
  ASSERT_TRUE(held.WaitArrived(3));
  file.erase("prices");
  Write(file);
  ASSERT_TRUE(reloader_->ReloadNow().ok());
  held.Release();
  ASSERT_EQ(across_drop.get(), 200);
  EXPECT_EQ(Chat("slow").status, 200);
  auto records = Records();
  ASSERT_EQ(records.size(), 4u);
  EXPECT_DOUBLE_EQ(records[0].cost, 3 * 1.0 + 2 * 2.0);
  EXPECT_DOUBLE_EQ(records[1].cost, 3 * 10.0 + 2 * 10.0);
  EXPECT_DOUBLE_EQ(records[2].cost, 3 * 10.0 + 2 * 10.0);
  EXPECT_DOUBLE_EQ(records[3].cost, 0);
}

// A key a reload removes lives only while requests that began on it run: one held across the removal
// finishes (and is recorded against the key), then the state goes; many reloads keep nothing.
TEST_F(RoutesReloadTest, ARemovedKeyLivesOnlyWhileItsRequestsRun) {
  Provider held;
  Json file = {{"routes", {Model("slow", {{"s", held.url()}})}}, {"keys", Keys()}};
  Start(file);
  held.Hold();
  auto in_flight = std::async(std::launch::async, [&] { return Chat("slow").status; });
  ASSERT_TRUE(held.WaitArrived(1));
  file["keys"] = Json::array();
  Write(file);
  ASSERT_TRUE(reloader_->ReloadNow().ok());
  EXPECT_EQ(Chat("slow").status, 401);
  EXPECT_EQ(proxy_->retired_key_states(), 1u);
  held.Release();
  ASSERT_EQ(in_flight.get(), 200);
  // The response completes before the exchange lets go, so it may still be going away: wait (bounded).
  auto settled = [&] {
    for (int i = 0; i < 2000 && proxy_->retired_key_states() != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return proxy_->retired_key_states();
  };
  EXPECT_EQ(settled(), 0u);
  auto records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].status, 200);
  EXPECT_EQ(records[0].org, "acme");
  EXPECT_FALSE(records[0].key_id.empty());
  // Keys added, removed and their limits changed, over and over: nothing is kept.
  for (int i = 0; i < 50; ++i) {
    file["keys"] = Keys();
    file["keys"][0]["requests_per_minute"] = 1000 + i;
    Write(file);
    ASSERT_TRUE(reloader_->ReloadNow().ok());
    EXPECT_EQ(Chat("slow").status, 200);
    if (i % 2 == 0) {
      file["keys"] = Json::array();
      Write(file);
      ASSERT_TRUE(reloader_->ReloadNow().ok());
    }
  }
  EXPECT_EQ(settled(), 0u);
}

TEST_F(RoutesReloadTest, DlpRulesAndKeysReloadWithTheFile) {
  Provider a;
  Json file = {{"routes", {Model("m", {{"a", a.url()}})}}, {"keys", Keys()}};
  Start(file);
  const std::string secret = "my key is AKIAIOSFODNN7EXAMPLE";
  EXPECT_EQ(Chat("m", secret).status, 200);
  EXPECT_NE(a.last_body().find("AKIAIOSFODNN7EXAMPLE"), std::string::npos);
  file["dlp"] = {{"orgs", {{"acme", {{"mode", "block"}}}}}};
  Write(file);
  ASSERT_TRUE(reloader_->CheckOnce().ok());
  auto blocked = Chat("m", secret);
  EXPECT_EQ(blocked.status, 400);
  EXPECT_NE(blocked.body.find("dlp_blocked"), std::string::npos) << blocked.body;
  EXPECT_EQ(a.calls(), 1);
  // The key removed: refused.
  file["keys"] = Json::array();
  Write(file);
  ASSERT_TRUE(reloader_->CheckOnce().ok());
  EXPECT_EQ(Chat("m").status, 401);
}

TEST_F(RoutesReloadTest, ThePollingThreadPicksUpAChange) {
  Provider a, b;
  Json file = {{"routes", {Model("m-a", {{"a", a.url()}})}}, {"keys", Keys()}};
  Start(file, std::chrono::milliseconds(10));
  file["routes"].push_back(Model("m-b", {{"b", b.url()}}));
  Write(file);
  // No timing assertion: wait (up to a generous bound) for the thread to have applied it.
  for (int i = 0; i < 2000 && reloader_->reloads() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(reloader_->reloads(), 1u);
  EXPECT_EQ(Chat("m-b").status, 200);
}

TEST_F(RoutesReloadTest, RoutesThatOutlastTheHandlerTimeoutNeedARestart) {
  Provider a;
  Json file = {{"routes", {Model("m-a", {{"a", a.url()}})}}, {"keys", Keys()}};
  Write(file);
  auto config = ParseProxyConfig(file.dump());
  ASSERT_TRUE(config.ok());
  auto proxy = Proxy::Create(std::move(*config));
  ASSERT_TRUE(proxy.ok());
  RoutesReloader r(**proxy, {.file = file_, .interval = {}, .max_answer_time = std::chrono::seconds(30)});
  file["routes"][0]["deployments"][0]["header_timeout_ms"] = 600000;
  Write(file);
  EXPECT_FALSE(r.ReloadNow().ok());
  file["routes"][0]["deployments"][0]["header_timeout_ms"] = 1000;
  Write(file);
  EXPECT_TRUE(r.ReloadNow().ok());
}

}  // namespace
}  // namespace govern::gateway
