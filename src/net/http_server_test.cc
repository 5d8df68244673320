// Server over real sockets: routing, keep-alive, async answers, malformed and oversized requests,
// slow and vanishing clients, admission, metrics and graceful shutdown.
#include "net/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "net/event_loop.h"
#include "net/http_client.h"
#include "net/problem.h"

namespace govern::net {
namespace {

using namespace std::chrono_literals;

// A raw TCP connection to the server, for bytes no well-behaved client would send.
class RawConn {
 public:
  explicit RawConn(uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{10, 0};  // a hung server fails the test instead of hanging it
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawConn() {
    if (fd_ >= 0) close(fd_);
  }
  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  bool Send(std::string_view s) {
    while (!s.empty()) {
      ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  void ShutdownWrite() { shutdown(fd_, SHUT_WR); }
  // Closes with RST instead of FIN.
  void Reset() {
    linger l{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd_);
    fd_ = -1;
  }

  struct Reply {
    int status = 0;
    std::string head;
    std::string body;
    bool Has(std::string_view header_line) const { return head.find(header_line) != std::string::npos; }
  };
  // Reads one response (Content-Length framed). status 0: the connection closed or timed out first.
  Reply Read() {
    Reply r;
    size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return r;
    }
    r.head = pending_.substr(0, end + 4);
    pending_.erase(0, end + 4);
    r.status = std::atoi(r.head.c_str() + 9);
    size_t len = 0;
    size_t cl = r.head.find("Content-Length: ");
    if (cl != std::string::npos) len = static_cast<size_t>(std::atoll(r.head.c_str() + cl + 16));
    while (pending_.size() < len) {
      if (!Fill()) return Reply{};
    }
    r.body = pending_.substr(0, len);
    pending_.erase(0, len);
    return r;
  }
  // True when the server closed the connection (EOF or reset) before sending anything more.
  bool ClosedByPeer() {
    char c;
    ssize_t n = recv(fd_, &c, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

 private:
  bool Fill() {
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    pending_.append(buf, static_cast<size_t>(n));
    return true;
  }
  int fd_ = -1;
  bool connected_ = false;
  std::string pending_;
};

// Admits everything except the classes it is told to refuse, and checks the Release contract.
class FakeAdmission : public Admission {
 public:
  AdmissionTicket TryAdmit(RequestClass cls, std::string_view org) override {
    std::lock_guard lock(mu_);
    last_org_ = org;
    AdmissionTicket t;
    t.cls = cls;
    t.admitted = !(refuse_bulk_ && cls == RequestClass::kBulk);
    if (t.admitted) ++admitted_;
    t.org_slot = static_cast<uint32_t>(admitted_);
    return t;
  }
  void Release(const AdmissionTicket& t, bool ok) override {
    std::lock_guard lock(mu_);
    EXPECT_TRUE(t.admitted);
    ++released_;
    if (!ok) ++failed_;
  }
  int RetryAfterSeconds() const override { return 7; }

  std::mutex mu_;
  bool refuse_bulk_ = true;
  int admitted_ = 0;
  int released_ = 0;
  int failed_ = 0;
  std::string last_org_;
};

// Waits (bounded) for a condition that another thread makes true; not a timing assertion.
template <typename F>
bool Eventually(F f) {
  for (int i = 0; i < 1000; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return f();
}

ServerConfig TestConfig() {
  ServerConfig c;
  c.workers = 2;
  c.header_timeout = 500ms;
  c.body_timeout = 500ms;
  c.idle_timeout = 5s;
  c.max_header_bytes = 2048;
  c.max_body_bytes = 1024;
  return c;
}

Router TestRoutes() {
  Router r;
  r.AddSync(Method::kGet, "/hello",
            [](Request&) { return JsonResponse(R"({"message":"hello","ok":true})"); });
  r.AddSync(Method::kGet, "/v1/orgs/{org}/events", [](Request& req) {
    return Response(200, std::string(req.Param("org")) + "|" + req.QueryParam("limit").value_or("none") +
                             "|" + std::string(req.headers.Get("x-test").value_or("")));
  });
  r.AddSync(Method::kPost, "/echo", [](Request& req) { return Response(200, req.body); });
  r.AddSync(Method::kPost, "/big",
            [](Request& req) { return Response(200, std::to_string(req.body.size())); },
            {RequestClass::kNormal, 100000, ""});
  r.Add(Method::kGet, "/later", [](Request&& req, Responder resp) {
    std::thread([resp = std::move(resp), path = req.path]() mutable {
      std::this_thread::sleep_for(50ms);
      resp.Send(Response(200, "later " + path));
    }).detach();
  });
  r.Add(Method::kGet, "/dropped", [](Request&&, Responder) {});
  r.AddSync(Method::kGet, "/throws", [](Request&) -> Response { throw std::runtime_error("boom"); });
  r.AddSync(Method::kPost, "/bulk", [](Request&) { return Response(202, ""); }, {RequestClass::kBulk, 0, ""});
  return r;
}

class ServerTest : public ::testing::Test {
 protected:
  void StartServer(ServerConfig cfg = TestConfig(), Router routes = TestRoutes()) {
    server_ = std::make_unique<Server>(std::move(cfg), std::move(routes));
    Status st = server_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_NE(server_->port(), 0);
  }
  std::string Url(std::string_view path) {
    return "http://127.0.0.1:" + std::to_string(server_->port()) + std::string(path);
  }
  int64_t Connections() { return server_->metrics().AddGauge("govern_http_connections", "").Value(); }

  FakeAdmission adm_;  // declared before server_ so that it outlives the server
  std::unique_ptr<Server> server_;
  HttpClient client_;
};

TEST_F(ServerTest, RoutesWithParametersQueryAndHeaders) {
  StartServer();
  ClientRequest req;
  req.url = Url("/v1/orgs/acme/events?limit=10");
  req.headers.Set("X-Test", "yes");
  auto r = client_.Send(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "acme|10|yes");

  auto hello = client_.Get(Url("/hello"));
  ASSERT_TRUE(hello.ok());
  EXPECT_EQ(hello->body, R"({"message":"hello","ok":true})");
  EXPECT_EQ(hello->headers.Get("content-type").value_or(""), "application/json");
  EXPECT_TRUE(hello->headers.Has("Date"));

  auto nf = client_.Get(Url("/nope"));
  ASSERT_TRUE(nf.ok());
  EXPECT_EQ(nf->status, 404);
  EXPECT_EQ(nf->headers.Get("Content-Type").value_or(""), "application/problem+json");
  EXPECT_NE(nf->body.find(R"("status":404)"), std::string::npos) << nf->body;
  EXPECT_NE(nf->body.find(R"("instance":"/nope")"), std::string::npos) << nf->body;

  auto na = client_.Post(Url("/hello"), "x");
  ASSERT_TRUE(na.ok());
  EXPECT_EQ(na->status, 405);
  EXPECT_EQ(na->headers.Get("Allow").value_or(""), "GET, HEAD");

  ClientRequest head;
  head.method = Method::kHead;
  head.url = Url("/hello");
  auto h = client_.Send(head);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->status, 200);
  EXPECT_TRUE(h->body.empty());
  // The HEAD answer carried no body, so the same connection still works.
  auto again = client_.Get(Url("/hello"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->status, 200);
}

TEST_F(ServerTest, KeepAliveReusesOneConnection) {
  StartServer();
  for (int i = 0; i < 20; ++i) {
    auto r = client_.Post(Url("/echo"), "n" + std::to_string(i));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, "n" + std::to_string(i));
  }
  EXPECT_EQ(client_.connections_opened(), 1u);
}

TEST_F(ServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer();
  RawConn c(server_->port());
  ASSERT_TRUE(c.Send(
      "GET /later HTTP/1.1\r\nHost: x\r\n\r\nPOST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n"
      "abcGET /hello HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto a = c.Read();
  auto b = c.Read();
  auto d = c.Read();
  EXPECT_EQ(a.body, "later /later");
  EXPECT_EQ(b.body, "abc");
  EXPECT_EQ(d.status, 200);
  EXPECT_NE(d.body.find("hello"), std::string::npos);
}

TEST_F(ServerTest, AsyncResponderAnswersFromAnotherThread) {
  StartServer();
  auto r = client_.Get(Url("/later"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, "later /later");
  // A handler that drops its Responder yields 500, and one that throws yields 500; the server lives on.
  auto d = client_.Get(Url("/dropped"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->status, 500);
  EXPECT_EQ(d->headers.Get("Content-Type").value_or(""), "application/problem+json");
  auto t = client_.Get(Url("/throws"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->status, 500);
  EXPECT_EQ(client_.Get(Url("/hello"))->status, 200);
}

TEST_F(ServerTest, MalformedRequestsGet400AndOthersAreStillServed) {
  StartServer();
  const char* bad[] = {
      "GARBAGE\r\n\r\n",
      "GET /hello HTTP/1.1\r\nBad Header Without Colon\r\n\r\n",
      "GET /hello HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nhello\r\n0\r\n\r\n",
      "GET http://example.com/hello HTTP/1.1\r\nHost: x\r\n\r\n",
  };
  for (const char* req : bad) {
    RawConn c(server_->port());
    ASSERT_TRUE(c.Send(req));
    auto r = c.Read();
    EXPECT_EQ(r.status, 400) << req;
    EXPECT_TRUE(r.Has("Content-Type: application/problem+json")) << r.head;
    EXPECT_TRUE(r.Has("Connection: close")) << r.head;
    EXPECT_TRUE(c.ClosedByPeer()) << req;
  }
  {
    RawConn c(server_->port());
    ASSERT_TRUE(c.Send("GET /hello HTTP/1.2\r\nHost: x\r\n\r\n"));
    int status = c.Read().status;  // Beast itself refuses versions other than 1.x (400); else ours (505)
    EXPECT_TRUE(status == 400 || status == 505) << status;
  }
  auto ok = client_.Get(Url("/hello"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200);
}

TEST_F(ServerTest, ChunkedBodiesAreAccepted) {
  StartServer();
  RawConn c(server_->port());
  ASSERT_TRUE(
      c.Send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n "
             "world\r\n0\r\n\r\n"));
  auto r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello world");
}

TEST_F(ServerTest, OversizedHeaderGets431) {
  StartServer();
  RawConn c(server_->port());
  std::string req = "GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4096, 'a') + "\r\n\r\n";
  ASSERT_TRUE(c.Send(req));
  auto r = c.Read();
  EXPECT_EQ(r.status, 431);
  EXPECT_NE(r.body.find(R"("status":431)"), std::string::npos);
}

TEST_F(ServerTest, OversizedBodyGets413PerRouteLimit) {
  StartServer();
  // Default limit (1024 in this config) by Content-Length, answered before the body is sent.
  {
    RawConn c(server_->port());
    ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n"));
    auto r = c.Read();
    EXPECT_EQ(r.status, 413);
    EXPECT_TRUE(r.Has("application/problem+json"));
  }
  // Chunked, over the limit only as the chunks arrive.
  {
    RawConn c(server_->port());
    std::string chunk(800, 'x');
    ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n320\r\n" + chunk +
                       "\r\n320\r\n" + chunk + "\r\n0\r\n\r\n"));
    auto r = c.Read();
    EXPECT_EQ(r.status, 413);
  }
  // The /big route allows 100000 bytes.
  auto big = client_.Post(Url("/big"), std::string(50000, 'y'), "text/plain");
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(big->status, 200);
  EXPECT_EQ(big->body, "50000");
  auto too_big = client_.Post(Url("/big"), std::string(100001, 'y'), "text/plain");
  ASSERT_TRUE(too_big.ok()) << too_big.status().ToString();
  EXPECT_EQ(too_big->status, 413);
}

TEST_F(ServerTest, SlowClientIsCutOffWhileOthersAreServed) {
  StartServer();
  RawConn slow(server_->port());
  std::string req = "GET /hello HTTP/1.1\r\nHost: x\r\nX-Pad: 0123456789\r\n\r\n";
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    // One byte every 100 ms: the header takes ~5 s, ten times the 500 ms header timeout.
    for (char ch : req) {
      if (stop || !slow.Send(std::string_view(&ch, 1))) return;
      std::this_thread::sleep_for(100ms);
    }
  });
  // Meanwhile other clients are answered.
  for (int i = 0; i < 5; ++i) {
    auto r = client_.Get(Url("/hello"));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 200);
  }
  auto r = slow.Read();
  stop = true;
  trickle.join();
  // Either a 408 problem or a plain close; never the 200 the full header would have earned.
  EXPECT_TRUE(r.status == 408 || r.status == 0) << r.status;
  if (r.status == 408) {
    EXPECT_TRUE(r.Has("application/problem+json"));
  }
}

TEST_F(ServerTest, SlowBodyGets408) {
  StartServer();
  RawConn c(server_->port());
  ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"));
  auto r = c.Read();  // the other 7 bytes never come
  EXPECT_EQ(r.status, 408);
}

TEST_F(ServerTest, IdleConnectionWithoutRequestIsClosed) {
  StartServer();
  RawConn c(server_->port());
  EXPECT_TRUE(c.ClosedByPeer());  // after header_timeout, without a response
  EXPECT_TRUE(Eventually([&] { return Connections() == 0; }));
}

TEST_F(ServerTest, HalfClosedConnectionStillGetsItsResponse) {
  StartServer();
  RawConn c(server_->port());
  ASSERT_TRUE(c.Send("GET /later HTTP/1.1\r\nHost: x\r\n\r\n"));
  c.ShutdownWrite();
  auto r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "later /later");
  EXPECT_TRUE(c.ClosedByPeer());
  EXPECT_TRUE(Eventually([&] { return Connections() == 0; }));
}

TEST_F(ServerTest, ClientResetMidRequestLeaksNothing) {
  StartServer();
  {
    RawConn c(server_->port());
    ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc"));
    std::this_thread::sleep_for(20ms);
    c.Reset();
  }
  {
    // Reset while the handler is still working on the request.
    RawConn c(server_->port());
    ASSERT_TRUE(c.Send("GET /later HTTP/1.1\r\nHost: x\r\n\r\n"));
    c.Reset();
  }
  {
    RawConn c(server_->port());
    c.Reset();
  }
  EXPECT_TRUE(Eventually([&] { return Connections() == 0; }));
  EXPECT_TRUE(Eventually(
      [&] { return server_->metrics().AddGauge("govern_http_requests_in_flight", "").Value() == 0; }));
  EXPECT_EQ(client_.Get(Url("/hello"))->status, 200);
}

TEST_F(ServerTest, AdmissionShedsWith503AndReleasesEveryTicket) {
  FakeAdmission& adm = adm_;
  ServerConfig cfg = TestConfig();
  cfg.admission = &adm;
  cfg.org_of = [](const Request& r) { return std::string(r.headers.Get("X-Org").value_or("")); };
  StartServer(cfg);
  ClientRequest bulk;
  bulk.method = Method::kPost;
  bulk.url = Url("/bulk");
  bulk.headers.Set("X-Org", "acme");
  auto r = client_.Send(bulk);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->headers.Get("Retry-After").value_or(""), "7");
  EXPECT_EQ(r->headers.Get("Content-Type").value_or(""), "application/problem+json");
  {
    std::lock_guard lock(adm.mu_);
    EXPECT_EQ(adm.last_org_, "acme");
  }
  EXPECT_EQ(client_.Get(Url("/hello"))->status, 200);
  EXPECT_EQ(client_.Get(Url("/healthz"))->status, 200);
  EXPECT_EQ(client_.Get(Url("/throws"))->status, 500);
  EXPECT_EQ(client_.Get(Url("/dropped"))->status, 500);
  {
    RawConn c(server_->port());  // admitted, then the client vanishes before the answer
    ASSERT_TRUE(c.Send("GET /later HTTP/1.1\r\nHost: x\r\n\r\n"));
    c.Reset();
  }
  EXPECT_TRUE(Eventually([&] {
    std::lock_guard lock(adm.mu_);
    return adm.released_ == adm.admitted_;
  }));
  std::lock_guard lock(adm.mu_);
  // /hello, /healthz, /throws, /dropped, and /later unless the reset overtook the request bytes.
  EXPECT_GE(adm.admitted_, 4);
  EXPECT_LE(adm.admitted_, 5);
  EXPECT_GE(adm.failed_, 2);  // the two 500s
  std::string metrics = server_->metrics().RenderText();
  EXPECT_NE(metrics.find("govern_http_shed_total 1\n"), std::string::npos) << metrics;
}

TEST_F(ServerTest, HandlerTimeoutAnswers503) {
  ServerConfig cfg = TestConfig();
  cfg.handler_timeout = 200ms;
  Router r;
  std::mutex mu;
  std::vector<Responder> parked;  // never answered until the end of the test
  r.Add(Method::kGet, "/stuck", [&](Request&&, Responder resp) {
    std::lock_guard lock(mu);
    parked.push_back(std::move(resp));
  });
  StartServer(cfg, std::move(r));
  auto res = client_.Get(Url("/stuck"));
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 503);
  std::lock_guard lock(mu);
  for (auto& p : parked) p.Send(Response(200, "too late"));  // ignored: already answered
  parked.clear();
}

TEST_F(ServerTest, MetricsAndHealthEndpoints) {
  StartServer();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(client_.Get(Url("/hello"))->status, 200);
  ASSERT_EQ(client_.Get(Url("/missing"))->status, 404);
  auto m = client_.Get(Url("/metrics"));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(m->headers.Get("Content-Type").value_or(""), "text/plain; version=0.0.4; charset=utf-8");
  const std::string& t = m->body;
  EXPECT_NE(t.find("govern_http_requests_total{route=\"/hello\",method=\"GET\",code=\"200\"} 3\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("govern_http_requests_total{route=\"unrouted\",method=\"any\",code=\"404\"} 1\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("govern_http_request_duration_seconds_count{route=\"/hello\",method=\"GET\"} 3\n"),
            std::string::npos)
      << t;
  EXPECT_NE(
      t.find("govern_http_request_duration_seconds_bucket{route=\"/hello\",method=\"GET\",le=\"+Inf\"} 3\n"),
      std::string::npos)
      << t;
  EXPECT_NE(t.find("# TYPE govern_http_requests_in_flight gauge\ngovern_http_requests_in_flight 1\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("govern_http_connections 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("govern_http_shed_total 0\n"), std::string::npos) << t;
  auto h = client_.Get(Url("/healthz"));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->status, 200);
}

TEST_F(ServerTest, SharedRegistryOutlivesTheServer) {
  MetricsRegistry registry;
  {
    ServerConfig cfg = TestConfig();
    cfg.metrics = &registry;
    Server s(cfg, TestRoutes());
    ASSERT_TRUE(s.Start().ok());
    ASSERT_EQ(client_.Get("http://127.0.0.1:" + std::to_string(s.port()) + "/hello")->status, 200);
  }
  std::string t = registry.RenderText();  // the server's collector is gone; its histograms remain
  EXPECT_EQ(t.find("govern_http_requests_total{"), std::string::npos) << t;
  EXPECT_NE(t.find("govern_http_request_duration_seconds_count{route=\"/hello\",method=\"GET\"} 1\n"),
            std::string::npos)
      << t;
}

TEST_F(ServerTest, ReadyzReportsFailingChecks) {
  std::atomic<bool> db_ok{false};
  server_ = std::make_unique<Server>(TestConfig(), TestRoutes());
  server_->AddReadinessCheck("database", [&] { return db_ok.load(); });
  server_->AddReadinessCheck("wal", [] { return true; });
  ASSERT_TRUE(server_->Start().ok());
  auto r = client_.Get(Url("/readyz"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("database"), std::string::npos) << r->body;
  EXPECT_EQ(r->body.find("wal"), std::string::npos) << r->body;
  db_ok = true;
  EXPECT_EQ(client_.Get(Url("/readyz"))->status, 200);
}

TEST_F(ServerTest, GracefulShutdownFinishesInFlightRequest) {
  ServerConfig cfg = TestConfig();
  cfg.drain_timeout = 10s;
  Router r;
  std::atomic<bool> entered{false};
  r.Add(Method::kGet, "/slow", [&](Request&&, Responder resp) {
    entered = true;
    std::thread([resp = std::move(resp)]() mutable {
      std::this_thread::sleep_for(300ms);
      resp.Send(Response(200, "finished"));
    }).detach();
  });
  StartServer(cfg, std::move(r));
  RawConn idle(server_->port());  // an idle keep-alive connection is closed at once by Stop
  RawConn c(server_->port());
  ASSERT_TRUE(c.Send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(Eventually([&] { return entered.load(); }));
  uint16_t port = server_->port();
  server_->Stop();
  auto res = c.Read();
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.body, "finished");
  EXPECT_TRUE(res.Has("Connection: close"));
  EXPECT_TRUE(idle.ClosedByPeer());
  RawConn after(port);
  EXPECT_FALSE(after.connected());
}

TEST_F(ServerTest, MaxConnectionsClosesTheExtra) {
  ServerConfig cfg = TestConfig();
  cfg.max_connections = 2;
  StartServer(cfg);
  RawConn a(server_->port());
  RawConn b(server_->port());
  ASSERT_TRUE(Eventually([&] { return Connections() == 2; }));
  RawConn c(server_->port());
  EXPECT_TRUE(c.ClosedByPeer());
  ASSERT_TRUE(a.Send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(a.Read().status, 200);
}

TEST_F(ServerTest, ReusePortModeServesAllWorkers) {
  ServerConfig cfg = TestConfig();
  cfg.reuse_port = true;
  cfg.workers = 3;
  StartServer(cfg);
  for (int i = 0; i < 6; ++i) {
    RawConn c(server_->port());
    ASSERT_TRUE(c.Send("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    auto r = c.Read();
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(r.Has("Connection: close"));
  }
}

TEST_F(ServerTest, StartFailsOnBadRouteOrBusyPort) {
  Router bad;
  bad.AddSync(Method::kGet, "nope", [](Request&) { return Response(); });
  Server s1(TestConfig(), std::move(bad));
  EXPECT_EQ(s1.Start().code(), Code::kInvalidArgument);

  StartServer();
  ServerConfig cfg = TestConfig();
  cfg.port = server_->port();
  cfg.reuse_port = false;  // (with SO_REUSEPORT on both sides the kernel would allow the bind)
  Server s2(cfg, Router());
  EXPECT_FALSE(s2.Start().ok());
}

// One request over a Unix socket with a raw client; returns everything the server sent until it closed.
std::string UnixExchange(const std::string& path, const std::string& request) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return "socket failed";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "connect failed";
  }
  size_t off = 0;
  while (off < request.size()) {
    ssize_t n = ::write(fd, request.data() + off, request.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

TEST_F(ServerTest, UnixSocketServesTheSameRoutes) {
  std::string path = ::testing::TempDir() + "/govern-http-" + std::to_string(::getpid()) + ".sock";
  // A stale socket file from an earlier run is replaced.
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    ::unlink(path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ::close(fd);
  }
  ServerConfig cfg = TestConfig();
  cfg.unix_socket = path;
  StartServer(cfg);
  std::string r = UnixExchange(
      path, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  EXPECT_EQ(r.substr(0, 15), "HTTP/1.1 200 OK") << r;
  EXPECT_NE(r.find("\r\n\r\nhello"), std::string::npos) << r;
  r = UnixExchange(path, "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(r.find("404"), std::string::npos) << r;
  // TCP still answers beside it.
  auto resp = client_.Get(Url("/hello"));
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->status, 200);
  server_->Stop();
  struct stat st {};
  EXPECT_NE(::lstat(path.c_str(), &st), 0) << "the socket file is removed at Stop";

  // A path too long for sockaddr_un is refused with a reason, not a crash.
  ServerConfig bad = TestConfig();
  bad.unix_socket = "/tmp/" + std::string(200, 'x');
  Server s(bad, TestRoutes());
  EXPECT_EQ(s.Start().code(), Code::kInvalidArgument);
}

// Responder::OnClose: handlers that park their request (as a proxy waiting for its provider does) and
// ask to hear of the client leaving.
struct Watched {
  std::mutex mu;
  std::vector<Responder> parked;
  std::vector<BodyStream> streams;
  std::atomic<int> registered{0};
  std::atomic<int> told{0};
  void Clear() {  // before the server stops: a parked Responder answers 500 through its connection
    std::lock_guard lock(mu);
    parked.clear();
    streams.clear();
  }
};

Router WatchRoutes(const std::shared_ptr<Watched>& w) {
  Router r = TestRoutes();
  // Parks the request after asking to be told; ?thread asks from another thread.
  r.Add(Method::kGet, "/watch", [w](Request&& req, Responder resp) {
    auto park = [w](Responder rr) {
      rr.OnClose([w] { w->told.fetch_add(1); });
      std::lock_guard lock(w->mu);
      w->parked.push_back(std::move(rr));
      w->registered.fetch_add(1);
    };
    if (req.QueryParam("thread")) {
      std::thread([park, rr = std::move(resp)]() mutable { park(std::move(rr)); }).detach();
    } else {
      park(std::move(resp));
    }
  });
  // Asks to be told, then answers from another thread.
  r.Add(Method::kGet, "/watch-later", [w](Request&& req, Responder resp) {
    resp.OnClose([w] { w->told.fetch_add(1); });
    std::thread([rr = std::move(resp), path = req.path]() mutable {
      std::this_thread::sleep_for(20ms);
      rr.Send(Response(200, "answered " + path));
    }).detach();
  });
  // Asks to be told, then starts a stream and keeps it open.
  r.Add(Method::kGet, "/watch-stream", [w](Request&&, Responder resp) {
    resp.OnClose([w] { w->told.fetch_add(1); });
    BodyStream s = resp.Stream(SseResponseHead());
    s.Write(FormatSseEvent("first"));
    s.Flush();
    std::lock_guard lock(w->mu);
    w->streams.push_back(std::move(s));
    w->registered.fetch_add(1);
  });
  return r;
}

TEST_F(ServerTest, ClientLeavingBeforeItsAnswerIsToldOnce) {
  auto w = std::make_shared<Watched>();
  StartServer(TestConfig(), WatchRoutes(w));
  {
    RawConn c(server_->port());  // leaves with FIN
    ASSERT_TRUE(c.Send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_TRUE(Eventually([&] { return w->registered == 1; }));
  }
  ASSERT_TRUE(Eventually([&] { return w->told == 1; }));
  {
    RawConn c(server_->port());  // leaves with RST; the watch was asked for from another thread
    ASSERT_TRUE(c.Send("GET /watch?thread=1 HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_TRUE(Eventually([&] { return w->registered == 2; }));
    c.Reset();
  }
  ASSERT_TRUE(Eventually([&] { return w->told == 2; }));
  EXPECT_TRUE(Eventually([&] { return Connections() == 0; }));
  EXPECT_TRUE(Eventually(
      [&] { return server_->metrics().AddGauge("govern_http_requests_in_flight", "").Value() == 0; }));
  // Each counts as answered with 499; answering the gone clients later is dropped, and tells no one.
  EXPECT_NE(server_->metrics().RenderText().find(
                "govern_http_requests_total{route=\"/watch\",method=\"GET\",code=\"499\"} 2\n"),
            std::string::npos)
      << server_->metrics().RenderText();
  {
    std::lock_guard lock(w->mu);
    for (Responder& r : w->parked) r.Send(Response(200, "too late"));
  }
  EXPECT_EQ(client_.Get(Url("/hello"))->status, 200);
  EXPECT_EQ(w->told, 2);
  w->Clear();
}

TEST_F(ServerTest, AnsweredWatchedRequestsKeepTheConnectionServing) {
  auto w = std::make_shared<Watched>();
  StartServer(TestConfig(), WatchRoutes(w));
  {
    // Keep-alive: the watch's read is outstanding when each answer goes; the next request still parses.
    RawConn c(server_->port());
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(c.Send("GET /watch-later HTTP/1.1\r\nHost: x\r\n\r\n"));
      auto r = c.Read();
      EXPECT_EQ(r.status, 200);
      EXPECT_EQ(r.body, "answered /watch-later");
    }
    // Pipelined behind a watched request: the bytes the watch reads are the next request.
    ASSERT_TRUE(
        c.Send("GET /watch-later HTTP/1.1\r\nHost: x\r\n\r\nPOST /echo HTTP/1.1\r\nHost: x\r\n"
               "Content-Length: 3\r\n\r\nabc"));
    EXPECT_EQ(c.Read().body, "answered /watch-later");
    EXPECT_EQ(c.Read().body, "abc");
    // A stream began: leaving is the stream's business (its producer sees it closed), not the watch's.
    ASSERT_TRUE(c.Send("GET /watch-stream HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_TRUE(Eventually([&] { return w->registered == 1; }));
  }
  EXPECT_TRUE(Eventually([&] { return Connections() == 0; }));
  EXPECT_TRUE(Eventually([&] {
    std::lock_guard lock(w->mu);
    return w->streams.size() == 1 && w->streams[0].closed();
  }));
  {
    // Half-closed after the request: counts as leaving (as nginx does), the same as a close.
    RawConn c(server_->port());
    ASSERT_TRUE(c.Send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_TRUE(Eventually([&] { return w->registered == 2; }));
    EXPECT_EQ(w->told, 0) << "an answered request or a stream was told of a close";
    c.ShutdownWrite();
    ASSERT_TRUE(Eventually([&] { return w->told == 1; }));
  }
  w->Clear();
}

// A handler's EventLoop runs other components' work on the handler's own thread, and its stop hooks
// close that work when the server stops: a timer armed for an hour does not keep Stop() waiting.
TEST_F(ServerTest, EventLoopRunsWorkOnTheHandlersLoopAndStopHooksEndIt) {
  struct Seen {
    std::mutex mu;
    std::thread::id handler, posted, hook, timer;
    EventLoop* loop = nullptr;
    int hooks = 0;
    bool timer_cancelled = false;
  };
  auto seen = std::make_shared<Seen>();
  Router r;
  r.Add(Method::kGet, "/loop", [seen](Request&&, Responder resp) {
    EventLoop* ev = EventLoop::Current();
    {
      std::lock_guard lk(seen->mu);
      seen->handler = std::this_thread::get_id();
      seen->loop = ev;
    }
    if (ev == nullptr) return resp.Send(Response(500, "no loop"));
    // Work of another component on the same loop: a posted function and a long timer.
    auto timer = std::make_shared<boost::asio::steady_timer>(*ev->io(), std::chrono::hours(1));
    timer->async_wait([seen, timer](boost::system::error_code ec) {
      std::lock_guard lk(seen->mu);
      seen->timer = std::this_thread::get_id();
      seen->timer_cancelled = ec == boost::asio::error::operation_aborted;
    });
    ev->OnStop([seen, timer] {
      std::lock_guard lk(seen->mu);
      seen->hook = std::this_thread::get_id();
      ++seen->hooks;
      timer->cancel();
    });
    boost::asio::post(*ev->io(), [seen, resp = std::move(resp)]() mutable {
      {
        std::lock_guard lk(seen->mu);
        seen->posted = std::this_thread::get_id();
      }
      resp.Send(Response(200, "ok"));
    });
  });
  ServerConfig cfg = TestConfig();
  cfg.workers = 1;
  StartServer(cfg, std::move(r));
  EXPECT_EQ(EventLoop::Current(), nullptr);  // not a server loop's thread
  auto res = client_.Get(Url("/loop"));
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "ok");
  server_->Stop();  // returns only once the loop ran out of work: the hook cancelled the timer
  std::lock_guard lk(seen->mu);
  ASSERT_NE(seen->loop, nullptr);
  EXPECT_NE(seen->handler, std::this_thread::get_id());
  EXPECT_EQ(seen->posted, seen->handler);
  EXPECT_EQ(seen->hooks, 1);
  EXPECT_EQ(seen->hook, seen->handler);
  EXPECT_EQ(seen->timer, seen->handler);
  EXPECT_TRUE(seen->timer_cancelled);
}

}  // namespace
}  // namespace govern::net
