// Streamed responses over real sockets: chunked framing, back-pressure against a slow reader, a client
// leaving mid-stream (busy and idle producers), abort, HTTP/1.0 and HEAD, keep-alive and pipelining
// after a stream, server-sent events; plus the peer address and BearerToken.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "net/http_server.h"
#include "net/problem.h"

namespace govern::net {
namespace {

using namespace std::chrono_literals;

// Waits (bounded) for a condition another thread makes true; not a timing assertion.
template <typename F>
bool EventuallyStream(F f) {
  for (int i = 0; i < 1000; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return f();
}

class Client {
 public:
  explicit Client(uint16_t port, int rcvbuf = 0) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    if (rcvbuf > 0) setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    timeval tv{10, 0};  // a hung server fails the test instead of hanging it
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~Client() { Close(); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  bool connected() const { return connected_; }
  uint16_t local_port() const {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
  }
  bool Send(std::string_view s) {
    while (!s.empty()) {
      ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Reads up to `max` more bytes into the pending buffer; false on EOF, error or timeout.
  bool Fill(size_t max = 4096) {
    char buf[65536];
    ssize_t n = recv(fd_, buf, std::min(max, sizeof buf), 0);
    if (n <= 0) return false;
    pending_.append(buf, static_cast<size_t>(n));
    return true;
  }
  // The response head (through the blank line); empty when the connection ended first.
  std::string ReadHead() {
    size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return {};
    }
    std::string head = pending_.substr(0, end + 4);
    pending_.erase(0, end + 4);
    return head;
  }
  struct Chunked {
    std::string body;
    size_t chunks = 0;
    bool complete = false;  // the terminating zero-size chunk arrived
  };
  // Reads a chunked body (or only `max_chunks` of it); `between` runs after each chunk (a slow reader
  // sleeps there).
  Chunked ReadChunked(const std::function<void()>& between = {}, size_t max_chunks = SIZE_MAX) {
    Chunked c;
    while (c.chunks < max_chunks) {
      size_t eol;
      while ((eol = pending_.find("\r\n")) == std::string::npos) {
        if (!Fill()) return c;
      }
      size_t size = std::stoul(pending_.substr(0, eol), nullptr, 16);
      pending_.erase(0, eol + 2);
      while (pending_.size() < size + 2) {
        if (!Fill(size + 2 - pending_.size())) return c;
      }
      if (size == 0) {
        pending_.erase(0, 2);
        c.complete = true;
        return c;
      }
      c.body.append(pending_, 0, size);
      pending_.erase(0, size + 2);
      ++c.chunks;
      if (between) between();
    }
    return c;
  }
  std::string ReadToClose() {
    while (Fill()) {
    }
    std::string out = std::move(pending_);
    pending_.clear();
    return out;
  }
  bool ClosedByPeer() {
    if (!pending_.empty()) return false;
    char c;
    ssize_t n = recv(fd_, &c, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string pending_;
};

std::string Pattern(size_t i) { return "line " + std::to_string(i) + " " + std::string(i % 61, 'x') + "\n"; }

// Everything the producers in these tests report back to the test thread.
struct Shared {
  std::atomic<size_t> lines_written{0};
  std::atomic<bool> producer_done{false};
  std::atomic<bool> saw_closed{false};
  std::atomic<size_t> peak{0};
  std::atomic<size_t> max_write{0};
  std::string peer_ip;
  uint16_t peer_port = 0;
  std::mutex mu;
};

// A producer on its own thread that writes `lines` lines, waiting for writable() between writes.
void ProduceLines(BodyStream s, size_t lines, Shared* sh) {
  for (size_t i = 0; i < lines; ++i) {
    while (!s.writable() && !s.closed()) s.WaitWritable(1s);
    if (!s.Write(Pattern(i))) {
      sh->saw_closed = true;
      break;
    }
    sh->lines_written = i + 1;
  }
  sh->peak = s.peak_buffered();
  s.Finish();
  sh->producer_done = true;
}

class StreamTest : public ::testing::Test {
 protected:
  void StartServer(ServerConfig cfg = {}) {
    cfg.workers = 2;
    Router r;
    r.Add(Method::kGet, "/lines", [this](Request&& req, Responder out) {
      size_t n = std::stoul(req.QueryParam("n").value_or("1000"));
      {
        std::lock_guard lock(sh_.mu);
        sh_.peer_ip = req.peer_ip;
        sh_.peer_port = req.peer_port;
      }
      Response head(200, "", "text/plain");
      BodyStream s = out.Stream(std::move(head), opts_);
      std::thread(ProduceLines, std::move(s), n, &sh_).detach();
    });
    // A producer that never blocks a thread: it writes while writable and resumes from OnWritable.
    r.Add(Method::kGet, "/async", [this](Request&&, Responder out) {
      auto s = std::make_shared<BodyStream>(out.Stream(Response(200, "", "text/plain"), opts_));
      auto next = std::make_shared<size_t>(0);
      auto step = std::make_shared<std::function<void()>>();
      *step = [this, s, next, step_weak = std::weak_ptr<std::function<void()>>(step)] {
        while (*next < 20000) {
          if (s->closed()) {
            sh_.saw_closed = true;
            sh_.producer_done = true;
            return;
          }
          if (!s->writable()) {
            auto again = step_weak.lock();
            if (again) s->OnWritable([again] { std::thread([again] { (*again)(); }).detach(); });
            return;
          }
          s->Write(Pattern((*next)++));
        }
        sh_.peak = s->peak_buffered();
        s->Finish();
        sh_.producer_done = true;
      };
      std::thread([step] { (*step)(); }).detach();
      keep_ = step;  // the chain holds itself through callbacks; the test keeps the first link
    });
    r.Add(Method::kGet, "/abort", [](Request&&, Responder out) {
      BodyStream s = out.Stream(Response(200, "first part\n", "text/plain"));
      s.Write("second part\n");
      s.Flush();
      s.Abort();
    });
    r.Add(Method::kGet, "/events", [this](Request&&, Responder out) {
      BodyStream s = out.Stream(SseResponseHead());
      s.Write(FormatSseEvent("hello\nworld", "greeting", "1"));
      s.Flush();
      // An idle event stream: nothing more is written until the client leaves.
      std::thread([this, s = std::move(s)]() mutable {
        while (!s.closed()) s.WaitWritable(10s);
        sh_.saw_closed = true;
        sh_.producer_done = true;
      }).detach();
    });
    r.AddSync(Method::kGet, "/plain", [](Request&) { return Response(200, "plain"); });
    server_ = std::make_unique<Server>(std::move(cfg), std::move(r));
    Status st = server_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  void TearDown() override {
    if (server_) server_->Stop();
    // Producers hold raw pointers to sh_: let them finish before it goes.
    EXPECT_TRUE(EventuallyStream([&] { return sh_.producer_done.load() || !started_producer_; }));
  }
  uint16_t port() const { return server_->port(); }

  StreamOptions opts_{.max_buffered_bytes = 64 * 1024, .flush_bytes = 8 * 1024};
  Shared sh_;
  bool started_producer_ = true;
  std::shared_ptr<std::function<void()>> keep_;
  std::unique_ptr<Server> server_;
};

std::string Expected(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += Pattern(i);
  return s;
}

TEST_F(StreamTest, ChunkedBodyArrivesWholeAndTheConnectionIsReused) {
  StartServer();
  Client c(port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send("GET /lines?n=5000 HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string head = c.ReadHead();
  EXPECT_NE(head.find("HTTP/1.1 200"), std::string::npos) << head;
  EXPECT_NE(head.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
  auto body = c.ReadChunked();
  EXPECT_TRUE(body.complete);
  EXPECT_TRUE(body.body == Expected(5000)) << body.body.size();
  EXPECT_GT(body.chunks, 1u);
  // Keep-alive: the next request on the same connection is answered.
  ASSERT_TRUE(c.Send("GET /plain HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_NE(c.ReadHead().find("Content-Length: 5"), std::string::npos);
  std::lock_guard lock(sh_.mu);
  EXPECT_EQ(sh_.peer_ip, "127.0.0.1");
  EXPECT_EQ(sh_.peer_port, c.local_port());
}

TEST_F(StreamTest, PipelinedRequestAfterAStreamIsAnswered) {
  StartServer();
  Client c(port());
  ASSERT_TRUE(c.Send("GET /lines?n=3000 HTTP/1.1\r\nHost: x\r\n\r\nGET /plain HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_FALSE(c.ReadHead().empty());
  auto body = c.ReadChunked();
  EXPECT_TRUE(body.complete);
  EXPECT_TRUE(body.body == Expected(3000)) << body.body.size();
  std::string head = c.ReadHead();
  EXPECT_NE(head.find("HTTP/1.1 200"), std::string::npos);
  EXPECT_NE(head.find("Content-Length: 5"), std::string::npos);
}

TEST_F(StreamTest, SlowReaderHoldsTheProducerBackWithinTheBound) {
  StartServer();
  // A small receive window and a reader that sleeps between chunks: the producer can run ahead only
  // by what the kernel buffers plus max_buffered_bytes.
  Client c(port(), 4096);
  const size_t n = 250000;  // ~14 MB: more than the kernel buffers on both sides hold
  ASSERT_TRUE(c.Send("GET /lines?n=" + std::to_string(n) + " HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_FALSE(c.ReadHead().empty());
  size_t k = 0;
  auto body = c.ReadChunked([&] {
    if (++k % 8 == 0) std::this_thread::sleep_for(1ms);
  });
  EXPECT_TRUE(body.complete);
  EXPECT_TRUE(body.body == Expected(n)) << body.body.size();
  ASSERT_TRUE(EventuallyStream([&] { return sh_.producer_done.load(); }));
  // The largest line is under 100 bytes: the buffer never held more than the bound plus one write.
  EXPECT_LE(sh_.peak.load(), opts_.max_buffered_bytes + 100);
  EXPECT_GE(sh_.peak.load(), opts_.max_buffered_bytes / 2);  // it did fill up: the reader was slow
}

TEST_F(StreamTest, AsyncProducerResumesFromOnWritable) {
  StartServer();
  Client c(port(), 4096);
  ASSERT_TRUE(c.Send("GET /async HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_FALSE(c.ReadHead().empty());
  auto body = c.ReadChunked();
  EXPECT_TRUE(body.complete);
  EXPECT_TRUE(body.body == Expected(20000)) << body.body.size();
  ASSERT_TRUE(EventuallyStream([&] { return sh_.producer_done.load(); }));
  EXPECT_LE(sh_.peak.load(), opts_.max_buffered_bytes + 100);
}

TEST_F(StreamTest, ClientLeavingMidStreamStopsTheProducer) {
  StartServer();
  {
    Client c(port(), 4096);
    ASSERT_TRUE(c.Send("GET /lines?n=100000000 HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_FALSE(c.ReadHead().empty());
    ASSERT_TRUE(c.Fill());
  }  // closed with most of the body unread
  ASSERT_TRUE(EventuallyStream([&] { return sh_.producer_done.load(); }));
  EXPECT_TRUE(sh_.saw_closed.load());
  EXPECT_LT(sh_.lines_written.load(), 100000000u);
  // The server is fine afterwards.
  Client c2(port());
  ASSERT_TRUE(c2.Send("GET /plain HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_NE(c2.ReadHead().find("200"), std::string::npos);
}

TEST_F(StreamTest, IdleEventStreamNoticesTheClientLeaving) {
  StartServer();
  {
    Client c(port());
    ASSERT_TRUE(c.Send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n"));
    std::string head = c.ReadHead();
    EXPECT_NE(head.find("Content-Type: text/event-stream"), std::string::npos) << head;
    EXPECT_NE(head.find("Cache-Control: no-store"), std::string::npos) << head;
    auto first = c.ReadChunked({}, 1);
    EXPECT_EQ(first.body, "event: greeting\nid: 1\ndata: hello\ndata: world\n\n");
    EXPECT_FALSE(sh_.saw_closed.load());
  }
  // Nothing is written after the event: only the read the server keeps posted sees the client go.
  ASSERT_TRUE(EventuallyStream([&] { return sh_.saw_closed.load(); }));
}

TEST_F(StreamTest, AbortCutsTheBodyShort) {
  StartServer();
  started_producer_ = false;
  Client c(port());
  ASSERT_TRUE(c.Send("GET /abort HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_FALSE(c.ReadHead().empty());
  auto body = c.ReadChunked();
  EXPECT_FALSE(body.complete);  // no terminating chunk: the client knows the body is incomplete
  EXPECT_TRUE(c.ClosedByPeer());
}

TEST_F(StreamTest, Http10GetsABodyEndedByClose) {
  StartServer();
  Client c(port());
  ASSERT_TRUE(c.Send("GET /lines?n=2000 HTTP/1.0\r\n\r\n"));
  std::string head = c.ReadHead();
  EXPECT_EQ(head.find("Transfer-Encoding"), std::string::npos) << head;
  EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
  EXPECT_NE(head.find("Connection: close"), std::string::npos) << head;
  std::string all = c.ReadToClose();
  EXPECT_TRUE(all == Expected(2000)) << all.size();
}

TEST_F(StreamTest, HeadGetsTheHeadOnlyAndClosesTheStream) {
  StartServer();
  Client c(port());
  ASSERT_TRUE(c.Send("HEAD /lines?n=1000 HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string head = c.ReadHead();
  EXPECT_NE(head.find("HTTP/1.1 200"), std::string::npos) << head;
  ASSERT_TRUE(EventuallyStream([&] { return sh_.producer_done.load(); }));
  EXPECT_TRUE(sh_.saw_closed.load());
  ASSERT_TRUE(c.Send("GET /plain HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string next = c.ReadHead();
  EXPECT_EQ(next.rfind("HTTP/1.1 200", 0), 0u) << next;  // no stray body bytes before it
}

TEST_F(StreamTest, StopClosesARunningStream) {
  ServerConfig cfg;
  cfg.drain_timeout = 200ms;
  StartServer(cfg);
  Client c(port());
  ASSERT_TRUE(c.Send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_FALSE(c.ReadHead().empty());
  server_->Stop();
  ASSERT_TRUE(EventuallyStream([&] { return sh_.saw_closed.load(); }));
}

// A sink that cannot stream (a test capture) gets the whole body at Finish.
class Capture : public ResponseSink {
 public:
  void Deliver(uint64_t, Response&& r) override {
    got = std::move(r);
    ++count;
  }
  Response got;
  int count = 0;
};

TEST(StreamFallbackTest, CollectingSinkDeliversTheWholeBody) {
  auto sink = std::make_shared<Capture>();
  {
    Responder r(sink, 1);
    BodyStream s = r.Stream(Response(201, "a", "text/plain"), {.max_buffered_bytes = 8, .flush_bytes = 4});
    EXPECT_TRUE(s.Write("bc"));
    EXPECT_TRUE(s.Write("defgh"));
    s.Finish();
    EXPECT_FALSE(s.Write("late"));
    EXPECT_TRUE(s.closed());
  }
  EXPECT_EQ(sink->count, 1);
  EXPECT_EQ(sink->got.status, 201);
  EXPECT_EQ(sink->got.body, "abcdefgh");
  auto sink2 = std::make_shared<Capture>();
  {
    Responder r(sink2, 1);
    BodyStream s = r.Stream(Response(200, "", "text/plain"));
    s.Write("x");
  }  // dropped unfinished: aborted
  EXPECT_EQ(sink2->count, 1);
  EXPECT_EQ(sink2->got.status, 500);
  // A Responder used once: a second Stream or Send does nothing.
  auto sink3 = std::make_shared<Capture>();
  Responder r3(sink3, 1);
  r3.Send(Response(200, "once"));
  BodyStream late = r3.Stream(Response(200, ""));
  EXPECT_TRUE(late.closed());
  EXPECT_FALSE(late.Write("x"));
  EXPECT_EQ(sink3->count, 1);
}

// Refuses every request it is asked about.
class RefuseAll : public Admission {
 public:
  AdmissionTicket TryAdmit(RequestClass cls, std::string_view) override {
    asked_.fetch_add(1);
    return AdmissionTicket{.admitted = false, .cls = cls};
  }
  void Release(const AdmissionTicket&, bool) override {}
  std::atomic<int> asked_{0};
};

TEST(OwnBoundTest, RouteBoundAnswers503WithRetryAfterAndAdmissionIsNotAsked) {
  RefuseAll adm;
  std::mutex mu;
  std::vector<Responder> held;
  ServerConfig cfg;
  cfg.workers = 2;
  cfg.admission = &adm;
  Router r;
  r.Add(Method::kPost, "/append",
        [&](Request&&, Responder out) {
          std::lock_guard lock(mu);
          held.push_back(std::move(out));
        },
        {.cls = RequestClass::kOwnBound, .name = "append", .max_in_flight = 2, .retry_after_seconds = 3});
  r.AddSync(Method::kGet, "/other", [](Request&) { return Response(200, "x"); });
  Server server(cfg, std::move(r));
  ASSERT_TRUE(server.Start().ok());
  auto held_count = [&] {
    std::lock_guard lock(mu);
    return held.size();
  };
  Client a(server.port()), b(server.port()), c(server.port());
  const std::string post = "POST /append HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
  ASSERT_TRUE(a.Send(post));
  ASSERT_TRUE(b.Send(post));
  ASSERT_TRUE(
      EventuallyStream([&] { return held_count() == 2; }));  // admitted although admission refuses all
  ASSERT_TRUE(c.Send(post));
  std::string head = c.ReadHead();
  EXPECT_EQ(head.rfind("HTTP/1.1 503", 0), 0u) << head;
  EXPECT_NE(head.find("Retry-After: 3\r\n"), std::string::npos) << head;
  // Another class still goes through admission (which refuses it).
  Client d(server.port());
  ASSERT_TRUE(d.Send("GET /other HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(d.ReadHead().rfind("HTTP/1.1 503", 0), 0u);
  EXPECT_EQ(adm.asked_.load(), 1);
  // An answered request frees its slot.
  {
    std::lock_guard lock(mu);
    held[0].Send(Response(201, "ok"));
  }
  EXPECT_EQ(a.ReadHead().rfind("HTTP/1.1 201", 0), 0u);
  Client e(server.port());
  ASSERT_TRUE(e.Send(post));
  ASSERT_TRUE(EventuallyStream([&] { return held_count() == 3; }));
  {
    std::lock_guard lock(mu);
    for (auto& h : held) h.Send(Response(201, "ok"));
  }
  server.Stop();
}

TEST(SseTest, FormatsEventsLineByLine) {
  EXPECT_EQ(FormatSseEvent("x"), "data: x\n\n");
  EXPECT_EQ(FormatSseEvent("a\r\nb\rc\nd", "e", "7"),
            "event: e\nid: 7\ndata: a\ndata: b\ndata: c\ndata: d\n\n");
  EXPECT_EQ(FormatSseEvent("", "bad\nname"), "data: \n\n");
  EXPECT_EQ(FormatSseEvent("end\n"), "data: end\ndata: \n\n");
}

TEST(BearerTokenTest, FollowsRfc6750) {
  auto tok = [](std::string_view v) -> std::optional<std::string> {
    Request r;
    if (!v.empty()) r.headers.Set("Authorization", v);
    auto t = BearerToken(r);
    if (!t) return std::nullopt;
    return std::string(*t);
  };
  EXPECT_EQ(tok("Bearer gva_abc_123"), "gva_abc_123");
  EXPECT_EQ(tok("bearer mF_9.B5f-4.1JqM"), "mF_9.B5f-4.1JqM");
  EXPECT_EQ(tok("BEARER  a+b/c~=="), "a+b/c~==");
  EXPECT_EQ(tok("Bearer abc  "), "abc");
  EXPECT_EQ(tok(""), std::nullopt);
  EXPECT_EQ(tok("Basic dXNlcjpwYXNz"), std::nullopt);
  EXPECT_EQ(tok("Bearer"), std::nullopt);
  EXPECT_EQ(tok("Bearer "), std::nullopt);
  EXPECT_EQ(tok("Bearerabc"), std::nullopt);
  EXPECT_EQ(tok("Bearer a b"), std::nullopt);
  EXPECT_EQ(tok("Bearer =abc"), std::nullopt);
  EXPECT_EQ(tok("Bearer ab=c"), std::nullopt);
  EXPECT_EQ(tok("Bearer a,b"), std::nullopt);
}

}  // namespace
}  // namespace govern::net
