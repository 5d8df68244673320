// Usage records from the gateway's WAL to telemetry: the event lines (read back by telemetry's own NDJSON
// decoder), the config, and the shipper end to end: a real Proxy in front of the real model stub writes
// the WAL, the shipper sends it to a real HTTP server standing in for intake (which stores by id once).
#include "services/gateway/usage_ship.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "net/http_client.h"
#include "net/http_server.h"
#include "services/gateway/proxy.h"
#include "services/model_stub/server.h"
#include "services/telemetry/ndjson.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

constexpr char kIngestKey[] = "gvk_abcdefabcdef_0123456789abcdef0123456789abcdef0123456789abcdef";

std::string TestDir(std::string_view name) {
  std::string dir =
      ::testing::TempDir() + "gateway_usage_ship_" + std::to_string(::getpid()) + "_" + std::string(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

UsageRecord Record(std::string id) {
  UsageRecord r;
  r.request_id = std::move(id);
  r.time_ns = 1'764'500'000'123'456'789;
  r.org = "acme";
  r.key_id = "gvg_test_key";
  r.model = "gpt-stub";
  r.route = "http://127.0.0.1:1";
  r.client_format = "openai";
  r.status = 200;
  r.input_tokens = 3;
  r.output_tokens = 16;
  r.cost = 0.000035;
  r.latency_ms = 1.5;
  return r;
}

TEST(UsageShip, EventIdComesFromTheRequestId) {
  EXPECT_EQ(UsageEventId("gwr_0123456789abcdef01234567"), "gwr-0123456789abcdef01234567");
  EXPECT_EQ(UsageEventId("abc.DEF:1-2"), "abc.DEF:1-2");
  // Characters intake does not take, or too long: a hash, still the same each time.
  const std::string odd = UsageEventId("req id/1");
  EXPECT_EQ(odd.rfind("gwr-h", 0), 0u) << odd;
  EXPECT_EQ(odd.size(), 5u + 64);
  EXPECT_EQ(odd, UsageEventId("req id/1"));
  EXPECT_NE(odd, UsageEventId("req id/2"));
  EXPECT_EQ(UsageEventId(std::string(101, 'a')).rfind("gwr-h", 0), 0u);
}

TEST(UsageShip, EventLineIsWhatIntakeReads) {
  UsageRecord r = Record("gwr_00000000000000aa00000001");
  r.error = "upstream: \"quoted\"\n";
  std::string line;
  ASSERT_TRUE(AppendUsageEvent(UsageRecordJson(r), 1 << 20, &line).ok());
  EXPECT_EQ(line.find('\n'), std::string::npos);
  // Telemetry's own decoder: the id, time and type as sent, the org from the key.
  auto batch = telemetry::DecodeNdjson(line + "\n", "ops");
  ASSERT_TRUE(batch.ok()) << batch.status().ToString() << "\n" << line;
  ASSERT_EQ(batch->events.size(), 1u);
  const telemetry::Event& e = batch->events[0];
  EXPECT_EQ(e.id, "gwr-00000000000000aa00000001");
  EXPECT_EQ(e.time_unix_nanos, int64_t{1'764'500'000'123'456'789});
  Json j = Json::parse(line);
  EXPECT_EQ(j["type"], "gateway.usage");
  const Json& a = j["attributes"];
  EXPECT_EQ(a["request_id"], r.request_id);
  EXPECT_EQ(a["organisation"], "acme");
  EXPECT_FALSE(a.contains("org"));
  EXPECT_EQ(a["status"], 200);
  EXPECT_EQ(a["input_tokens"], 3);
  EXPECT_EQ(a["output_tokens"], 16);
  EXPECT_EQ(a["error"], r.error);
  EXPECT_EQ(a["stream"], false);

  line.clear();
  EXPECT_FALSE(AppendUsageEvent(UsageRecordJson(r), 100, &line).ok()) << "longer than the line limit";
  for (std::string_view bad : {"", "not json", "[1]", R"({"time_ns":1})", R"({"request_id":"x"})",
                               R"({"request_id":"x","time_ns":-1})", R"({"request_id":7,"time_ns":1})"}) {
    line.clear();
    EXPECT_FALSE(AppendUsageEvent(bad, 1 << 20, &line).ok()) << bad;
  }
}

TEST(UsageShip, OptionsFromTheProxyConfigFile) {
  const std::string dir = TestDir("options");
  const std::string key_file = dir + "/ingest.key";
  std::ofstream(key_file) << kIngestKey << "\n";
  auto none = UsageShipOptionsFromJson(R"({"routes":[]})");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto o = UsageShipOptionsFromJson(R"({"ship":{"endpoint":"http://127.0.0.1:4318","key_file":")" + key_file +
                                    R"(","batch_events":50,"interval_ms":0,"max_backoff_ms":500}})");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_TRUE(o->has_value());
  EXPECT_EQ((*o)->key, kIngestKey);
  EXPECT_EQ((*o)->batch_events, 50u);
  EXPECT_EQ((*o)->linger.count(), 0);
  EXPECT_EQ((*o)->max_backoff.count(), 500);
  for (const std::string& bad : std::vector<std::string>{
           R"({"ship":{"endpoint":"http://x"}})",
           R"({"ship":{"endpoint":"http://x","key_file":"/nonexistent"}})",
           R"({"ship":{"endpoint":"http://x","key_file":")" + key_file + R"(","batch_events":0}})",
           std::string(R"({"ship":[]})")}) {
    EXPECT_FALSE(UsageShipOptionsFromJson(bad).ok()) << bad;
  }
  std::ofstream(key_file, std::ios::trunc) << "not a key\n";
  EXPECT_FALSE(
      UsageShipOptionsFromJson(R"({"ship":{"endpoint":"http://x","key_file":")" + key_file + R"("}})").ok());
  std::filesystem::remove_all(dir);
}

// Telemetry intake as the shipper meets it: stores each event id once, counts every delivery.
class FakeIntake {
 public:
  FakeIntake() {
    net::Router r;
    r.AddSync(net::Method::kPost, "/v1/events", [this](net::Request& req) {
      if (req.headers.Get("Authorization").value_or("") != std::string("Bearer ") + kIngestKey)
        return net::Response(401, "{}", "application/json");
      auto batch = telemetry::DecodeNdjson(req.body, "ops");
      if (!batch.ok()) return net::Response(400, batch.status().message(), "text/plain");
      std::lock_guard lock(mu_);
      for (const auto& e : batch->events) {
        ++delivered_;
        if (ids_.insert(e.id).second) types_.insert(e.type);
      }
      return net::Response(200, "{}", "application/json");
    });
    net::ServerConfig cfg;
    cfg.workers = 1;
    server_ = std::make_unique<net::Server>(cfg, std::move(r));
    EXPECT_TRUE(server_->Start().ok());
  }
  ~FakeIntake() { server_->Stop(); }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  std::set<std::string> ids() {
    std::lock_guard lock(mu_);
    return ids_;
  }
  size_t delivered() {
    std::lock_guard lock(mu_);
    return delivered_;
  }
  std::set<std::string> types() {
    std::lock_guard lock(mu_);
    return types_;
  }

 private:
  std::mutex mu_;
  std::set<std::string> ids_;
  std::set<std::string> types_;
  size_t delivered_ = 0;
  std::unique_ptr<net::Server> server_;
};

template <class Fn>
bool Eventually(Fn done) {
  for (int i = 0; i < 2000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(UsageShip, ProxyRecordsReachIntakeOnceAcrossARestart) {
  auto stub = model_stub::StubServer::Start({.port = 0, .threads = 1});
  ASSERT_TRUE(stub.ok());
  const std::string dir = TestDir("proxy");
  const std::string wal_dir = dir + "/usage";
  std::mutex mu;
  std::set<std::string> expected;  // event ids of the requests recorded
  std::set<std::string> answered;  // event ids from the answers' x-request-id
  ProxyConfig c;
  c.routes = {{"gpt-stub", "http://127.0.0.1:" + std::to_string((*stub)->port()), WireFormat::kOpenAI, ""}};
  c.keys = {{"gvg_ship_key", "acme", 0, 0}};
  c.wal_dir = wal_dir;
  c.on_record = [&](const UsageRecord& r) {
    std::lock_guard lock(mu);
    expected.insert(UsageEventId(r.request_id));
  };
  auto proxy = Proxy::Create(std::move(c));
  ASSERT_TRUE(proxy.ok());
  net::Router router;
  (*proxy)->Register(router);
  net::Server server(net::ServerConfig{}, std::move(router));
  ASSERT_TRUE(server.Start().ok());
  net::HttpClient client;
  auto send = [&](int n, std::string_view model) {
    for (int i = 0; i < n; ++i) {
      net::ClientRequest r;
      r.method = net::Method::kPost;
      r.url = "http://127.0.0.1:" + std::to_string(server.port()) + "/v1/chat/completions";
      r.headers.Set("Authorization", "Bearer gvg_ship_key");
      r.body = std::string(R"({"model":")") + std::string(model) +
               R"(","messages":[{"role":"user","content":"hi"}]})";
      auto resp = client.Send(std::move(r));
      ASSERT_TRUE(resp.ok());
      // Each answer names its request, whose usage event telemetry gets.
      auto rid = resp->headers.Get("x-request-id");
      ASSERT_TRUE(rid.has_value()) << resp->status;
      answered.insert(UsageEventId(*rid));
    }
  };
  send(30, "gpt-stub");
  send(2, "no-such-model");  // 404s are recorded too

  FakeIntake intake;
  policy::ShipperOptions o;
  o.endpoint = intake.endpoint();
  o.key = kIngestKey;
  o.batch_events = 7;
  auto shipper = NewUsageShipper((*proxy)->usage_wal(), wal_dir, o);
  ASSERT_TRUE(shipper.ok()) << shipper.status().ToString();
  (*shipper)->Start();
  ASSERT_TRUE(Eventually([&] { return intake.ids().size() == 32; })) << intake.ids().size();
  (*shipper)->Stop();
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(intake.ids(), expected);
  }
  EXPECT_EQ(intake.types(), std::set<std::string>{"gateway.usage"});

  // A record that is not a usage record is quarantined, not sent; a new shipper (a restart) starts at
  // the cursor: what went before is not sent again.
  ASSERT_TRUE((*proxy)->usage_wal()->Append("not a usage record").ok());
  send(5, "gpt-stub");
  shipper->reset();
  shipper = NewUsageShipper((*proxy)->usage_wal(), wal_dir, o);
  ASSERT_TRUE(shipper.ok());
  (*shipper)->Start();
  ASSERT_TRUE(Eventually([&] {
    return intake.ids().size() == 37 && (*shipper)->GetStats().quarantined == 1;
  })) << intake.ids().size()
      << " " << (*shipper)->GetStats().last_error;
  (*shipper)->Stop();
  EXPECT_EQ(intake.delivered(), 37u) << "a record went twice";
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(intake.ids(), expected);
  }
  EXPECT_EQ(intake.ids(), answered);
  std::ifstream q(wal_dir + "/quarantine.ndjson");
  std::string line;
  ASSERT_TRUE(std::getline(q, line));
  EXPECT_NE(line.find("record_hex"), std::string::npos) << line;

  // Shipping switched off: the cursor goes, so it no longer holds the WAL.
  shipper->reset();
  EXPECT_TRUE(ForgetUsageShipper((*proxy)->usage_wal()).ok());
  EXPECT_EQ((*proxy)->usage_wal()->Cursors().count("telemetry"), 0u);
  server.Stop();
  proxy->reset();
  (*stub)->Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace govern::gateway
