#include "services/gateway/upstream.h"

#include <sys/socket.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace govern::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// Sockets are only used with blocking calls, which need no running io_context; one shared context lets
// a connection outlive the call that opened it. Both are leaked on purpose: a pooled socket must not
// be destroyed after its context during static destruction.
asio::io_context& SharedIo() {
  static auto* io = new asio::io_context;
  return *io;
}

// Idle keep-alive connections by "host:port", reused by later calls (a connect and an accept saved per
// request).
class Pool {
 public:
  static Pool& Get() {
    static auto* pool = new Pool;
    return *pool;
  }
  std::optional<tcp::socket> Take(const std::string& authority) {
    std::lock_guard lock(mu_);
    auto it = idle_.find(authority);
    if (it == idle_.end() || it->second.empty()) return std::nullopt;
    tcp::socket s = std::move(it->second.back());
    it->second.pop_back();
    return s;
  }
  void Put(const std::string& authority, tcp::socket s) {
    std::lock_guard lock(mu_);
    auto& list = idle_[authority];
    if (list.size() < kMaxIdlePerHost) list.push_back(std::move(s));
  }

 private:
  static constexpr size_t kMaxIdlePerHost = 256;
  std::mutex mu_;
  std::unordered_map<std::string, std::vector<tcp::socket>> idle_;
};

}  // namespace

struct UpstreamCall::Impl {
  std::string authority;
  std::mutex socket_mu;  // pooling (moving the socket away) against Cancel()
  tcp::socket socket{SharedIo()};
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  net::Headers headers;
  std::atomic<bool> cancelled{false};
  bool done = false;
};

UpstreamCall::UpstreamCall(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
UpstreamCall::~UpstreamCall() = default;

Result<std::unique_ptr<UpstreamCall>> UpstreamCall::Open(const UpstreamRequest& request) {
  std::string_view url = request.url;
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme)
    return InvalidArgument("upstream URL must be http://: " + request.url);
  url.remove_prefix(kScheme.size());
  size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  std::string target = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  std::string host(authority);
  std::string port = "80";
  if (size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = std::string(authority.substr(0, colon));
    port = std::string(authority.substr(colon + 1));
  }
  if (host.empty()) return InvalidArgument("upstream URL has no host: " + request.url);

  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::host, authority);
  for (const auto& [name, value] : request.headers.fields()) req.insert(name, value);
  req.body() = request.body;
  req.prepare_payload();

  // A pooled connection first; when the provider had closed it, once more on a fresh one.
  std::unique_ptr<Impl> impl;
  beast::error_code ec;
  for (int attempt = 0; attempt < 2; ++attempt) {
    impl = std::make_unique<Impl>();
    impl->authority = std::string(authority);
    std::optional<tcp::socket> pooled = attempt == 0 ? Pool::Get().Take(impl->authority) : std::nullopt;
    if (pooled) {
      impl->socket = std::move(*pooled);
    } else {
      tcp::resolver resolver(SharedIo());
      auto endpoints = resolver.resolve(host, port, ec);
      if (ec) return Unavailable("resolving " + host + ": " + ec.message());
      asio::connect(impl->socket, endpoints, ec);
      if (ec) return Unavailable("connecting to " + std::string(authority) + ": " + ec.message());
      impl->socket.set_option(tcp::no_delay(true), ec);
    }
    impl->parser.body_limit(boost::none);
    http::write(impl->socket, req, ec);
    if (!ec) http::read_header(impl->socket, impl->buffer, impl->parser, ec);
    if (!ec) break;
    if (!pooled) return Unavailable("upstream request failed: " + ec.message());
  }
  if (ec) return Unavailable("upstream request failed: " + ec.message());
  for (const auto& field : impl->parser.get()) {
    impl->headers.Add(field.name_string(), field.value());
  }
  impl->done = impl->parser.is_done();
  return std::unique_ptr<UpstreamCall>(new UpstreamCall(std::move(impl)));
}

int UpstreamCall::status() const { return static_cast<int>(impl_->parser.get().result_int()); }
const net::Headers& UpstreamCall::headers() const { return impl_->headers; }

Result<std::string> UpstreamCall::Read() {
  Impl& s = *impl_;
  if (s.done) return std::string();
  char tmp[16 * 1024];
  while (true) {
    s.parser.get().body().data = tmp;
    s.parser.get().body().size = sizeof tmp;
    beast::error_code ec;
    http::read_some(s.socket, s.buffer, s.parser, ec);
    if (ec == http::error::need_buffer) ec = {};
    if (s.cancelled.load()) return Cancelled("upstream call cancelled");
    size_t n = sizeof tmp - s.parser.get().body().size;
    if (s.parser.is_done()) {
      s.done = true;
      // A whole answer on a keep-alive connection with nothing extra read: the connection can serve
      // another call.
      std::lock_guard lock(s.socket_mu);
      if (!ec && s.parser.keep_alive() && s.buffer.size() == 0 && !s.cancelled.load()) {
        Pool::Get().Put(s.authority, std::move(s.socket));
      }
    }
    if (ec) {
      if (n > 0) return std::string(tmp, n);  // the error comes back on the next call
      return DataLoss("upstream response cut: " + ec.message());
    }
    if (n > 0 || s.done) return std::string(tmp, n);
  }
}

Result<std::string> UpstreamCall::ReadAll(size_t max_bytes) {
  std::string all;
  while (true) {
    GOVERN_ASSIGN_OR_RETURN(std::string piece, Read());
    if (piece.empty()) return all;
    all += piece;
    if (all.size() > max_bytes) return ResourceExhausted("upstream response too large");
  }
}

void UpstreamCall::Cancel() {
  std::lock_guard lock(impl_->socket_mu);
  impl_->cancelled.store(true);
  // shutdown() on the descriptor is safe beside a blocked read on another thread and wakes it. A
  // socket already handed back to the pool is no longer this call's (the moved-from one is closed).
  if (impl_->socket.is_open()) ::shutdown(impl_->socket.native_handle(), SHUT_RDWR);
}

}  // namespace govern::gateway
