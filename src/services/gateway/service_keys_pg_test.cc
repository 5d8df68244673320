// Gateway API keys from the keys service against a real PostgreSQL (ctest's pg fixture): keys made with
// service_keys::CreateKey work once loaded, wrong and unknown ones are refused, a revocation takes
// effect at the next reload, a budget of scope key names the key by its id, and the configuration
// (gateway.keys.enabled) wires it through StartGovernanceFromFlags.
#include <gtest/gtest.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "db/connection.h"
#include "db/pool.h"
#include "db/testing.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/gateway/governance.h"
#include "services/gateway/governance_config.h"
#include "services/gateway/schema.h"
#include "services/gateway/service_keys.h"
#include "services/gateway/test_util.h"
#include "services/model_stub/server.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

class ServiceKeysPgTest : public testing::PgFixture {
 protected:
  void SetUp() override {
    OpenDatabase(4);
    if (HasFatalFailure()) return;
    auto c = db::Connection::Connect(db_->conninfo());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    conn_ = std::move(*c);
  }

  std::string NewKey(std::string_view org) {
    auto k = service_keys::CreateKey(*conn_, GatewayKeyTable(), org, "invoke", "test key");
    EXPECT_TRUE(k.ok()) << k.status().ToString();
    return k.ok() ? *k : "";
  }
  static std::string KeyId(const std::string& key) { return key.substr(4, service_keys::kKeyIdLength); }

  std::unique_ptr<db::Connection> conn_;
};

TEST_F(ServiceKeysPgTest, KeysAreCheckedInMemoryAndRevocationsFollowTheReload) {
  std::string key = NewKey("acme");
  ASSERT_TRUE(ServiceKeyRing::LooksLikeKey(key));
  EXPECT_FALSE(ServiceKeyRing::LooksLikeKey("gvg_routes_file_key"));
  ServiceKeyRing ring(pool_.get(), std::chrono::hours(1));
  auto before = ring.Check(key);
  EXPECT_EQ(before.status().code(), Code::kUnauthenticated);
  EXPECT_NE(before.status().message().find("not loaded yet"), std::string::npos);
  ASSERT_TRUE(ring.Reload().ok());
  EXPECT_TRUE(ring.loaded());
  EXPECT_EQ(ring.size(), 1u);
  auto c = ring.Check(key);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->Name(), "Key:gvg_" + KeyId(key));
  EXPECT_EQ(c->org, "acme");
  EXPECT_EQ(c->key, "gvg_" + KeyId(key));  // never the secret

  std::string wrong = key;
  wrong.back() = wrong.back() == 'a' ? 'b' : 'a';
  EXPECT_EQ(ring.Check(wrong).status().message(), "missing or unknown API key");
  std::string other = NewKey("globex");  // made after the load: unknown until the next one
  EXPECT_EQ(ring.Check(other).status().code(), Code::kUnauthenticated);

  ASSERT_TRUE(service_keys::RevokeKey(*conn_, GatewayKeyTable(), KeyId(key)).ok());
  EXPECT_TRUE(ring.Check(key).ok());  // until the reload
  ASSERT_TRUE(ring.Reload().ok());
  EXPECT_EQ(ring.Check(key).status().code(), Code::kUnauthenticated);
  auto g = ring.Check(other);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->org, "globex");
}

TEST_F(ServiceKeysPgTest, LoadedKeysSurviveAnUnreachableDatabase) {
  std::string key = NewKey("acme");
  ServiceKeyRing ring(pool_.get(), std::chrono::hours(1));
  ASSERT_TRUE(ring.Reload().ok());
  // The table moved away under it: the reload fails, the keys loaded before keep working.
  ASSERT_TRUE(conn_->Exec("ALTER TABLE gateway_api_keys RENAME TO gateway_api_keys_moved").ok());
  EXPECT_EQ(ring.Reload().code(), Code::kUnavailable);
  EXPECT_TRUE(ring.Check(key).ok());
}

TEST_F(ServiceKeysPgTest, ThroughTheProxyWithABudgetOfScopeKeyAndFromConfiguration) {
  auto stub = model_stub::StubServer::Start({.port = 0, .threads = 1});
  ASSERT_TRUE(stub.ok()) << stub.status().ToString();
  std::string key = NewKey("acme");
  const std::string id = "gvg_" + KeyId(key);
  // The service's wiring: gateway.keys.enabled through the configuration, with a budget naming the key.
  Json routes = {{"routes", Json::array()},
                 {"budgets",
                  {{{"id", "ci"},
                    {"scope", "key"},
                    {"key", id},
                    {"limit", 0.000001},
                    {"lease", 0.000001},
                    {"reserve", 0}}}}};
  auto rt =
      StartGovernanceFromFlags({{"gateway.keys.enabled", "true"}, {"gateway.keys.reload_interval", "100ms"}},
                               routes.dump(), db_->conninfo());
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  ASSERT_TRUE(rt->governance && rt->governance->service_keys);
  EXPECT_TRUE(rt->governance->service_keys->loaded());

  std::vector<UsageRecord> records;
  std::mutex mu;
  ProxyConfig c;
  std::string base = "http://127.0.0.1:" + std::to_string((*stub)->port());
  c.routes = {{"gpt-stub", base, WireFormat::kOpenAI, ""}};
  c.prices["gpt-stub"] = {100.0, 100.0, 100.0};
  c.governance = rt->governance;
  c.on_record = [&](const UsageRecord& r) {
    std::lock_guard lock(mu);
    records.push_back(r);
  };
  auto served = testing::ServeProxy(std::move(c), net::ServerConfig{}.workers);
  ASSERT_TRUE(served.ok()) << served.status().ToString();
  const std::string& url = served->url;
  net::HttpClient client;
  auto post = [&](const std::string& credential) {
    net::ClientRequest r;
    r.method = net::Method::kPost;
    r.url = url + "/v1/chat/completions";
    r.headers.Set("Content-Type", "application/json");
    r.headers.Set("Authorization", "Bearer " + credential);
    r.body = R"({"model":"gpt-stub","messages":[{"role":"user","content":"hi"}]})";
    auto resp = client.Send(std::move(r));
    EXPECT_TRUE(resp.ok()) << resp.status().ToString();
    return resp.ok() ? *resp : net::ClientResponse{};
  };
  // The budget (a millionth) admits one answer, then refuses: the key was matched by its id.
  auto first = post(key);
  EXPECT_EQ(first.status, 200) << first.body;
  net::ClientResponse refused;
  for (int i = 0; i < 50 && (refused = post(key)).status == 200; ++i) {
  }
  EXPECT_EQ(refused.status, 429) << refused.body;
  std::string wrong = key;
  wrong.back() = wrong.back() == 'a' ? 'b' : 'a';
  EXPECT_EQ(post(wrong).status, 401);
  // /v1/models takes the key too.
  net::ClientRequest m;
  m.url = url + "/v1/models";
  m.headers.Set("Authorization", "Bearer " + key);
  EXPECT_EQ(client.Send(std::move(m))->status, 200);

  // Revoked: refused within the reload interval (100 ms).
  ASSERT_TRUE(service_keys::RevokeKey(*conn_, GatewayKeyTable(), KeyId(key)).ok());
  int status = 0;
  for (int i = 0; i < 200 && (status = post(key).status) != 401; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(status, 401);

  served->server->Stop();
  served->proxy.reset();
  rt->Stop();
  (*stub)->Stop();
  std::lock_guard lock(mu);
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records[0].principal, "Key:" + id);
  EXPECT_EQ(records[0].org, "acme");
  EXPECT_EQ(records[0].status, 200);
}

}  // namespace
}  // namespace govern::gateway
