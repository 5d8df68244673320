// The model stub over real sockets: keep-alive, chunked SSE streams, a stream cut mid-way, pacing.
#include "services/model_stub/server.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "gateway/sse.h"

namespace govern::model_stub {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

class Client {
 public:
  explicit Client(uint16_t port) : socket_(io_) {
    socket_.connect({asio::ip::make_address("127.0.0.1"), port});
  }

  // Sends one request and reads the answer; `ec` says whether the answer was whole.
  http::response<http::string_body> Do(http::verb verb, std::string target, std::string body,
                                       std::vector<std::pair<std::string, std::string>> headers,
                                       beast::error_code& ec) {
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    for (auto& [k, v] : headers) req.set(k, v);
    req.body() = std::move(body);
    req.prepare_payload();
    http::write(socket_, req);
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    http::read(socket_, buffer_, parser, ec);
    return parser.release();
  }

 private:
  asio::io_context io_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

constexpr const char* kStreamChat =
    R"({"model":"stub-gpt","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi there"}]})";

std::vector<gateway::SseEvent> Parse(const std::string& body) {
  gateway::SseParser p;
  std::vector<gateway::SseEvent> out;
  EXPECT_TRUE(p.Feed(body, out).ok());
  return out;
}

// x-stub-fail-call: K with x-stub-status fails only the K-th request the stub reads (a provider failing
// the second of several calls); the others are answered.
TEST(StubServer, FailCallFailsOnlyThatRequest) {
  auto server = StubServer::Start({.port = 0});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  Client c((*server)->port());
  beast::error_code ec;
  std::vector<int> statuses;
  for (int i = 0; i < 3; ++i) {
    auto r = c.Do(http::verb::post, "/v1/embeddings", R"({"model":"e","input":"a"})",
                  {{"x-stub-status", "503"}, {"x-stub-fail-call", "2"}}, ec);
    ASSERT_FALSE(ec) << ec.message();
    statuses.push_back(r.result_int());
  }
  EXPECT_EQ(statuses, (std::vector<int>{200, 503, 200}));
  (*server)->Stop();
}

TEST(StubServer, ServesWholeAndStreamedAnswersOnOneConnection) {
  auto server = StubServer::Start({.port = 0, .threads = 2});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  Client c((*server)->port());
  beast::error_code ec;
  auto models = c.Do(http::verb::get, "/v1/models", "", {}, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(models.result_int(), 200);
  EXPECT_NE(models.body().find("stub-claude"), std::string::npos);

  auto stream =
      c.Do(http::verb::post, "/v1/chat/completions?x=1", kStreamChat, {{"x-stub-output-tokens", "5"}}, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(stream.result_int(), 200);
  EXPECT_EQ(stream[http::field::content_type], "text/event-stream");
  EXPECT_TRUE(stream.chunked());
  auto events = Parse(stream.body());
  ASSERT_EQ(events.size(), 9u);  // role, 5 tokens, finish, usage, [DONE]
  EXPECT_TRUE(events.back().IsDone());

  auto msg =
      c.Do(http::verb::post, "/v1/messages",
           R"({"model":"stub-claude","max_tokens":3,"messages":[{"role":"user","content":"x"}]})", {}, ec);
  ASSERT_FALSE(ec);
  EXPECT_NE(msg.body().find("\"stop_reason\":\"max_tokens\""), std::string::npos) << msg.body();

  auto err =
      c.Do(http::verb::post, "/v1/messages", "{}", {{"x-stub-status", "529"}, {"x-stub-delay-ms", "5"}}, ec);
  ASSERT_FALSE(ec);
  EXPECT_EQ(err.result_int(), 529);
  EXPECT_NE(err.body().find("overloaded_error"), std::string::npos);
}

TEST(StubServer, CutsAStreamMidWay) {
  auto server = StubServer::Start({.port = 0, .tokens_per_second = 100000});
  ASSERT_TRUE(server.ok());
  Client c((*server)->port());
  beast::error_code ec;
  auto cut = c.Do(http::verb::post, "/v1/chat/completions", kStreamChat, {{"x-stub-cut-after", "3"}}, ec);
  EXPECT_TRUE(ec) << "a cut stream must not read as complete";
  Client d((*server)->port());
  auto half = d.Do(http::verb::post, "/v1/chat/completions", R"({"model":"m","messages":[]})",
                   {{"x-stub-cut-after", "0"}}, ec);
  EXPECT_TRUE(ec) << "a cut body must not read as complete";
  // Unpaced streams go out in one write: cut there too.
  auto at_once = StubServer::Start({.port = 0});
  ASSERT_TRUE(at_once.ok());
  Client e((*at_once)->port());
  auto partial = e.Do(http::verb::post, "/v1/chat/completions", kStreamChat, {{"x-stub-cut-after", "3"}}, ec);
  EXPECT_TRUE(ec) << "a cut stream must not read as complete";
}

TEST(StubServer, StopEndsOpenStreams) {
  auto server = StubServer::Start({.port = 0, .tokens_per_second = 2});
  ASSERT_TRUE(server.ok());
  uint16_t port = (*server)->port();
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
  http::request<http::string_body> req{http::verb::post, "/v1/chat/completions", 11};
  req.set("x-stub-output-tokens", "1000");
  req.body() = kStreamChat;
  req.prepare_payload();
  http::write(socket, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  http::read_header(socket, buffer, parser);  // the stream is open: 1000 tokens at 2 per second
  EXPECT_EQ(parser.get().result_int(), 200);
  (*server)->Stop();
  beast::error_code ec;
  http::read(socket, buffer, parser, ec);
  EXPECT_TRUE(ec) << "a stream cut by Stop must not read as complete";
  EXPECT_EQ((*server)->port(), port);
}

}  // namespace
}  // namespace govern::model_stub
