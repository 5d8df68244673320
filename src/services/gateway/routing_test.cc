// Routing over real sockets: the proxy in front of small fake providers (one thread per connection,
// counting every request they read whole) that answer, refuse connections, hang, answer 503 or cut a
// stream, and the real model stub for a translated fallback. Failover, backoff, fallbacks, the breaker
// (opening, refusing fast, one half-open probe, closing again), weights, the providers' URLs and headers,
// and never a second POST to a provider that may have the request.
#include "services/gateway/routing.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "net/http_client.h"
#include "net/http_server.h"
#include "services/gateway/proxy.h"
#include "services/gateway/test_util.h"
#include "services/model_stub/server.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr const char* kKey = "gvg_routing_test_01";

// A provider on a real socket whose behaviour the test sets: answers (OpenAI format, naming itself in
// the text), an error status, a hang after reading the request, a drop after reading it, or a stream cut
// after its first event.
class FakeProvider {
 public:
  enum class Mode { kOk, kStatus, kHang, kDrop, kCutStream };
  struct Seen {
    std::string target;
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;
    SteadyClock::time_point at;
  };

  // `gemini`: answers in Gemini's format (generateContent, streamGenerateContent?alt=sse).
  explicit FakeProvider(std::string name, bool gemini = false) : name_(std::move(name)), gemini_(gemini) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 64), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    accept_ = std::thread([this] { AcceptLoop(); });
  }
  ~FakeProvider() { Stop(); }

  void Stop() {
    if (stopped_.exchange(true)) return;
    ::shutdown(fd_, SHUT_RDWR);
    accept_.join();
    ::close(fd_);
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      for (int c : conns_) ::shutdown(c, SHUT_RDWR);
      threads = std::move(threads_);
    }
    for (auto& t : threads) t.join();
  }

  void Set(Mode m, int status = 503, std::string retry_after = "") {
    std::lock_guard lock(mu_);
    mode_ = m;
    status_ = status;
    retry_after_ = std::move(retry_after);
  }
  size_t requests() {
    std::lock_guard lock(mu_);
    return seen_.size();
  }
  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  void AcceptLoop() {
    while (!stopped_) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) {
        if (stopped_) return;
        continue;
      }
      std::lock_guard lock(mu_);
      conns_.insert(c);
      threads_.emplace_back([this, c] { Serve(c); });
    }
  }

  void Close(int c) {
    {
      std::lock_guard lock(mu_);
      conns_.erase(c);
    }
    ::close(c);
  }

  static void WriteAll(int c, std::string_view s) {
    while (!s.empty()) {
      ssize_t n = ::send(c, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      s.remove_prefix(static_cast<size_t>(n));
    }
  }

  std::string Chunk(std::string_view delta, std::string_view finish, bool usage) {
    Json j = {{"id", "c1"}, {"object", "chat.completion.chunk"}, {"created", 0}, {"model", name_}};
    if (usage) {
      j["choices"] = Json::array();
      j["usage"] = {{"prompt_tokens", 3}, {"completion_tokens", 2}, {"total_tokens", 5}};
    } else {
      Json choice = {{"index", 0}, {"delta", Json::object()}};
      if (!delta.empty()) choice["delta"] = {{"role", "assistant"}, {"content", delta}};
      choice["finish_reason"] = finish.empty() ? Json(nullptr) : Json(finish);
      j["choices"] = Json::array({choice});
    }
    return "data: " + j.dump() + "\n\n";
  }

  void Serve(int c) {
    std::string buf;
    char tmp[4096];
    auto more = [&] {
      ssize_t n = ::recv(c, tmp, sizeof tmp, 0);
      if (n <= 0) return false;
      buf.append(tmp, static_cast<size_t>(n));
      return true;
    };
    while (true) {
      size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        if (!more()) return Close(c);
      }
      Seen s;
      s.at = SteadyClock::now();
      std::string head = buf.substr(0, end);
      size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
      s.target = head.substr(sp1 + 1, sp2 - sp1 - 1);
      size_t pos = head.find("\r\n");
      while (pos != std::string::npos && pos < head.size()) {
        size_t next = head.find("\r\n", pos + 2);
        std::string line =
            head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
        size_t colon = line.find(':');
        if (colon != std::string::npos) {
          std::string name = line.substr(0, colon);
          for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
          size_t v = line.find_first_not_of(' ', colon + 1);
          s.headers[name] = v == std::string::npos ? "" : line.substr(v);
        }
        pos = next;
      }
      size_t length = s.headers.contains("content-length") ? std::stoul(s.headers["content-length"]) : 0;
      while (buf.size() < end + 4 + length) {
        if (!more()) return Close(c);
      }
      s.body = buf.substr(end + 4, length);
      buf.erase(0, end + 4 + length);
      bool stream = s.body.find("\"stream\":true") != std::string::npos ||
                    s.target.find(":streamGenerateContent") != std::string::npos;
      Mode mode;
      int status;
      std::string retry_after;
      {
        std::lock_guard lock(mu_);
        seen_.push_back(s);
        mode = mode_;
        status = status_;
        retry_after = retry_after_.empty() ? "" : "Retry-After: " + retry_after_ + "\r\n";
      }
      switch (mode) {
        case Mode::kOk: {
          if (gemini_) {
            Json usage = {{"promptTokenCount", 3}, {"candidatesTokenCount", 2}, {"totalTokenCount", 5}};
            Json first = {{"candidates",
                           {{{"content", {{"role", "model"}, {"parts", {{{"text", "from " + name_}}}}}}}}},
                          {"usageMetadata", {{"promptTokenCount", 3}}}};
            Json last = {
                {"candidates",
                 {{{"content", {{"role", "model"}, {"parts", {{{"text", ""}}}}}}, {"finishReason", "STOP"}}}},
                {"usageMetadata", usage}};
            if (stream) {
              WriteAll(c,
                       "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                       "data: " +
                           first.dump() + "\r\n\r\ndata: " + last.dump() + "\r\n\r\n");
              return Close(c);
            }
            Json whole = {{"candidates",
                           {{{"content", {{"role", "model"}, {"parts", {{{"text", "from " + name_}}}}}},
                             {"finishReason", "STOP"}}}},
                          {"usageMetadata", usage},
                          {"responseId", "resp1"}};
            std::string body = whole.dump();
            WriteAll(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body);
            break;
          }
          if (stream) {
            WriteAll(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" +
                            Chunk("from " + name_, "", false) + Chunk("", "stop", false) +
                            Chunk("", "", true) + "data: [DONE]\n\n");
            return Close(c);
          }
          Json j = {{"id", "r1"},
                    {"object", "chat.completion"},
                    {"created", 0},
                    {"model", name_},
                    {"choices",
                     {{{"index", 0},
                       {"message", {{"role", "assistant"}, {"content", "from " + name_}}},
                       {"finish_reason", "stop"}}}},
                    {"usage", {{"prompt_tokens", 3}, {"completion_tokens", 2}, {"total_tokens", 5}}}};
          std::string body = j.dump();
          WriteAll(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body);
          break;
        }
        case Mode::kStatus: {
          std::string body =
              R"({"error":{"message":")" + name_ + R"( is overloaded","type":"server_error"}})";
          WriteAll(c, "HTTP/1.1 " + std::to_string(status) + " Error\r\n" + retry_after +
                          "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                          "\r\n\r\n" + body);
          break;
        }
        case Mode::kHang: {
          while (!stopped_) {
            pollfd p{c, POLLIN, 0};
            if (::poll(&p, 1, 20) > 0) {
              char b;
              if (::recv(c, &b, 1, MSG_PEEK) <= 0) break;  // the gateway closed it
            }
          }
          return Close(c);
        }
        case Mode::kDrop:
          return Close(c);
        case Mode::kCutStream:
          WriteAll(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" +
                          Chunk("from " + name_, "", false));
          return Close(c);
      }
    }
  }

  std::string name_;
  bool gemini_ = false;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopped_{false};
  std::thread accept_;
  std::mutex mu_;
  std::set<int> conns_;
  std::vector<std::thread> threads_;
  std::vector<Seen> seen_;
  Mode mode_ = Mode::kOk;
  int status_ = 503;
  std::string retry_after_;
};

class RoutingTest : public testing::ProxyFixture {
 protected:
  // Starts the proxy on `routes` (the routes file's "routes" array).
  void Start(Json routes, Json upstream = Json::object(), Json prices = Json::object()) {
    Json file = {{"routes", std::move(routes)}, {"keys", {{{"key", kKey}, {"org", "acme"}}}}};
    if (!upstream.empty()) file["upstream"] = std::move(upstream);
    if (!prices.empty()) file["prices"] = std::move(prices);
    StartProxy(file, 2);
  }

  net::ClientResponse Chat(std::string_view model, bool stream = false,
                           std::string_view path = "/v1/chat/completions") {
    Json body = {{"model", model}, {"messages", {{{"role", "user"}, {"content", "one two three"}}}}};
    if (stream) body["stream"] = true;
    if (path == "/v1/messages") body["max_tokens"] = 16;
    net::ClientRequest r;
    r.method = net::Method::kPost;
    r.url = url_ + std::string(path);
    r.headers.Set("Content-Type", "application/json");
    r.headers.Set("Authorization", std::string("Bearer ") + kKey);
    r.body = body.dump();
    auto resp = client_->Send(std::move(r));
    EXPECT_TRUE(resp.ok()) << resp.status().ToString();
    return resp.ok() ? *resp : net::ClientResponse{};
  }

  static std::string Content(const net::ClientResponse& r) {
    auto j = Json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j.contains("choices")) return "";
    return j["choices"][0]["message"]["content"].get<std::string>();
  }

  template <class Fn>
  static bool Eventually(Fn done) {
    for (int i = 0; i < 1000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
  }

  RouteTable::DeploymentState State(std::string_view model, std::string_view dep) {
    auto s = proxy_->route_table().State(model, dep);
    EXPECT_TRUE(s.has_value());
    return s.value_or(RouteTable::DeploymentState{});
  }

  static Json Dep(std::string name, const FakeProvider& p, Json extra = Json::object()) {
    Json d = {{"name", std::move(name)}, {"base_url", p.base()}};
    d.update(extra);
    return d;
  }
};

TEST_F(RoutingTest, RefusedConnectionFailsOverAndTheRecordNamesEveryAttempt) {
  FakeProvider b("b");
  Start(Json::array({{{"model", "m"},
                      {"deployments",
                       {{{"name", "a"}, {"base_url", "http://127.0.0.1:1"}, {"weight", 1000}}, Dep("b", b)}},
                      {"retry", {{"retries", 2}, {"backoff_ms", 1}}}}}),
        {{"connect_timeout_ms", 2000}});
  auto r = Chat("m");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Content(r), "from b");
  EXPECT_EQ(b.requests(), 1u);
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.deployment, "b");
  ASSERT_EQ(rec.attempts.size(), 2u);
  EXPECT_EQ(rec.attempts[0].deployment, "a");
  EXPECT_EQ(rec.attempts[0].status, 0);
  EXPECT_NE(rec.attempts[0].error.find("connecting"), std::string::npos) << rec.attempts[0].error;
  EXPECT_EQ(rec.attempts[1].deployment, "b");
  EXPECT_EQ(rec.attempts[1].status, 200);
  EXPECT_EQ(rec.input_tokens, 3);
  Json line = Json::parse(UsageRecordJson(rec));
  EXPECT_EQ(line["deployment"], "b");
  EXPECT_EQ(line["attempts"].size(), 2u);
}

// A provider that does not complete the TCP handshake (its accept queue is full, so the kernel drops the
// SYNs): the deployment's own connect timeout expires, nothing was sent, and the call goes elsewhere.
TEST_F(RoutingTest, ConnectTimeoutFailsOver) {
  int l = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(l, 0), 0);
  socklen_t len = sizeof a;
  ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    (void)::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
    fillers.push_back(c);
  }
  FakeProvider b("b");
  std::string hung = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  Start(Json::array(
      {{{"model", "m"},
        {"deployments",
         {{{"name", "a"}, {"base_url", hung}, {"weight", 1000}, {"connect_timeout_ms", 100}}, Dep("b", b)}},
        {"retry", {{"retries", 1}, {"backoff_ms", 1}}}}}));
  auto r = Chat("m");
  EXPECT_EQ(Content(r), "from b") << r.body;
  UsageRecord rec = WaitRecord(1);
  ASSERT_EQ(rec.attempts.size(), 2u);
  EXPECT_NE(rec.attempts[0].error.find("timed out"), std::string::npos) << rec.attempts[0].error;
  for (int c : fillers) ::close(c);
  ::close(l);
}

TEST_F(RoutingTest, Answered503IsRetriedElsewhereAfterABackoff) {
  FakeProvider a("a"), b("b");
  a.Set(FakeProvider::Mode::kStatus, 503);
  Start(Json::array({{{"model", "m"},
                      {"deployments", {Dep("a", a, {{"weight", 1000}}), Dep("b", b)}},
                      {"retry", {{"retries", 1}, {"backoff_ms", 40}, {"max_backoff_ms", 40}}}},
                     {{"model", "m2"},
                      {"deployments", {Dep("a", a, {{"weight", 1000}}), Dep("b", b)}},
                      {"retry", {{"retries", 1}, {"backoff_ms", 1}, {"max_backoff_ms", 5000}}}}}));
  auto r = Chat("m");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Content(r), "from b");
  ASSERT_EQ(a.requests(), 1u);
  ASSERT_EQ(b.requests(), 1u);
  UsageRecord rec = WaitRecord(1);
  ASSERT_EQ(rec.attempts.size(), 2u);
  EXPECT_EQ(rec.attempts[0].status, 503);
  EXPECT_EQ(rec.attempts[0].error, "a is overloaded");
  // Equal jitter: at least half the backoff, and the second request came at least that much later.
  EXPECT_GE(rec.attempts[1].backoff_ms, 20);
  EXPECT_LE(rec.attempts[1].backoff_ms, 40);
  EXPECT_GE(b.seen()[0].at - a.seen()[0].at, std::chrono::milliseconds(rec.attempts[1].backoff_ms));
  // A 429 with Retry-After: the wait is the provider's (capped at max_backoff), not the short backoff.
  a.Set(FakeProvider::Mode::kStatus, 429, "1");
  ASSERT_EQ(Content(Chat("m2")), "from b");
  UsageRecord limited = WaitRecord(2);
  ASSERT_EQ(limited.attempts.size(), 2u);
  EXPECT_EQ(limited.attempts[0].status, 429);
  EXPECT_EQ(limited.attempts[1].backoff_ms, 1000);
  EXPECT_GE(b.seen()[1].at - a.seen()[1].at, std::chrono::milliseconds(1000));
  a.Set(FakeProvider::Mode::kStatus, 503);
  // Without another deployment left, the provider's answer is the client's: 503 becomes 502.
  b.Set(FakeProvider::Mode::kStatus, 503);
  auto both = Chat("m");
  EXPECT_EQ(both.status, 502) << both.body;
  EXPECT_EQ(a.requests() + b.requests(), 6u);
}

TEST_F(RoutingTest, RequestThatMayBeInProgressIsNeverSentTwice) {
  FakeProvider a("a"), b("b");
  Start(Json::array(
      {{{"model", "m"},
        {"deployments",
         {Dep("a", a, {{"weight", 1000}, {"header_timeout_ms", 300}}), Dep("b", b, {{"weight", 1}})}},
        {"retry", {{"retries", 3}, {"backoff_ms", 1}}}}}));
  // Read and dropped: the provider may be working on it.
  a.Set(FakeProvider::Mode::kDrop);
  auto dropped = Chat("m");
  EXPECT_EQ(dropped.status, 502) << dropped.body;
  // Hung past the deployment's header timeout: it may still answer (and bill).
  a.Set(FakeProvider::Mode::kHang);
  auto hung = Chat("m");
  EXPECT_EQ(hung.status, 504) << hung.body;
  // A stream cut after its first event: bytes went to the client.
  a.Set(FakeProvider::Mode::kCutStream);
  auto cut = Chat("m", true);
  EXPECT_EQ(cut.status, 200);
  EXPECT_NE(cut.body.find("from a"), std::string::npos);
  EXPECT_NE(cut.body.find("error"), std::string::npos) << cut.body;
  EXPECT_EQ(a.requests(), 3u);
  EXPECT_EQ(b.requests(), 0u);  // none of them went anywhere else
  for (size_t i = 1; i <= 3; ++i) EXPECT_EQ(WaitRecord(i).attempts.size(), 1u);
}

TEST_F(RoutingTest, WeightsAreRespectedAndBusyDeploymentsAvoided) {
  FakeProvider a("a"), b("b");
  Start(Json::array({{{"model", "m"}, {"deployments", {Dep("a", a, {{"weight", 3}}), Dep("b", b)}}}}));
  for (int i = 0; i < 40; ++i) ASSERT_EQ(Chat("m").status, 200);
  EXPECT_EQ(a.requests(), 30u);
  EXPECT_EQ(b.requests(), 10u);

  // With a call in flight on a (it hangs), a's share of in-flight calls per weight is higher: the next
  // calls all go to b, though a's weight is three times b's.
  a.Set(FakeProvider::Mode::kHang);
  size_t a_before = a.requests();
  std::thread slow([&] {
    net::HttpClient c;
    net::ClientRequest r;
    r.method = net::Method::kPost;
    r.url = url_ + "/v1/chat/completions";
    r.headers.Set("Authorization", std::string("Bearer ") + kKey);
    r.body = R"({"model":"m","messages":[{"role":"user","content":"x"}]})";
    (void)c.Send(std::move(r));
  });
  // SWRR's next pick is a (30:10 ends a cycle), so the hung call lands there.
  ASSERT_TRUE(Eventually([&] { return a.requests() == a_before + 1; }));
  EXPECT_EQ(State("m", "a").in_flight, 1);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Content(Chat("m")), "from b");
  EXPECT_EQ(a.requests(), a_before + 1);
  a.Stop();  // ends the hung call
  slow.join();
}

TEST_F(RoutingTest, BreakerOpensRefusesFastProbesOnceAndCloses) {
  FakeProvider a("a");
  Start(Json::array({{{"model", "m"},
                      {"deployments", {Dep("a", a, {{"header_timeout_ms", 500}})}},
                      {"breaker", {{"consecutive_failures", 2}, {"cooldown_ms", 1000}}}}}));
  a.Set(FakeProvider::Mode::kStatus, 503);
  EXPECT_EQ(Chat("m").status, 502);
  EXPECT_FALSE(State("m", "a").open);
  EXPECT_EQ(Chat("m").status, 502);
  EXPECT_TRUE(State("m", "a").open);
  // Open: refused at once, the provider sees nothing.
  auto refused = Chat("m");
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_NE(refused.body.find("circuit open"), std::string::npos) << refused.body;
  EXPECT_EQ(a.requests(), 2u);
  EXPECT_EQ(WaitRecord(3).attempts.size(), 0u);

  // After the cool-down one probe goes through; while it is in flight (the provider hangs) others are
  // still refused.
  a.Set(FakeProvider::Mode::kHang);
  ASSERT_TRUE(Eventually([&] { return State("m", "a").half_open; }));
  int probe_status = 0;
  std::thread probe([&] {
    net::HttpClient c;
    net::ClientRequest r;
    r.method = net::Method::kPost;
    r.url = url_ + "/v1/chat/completions";
    r.headers.Set("Authorization", std::string("Bearer ") + kKey);
    r.body = R"({"model":"m","messages":[{"role":"user","content":"x"}]})";
    auto resp = c.Send(std::move(r));
    probe_status = resp.ok() ? resp->status : -1;
  });
  ASSERT_TRUE(Eventually([&] { return a.requests() == 3u; }));
  EXPECT_EQ(Chat("m").status, 503);
  EXPECT_EQ(a.requests(), 3u);
  probe.join();
  EXPECT_EQ(probe_status, 504);  // the probe failed (header timeout): open again
  EXPECT_TRUE(State("m", "a").open);

  // The provider recovers: the next probe succeeds and the breaker closes.
  a.Set(FakeProvider::Mode::kOk);
  ASSERT_TRUE(Eventually([&] { return State("m", "a").half_open; }));
  EXPECT_EQ(Content(Chat("m")), "from a");
  auto st = State("m", "a");
  EXPECT_FALSE(st.open);
  EXPECT_FALSE(st.half_open);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Chat("m").status, 200);
  EXPECT_EQ(a.requests(), 7u);
}

// Each replica keeps its own breaker (docs/gateway.md, "Circuit breakers across replicas"): with N
// replicas and consecutive_failures C, a dead deployment gets N x C requests (sent one at a time) before
// every replica has opened, and none after until the cool-downs end.
TEST_F(RoutingTest, EachReplicaOpensItsOwnBreaker) {
  FakeProvider a("a");
  Json file = {{"routes", Json::array({{{"model", "m"},
                                        {"deployments", {Dep("a", a)}},
                                        {"breaker", {{"consecutive_failures", 3}, {"cooldown_ms", 600000}}}}})},
               {"keys", {{{"key", kKey}, {"org", "acme"}}}}};
  StartProxy(file, 1);
  auto config = ParseProxyConfig(file.dump());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto second = testing::ServeProxy(std::move(*config), 1);  // another replica, same routes
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  const std::string first_url = url_;
  a.Set(FakeProvider::Mode::kStatus, 503);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Chat("m").status, 502);
  EXPECT_TRUE(State("m", "a").open);
  EXPECT_EQ(Chat("m").status, 503);  // open here: refused without a connection
  EXPECT_EQ(a.requests(), 3u);
  // The other replica has not seen those failures: its breaker is closed and it learns on its own.
  auto other = second->proxy->route_table().State("m", "a");
  ASSERT_TRUE(other.has_value());
  EXPECT_FALSE(other->open);
  url_ = second->url;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Chat("m").status, 502);
  EXPECT_TRUE(second->proxy->route_table().State("m", "a")->open);
  EXPECT_EQ(Chat("m").status, 503);
  url_ = first_url;
  EXPECT_EQ(Chat("m").status, 503);
  EXPECT_EQ(a.requests(), 6u);  // N x C = 2 x 3, then nothing more
  second->server->Stop();
}

TEST_F(RoutingTest, OpenBreakerSendsTrafficToTheOtherDeployment) {
  FakeProvider a("a"), b("b");
  a.Set(FakeProvider::Mode::kStatus, 500);
  Start(Json::array({{{"model", "m"},
                      {"deployments", {Dep("a", a), Dep("b", b)}},
                      {"retry", {{"retries", 1}, {"backoff_ms", 0}}},
                      {"breaker",
                       {{"consecutive_failures", 0},
                        {"failure_ratio", 0.5},
                        {"window", 4},
                        {"min_calls", 2},
                        {"cooldown_ms", 60000}}}}}));
  for (int i = 0; i < 10; ++i) ASSERT_EQ(Content(Chat("m")), "from b");
  // Two failures of two calls open it; from then on a is skipped.
  EXPECT_EQ(a.requests(), 2u);
  EXPECT_TRUE(State("m", "a").open);
  EXPECT_EQ(b.requests(), 10u);
}

TEST_F(RoutingTest, FallbackToAnotherModelAndFormat) {
  auto stub = model_stub::StubServer::Start({.port = 0, .threads = 1});
  ASSERT_TRUE(stub.ok()) << stub.status().ToString();
  FakeProvider a("a");
  a.Set(FakeProvider::Mode::kStatus, 529);
  std::string stub_base = "http://127.0.0.1:" + std::to_string((*stub)->port());
  Start(Json::array({{{"model", "primary"}, {"deployments", {Dep("a", a)}}, {"fallbacks", {"backup"}}},
                     {{"model", "backup"},
                      {"deployments",
                       {{{"name", "claude"},
                         {"provider", "anthropic"},
                         {"base_url", stub_base},
                         {"api_key", "sk-ant"},
                         {"model", "stub-claude"}}}}}}),
        Json::object(),
        // The fallback is priced as itself: 1,000,000 µ$ per million input tokens = $1 per token.
        {{"primary", {{"input", 0}, {"output", 0}}}, {"backup", {{"input", 1000000}, {"output", 0}}}});
  // An OpenAI client on `primary`: a says 529, the Anthropic fallback answers, translated.
  auto r = Chat("primary");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(Content(r).find("Govern stub reply"), std::string::npos) << r.body;
  EXPECT_EQ((*stub)->stats().requests, 1u);
  EXPECT_EQ(a.requests(), 1u);
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.model, "primary");
  EXPECT_EQ(rec.deployment, "claude");
  ASSERT_EQ(rec.attempts.size(), 2u);
  EXPECT_EQ(rec.attempts[1].model, "backup");
  EXPECT_EQ(rec.input_tokens, 3);
  EXPECT_DOUBLE_EQ(rec.cost, 3.0);  // backup's price, not primary's (0)
  // A stream too.
  auto s = Chat("primary", true);
  EXPECT_EQ(s.status, 200);
  EXPECT_NE(s.body.find("[DONE]"), std::string::npos) << s.body;
  (*stub)->Stop();
}

TEST_F(RoutingTest, DeploymentThatDoesNotServeTheApiIsSkipped) {
  FakeProvider a("a"), b("b");
  Json claude = {{"name", "claude"}, {"provider", "anthropic"}, {"base_url", a.base()}, {"api_key", "k"}};
  Json heavy = claude;
  heavy["weight"] = 1000;
  Start(Json::array({{{"model", "emb"},
                      {"deployments", {heavy, Dep("b", b)}},
                      {"retry", {{"retries", 1}, {"backoff_ms", 1}, {"max_backoff_ms", 1}}}},
                     {{"model", "only-claude"}, {"deployments", {claude}}}}));
  // The Anthropic deployment (picked first: weight 1000) cannot serve embeddings: nothing is sent to it
  // and the OpenAI one answers, every time.
  for (int i = 0; i < 3; ++i) {
    auto r = Chat("emb", false, "/v1/embeddings");
    ASSERT_EQ(r.status, 200) << r.body;
  }
  EXPECT_EQ(a.requests(), 0u);
  EXPECT_EQ(b.requests(), 3u);
  UsageRecord rec = WaitRecord(1);
  ASSERT_EQ(rec.attempts.size(), 2u);
  EXPECT_NE(rec.attempts[0].error.find("does not serve the embeddings API"), std::string::npos)
      << rec.attempts[0].error;
  EXPECT_EQ(rec.deployment, "b");
  // No deployment serves it: 400 naming why.
  auto none = Chat("only-claude", false, "/v1/embeddings");
  EXPECT_EQ(none.status, 400) << none.body;
  EXPECT_NE(none.body.find("does not serve the embeddings API"), std::string::npos) << none.body;
  EXPECT_EQ(a.requests(), 0u);
}

TEST_F(RoutingTest, AzureAndOpenAICompatibleRequests) {
  FakeProvider az("azure"), vllm("vllm"), ollama("ollama");
  Start(Json::array({{{"model", "gpt-4o"},
                      {"deployments",
                       {{{"provider", "azure"},
                         {"base_url", az.base()},
                         {"api_key", "az-key"},
                         {"azure_deployment", "gpt4o-prod"},
                         {"api_version", "2024-10-21"}}}}},
                     {{"model", "llama"},
                      {"deployments",
                       {{{"name", "vllm"},
                         {"provider", "openai_compatible"},
                         {"base_url", vllm.base() + "/v1"},
                         {"api_key", "tok"},
                         {"model", "meta-llama/Llama-3.1-8B-Instruct"}},
                        {{"name", "ollama"},
                         {"provider", "openai_compatible"},
                         {"base_url", ollama.base() + "/v1/"},
                         {"model", "llama3.1"}}}}}}));
  ASSERT_EQ(Content(Chat("gpt-4o")), "from azure");
  auto seen = az.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].target, "/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21");
  EXPECT_EQ(seen[0].headers["api-key"], "az-key");
  EXPECT_FALSE(seen[0].headers.contains("authorization"));
  EXPECT_EQ(WaitRecord(1).deployment, "gpt-4o#0");
  // A stream through Azure keeps the usage request.
  ASSERT_EQ(Chat("gpt-4o", true).status, 200);
  EXPECT_NE(az.seen()[1].body.find("include_usage"), std::string::npos);

  std::set<std::string> from;
  for (int i = 0; i < 2; ++i) from.insert(Content(Chat("llama")));
  EXPECT_EQ(from, (std::set<std::string>{"from vllm", "from ollama"}));
  auto v = vllm.seen(), o = ollama.seen();
  ASSERT_EQ(v.size(), 1u);
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(v[0].target, "/v1/chat/completions");
  EXPECT_EQ(v[0].headers["authorization"], "Bearer tok");
  EXPECT_EQ(Json::parse(v[0].body)["model"], "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(o[0].target, "/v1/chat/completions");
  EXPECT_FALSE(o[0].headers.contains("authorization"));
  EXPECT_EQ(Json::parse(o[0].body)["model"], "llama3.1");
}

TEST_F(RoutingTest, GeminiDeploymentForEitherClientFormat) {
  FakeProvider g("gemini", true);
  Start(Json::array({{{"model", "gem"},
                      {"deployments",
                       {{{"name", "g"},
                         {"provider", "gemini"},
                         {"base_url", g.base()},
                         {"api_key", "g-key"},
                         {"model", "gemini-2.5-flash"}}}}}}));
  auto r = Chat("gem");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Content(r), "from gemini");
  auto seen = g.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].target, "/v1beta/models/gemini-2.5-flash:generateContent");
  EXPECT_EQ(seen[0].headers["x-goog-api-key"], "g-key");
  EXPECT_EQ(Json::parse(seen[0].body)["contents"][0]["parts"][0]["text"], "one two three");
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.input_tokens, 3);
  EXPECT_EQ(rec.output_tokens, 2);

  auto s = Chat("gem", true);
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_NE(s.body.find("from gemini"), std::string::npos) << s.body;
  EXPECT_NE(s.body.find("data: [DONE]"), std::string::npos) << s.body;
  EXPECT_EQ(g.seen()[1].target, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
  rec = WaitRecord(2);
  EXPECT_EQ(rec.status, 200);
  EXPECT_EQ(rec.output_tokens, 2);

  // An Anthropic client, streamed: translated twice (Messages -> chat -> Gemini and back).
  auto a = Chat("gem", true, "/v1/messages");
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_NE(a.body.find("message_stop"), std::string::npos) << a.body;
  EXPECT_NE(a.body.find("from gemini"), std::string::npos) << a.body;
  EXPECT_EQ(WaitRecord(3).output_tokens, 2);
}

TEST(RoutingConfigTest, BadConfigurationIsRefusedAtLoadNamingTheField) {
  auto err = [](std::string_view routes) {
    auto c = ParseProxyConfig(std::string(R"({"routes":)") + std::string(routes) + "}");
    return c.ok() ? std::string("accepted") : c.status().message();
  };
  auto has = [](const std::string& message, std::string_view want) {
    return message.find(want) != std::string::npos;
  };
  std::string d = R"({"base_url":"http://x:1"})";
  EXPECT_PRED2(has, err(R"([{"model":"m","deployments":[]}])"), "routes[0].deployments must be a non-empty");
  EXPECT_PRED2(has, err(R"([{"model":"m","deployments":[{"provider":"cohere","base_url":"http://x"}]}])"),
               "routes[0].deployments[0].provider must be");
  EXPECT_PRED2(has, err(R"([{"model":"m","deployments":[{"provider":"gemini","base_url":"http://x"}]}])"),
               "api_key is required for provider gemini");
  EXPECT_PRED2(
      has,
      err(R"([{"model":"m","deployments":[{"provider":"gemini","base_url":"http://x","api_key":"k","model":"a/b"}]}])"),
      "must be a Gemini model name");
  EXPECT_PRED2(has, err(R"([{"model":"m","deployments":[{"base_url":"ftp://x"}]}])"), "base_url must start");
  // URLs the provider client cannot call are refused at load, not at the first request.
  EXPECT_PRED2(has, err(R"([{"model":"m","deployments":[{"base_url":"http://llm:80x/v1"}]}])"),
               "has a bad port");
  EXPECT_PRED2(has, err(R"([{"model":"m","deployments":[{"base_url":"http://[::1"}]}])"), "unclosed [");
  EXPECT_PRED2(has, err(R"([{"model":"m","base_url":"http://:8080"}])"), "has no host");
  EXPECT_PRED2(has, err(R"([{"model":"m","deployments":[{"base_url":"http://x","weight":0}]}])"),
               "deployments[0].weight must be 1..1000000");
  EXPECT_PRED2(has, err(R"([{"model":"m","deployments":[{"provider":"azure","base_url":"http://x"}]}])"),
               "api_key is required for provider azure");
  EXPECT_PRED2(has, err(R"([{"model":"m","deployments":[{"base_url":"http://x","wieght":2}]}])"),
               "unknown field `wieght`");
  EXPECT_PRED2(has, err("[{\"model\":\"m\",\"deployments\":[" + d + "," + d + "]}]"), "accepted");
  EXPECT_PRED2(has,
               err("[{\"model\":\"m\",\"deployments\":[{\"name\":\"x\",\"base_url\":\"http://a\"},"
                   "{\"name\":\"x\",\"base_url\":\"http://b\"}]}]"),
               "name `x` is used twice");
  EXPECT_PRED2(has, err("[{\"model\":\"m\",\"deployments\":[" + d + "],\"fallbacks\":[\"n\"]}]"),
               "fallback `n` is not a routed model");
  EXPECT_PRED2(has, err("[{\"model\":\"m\",\"deployments\":[" + d + "],\"fallbacks\":[\"m\"]}]"),
               "falls back to itself");
  EXPECT_PRED2(
      has, err("[{\"model\":\"m\",\"deployments\":[" + d + "]},{\"model\":\"m\",\"base_url\":\"http://y\"}]"),
      "model routed twice: m");
  EXPECT_PRED2(has, err("[{\"model\":\"m\",\"deployments\":[" + d + "],\"retry\":{\"on_status\":[200]}}]"),
               "200 is not retryable");
  EXPECT_PRED2(has, err("[{\"model\":\"m\",\"deployments\":[" + d + "],\"retry\":{\"retries\":99}}]"),
               "retries must be 0..10");
  EXPECT_PRED2(
      has, err("[{\"model\":\"m\",\"deployments\":[" + d + "],\"breaker\":{\"consecutive_failures\":0}}]"),
      "set consecutive_failures or failure_ratio");
  EXPECT_PRED2(has,
               err("[{\"model\":\"m\",\"deployments\":[" + d + "],\"breaker\":{\"failure_ratio\":1.5}}]"),
               "failure_ratio must be 0..1");
  EXPECT_PRED2(
      has, err("[{\"model\":\"m\",\"deployments\":[" + d + "],\"breaker\":{\"window\":5,\"min_calls\":6}}]"),
      "min_calls must not exceed window");
  EXPECT_PRED2(
      has, err("[{\"model\":\"m\",\"deployments\":[{\"base_url\":\"http://x\",\"header_timeout_ms\":0}]}]"),
      "header_timeout_ms must be 1..86400000");
}

}  // namespace
}  // namespace govern::gateway
