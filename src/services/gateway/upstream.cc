#include "services/gateway/upstream.h"

#include <sys/socket.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

namespace govern::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct UpstreamCall::Impl {
  asio::io_context io;
  tcp::socket socket{io};
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

  auto impl = std::make_unique<Impl>();
  beast::error_code ec;
  tcp::resolver resolver(impl->io);
  auto endpoints = resolver.resolve(host, port, ec);
  if (ec) return Unavailable("resolving " + host + ": " + ec.message());
  asio::connect(impl->socket, endpoints, ec);
  if (ec) return Unavailable("connecting to " + std::string(authority) + ": " + ec.message());
  impl->socket.set_option(tcp::no_delay(true), ec);

  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::host, authority);
  for (const auto& [name, value] : request.headers.fields()) req.insert(name, value);
  req.body() = request.body;
  req.prepare_payload();
  http::write(impl->socket, req, ec);
  if (ec) return Unavailable("writing to upstream: " + ec.message());

  impl->parser.body_limit(boost::none);
  http::read_header(impl->socket, impl->buffer, impl->parser, ec);
  if (ec) return Unavailable("reading the upstream response: " + ec.message());
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
    if (s.parser.is_done()) s.done = true;
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
  impl_->cancelled.store(true);
  // shutdown() on the descriptor is safe beside a blocked read on another thread and wakes it.
  ::shutdown(impl_->socket.native_handle(), SHUT_RDWR);
}

}  // namespace govern::gateway
