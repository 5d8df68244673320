// HttpClient against real servers: TLS with a throwaway CA, verification failures, timeouts, bad URLs,
// and reconnecting when a pooled keep-alive connection was closed by the server.
#include "net/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <thread>

#include "net/http_server.h"
#include "net/problem.h"

namespace govern::net {
namespace {

using namespace std::chrono_literals;

Router HelloRoutes() {
  Router r;
  r.AddSync(Method::kGet, "/hello",
            [](Request&) { return JsonResponse(R"({"message":"hello","ok":true})"); });
  return r;
}

// A self-signed certificate for localhost, made with the openssl command line tool (Debian's openssl
// package, which ca-certificates depends on).
class TlsFiles {
 public:
  TlsFiles() {
    dir_ = std::filesystem::temp_directory_path() / ("govern-tls-" + std::to_string(getpid()));
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

TEST(HttpClient, TlsServerAndVerifiedClient) {
  TlsFiles tls;
  ASSERT_TRUE(tls.ok()) << "openssl could not make a certificate";
  ServerConfig cfg;
  cfg.workers = 1;
  cfg.tls_cert_file = tls.cert();
  cfg.tls_key_file = tls.key();
  Server server(cfg, HelloRoutes());
  ASSERT_TRUE(server.Start().ok());
  std::string url = "https://localhost:" + std::to_string(server.port()) + "/hello";

  ClientOptions opts;
  opts.ca_file = tls.cert();
  HttpClient client(opts);
  for (int i = 0; i < 3; ++i) {
    auto r = client.Get(url);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, R"({"message":"hello","ok":true})");
  }
  EXPECT_EQ(client.connections_opened(), 1u);  // keep-alive over TLS

  // The system store does not trust a self-signed certificate.
  HttpClient untrusting;
  auto bad = untrusting.Get(url);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kUnavailable) << bad.status().ToString();

  // Plain HTTP to the TLS port fails cleanly, and the server keeps serving.
  ClientOptions quick;
  quick.connect_timeout = 1s;
  quick.request_timeout = 1s;
  HttpClient plain(quick);
  auto p = plain.Get("http://127.0.0.1:" + std::to_string(server.port()) + "/hello");
  EXPECT_FALSE(p.ok() && p->status == 200);
  EXPECT_TRUE(client.Get(url).ok());
}

// The TLS context is made at the first https connection: a CA file that cannot be read fails https
// requests with its name, again at every attempt, and never plain http ones.
TEST(HttpClient, UnreadableCaFileFailsOnlyHttps) {
  ServerConfig cfg;
  cfg.workers = 1;
  Server server(cfg, HelloRoutes());
  ASSERT_TRUE(server.Start().ok());
  ClientOptions opts;
  opts.ca_file = "/nonexistent/govern-ca.pem";
  HttpClient client(opts);
  auto plain = client.Get("http://127.0.0.1:" + std::to_string(server.port()) + "/hello");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->status, 200);
  for (int i = 0; i < 2; ++i) {
    auto tls = client.Get("https://127.0.0.1:" + std::to_string(server.port()) + "/hello");
    ASSERT_FALSE(tls.ok());
    EXPECT_EQ(tls.status().code(), Code::kInvalidArgument) << tls.status().ToString();
    EXPECT_NE(tls.status().message().find("tls ca file /nonexistent/govern-ca.pem"), std::string::npos)
        << tls.status().ToString();
  }
}

TEST(HttpClient, ServerRefusesMissingTlsFiles) {
  ServerConfig cfg;
  cfg.tls_cert_file = "/nonexistent/cert.pem";
  cfg.tls_key_file = "/nonexistent/key.pem";
  Server server(cfg, HelloRoutes());
  EXPECT_EQ(server.Start().code(), Code::kInvalidArgument);
}

TEST(HttpClient, RequestTimeoutAgainstASilentServer) {
  // A listening socket that never answers (the kernel completes the handshake from the backlog).
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 8), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ClientOptions opts;
  opts.request_timeout = 200ms;
  HttpClient client(opts);
  auto r = client.Get("http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/");
  close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDeadlineExceeded) << r.status().ToString();
}

TEST(HttpClient, BadUrlsAndRefusedConnections) {
  HttpClient client;
  EXPECT_EQ(client.Get("ftp://x/").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(client.Get("http://").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(client.Get("http://127.0.0.1:abc/").status().code(), Code::kInvalidArgument);
  // Port 1 on loopback: nothing listens there.
  EXPECT_EQ(client.Get("http://127.0.0.1:1/").status().code(), Code::kUnavailable);
}

TEST(HttpClient, ReconnectsWhenThePooledConnectionWasClosed) {
  ServerConfig cfg;
  cfg.workers = 1;
  cfg.idle_timeout = 100ms;
  Server server(cfg, HelloRoutes());
  ASSERT_TRUE(server.Start().ok());
  std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/hello";
  HttpClient client;
  ASSERT_TRUE(client.Get(url).ok());
  // Wait until the server has closed the idle connection (its gauge drops to zero).
  Gauge& conns = server.metrics().AddGauge("govern_http_connections", "");
  for (int i = 0; i < 500 && conns.Value() != 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(conns.Value(), 0);
  auto r = client.Get(url);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(client.connections_opened(), 2u);
}

TEST(HttpClient, AsyncCallbacksAndConcurrentSends) {
  Server server(ServerConfig{}, HelloRoutes());
  ASSERT_TRUE(server.Start().ok());
  std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/hello";
  HttpClient client;
  std::promise<int> got;
  ClientRequest req;
  req.url = url;
  client.SendAsync(req, [&](Result<ClientResponse> r) { got.set_value(r.ok() ? r->status : -1); });
  EXPECT_EQ(got.get_future().get(), 200);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        auto r = client.Get(url);
        if (r.ok() && r->status == 200) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 100);
}

}  // namespace
}  // namespace govern::net
