// The proxy over real sockets, in front of the real model stub: same-format and translated answers and
// streams, the error shapes, rate limits, and the usage records (handed over and in the WAL).
#include "services/gateway/proxy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include "gateway/anthropic.h"
#include "gateway/openai.h"
#include "gateway/sse.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/gateway/test_util.h"
#include "services/model_stub/server.h"
#include "storage/wal.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

constexpr const char* kKey = "gvg_test_key_0001";
constexpr const char* kLimitedKey = "gvg_limited_0002";
constexpr const char* kTokenLimitedKey = "gvg_tokens_0003";

class ProxyTest : public testing::ProxyFixture {
 protected:
  void SetUp() override {
    auto stub = model_stub::StubServer::Start({.port = 0, .threads = 2});
    ASSERT_TRUE(stub.ok()) << stub.status().ToString();
    stub_ = std::move(*stub);
    std::string base = "http://127.0.0.1:" + std::to_string(stub_->port());
    // A slow provider: 1000 tokens at 200 a second, for a client that leaves mid-stream.
    auto slow = model_stub::StubServer::Start(
        {.port = 0, .threads = 1, .tokens_per_second = slow_tokens_per_second_});
    ASSERT_TRUE(slow.ok()) << slow.status().ToString();
    slow_stub_ = std::move(*slow);
    std::string slow_base = "http://127.0.0.1:" + std::to_string(slow_stub_->port());
    wal_dir_ = ::testing::TempDir() + "gateway_proxy_wal_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(wal_dir_);

    ProxyConfig c;
    c.routes = {{"gpt-stub", base, WireFormat::kOpenAI, "sk-upstream"},
                {"claude-stub", base, WireFormat::kAnthropic, "sk-ant-upstream"},
                {"gpt-down", "http://127.0.0.1:1", WireFormat::kOpenAI, ""},
                {"gpt-slow", slow_base, WireFormat::kOpenAI, ""},
                {"claude-slow", slow_base, WireFormat::kAnthropic, ""}};
    for (RouteConfig& r : c.routes) r.stub_fault_headers = true;
    c.keys = {{kKey, "acme", 0, 0}, {kLimitedKey, "acme", 2, 0}, {kTokenLimitedKey, "acme", 0, 20}};
    c.prices["gpt-stub"] = {1.0, 2.0, 0.5};
    c.wal_dir = wal_dir_;
    c.upstream.header_timeout = header_timeout_;
    c.upstream.read_timeout = read_timeout_;
    c.usage_durable_before_response = durable_;
    StartProxy(std::move(c), 2);
  }

  void TearDown() override {
    StopProxy();
    if (stub_) stub_->Stop();
    if (slow_stub_) slow_stub_->Stop();
    std::filesystem::remove_all(wal_dir_);
  }

  net::ClientResponse Post(std::string_view path, std::string body, std::string_view key,
                           bool anthropic_auth = false,
                           std::vector<std::pair<std::string, std::string>> extra = {}) {
    net::ClientRequest r;
    r.method = net::Method::kPost;
    r.url = url_ + std::string(path);
    r.headers.Set("Content-Type", "application/json");
    if (anthropic_auth) {
      r.headers.Set("x-api-key", key);
      r.headers.Set("anthropic-version", "2023-06-01");
    } else if (!key.empty()) {
      r.headers.Set("Authorization", "Bearer " + std::string(key));
    }
    for (auto& [k, v] : extra) r.headers.Set(k, v);
    r.body = std::move(body);
    auto resp = client_->Send(std::move(r));
    EXPECT_TRUE(resp.ok()) << resp.status().ToString();
    return resp.ok() ? *resp : net::ClientResponse{};
  }

  static std::vector<SseEvent> Events(const std::string& body) {
    SseParser p;
    std::vector<SseEvent> out;
    EXPECT_TRUE(p.Feed(body, out).ok());
    EXPECT_FALSE(p.HasPartial());
    return out;
  }

  // Waits (up to 10 s) until `done` holds.
  template <class Fn>
  static bool Eventually(Fn done) {
    for (int i = 0; i < 1000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
  }

  std::chrono::milliseconds header_timeout_{600000};
  std::chrono::milliseconds read_timeout_{300000};
  int64_t slow_tokens_per_second_ = 200;
  bool durable_ = false;
  std::unique_ptr<model_stub::StubServer> stub_;
  std::unique_ptr<model_stub::StubServer> slow_stub_;
  std::string wal_dir_;
};

constexpr const char* kChat =
    R"({"model":"gpt-stub","messages":[{"role":"user","content":"one two three"}]})";
constexpr const char* kChatStream =
    R"({"model":"gpt-stub","stream":true,"messages":[{"role":"user","content":"one two three"}]})";

TEST_F(ProxyTest, ChatSameFormatIsForwardedAndMetered) {
  auto resp = Post("/v1/chat/completions", kChat, kKey);
  ASSERT_EQ(resp.status, 200) << resp.body;
  auto chat = openai::ParseChatResponse(resp.body);
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  ASSERT_TRUE(chat->usage.has_value());
  EXPECT_EQ(chat->usage->prompt_tokens, 3);
  EXPECT_EQ(chat->usage->completion_tokens, 16);

  UsageRecord r = WaitRecord(1);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.org, "acme");
  EXPECT_EQ(r.key_id, VirtualKeyId(kKey));
  EXPECT_EQ(r.model, "gpt-stub");
  EXPECT_EQ(r.input_tokens, 3);
  EXPECT_EQ(r.output_tokens, 16);
  EXPECT_DOUBLE_EQ(r.cost, (3 * 1.0 + 16 * 2.0) / 1e6);
  // "gwr_" and 24 lowercase hex digits.
  EXPECT_EQ(r.request_id.size(), 28u) << r.request_id;
  EXPECT_EQ(r.request_id.substr(0, 4), "gwr_");
  EXPECT_EQ(r.request_id.find_first_not_of("0123456789abcdef", 4), std::string::npos) << r.request_id;
}

// Routes may outlive the Proxy (the server is stopped after it in some embedders): a request that
// passes the checks then reaches Start while stopping, which answers 503 (it deadlocked on live_mu).
TEST_F(ProxyTest, RequestAfterTheProxyStoppedGets503) {
  ASSERT_EQ(Post("/v1/chat/completions", kChat, kKey).status, 200);
  proxy_.reset();
  auto resp = Post("/v1/chat/completions", kChat, kKey);
  EXPECT_EQ(resp.status, 503) << resp.body;
  EXPECT_NE(resp.body.find("stopping"), std::string::npos) << resp.body;
}

TEST_F(ProxyTest, ChatStreamGetsUsageAddedAndRelayed) {
  auto resp = Post("/v1/chat/completions", kChatStream, kKey);
  ASSERT_EQ(resp.status, 200) << resp.body;
  EXPECT_EQ(resp.headers.Get("Content-Type").value_or(""), "text/event-stream");
  auto events = Events(resp.body);
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(events.back().IsDone());
  // The client did not ask for usage, but the gateway did, so the stream carries a usage chunk.
  bool saw_usage = false;
  for (const auto& e : events) {
    if (e.IsDone()) continue;
    auto chunk = openai::ParseChatChunk(e.data);
    ASSERT_TRUE(chunk.ok()) << e.data;
    if (chunk->usage) saw_usage = chunk->usage->completion_tokens == 16;
  }
  EXPECT_TRUE(saw_usage);
  UsageRecord r = WaitRecord(1);
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.input_tokens, 3);
  EXPECT_EQ(r.output_tokens, 16);
}

TEST_F(ProxyTest, OpenAIClientOnAnthropicRoute) {
  auto resp = Post("/v1/chat/completions",
                   R"({"model":"claude-stub","messages":[{"role":"user","content":"one two three"}]})", kKey);
  ASSERT_EQ(resp.status, 200) << resp.body;
  auto chat = openai::ParseChatResponse(resp.body);
  ASSERT_TRUE(chat.ok()) << resp.body;
  ASSERT_EQ(chat->choices.size(), 1u);
  EXPECT_EQ(chat->choices[0].finish_reason.value_or(""), "stop");
  EXPECT_EQ(chat->usage->completion_tokens, 16);

  auto s = Post(
      "/v1/chat/completions",
      R"({"model":"claude-stub","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"one two three"}]})",
      kKey);
  ASSERT_EQ(s.status, 200) << s.body;
  auto events = Events(s.body);
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(events.back().IsDone());
  std::string text;
  for (const auto& e : events) {
    if (e.IsDone()) continue;
    auto chunk = openai::ParseChatChunk(e.data);
    ASSERT_TRUE(chunk.ok()) << e.data;
    for (const auto& c : chunk->choices) text += c.content.value_or("");
  }
  EXPECT_EQ(text, chat->choices[0].content.value_or("?"));
  UsageRecord r = WaitRecord(2);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.output_tokens, 16);
  EXPECT_EQ(r.input_tokens, 3);
}

TEST_F(ProxyTest, AnthropicClientSameFormatAndOnOpenAIRoute) {
  for (const char* model : {"claude-stub", "gpt-stub"}) {
    SCOPED_TRACE(model);
    std::string body =
        std::string(R"({"model":")") + model +
        R"(","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"one two three"}]})";
    auto resp = Post("/v1/messages", body, kKey, /*anthropic_auth=*/true);
    ASSERT_EQ(resp.status, 200) << resp.body;
    auto events = Events(resp.body);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.front().event, "message_start");
    EXPECT_EQ(events.back().event, "message_stop");
    std::string text;
    for (const auto& e : events) {
      auto ev = anthropic::ParseStreamEvent(e.data);
      ASSERT_TRUE(ev.ok()) << e.data;
      if (ev->type == anthropic::StreamEvent::Type::kContentBlockDelta) text += ev->delta_text;
    }
    EXPECT_EQ(text.rfind("Govern stub reply", 0), 0u) << text;
  }
  EXPECT_EQ(WaitRecord(1).output_tokens, 16);
  EXPECT_EQ(WaitRecord(2).output_tokens, 16);

  auto whole =
      Post("/v1/messages",
           R"({"model":"gpt-stub","max_tokens":100,"messages":[{"role":"user","content":"one two three"}]})",
           kKey, true);
  ASSERT_EQ(whole.status, 200) << whole.body;
  auto msg = anthropic::ParseMessagesResponse(whole.body);
  ASSERT_TRUE(msg.ok()) << whole.body;
  EXPECT_EQ(msg->usage.output_tokens, 16);
  EXPECT_EQ(msg->stop_reason.value_or(""), "end_turn");
}

TEST_F(ProxyTest, ErrorsInEachSdkShape) {
  auto bad_key = Post("/v1/chat/completions", kChat, "gvg_nope");
  EXPECT_EQ(bad_key.status, 401);
  EXPECT_EQ(Json::parse(bad_key.body)["error"]["code"], "invalid_api_key");
  auto no_key = Post("/v1/messages", kChat, "", true);
  EXPECT_EQ(no_key.status, 401);
  EXPECT_EQ(Json::parse(no_key.body)["error"]["type"], "authentication_error");

  auto unknown = Post("/v1/chat/completions", R"({"model":"nope","messages":[]})", kKey);
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(Json::parse(unknown.body)["error"]["code"], "model_not_found");
  auto unknown_a = Post("/v1/messages", R"({"model":"nope","max_tokens":1,"messages":[]})", kKey, true);
  EXPECT_EQ(unknown_a.status, 404);
  EXPECT_EQ(Json::parse(unknown_a.body)["error"]["type"], "not_found_error");

  auto bad_body = Post("/v1/chat/completions", "{not json", kKey);
  EXPECT_EQ(bad_body.status, 400);

  auto upstream_500 = Post("/v1/chat/completions", kChat, kKey, false, {{"x-stub-status", "500"}});
  EXPECT_EQ(upstream_500.status, 502);
  EXPECT_EQ(Json::parse(upstream_500.body)["error"]["type"], "api_error");
  auto upstream_500_a = Post(
      "/v1/messages", R"({"model":"claude-stub","max_tokens":5,"messages":[{"role":"user","content":"x"}]})",
      kKey, true, {{"x-stub-status", "529"}});
  EXPECT_EQ(upstream_500_a.status, 502);
  EXPECT_EQ(Json::parse(upstream_500_a.body)["type"], "error");

  auto down = Post("/v1/chat/completions", R"({"model":"gpt-down","messages":[]})", kKey);
  EXPECT_EQ(down.status, 502);

  // A stream cut by the provider ends with the format's error event.
  auto cut = Post("/v1/chat/completions", kChatStream, kKey, false, {{"x-stub-cut-after", "3"}});
  ASSERT_EQ(cut.status, 200);
  auto events = Events(cut.body);
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(Json::parse(events.back().data).contains("error")) << events.back().data;
  auto cut_a = Post(
      "/v1/messages",
      R"({"model":"claude-stub","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"x"}]})",
      kKey, true, {{"x-stub-cut-after", "3"}});
  ASSERT_EQ(cut_a.status, 200);
  auto events_a = Events(cut_a.body);
  ASSERT_FALSE(events_a.empty());
  EXPECT_EQ(events_a.back().event, "error");

  // Every authenticated request is recorded; unauthenticated ones are not.
  std::vector<int> statuses;
  for (size_t i = 1; i <= 8; ++i) statuses.push_back(WaitRecord(i).status);
  std::sort(statuses.begin(), statuses.end());
  EXPECT_EQ(statuses, (std::vector<int>{400, 404, 404, 502, 502, 502, 502, 502}));
}

TEST_F(ProxyTest, RequestsPerMinuteLimit) {
  EXPECT_EQ(Post("/v1/chat/completions", kChat, kLimitedKey).status, 200);
  EXPECT_EQ(Post("/v1/chat/completions", kChat, kLimitedKey).status, 200);
  auto third = Post("/v1/chat/completions", kChat, kLimitedKey);
  EXPECT_EQ(third.status, 429);
  EXPECT_EQ(Json::parse(third.body)["error"]["code"], "rate_limit_exceeded");
  // Another key is not held back.
  EXPECT_EQ(Post("/v1/chat/completions", kChat, kKey).status, 200);
}

TEST_F(ProxyTest, TokensPerMinuteLimit) {
  // 20 tokens a minute; each answer costs 3 + 16. The first leaves 1, the second is still let in (the
  // count is known only after the answer) and drives the bucket below zero, the third is refused.
  EXPECT_EQ(Post("/v1/chat/completions", kChat, kTokenLimitedKey).status, 200);
  WaitRecord(1);
  EXPECT_EQ(Post("/v1/chat/completions", kChat, kTokenLimitedKey).status, 200);
  WaitRecord(2);
  auto third =
      Post("/v1/messages", R"({"model":"claude-stub","max_tokens":5,"messages":[]})", kTokenLimitedKey, true);
  EXPECT_EQ(third.status, 429);
  EXPECT_EQ(Json::parse(third.body)["error"]["type"], "rate_limit_error");
  EXPECT_EQ(WaitRecord(3).status, 429);
}

TEST_F(ProxyTest, UsageRecordsAreInTheWal) {
  ASSERT_EQ(Post("/v1/chat/completions", kChat, kKey).status, 200);
  ASSERT_EQ(Post("/v1/chat/completions", kChatStream, kKey).status, 200);
  WaitRecord(2);
  proxy_.reset();  // flushes the WAL
  auto log = wal::Log::Open(wal_dir_);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  auto reader = (*log)->NewReader((*log)->FirstSequence());
  ASSERT_TRUE(reader.ok());
  int n = 0;
  while (true) {
    auto rec = (*reader)->Next();
    ASSERT_TRUE(rec.ok()) << rec.status().ToString();
    if (!rec->has_value()) break;
    Json j = Json::parse((*rec)->data);
    EXPECT_EQ(j["org"], "acme");
    EXPECT_EQ(j["output_tokens"], 16);
    ++n;
  }
  EXPECT_EQ(n, 2);
}

// The record's text as it was made before (an nlohmann tree, dumped): UsageRecordJson writes it without
// the tree and must give the same bytes.
std::string UsageRecordTreeJson(const UsageRecord& r) {
  Json j = {{"request_id", r.request_id},
            {"time_ns", r.time_ns},
            {"org", r.org},
            {"key_id", r.key_id},
            {"model", r.model},
            {"route", r.route},
            {"client_format", r.client_format},
            {"api", r.api},
            {"status", r.status},
            {"stream", r.stream},
            {"input_tokens", r.input_tokens},
            {"output_tokens", r.output_tokens},
            {"cached_tokens", r.cached_tokens},
            {"cost", r.cost},
            {"latency_ms", r.latency_ms}};
  if (r.tokens_estimated) j["tokens_estimated"] = true;
  if (!r.error.empty()) j["error"] = r.error;
  if (!r.deployment.empty()) j["deployment"] = r.deployment;
  if (!r.attempts.empty()) {
    Json attempts = Json::array();
    for (const auto& a : r.attempts) {
      Json aj = {{"model", a.model}, {"deployment", a.deployment}, {"status", a.status}};
      if (!a.error.empty()) aj["error"] = a.error;
      if (a.backoff_ms > 0) aj["backoff_ms"] = a.backoff_ms;
      attempts.push_back(std::move(aj));
    }
    j["attempts"] = std::move(attempts);
  }
  if (!r.principal.empty()) j["principal"] = r.principal;
  if (!r.decision.empty()) j["decision"] = r.decision;
  if (!r.decision_reason.empty()) j["decision_reason"] = r.decision_reason;
  if (!r.dlp_action.empty()) {
    j["dlp_action"] = r.dlp_action;
    j["dlp_rules"] = r.dlp_rules;
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

TEST(UsageRecordJson, SameTextAsTheTree) {
  UsageRecord plain;
  plain.request_id = "gwr_0123456789abcdef01234567";
  plain.time_ns = 1764567890123456789;
  plain.org = "acme";
  plain.key_id = VirtualKeyId(kKey);
  plain.model = "gpt-stub";
  plain.route = "http://127.0.0.1:8080";
  plain.client_format = "openai";
  plain.api = "chat";
  plain.status = 200;
  plain.input_tokens = 12;
  plain.output_tokens = 16;
  plain.cost = (12 * 1.0 + 16 * 2.0) / 1e6;
  plain.latency_ms = 0.0734;
  std::vector<UsageRecord> records = {UsageRecord{}, plain};
  UsageRecord full = plain;
  full.stream = true;
  full.cached_tokens = 4;
  full.tokens_estimated = true;
  full.error = "upstream: \"quoted\" \\ tab\t newline\n \x01 caf\xc3\xa9 \xff bad \x7f";
  full.deployment = "east";
  full.attempts = {{"gpt-stub", "west", 503, "upstream: busy", 0}, {"gpt-stub", "east", 200, "", 250}};
  full.principal = "user:ana@example.com";
  full.decision = "allow";
  full.decision_reason = "policy \xe2\x80\x9c" "0" "\xe2\x80\x9d";
  full.dlp_action = "redact";
  full.dlp_rules = {"email", "aws\"key"};
  full.cost = 1e20;
  full.latency_ms = 123456.789;
  records.push_back(full);
  for (double d : {0.0, 1.0, -2.5, 1e-5, 0.0001, 3.2e-05, 1.0 / 3.0, 5e-324, 1.7976931348623157e308,
                   std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    UsageRecord r = plain;
    r.cost = d;
    r.latency_ms = d * 7;
    records.push_back(r);
  }
  UsageRecord empty_dlp = plain;
  empty_dlp.dlp_action = "none";
  records.push_back(empty_dlp);
  for (const UsageRecord& r : records) EXPECT_EQ(UsageRecordJson(r), UsageRecordTreeJson(r));
}

TEST(WorkHistogram, PercentilesMaxMeanAndStartsOver) {
  WorkHistogram h;
  EXPECT_EQ(h.Take().requests, 0u);
  for (int us = 1; us <= 100; ++us) h.Add(std::chrono::microseconds(us));
  WorkTimes t = h.Take();
  EXPECT_EQ(t.requests, 100u);
  EXPECT_NEAR(t.p50_us, 50, 0.25);
  EXPECT_NEAR(t.p90_us, 90, 0.25);
  EXPECT_NEAR(t.p99_us, 99, 0.25);
  EXPECT_DOUBLE_EQ(t.max_us, 100);
  EXPECT_DOUBLE_EQ(t.mean_us, 50.5);
  EXPECT_EQ(h.Take().requests, 0u);  // started over
  // Coarse buckets (4 µs) and beyond them (4.35 ms): never more than the largest time.
  h.Add(std::chrono::microseconds(1000));
  h.Add(std::chrono::milliseconds(50));
  t = h.Take();
  EXPECT_EQ(t.requests, 2u);
  EXPECT_NEAR(t.p50_us, 1000, 2);
  EXPECT_DOUBLE_EQ(t.p99_us, 50000);
  EXPECT_DOUBLE_EQ(t.max_us, 50000);
  h.Add(std::chrono::nanoseconds(-5));  // a clock step backwards counts as 0
  EXPECT_EQ(h.Take().max_us, 0);
}

// The gateway's own time is kept for answered requests (whole and streamed), not for refusals or
// failures before a provider answered.
TEST_F(ProxyTest, WorkTimesCountAnsweredRequests) {
  (void)proxy_->TakeWorkTimes();
  ASSERT_EQ(Post("/v1/chat/completions", kChat, kKey).status, 200);
  ASSERT_EQ(Post("/v1/chat/completions", kChat, kKey).status, 200);
  ASSERT_EQ(Post("/v1/chat/completions", kChatStream, kKey).status, 200);
  ASSERT_EQ(Post("/v1/chat/completions", kChat, "gvg_unknown").status, 401);
  ASSERT_EQ(Post("/v1/chat/completions", R"({"model":"nope","messages":[]})", kKey).status, 404);
  ASSERT_EQ(Post("/v1/chat/completions", R"({"model":"gpt-down","messages":[]})", kKey).status, 502);
  // The time is added just after the response is handed on: it may trail the client's answer.
  uint64_t n = 0;
  EXPECT_TRUE(Eventually([&] {
    WorkTimes t = proxy_->TakeWorkTimes();
    if (t.requests > 0) {
      EXPECT_GT(t.p50_us, 0);
      EXPECT_LE(t.p50_us, t.p99_us);
      EXPECT_LE(t.p99_us, t.max_us);
      EXPECT_GT(t.mean_us, 0);
    }
    n += t.requests;
    return n >= 3;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(n + proxy_->TakeWorkTimes().requests, 3u);
}

// Sends `request` on a fresh connection, reads until `min_bytes` of the answer arrived, then closes.
std::string ReadSomeAndLeave(uint16_t port, const std::string& request, size_t min_bytes) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  std::string got;
  char buf[4096];
  while (got.size() < min_bytes) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return got;
}

TEST_F(ProxyTest, ClientLeavingMidStreamCancelsAndIsRecorded) {
  for (const char* model : {"gpt-slow", "claude-slow"}) {
    SCOPED_TRACE(model);
    bool anthropic_client = std::string_view(model) == "claude-slow";
    std::string body = std::string(R"({"model":")") + model + R"(","max_tokens":5000,"stream":true,)" +
                       R"("messages":[{"role":"user","content":"one two three"}]})";
    std::string request = std::string("POST ") +
                          (anthropic_client ? "/v1/messages" : "/v1/chat/completions") +
                          " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
                          "x-stub-output-tokens: 1000\r\nAuthorization: Bearer " + kKey +
                          "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    std::string got = ReadSomeAndLeave(server_->port(), request, 1500);
    EXPECT_NE(got.find("200"), std::string::npos) << got;
  }
  // Both are recorded as left by the client (499) with the output streamed so far: some of the 1000
  // tokens, not all (the provider call was cancelled, not drained).
  for (size_t i = 1; i <= 2; ++i) {
    UsageRecord r = WaitRecord(i);
    EXPECT_EQ(r.status, 499) << r.model << " " << r.error;
    EXPECT_GT(r.output_tokens, 0) << r.model;
    EXPECT_LT(r.output_tokens, 1000) << r.model;
    if (r.model == "claude-slow") {
      EXPECT_EQ(r.input_tokens, 3);
    }
  }
  // The provider saw both calls end early: its writes failed (it was not left to stream 1000 tokens
  // into a pooled connection), and it holds no connection any more.
  EXPECT_TRUE(Eventually([&] {
    auto st = slow_stub_->stats();
    return st.answers_cut == 2 && st.open_connections == 0;
  })) << "cut "
      << slow_stub_->stats().answers_cut << " open " << slow_stub_->stats().open_connections;
  EXPECT_EQ(slow_stub_->stats().requests, 2u);
}

// A provider that takes a request and never answers; it reports when the gateway closes the connection.
class HangingProvider {
 public:
  HangingProvider() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    EXPECT_EQ(::listen(fd_, 8), 0);
    thread_ = std::thread([this] {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      timeval tv{30, 0};  // a gateway that never closes fails the test instead of hanging it
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      std::string got;
      char buf[4096];
      while (true) {
        ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) {
          closed_by_gateway_ = n == 0 || errno == ECONNRESET;
          break;
        }
        got.append(buf, static_cast<size_t>(n));
        if (got.find("\r\n\r\n") != std::string::npos) got_request_ = true;
      }
      ::close(c);
    });
  }
  ~HangingProvider() {
    ::shutdown(fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  bool got_request() const { return got_request_; }
  void Join() { thread_.join(); }
  bool closed_by_gateway() const { return closed_by_gateway_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> got_request_{false};
  std::atomic<bool> closed_by_gateway_{false};
  std::thread thread_;
};

TEST(ProxyClientLeaves, BeforeAWholeAnswerCancelsTheProviderCallAndIsRecorded) {
  for (bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "stream awaiting its head" : "whole answer");
    HangingProvider provider;
    std::mutex mu;
    std::condition_variable cv;
    std::vector<UsageRecord> records;
    ProxyConfig c;
    c.routes = {{"gpt-hang", provider.base_url(), WireFormat::kOpenAI, ""}};
    c.keys = {{kKey, "acme", 0, 0}};
    c.on_record = [&](const UsageRecord& r) {
      std::lock_guard lock(mu);
      records.push_back(r);
      cv.notify_all();
    };
    auto proxy = Proxy::Create(std::move(c));
    ASSERT_TRUE(proxy.ok());
    net::Router router;
    (*proxy)->Register(router);
    net::Server server(net::ServerConfig{}, std::move(router));
    ASSERT_TRUE(server.Start().ok());

    std::string body = std::string(R"({"model":"gpt-hang",)") + (stream ? R"("stream":true,)" : "") +
                       R"("messages":[{"role":"user","content":"hi"}]})";
    std::string request =
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Authorization: Bearer " +
        std::string(kKey) + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server.port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
    // The provider has the request (the call is under way); then the client leaves.
    for (int i = 0; i < 2000 && !provider.got_request(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(provider.got_request());
    ::close(fd);

    // Without the close notice, the call would wait for the provider (10 minutes, the header timeout).
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return !records.empty(); }));
    EXPECT_EQ(records[0].status, 499);
    EXPECT_EQ(records[0].error, "client went away before the answer");
    EXPECT_EQ(records[0].org, "acme");
    lock.unlock();
    provider.Join();  // returns once the provider's connection is closed (or after 30 s, failing below)
    EXPECT_TRUE(provider.closed_by_gateway()) << "the provider's connection was not closed";
    server.Stop();
    proxy->reset();
    EXPECT_EQ(records.size(), 1u);
  }
}

TEST_F(ProxyTest, PooledConnectionIsReusedAndReplacedAfterTheProviderClosesIt) {
  ASSERT_EQ(Post("/v1/chat/completions", kChat, kKey).status, 200);
  ASSERT_EQ(Post("/v1/chat/completions", kChatStream, kKey).status, 200);
  auto st = proxy_->upstream_stats();
  EXPECT_EQ(st.connections_opened, 1u);
  EXPECT_EQ(st.connections_reused, 1u);
  EXPECT_EQ(stub_->stats().connections_accepted, 1u);

  // The provider restarts on the same port: the pooled connection is closed under the gateway.
  uint16_t port = stub_->port();
  stub_->Stop();
  auto again = model_stub::StubServer::Start({.port = port, .threads = 1});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  stub_ = std::move(*again);
  auto r = Post("/v1/chat/completions", kChat, kKey);
  EXPECT_EQ(r.status, 200) << r.body;
  st = proxy_->upstream_stats();
  EXPECT_EQ(st.stale_dropped, 1u);
  EXPECT_EQ(st.connections_opened, 2u);
  EXPECT_EQ(stub_->stats().requests, 1u);  // sent once, on the fresh connection
}

TEST_F(ProxyTest, RequestThatMayHaveReachedTheProviderIsNeverResent) {
  // On a fresh connection and on a pooled one: the provider reads the request and hangs up.
  for (int i = 0; i < 2; ++i) {
    auto r = Post("/v1/chat/completions", kChat, kKey, false, {{"x-stub-drop", "1"}});
    EXPECT_EQ(r.status, 502) << r.body;
    EXPECT_EQ(Json::parse(r.body)["error"]["type"], "api_error");
    ASSERT_EQ(Post("/v1/chat/completions", kChat, kKey).status, 200);  // leaves a pooled connection
  }
  EXPECT_EQ(stub_->stats().requests, 4u);  // two dropped, two answered: nothing sent twice
  EXPECT_EQ(proxy_->upstream_stats().retried, 0u);
  EXPECT_GE(proxy_->upstream_stats().connections_reused, 1u);

  // Connecting sends nothing, so a refused connect is tried again.
  EXPECT_EQ(Post("/v1/chat/completions", R"({"model":"gpt-down","messages":[]})", kKey).status, 502);
  EXPECT_EQ(proxy_->upstream_stats().retried, 1u);
  std::vector<int> statuses;
  for (size_t i = 1; i <= 5; ++i) statuses.push_back(WaitRecord(i).status);
  std::sort(statuses.begin(), statuses.end());
  EXPECT_EQ(statuses, (std::vector<int>{200, 200, 502, 502, 502}));
}

// ---- The OpenAI Responses and embeddings APIs ----

constexpr const char* kResponses =
    R"({"model":"gpt-stub","instructions":"be brief","input":"one two three"})";
constexpr const char* kResponsesStream = R"({"model":"gpt-stub","stream":true,"input":"one two three"})";
constexpr const char* kResponsesTool =
    R"({"model":"gpt-stub","stream":true,"input":"weather?","tools":[{"type":"function","name":"get_weather",)"
    R"("parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]})";

// The Responses events of a stream, each checked to parse.
std::vector<openai::ResponsesEvent> ResponsesEvents(const std::vector<SseEvent>& events) {
  std::vector<openai::ResponsesEvent> out;
  for (const auto& e : events) {
    auto ev = openai::ParseResponsesEvent(e.data);
    EXPECT_TRUE(ev.ok()) << e.data;
    if (!ev.ok()) continue;
    EXPECT_EQ(e.event, ev->type);  // the SSE event name is the type
    out.push_back(std::move(*ev));
  }
  return out;
}

TEST_F(ProxyTest, ResponsesWholeIsForwardedAndMeteredWithCachedTokens) {
  auto resp = Post("/v1/responses", kResponses, kKey, false, {{"x-stub-cached-tokens", "2"}});
  ASSERT_EQ(resp.status, 200) << resp.body;
  auto r = openai::ParseResponsesResponse(resp.body);
  ASSERT_TRUE(r.ok()) << resp.body;
  EXPECT_EQ(r->OutputText().rfind("Govern stub reply", 0), 0u);
  EXPECT_EQ(r->usage, (openai::ResponsesUsage{5, 16, 21, 2, 0}));

  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200);
  EXPECT_EQ(rec.api, "responses");
  EXPECT_EQ(rec.client_format, "openai");
  EXPECT_FALSE(rec.stream);
  EXPECT_EQ(rec.input_tokens, 5);
  EXPECT_EQ(rec.output_tokens, 16);
  EXPECT_EQ(rec.cached_tokens, 2);
  EXPECT_DOUBLE_EQ(rec.cost, (3 * 1.0 + 2 * 0.5 + 16 * 2.0) / 1e6);
  EXPECT_NE(UsageRecordJson(rec).find(R"("api":"responses")"), std::string::npos);
}

TEST_F(ProxyTest, ResponsesStreamIsRelayedEventByEventAndMeteredFromCompleted) {
  auto resp = Post("/v1/responses", kResponsesStream, kKey);
  ASSERT_EQ(resp.status, 200) << resp.body;
  EXPECT_EQ(resp.headers.Get("Content-Type").value_or(""), "text/event-stream");
  auto events = ResponsesEvents(Events(resp.body));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().type, "response.created");
  EXPECT_EQ(events.back().type, "response.completed");
  std::string text;
  for (const auto& e : events)
    if (e.type == "response.output_text.delta") text += e.body["delta"].get<std::string>();
  EXPECT_EQ(text, events.back().response->OutputText());
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200);
  EXPECT_TRUE(rec.stream);
  EXPECT_EQ(rec.api, "responses");
  EXPECT_EQ(rec.input_tokens, 3);
  EXPECT_EQ(rec.output_tokens, 16);
  EXPECT_TRUE(rec.error.empty()) << rec.error;
}

TEST_F(ProxyTest, ResponsesFunctionCallStreamed) {
  auto resp = Post("/v1/responses", kResponsesTool, kKey);
  ASSERT_EQ(resp.status, 200) << resp.body;
  auto events = ResponsesEvents(Events(resp.body));
  std::string args;
  int added = 0;
  for (const auto& e : events) {
    if (e.type == "response.function_call_arguments.delta") args += e.body["delta"].get<std::string>();
    if (e.type == "response.output_item.added" && e.body["item"]["type"] == "function_call") ++added;
  }
  EXPECT_EQ(added, 1);
  EXPECT_EQ(args, R"({"city":"stub"})");
  ASSERT_FALSE(events.empty());
  ASSERT_TRUE(events.back().response.has_value());
  const auto& out = events.back().response->output;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, openai::ResponseItem::Type::kFunctionCall);
  EXPECT_EQ(out[0].name, "get_weather");
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.output_tokens, events.back().response->usage->output_tokens);
  EXPECT_GT(rec.output_tokens, 0);
}

TEST_F(ProxyTest, ResponsesStreamCutOrFailedEndsWithAnErrorEventAndIsRecorded) {
  // The provider cuts the stream after 5 events (3 of them text deltas): the client gets the Responses
  // error event; the record has status 502 and the deltas seen as output tokens.
  auto cut = Post("/v1/responses", kResponsesStream, kKey, false, {{"x-stub-cut-after", "7"}});
  ASSERT_EQ(cut.status, 200);
  auto events = Events(cut.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().event, "error");
  auto err = Json::parse(events.back().data);
  EXPECT_EQ(err["type"], "error");
  EXPECT_NE(err["message"].get<std::string>().find("cut"), std::string::npos) << events.back().data;
  EXPECT_EQ(err["sequence_number"], 7);  // one after the last relayed event
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 502);
  EXPECT_EQ(rec.output_tokens, 3);

  // The provider's own in-stream error is relayed as it came and ends the stream.
  auto failed = Post("/v1/responses", kResponsesStream, kKey, false, {{"x-stub-error-after", "4"}});
  ASSERT_EQ(failed.status, 200);
  auto fevents = Events(failed.body);
  ASSERT_EQ(fevents.size(), 5u);
  EXPECT_EQ(fevents.back().event, "error");
  EXPECT_EQ(Json::parse(fevents.back().data)["message"], "injected stream error");
  UsageRecord frec = WaitRecord(2);
  EXPECT_EQ(frec.status, 200);
  EXPECT_NE(frec.error.find("injected stream error"), std::string::npos) << frec.error;
}

TEST_F(ProxyTest, EmbeddingsAreForwardedAndMetered) {
  auto resp =
      Post("/v1/embeddings", R"({"model":"gpt-stub","input":["one two","three"],"dimensions":4})", kKey);
  ASSERT_EQ(resp.status, 200) << resp.body;
  auto e = openai::ParseEmbeddingsResponse(resp.body);
  ASSERT_TRUE(e.ok()) << resp.body;
  ASSERT_EQ(e->data.size(), 2u);
  EXPECT_EQ(e->data[0].size(), 4u);
  EXPECT_EQ(e->prompt_tokens, 3);
  auto single = Post("/v1/embeddings", R"({"model":"gpt-stub","input":"a b c d"})", kKey);
  ASSERT_EQ(single.status, 200) << single.body;

  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200);
  EXPECT_EQ(rec.api, "embeddings");
  EXPECT_FALSE(rec.stream);
  EXPECT_EQ(rec.input_tokens, 3);
  EXPECT_EQ(rec.output_tokens, 0);
  EXPECT_DOUBLE_EQ(rec.cost, 3 * 1.0 / 1e6);
  EXPECT_EQ(WaitRecord(2).input_tokens, 4);
}

TEST_F(ProxyTest, ResponsesAndEmbeddingsRefusalsInTheOpenAIShape) {
  auto bad_key = Post("/v1/responses", kResponses, "gvg_nope");
  EXPECT_EQ(bad_key.status, 401);
  EXPECT_EQ(Json::parse(bad_key.body)["error"]["code"], "invalid_api_key");
  auto no_key = Post("/v1/embeddings", R"({"model":"gpt-stub","input":"x"})", "");
  EXPECT_EQ(no_key.status, 401);

  auto unknown = Post("/v1/responses", R"({"model":"nope","input":"x"})", kKey);
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(Json::parse(unknown.body)["error"]["code"], "model_not_found");
  auto bad_body = Post("/v1/embeddings", R"({"model":"gpt-stub","model":"other","input":"x"})", kKey);
  EXPECT_EQ(bad_body.status, 400);
  // Anthropic has no embeddings API.
  auto anthropic_route = Post("/v1/embeddings", R"({"model":"claude-stub","input":"x"})", kKey);
  EXPECT_EQ(anthropic_route.status, 400);
  EXPECT_EQ(Json::parse(anthropic_route.body)["error"]["type"], "invalid_request_error");
  // The provider's 4xx is relayed as it came; a 5xx is a 502.
  auto up_400 = Post("/v1/responses", R"({"model":"gpt-stub","input":7})", kKey);
  EXPECT_EQ(up_400.status, 400);
  EXPECT_TRUE(Json::parse(up_400.body)["error"].is_object()) << up_400.body;
  auto up_500 =
      Post("/v1/embeddings", R"({"model":"gpt-stub","input":"x"})", kKey, false, {{"x-stub-status", "500"}});
  EXPECT_EQ(up_500.status, 502);
  EXPECT_EQ(Json::parse(up_500.body)["error"]["type"], "api_error");

  // Rate limits apply as to chat: 2 a minute, the third is refused.
  EXPECT_EQ(Post("/v1/responses", kResponses, kLimitedKey).status, 200);
  EXPECT_EQ(Post("/v1/embeddings", R"({"model":"gpt-stub","input":"x"})", kLimitedKey).status, 200);
  auto limited = Post("/v1/responses", kResponses, kLimitedKey);
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(limited.headers.Get("Retry-After").value_or(""), "1");

  // One record per authenticated request; none for the two 401s.
  std::vector<int> statuses;
  for (size_t i = 1; i <= 8; ++i) statuses.push_back(WaitRecord(i).status);
  std::sort(statuses.begin(), statuses.end());
  EXPECT_EQ(statuses, (std::vector<int>{200, 200, 400, 400, 400, 404, 429, 502}));
  std::lock_guard lock(mu_);
  EXPECT_EQ(records_.size(), 8u);
}

TEST_F(ProxyTest, ResponsesOnAnthropicRouteAreTranslated) {
  auto whole = Post(
      "/v1/responses",
      R"({"model":"claude-stub","instructions":"be brief","input":"one two three","max_output_tokens":10})",
      kKey, false, {{"x-stub-cached-tokens", "1"}});
  ASSERT_EQ(whole.status, 200) << whole.body;
  auto r = openai::ParseResponsesResponse(whole.body);
  ASSERT_TRUE(r.ok()) << whole.body;
  EXPECT_EQ(r->status, "incomplete");  // the stub stopped at max_tokens
  EXPECT_EQ(r->OutputText(), model_stub::StubText(10)) << whole.body;
  EXPECT_EQ(r->usage, (openai::ResponsesUsage{5, 10, 15, 1, 0}));
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200);
  EXPECT_EQ(rec.api, "responses");
  EXPECT_EQ(rec.input_tokens, 5);
  EXPECT_EQ(rec.output_tokens, 10);
  EXPECT_EQ(rec.cached_tokens, 1);

  std::string tool_stream = kResponsesTool;
  tool_stream.replace(tool_stream.find("gpt-stub"), 8, "claude-stub");
  for (const std::string& body :
       {std::string(R"({"model":"claude-stub","stream":true,"input":"one two three"})"), tool_stream}) {
    SCOPED_TRACE(body);
    auto s = Post("/v1/responses", body, kKey);
    ASSERT_EQ(s.status, 200) << s.body;
    auto events = ResponsesEvents(Events(s.body));
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.front().type, "response.created");
    EXPECT_EQ(events.back().type, "response.completed");
    std::string text, args;
    for (size_t i = 0; i < events.size(); ++i) {
      EXPECT_EQ(events[i].body["sequence_number"], static_cast<int64_t>(i));
      if (events[i].type == "response.output_text.delta") text += events[i].body["delta"].get<std::string>();
      if (events[i].type == "response.function_call_arguments.delta")
        args += events[i].body["delta"].get<std::string>();
    }
    ASSERT_TRUE(events.back().response.has_value());
    const auto& final = *events.back().response;
    if (body == tool_stream) {
      ASSERT_EQ(final.output.size(), 1u);
      EXPECT_EQ(final.output[0].type, openai::ResponseItem::Type::kFunctionCall);
      EXPECT_EQ(final.output[0].name, "get_weather");
      EXPECT_EQ(Json::parse(args), Json({{"city", "stub"}}));
    } else {
      EXPECT_EQ(text, model_stub::StubText(16));
      EXPECT_EQ(final.OutputText(), text);
      EXPECT_EQ(final.usage->output_tokens, 16);
    }
  }
  EXPECT_EQ(WaitRecord(2).output_tokens, 16);
  EXPECT_EQ(WaitRecord(2).input_tokens, 3);
  EXPECT_GT(WaitRecord(3).output_tokens, 0);

  // What Anthropic cannot take is a 400 in the OpenAI shape, recorded.
  auto prev =
      Post("/v1/responses", R"({"model":"claude-stub","input":"x","previous_response_id":"resp_1"})", kKey);
  EXPECT_EQ(prev.status, 400);
  EXPECT_NE(Json::parse(prev.body)["error"]["message"].get<std::string>().find("previous_response_id"),
            std::string::npos);
  EXPECT_EQ(WaitRecord(4).status, 400);

  // A cut translated stream ends with the Responses error event, numbered after the last one.
  auto cut = Post("/v1/responses", R"({"model":"claude-stub","stream":true,"input":"one"})", kKey, false,
                  {{"x-stub-cut-after", "4"}});
  ASSERT_EQ(cut.status, 200);
  auto events = Events(cut.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back().event, "error");
  auto err = Json::parse(events.back().data);
  EXPECT_EQ(err["sequence_number"],
            Json::parse(events[events.size() - 2].data)["sequence_number"].get<int64_t>() + 1);
  UsageRecord crec = WaitRecord(5);
  EXPECT_EQ(crec.status, 502);
  EXPECT_EQ(crec.input_tokens, 1);
}

class ProxyTimeoutTest : public ProxyTest {
 protected:
  void SetUp() override {
    header_timeout_ = std::chrono::milliseconds(300);
    read_timeout_ = std::chrono::milliseconds(300);
    slow_tokens_per_second_ = 1;  // a token every second: the stream goes quiet longer than read_timeout
    ProxyTest::SetUp();
  }
};

TEST_F(ProxyTimeoutTest, ProviderTooSlowGives504InEachShape) {
  auto r = Post("/v1/chat/completions", kChat, kKey, false, {{"x-stub-delay-ms", "3000"}});
  EXPECT_EQ(r.status, 504) << r.body;
  EXPECT_EQ(Json::parse(r.body)["error"]["type"], "api_error");
  auto a = Post("/v1/messages",
                R"({"model":"claude-stub","max_tokens":5,"messages":[{"role":"user","content":"x"}]})", kKey,
                true, {{"x-stub-delay-ms", "3000"}});
  EXPECT_EQ(a.status, 504) << a.body;
  EXPECT_EQ(Json::parse(a.body)["error"]["type"], "api_error");
  EXPECT_EQ(WaitRecord(1).status, 504);
  EXPECT_EQ(WaitRecord(2).status, 504);
  EXPECT_EQ(stub_->stats().requests, 2u);  // a timeout is not retried either
  // A stream that goes quiet for longer than read_timeout ends with the format's error event.
  auto quiet = Post("/v1/chat/completions",
                    R"({"model":"gpt-slow","stream":true,"messages":[{"role":"user","content":"x"}]})", kKey);
  ASSERT_EQ(quiet.status, 200);
  auto events = Events(quiet.body);
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(Json::parse(events.back().data).contains("error")) << events.back().data;
  EXPECT_EQ(WaitRecord(3).status, 504);
  // A timed-out connection is closed, not pooled: the next call opens a fresh one and succeeds.
  EXPECT_EQ(Post("/v1/chat/completions", kChat, kKey).status, 200);
  EXPECT_EQ(proxy_->upstream_stats().connections_reused, 0u);
}

class ProxyDurableTest : public ProxyTest {
 protected:
  void SetUp() override {
    durable_ = true;
    ProxyTest::SetUp();
  }
};

TEST_F(ProxyDurableTest, AnswersCompleteOnceTheRecordIsSynced) {
  auto r = Post("/v1/chat/completions", kChat, kKey);
  EXPECT_EQ(r.status, 200);
  auto s = Post("/v1/chat/completions", kChatStream, kKey);
  EXPECT_EQ(s.status, 200);
  auto events = Events(s.body);
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(events.back().IsDone());
  EXPECT_EQ(Post("/v1/chat/completions", R"({"model":"nope","messages":[]})", kKey).status, 404);
  WaitRecord(3);
  proxy_.reset();
  auto log = wal::Log::Open(wal_dir_);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->DurableSequence(), 3u);
}

// A self-signed certificate for localhost, made with the openssl command line tool (as in net's tests).
class TlsFiles {
 public:
  TlsFiles() {
    dir_ = std::filesystem::temp_directory_path() / ("govern-gateway-tls-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
        "-subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
        key() + " -out " + cert() + " >/dev/null 2>&1";
    ok_ = std::system(cmd.c_str()) == 0;
  }
  ~TlsFiles() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  bool ok() const { return ok_; }
  std::string cert() const { return (dir_ / "cert.pem").string(); }
  std::string key() const { return (dir_ / "key.pem").string(); }

 private:
  std::filesystem::path dir_;
  bool ok_ = false;
};

TEST(ProxyTls, HttpsProviderIsVerifiedAndPooled) {
  TlsFiles tls;
  ASSERT_TRUE(tls.ok()) << "openssl could not make a certificate";
  // The provider: an HTTPS server answering as the stub does.
  net::Router provider_routes;
  provider_routes.AddSync(net::Method::kPost, "/v1/chat/completions", [](net::Request& req) {
    model_stub::Reply r = model_stub::Answer("POST", req.path, req.body, {}, {}, 1700000000);
    return net::Response(r.status, std::move(r.body), r.content_type);
  });
  net::ServerConfig pc;
  pc.workers = 1;
  pc.tls_cert_file = tls.cert();
  pc.tls_key_file = tls.key();
  net::Server provider(pc, std::move(provider_routes));
  ASSERT_TRUE(provider.Start().ok());
  std::string base = "https://localhost:" + std::to_string(provider.port());

  auto run = [&](std::string ca_file, int expect_status, int calls) {
    ProxyConfig c;
    c.routes = {{"gpt-tls", base, WireFormat::kOpenAI, "sk-upstream"}};
    c.keys = {{kKey, "acme", 0, 0}};
    c.upstream.ca_file = std::move(ca_file);
    c.upstream.connect_attempts = 1;
    auto proxy = Proxy::Create(std::move(c));
    ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
    net::Router router;
    (*proxy)->Register(router);
    net::ServerConfig sc;
    sc.workers = 1;
    net::Server server(sc, std::move(router));
    ASSERT_TRUE(server.Start().ok());
    {
      net::HttpClient client;
      for (int i = 0; i < calls; ++i) {
        net::ClientRequest req;
        req.method = net::Method::kPost;
        req.url = "http://127.0.0.1:" + std::to_string(server.port()) + "/v1/chat/completions";
        req.headers.Set("Authorization", std::string("Bearer ") + kKey);
        req.body = R"({"model":"gpt-tls","messages":[{"role":"user","content":"one two"}]})";
        auto r = client.Send(std::move(req));
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        EXPECT_EQ(r->status, expect_status) << r->body;
      }
    }
    auto st = (*proxy)->upstream_stats();
    if (expect_status == 200) {
      EXPECT_EQ(st.connections_opened, 1u);
      EXPECT_EQ(st.connections_reused, static_cast<uint64_t>(calls - 1));
    }
    server.Stop();
  };
  // Trusting the provider's certificate: answered, over one pooled TLS connection.
  run(tls.cert(), 200, 2);
  // Trusting only the system store: the self-signed provider is refused (502), never sent the request.
  run("", 502, 1);
}

TEST(ProxyConfig, ParsesAndRejects) {
  auto c = ParseProxyConfig(
      R"({"routes":[{"model":"m","base_url":"http://h:1/","format":"anthropic","api_key":"k"}],)"
      R"("keys":[{"key":"gvg_x","org":"o","requests_per_minute":5}],"prices":{"m":{"input":3,"output":15}}})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->routes[0].base_url, "http://h:1");
  EXPECT_EQ(c->routes[0].format, WireFormat::kAnthropic);
  EXPECT_EQ(c->keys[0].requests_per_minute, 5);
  EXPECT_EQ(c->prices["m"].cached_input, 3);
  EXPECT_FALSE(ParseProxyConfig(R"({"routes":[{"model":"m","base_url":"x","format":"grpc"}]})").ok());
  EXPECT_FALSE(ParseProxyConfig(R"({"keys":[{"key":"sk_x","org":"o"}]})").ok());
  EXPECT_FALSE(ParseProxyConfig("[").ok());

  auto u = ParseProxyConfig(
      R"({"usage_durable_before_response":true,"upstream":{"connect_timeout_ms":250,"header_timeout_ms":1000,)"
      R"("read_timeout_ms":2000,"idle_timeout_ms":3000,"max_idle_per_host":4,"threads":2,"ca_file":"/x.pem"}})");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_TRUE(u->usage_durable_before_response);
  EXPECT_EQ(u->upstream.connect_timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(u->upstream.header_timeout, std::chrono::milliseconds(1000));
  EXPECT_EQ(u->upstream.read_timeout, std::chrono::milliseconds(2000));
  EXPECT_EQ(u->upstream.idle_timeout, std::chrono::milliseconds(3000));
  EXPECT_EQ(u->upstream.max_idle_per_host, 4u);
  EXPECT_EQ(u->upstream.threads, 2);
  EXPECT_EQ(u->upstream.ca_file, "/x.pem");
  EXPECT_FALSE(ParseProxyConfig(R"({"upstream":{"threads":0}})").ok());
  EXPECT_FALSE(ParseProxyConfig(R"({"upstream":{"header_timeout_ms":0}})").ok());
  EXPECT_FALSE(ParseProxyConfig(R"({"upstream":[]})").ok());
}


// The provider client reads a small whole answer (head and body sent together, as a model server sends
// one) in one read, not in Beast's 512-byte first helping and then more trips round the loop: the whole
// body is there for the first Read after the head.
TEST(UpstreamClientRead, SmallWholeAnswerArrivesInOneRead) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ASSERT_EQ(::listen(fd, 8), 0);
  const std::string body(3000, 'x');
  std::thread provider([&] {
    int c = ::accept(fd, nullptr, nullptr);
    if (c < 0) return;
    timeval tv{30, 0};
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string got;
    char buf[4096];
    while (got.find("\r\n\r\n{}") == std::string::npos) {  // the request's head and its 2-byte body
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body;
    ::send(c, answer.data(), answer.size(), 0);  // one send: one segment on loopback
    while (::recv(c, buf, sizeof buf, 0) > 0) {
    }  // until the client closes its pooled connection
    ::close(c);
  });
  {
    auto client = UpstreamClient::Create({});
    ASSERT_TRUE(client.ok());
    UpstreamRequest req;
    req.url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/v1/chat/completions";
    req.body = "{}";
    auto call = (*client)->NewCall(std::move(req));
    std::promise<Status> head;
    call->Start([&](Status st) { head.set_value(st); });
    ASSERT_TRUE(head.get_future().get().ok());
    std::promise<Result<std::string>> piece;
    call->Read([&](Result<std::string> r) { piece.set_value(std::move(r)); });
    auto first = piece.get_future().get();
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_EQ(first->size(), body.size());
  }  // the client closes the pooled connection: the provider's thread ends
  provider.join();
  ::close(fd);
}

// A call made in a server's handler runs on that handler's loop (no hand-off between threads), from its
// pool; stopping the server closes that pool and its sweep timer (an hour away here), so Stop() returns.
TEST(UpstreamClientOnServerLoop, CallRunsOnTheHandlersThreadAndStopClosesItsPool) {
  auto stub = model_stub::StubServer::Start({.port = 0, .threads = 1});
  ASSERT_TRUE(stub.ok()) << stub.status().ToString();
  UpstreamOptions opts;
  opts.idle_timeout = std::chrono::hours(1);
  auto client = UpstreamClient::Create(opts);
  ASSERT_TRUE(client.ok());
  std::string provider = "http://127.0.0.1:" + std::to_string((*stub)->port()) + "/v1/chat/completions";
  std::mutex mu;
  std::vector<bool> same_thread;  // per request: head, then body, on the handler's thread
  net::Router router;
  router.Add(net::Method::kGet, "/call", [&](net::Request&&, net::Responder responder) {
    UpstreamRequest req;
    req.url = provider;
    req.headers.Set("Content-Type", "application/json");
    req.body = kChat;
    auto call = std::shared_ptr<UpstreamCall>((*client)->NewCall(std::move(req)));
    auto handler_thread = std::this_thread::get_id();
    auto out = std::make_shared<net::Responder>(std::move(responder));
    call->Start([&, call, handler_thread, out](Status st) {
      {
        std::lock_guard lock(mu);
        same_thread.push_back(std::this_thread::get_id() == handler_thread);
      }
      if (!st.ok()) return out->Send(net::Response(502, st.ToString()));
      call->ReadAll(1 << 20, [&, call, handler_thread, out](Result<std::string> body) {
        {
          std::lock_guard lock(mu);
          same_thread.push_back(std::this_thread::get_id() == handler_thread);
        }
        out->Send(net::Response(body.ok() ? call->status() : 502, body.ok() ? *body : ""));
      });
    });
  });
  net::ServerConfig sc;
  sc.workers = 1;
  auto server = std::make_unique<net::Server>(sc, std::move(router));
  ASSERT_TRUE(server->Start().ok());
  net::HttpClient http;
  for (int i = 0; i < 2; ++i) {
    auto r = http.Get("http://127.0.0.1:" + std::to_string(server->port()) + "/call");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_NE(r->status, 502) << r->body;
  }
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(same_thread, std::vector<bool>(4, true));
  }
  // The second call reused the first one's connection, pooled on the server's loop.
  EXPECT_EQ((*client)->stats().connections_opened, 1u);
  EXPECT_EQ((*client)->stats().connections_reused, 1u);
  server->Stop();  // without the pool's stop hook: waits for the sweep timer, an hour
  server.reset();  // the pool's sockets went with the hook; the client outlives the server
  client->reset();
  (*stub)->Stop();
}

}  // namespace
}  // namespace govern::gateway
