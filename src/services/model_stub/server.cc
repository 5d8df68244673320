#include "services/model_stub/server.h"

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <ctime>
#include <thread>
#include <vector>

#include "base/log.h"
#include "services/model_stub/bedrock_stub.h"
#include "services/model_stub/gemini_stub.h"

namespace govern::model_stub {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using namespace std::chrono_literals;

asio::awaitable<void> Pause(std::chrono::nanoseconds d) {
  if (d <= 0ns) co_return;
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

}  // namespace

struct StubServer::Impl {
  ServerOptions options;
  // Both destroyed by Stop: destroying the io_context destroys every suspended connection coroutine,
  // which closes its socket, so open streams end at once.
  std::unique_ptr<asio::io_context> io_holder;
  asio::io_context& io;
  std::unique_ptr<tcp::acceptor> acceptor_holder;
  tcp::acceptor& acceptor;
  std::vector<std::thread> threads;
  std::atomic<bool> stopped{false};
  uint16_t port = 0;
  std::atomic<uint64_t> accepted{0}, open{0}, requests{0}, cut{0};

  explicit Impl(ServerOptions o)
      : options(std::move(o)),
        io_holder(std::make_unique<asio::io_context>(std::max(1, options.threads))),
        io(*io_holder),
        acceptor_holder(std::make_unique<tcp::acceptor>(io)),
        acceptor(*acceptor_holder) {}

  asio::awaitable<void> Accept() {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
        continue;
      }
      socket.set_option(tcp::no_delay(true));
      accepted.fetch_add(1);
      open.fetch_add(1);
      asio::co_spawn(io, Serve(std::move(socket)), asio::detached);
    }
  }

  asio::awaitable<void> Serve(tcp::socket socket) {
    struct OpenCount {
      std::atomic<uint64_t>& n;
      ~OpenCount() { n.fetch_sub(1); }
    } open_count{open};
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(options.max_body_bytes);
      auto [ec, n] = co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
      (void)n;
      if (ec) co_return;  // closed, or a request we cannot read: drop the connection
      http::request<http::string_body> req = parser.release();
      const uint64_t ordinal = requests.fetch_add(1) + 1;
      std::string_view target(req.target().data(), req.target().size());
      std::string_view path = target.substr(0, target.find('?'));
      auto header = [&](std::string_view name) -> std::string_view {
        auto it = req.find(beast::string_view(name.data(), name.size()));
        if (it == req.end()) return {};
        return {it->value().data(), it->value().size()};
      };
      Faults faults = FaultsFrom(header);
      if (faults.fail_call > 0 && static_cast<uint64_t>(faults.fail_call) != ordinal) faults.status = 0;
      std::string_view method(req.method_string().data(), req.method_string().size());
      const auto now = static_cast<int64_t>(std::time(nullptr));
      Reply reply =
          IsBedrockPath(path)  // AWS Bedrock Converse (bedrock_stub.h)
              ? BedrockAnswer(method, path, header, req.body(), faults, options.stub, now)
              : IsGeminiPath(path)  // Google Gemini (gemini_stub.h)
                    ? GeminiAnswer(method, path, header, req.body(), faults, options.stub)
                    : IsAzurePath(path)  // Azure OpenAI (stub.h)
                          ? AzureAnswer(method, target, header, req.body(), faults, options.stub, now)
                          : Answer(method, path, req.body(), faults, options.stub, now);
      if (faults.delay_ms > 0) co_await Pause(std::chrono::milliseconds(faults.delay_ms));
      if (faults.drop) break;
      bool keep_alive = req.keep_alive();
      bool ok = reply.stream ? co_await WriteStream(stream, reply, req.version(), keep_alive)
                             : co_await WriteWhole(stream, reply, req.version(), keep_alive);
      if (!ok && reply.truncate_at < 0) cut.fetch_add(1);
      if (!ok || !keep_alive) break;
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  asio::awaitable<bool> WriteWhole(beast::tcp_stream& stream, Reply& reply, unsigned version,
                                   bool keep_alive) {
    if (reply.truncate_at >= 0) {
      // Headers promising the whole body, then half of it, then the connection closes.
      std::string head = "HTTP/1.1 " + std::to_string(reply.status) +
                         " OK\r\nContent-Type: " + reply.content_type +
                         "\r\nContent-Length: " + std::to_string(reply.body.size()) + "\r\n\r\n";
      head.append(reply.body, 0, static_cast<size_t>(reply.truncate_at));
      co_await asio::async_write(stream, asio::buffer(head), asio::as_tuple(asio::use_awaitable));
      co_return false;
    }
    http::response<http::string_body> res{static_cast<http::status>(reply.status), version};
    res.set(http::field::server, "govern-model-stub");
    res.set(http::field::content_type, reply.content_type);
    if (reply.status == 429) res.set(http::field::retry_after, "0");
    for (const auto& [name, value] : reply.headers) res.set(name, value);
    res.body() = std::move(reply.body);
    res.keep_alive(keep_alive);
    res.prepare_payload();
    auto [ec, n] = co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
    (void)n;
    co_return !ec;
  }

  asio::awaitable<bool> WriteStream(beast::tcp_stream& stream, Reply& reply, unsigned version,
                                    bool keep_alive) {
    http::response<http::empty_body> res{http::status::ok, version};
    res.set(http::field::server, "govern-model-stub");
    res.set(http::field::content_type, reply.content_type);
    res.set(http::field::cache_control, "no-cache");
    res.keep_alive(keep_alive);
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    auto [ec, n] = co_await http::async_write_header(stream, sr, asio::as_tuple(asio::use_awaitable));
    (void)n;
    if (ec) co_return false;
    auto gap = options.tokens_per_second > 0
                   ? std::chrono::nanoseconds(1'000'000'000 / options.tokens_per_second)
                   : 0ns;
    size_t limit = reply.events.size();
    if (reply.truncate_at >= 0) limit = std::min(limit, static_cast<size_t>(reply.truncate_at));
    if (gap == 0ns) {
      // At once: every event in one chunk and one write, so a stream costs about what a plain answer does.
      std::string all;
      for (size_t i = 0; i < limit; ++i) all += reply.events[i];
      if (!all.empty()) {
        auto [wec, wn] = co_await asio::async_write(stream, http::make_chunk(asio::buffer(all)),
                                                    asio::as_tuple(asio::use_awaitable));
        (void)wn;
        if (wec) co_return false;
      }
    } else {
      for (size_t i = 0; i < limit; ++i) {
        if (reply.token_event[i]) co_await Pause(gap);
        auto [wec, wn] = co_await asio::async_write(stream, http::make_chunk(asio::buffer(reply.events[i])),
                                                    asio::as_tuple(asio::use_awaitable));
        (void)wn;
        if (wec) co_return false;
      }
    }
    if (reply.truncate_at >= 0) co_return false;  // cut: the connection closes without the last chunk
    auto [lec, ln] =
        co_await asio::async_write(stream, http::make_chunk_last(), asio::as_tuple(asio::use_awaitable));
    (void)ln;
    co_return !lec;
  }
};

StubServer::StubServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StubServer::~StubServer() { Stop(); }

Result<std::unique_ptr<StubServer>> StubServer::Start(ServerOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(impl->options.host, ec);
  if (ec) return InvalidArgument("model stub: bad address " + impl->options.host);
  tcp::endpoint ep(addr, impl->options.port);
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Unavailable("model stub: listen on " + impl->options.host + ":" +
                       std::to_string(impl->options.port) + ": " + ec.message());
  impl->port = impl->acceptor.local_endpoint(ec).port();
  asio::co_spawn(impl->io, impl->Accept(), asio::detached);
  for (int i = 0; i < std::max(1, impl->options.threads); ++i)
    impl->threads.emplace_back([io = &impl->io] { io->run(); });
  return std::unique_ptr<StubServer>(new StubServer(std::move(impl)));
}

uint16_t StubServer::port() const { return impl_->port; }

StubServer::Stats StubServer::stats() const {
  return {impl_->accepted.load(), impl_->open.load(), impl_->requests.load(), impl_->cut.load()};
}

void StubServer::Stop() {
  if (!impl_ || impl_->stopped.exchange(true)) return;
  impl_->io.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
  impl_->acceptor_holder.reset();
  impl_->io_holder.reset();
}

}  // namespace govern::model_stub
