// The HTTP client: one event loop thread, a keep-alive pool per origin, C++20 coroutines per request.
#include "net/http_client.h"

#include <openssl/ssl.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <future>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "net/url.h"

namespace govern::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

// One pooled connection: plain or TLS over a beast::tcp_stream (which carries the timeouts).
struct Conn {
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buf;
  beast::tcp_stream& tcp() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
};

Status FromError(const beast::error_code& ec, std::string_view what) {
  if (ec == beast::error::timeout) return DeadlineExceeded(std::string(what) + ": timed out");
  if (ec == asio::error::operation_aborted) return Cancelled(std::string(what) + ": cancelled");
  if (ec == bhttp::error::end_of_stream || ec == asio::error::eof) {
    return Unavailable(std::string(what) + ": the server closed the connection");
  }
  if (ec == bhttp::error::body_limit) return ResourceExhausted(std::string(what) + ": response too large");
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_version).category()) {
    return DataLoss(std::string(what) + ": malformed response: " + ec.message());
  }
  return Unavailable(std::string(what) + ": " + ec.message());
}

}  // namespace

struct HttpClient::Impl {
  ClientOptions opts;
  asio::io_context ioc{1};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
  std::thread thread;
  std::optional<asio::ssl::context> ssl;  // loop thread only; made by Tls()
  Status ssl_status;
  std::map<std::string, std::vector<std::unique_ptr<Conn>>> idle;  // loop thread only
  std::atomic<uint64_t> opened{0};

  // The TLS context, made at the first https connection: a client that only speaks plain http (the AWS
  // metadata endpoints, a model server on the host) never loads the trust store nor touches OpenSSL.
  Result<asio::ssl::context*> Tls() {
    if (!ssl) {
      ssl.emplace(asio::ssl::context::tls_client);
      beast::error_code ec;
      ssl->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                           asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                           asio::ssl::context::no_tlsv1_1,
                       ec);
      if (opts.verify_peer) {
        ssl->set_verify_mode(asio::ssl::verify_peer, ec);
        if (!opts.ca_file.empty()) {
          ssl->load_verify_file(opts.ca_file, ec);
          if (ec) ssl_status = InvalidArgument("tls ca file " + opts.ca_file + ": " + ec.message());
        } else {
          ssl->set_default_verify_paths(ec);
          if (ec) ssl_status = Unavailable("tls system trust store: " + ec.message());
        }
      } else {
        ssl->set_verify_mode(asio::ssl::verify_none, ec);
      }
    }
    if (!ssl_status.ok()) return ssl_status;
    return &*ssl;
  }

  asio::awaitable<Result<std::unique_ptr<Conn>>> Connect(const Url& u) {
    beast::error_code ec;
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    tcp::resolver resolver(ioc);
    auto endpoints = co_await resolver.async_resolve(u.host, u.port, token);
    if (ec) co_return Unavailable("resolve " + u.host + ": " + ec.message());
    auto conn = std::make_unique<Conn>();
    if (u.tls) {
      auto tls = Tls();
      if (!tls.ok()) co_return tls.status();
      conn->tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ioc, **tls);
    } else {
      conn->plain = std::make_unique<beast::tcp_stream>(ioc);
    }
    beast::tcp_stream& stream = conn->tcp();
    stream.expires_after(opts.connect_timeout);
    co_await stream.async_connect(endpoints, token);
    if (ec) co_return FromError(ec, "connect " + u.origin);
    stream.socket().set_option(tcp::no_delay(true), ec);
    opened.fetch_add(1, std::memory_order_relaxed);
    if (u.tls) {
      // SSL_set_tlsext_host_name, spelled out because the macro uses a C cast.
      if (!SSL_ctrl(conn->tls->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                    const_cast<char*>(u.host.c_str()))) {
        co_return Unavailable("tls: cannot set the server name");
      }
      if (opts.verify_peer) conn->tls->set_verify_callback(asio::ssl::host_name_verification(u.host));
      co_await conn->tls->async_handshake(asio::ssl::stream_base::client, token);
      if (ec) co_return FromError(ec, "tls handshake with " + u.origin);
    }
    co_return std::move(conn);
  }

  template <class Stream>
  asio::awaitable<Result<ClientResponse>> RoundTrip(Stream& stream, Conn& conn, const Url& u,
                                                    const ClientRequest& req, bool* keep_alive,
                                                    bool* got_bytes) {
    beast::error_code ec;
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    bhttp::request<bhttp::string_body> msg;
    msg.method_string(MethodName(req.method));
    msg.target(u.target);
    msg.version(11);
    for (const auto& [k, v] : req.headers.fields()) {
      if (EqualsIgnoreCase(k, "Host") || EqualsIgnoreCase(k, "Content-Length") ||
          EqualsIgnoreCase(k, "Connection")) {
        continue;
      }
      msg.insert(k, v);
    }
    bool default_port = u.port == (u.tls ? "443" : "80");
    msg.set(bhttp::field::host, default_port ? u.host : u.host + ":" + u.port);
    msg.body() = req.body;
    if (!req.body.empty() || req.method == Method::kPost || req.method == Method::kPut ||
        req.method == Method::kPatch) {
      msg.prepare_payload();
    }
    conn.tcp().expires_after(opts.request_timeout);
    co_await bhttp::async_write(stream, msg, token);
    if (ec) co_return FromError(ec, "send to " + u.origin);
    std::optional<bhttp::response_parser<bhttp::string_body>> parser;
    auto fresh_parser = [&] {
      parser.emplace();
      parser->body_limit(opts.max_response_bytes);
      parser->header_limit(64 * 1024);
      if (req.method == Method::kHead) parser->skip(true);
    };
    fresh_parser();
    co_await bhttp::async_read_header(stream, conn.buf, *parser, token);
    *got_bytes = conn.buf.size() > 0 || parser->got_some();
    if (ec) co_return FromError(ec, "read from " + u.origin);
    // 1xx interim responses (100 Continue) precede the real one.
    while (parser->get().result_int() >= 100 && parser->get().result_int() < 200) {
      fresh_parser();
      co_await bhttp::async_read_header(stream, conn.buf, *parser, token);
      if (ec) co_return FromError(ec, "read from " + u.origin);
    }
    co_await bhttp::async_read(stream, conn.buf, *parser, token);
    if (ec) co_return FromError(ec, "read from " + u.origin);
    conn.tcp().expires_never();
    auto& res = parser->get();
    *keep_alive = res.keep_alive();
    ClientResponse out;
    out.status = static_cast<int>(res.result_int());
    for (const auto& f : res) out.headers.Add(f.name_string(), f.value());
    out.body = std::move(res.body());
    co_return out;
  }

  asio::awaitable<void> Exchange(ClientRequest req, std::function<void(Result<ClientResponse>)> done) {
    Result<Url> url = ParseUrl(req.url);
    if (!url.ok()) {
      done(url.status());
      co_return;
    }
    for (int attempt = 0;; ++attempt) {
      std::unique_ptr<Conn> conn;
      auto& pool = idle[url->origin];
      if (!pool.empty()) {
        conn = std::move(pool.back());
        pool.pop_back();
      }
      bool reused = conn != nullptr;
      if (!conn) {
        auto c = co_await Connect(*url);
        if (!c.ok()) {
          done(c.status());
          co_return;
        }
        conn = std::move(c).value();
      }
      bool keep_alive = false;
      bool got_bytes = false;
      // Two statements rather than ?: because GCC 12 mishandles temporaries around co_await in ?:.
      std::optional<Result<ClientResponse>> r;
      if (conn->tls) {
        r.emplace(co_await RoundTrip(*conn->tls, *conn, *url, req, &keep_alive, &got_bytes));
      } else {
        r.emplace(co_await RoundTrip(*conn->plain, *conn, *url, req, &keep_alive, &got_bytes));
      }
      // A pooled connection the server closed meanwhile fails before any byte of a response: retry
      // once on a new connection (the request never reached a handler).
      if (!r->ok() && reused && !got_bytes && attempt == 0 && r->status().code() == Code::kUnavailable)
        continue;
      if (r->ok() && keep_alive) {
        auto& p = idle[url->origin];
        if (p.size() < opts.max_idle_per_host) p.push_back(std::move(conn));
      }
      done(std::move(*r));
      co_return;
    }
  }
};

HttpClient::HttpClient(ClientOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->opts = std::move(options);
  impl_->guard.emplace(impl_->ioc.get_executor());
  impl_->thread = std::thread([impl = impl_.get()] { impl->ioc.run(); });
}

HttpClient::~HttpClient() {
  impl_->guard.reset();
  asio::post(impl_->ioc, [impl = impl_.get()] { impl->idle.clear(); });
  impl_->ioc.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void HttpClient::SendAsync(ClientRequest request, std::function<void(Result<ClientResponse>)> done) {
  asio::co_spawn(impl_->ioc, impl_->Exchange(std::move(request), std::move(done)), asio::detached);
}

Result<ClientResponse> HttpClient::Send(ClientRequest request) {
  auto promise = std::make_shared<std::promise<Result<ClientResponse>>>();
  auto future = promise->get_future();
  SendAsync(std::move(request), [promise](Result<ClientResponse> r) { promise->set_value(std::move(r)); });
  // The loop only stops in the destructor, so every spawned exchange calls back.
  return future.get();
}

Result<ClientResponse> HttpClient::Get(std::string url) {
  ClientRequest r;
  r.url = std::move(url);
  return Send(std::move(r));
}

Result<ClientResponse> HttpClient::Post(std::string url, std::string body, std::string_view content_type) {
  ClientRequest r;
  r.method = Method::kPost;
  r.url = std::move(url);
  r.body = std::move(body);
  r.headers.Set("Content-Type", content_type);
  return Send(std::move(r));
}

uint64_t HttpClient::connections_opened() const { return impl_->opened.load(std::memory_order_relaxed); }

}  // namespace govern::net
