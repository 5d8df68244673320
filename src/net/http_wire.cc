// The HTTP/1.1 request parser (Beast's, wrapped) and the response head serializer.
#include "net/http_wire.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <charconv>
#include <ctime>

#include "net/problem.h"

namespace govern::net::internal {

namespace http = boost::beast::http;

void RequestReader::Start() {
  parser_.emplace();
  parser_->header_limit(max_header_bytes_);
  // The body limit is set per route once the header says which route; until then none, because
  // Beast checks Content-Length against the limit as soon as the header ends.
  parser_->body_limit(boost::none);
  header_reported_ = false;
  error_status_ = 0;
  error_detail_.clear();
}

RequestReader::Progress RequestReader::Feed(const char* data, size_t size, size_t* consumed) {
  *consumed = 0;
  boost::beast::error_code ec;
  while (true) {
    if (parser_->is_header_done() && !header_reported_) {
      header_reported_ = true;
      parser_->eager(true);
      return Progress::kHeaderDone;
    }
    if (parser_->is_done()) return Progress::kDone;
    if (*consumed == size) return Progress::kNeedMore;
    size_t n = parser_->put(boost::asio::const_buffer(data + *consumed, size - *consumed), ec);
    *consumed += n;
    if (ec == http::error::need_more) return Progress::kNeedMore;
    if (ec) {
      if (ec == http::error::header_limit) {
        error_status_ = 431;
        error_detail_ = "the request header is larger than " + std::to_string(max_header_bytes_) + " bytes";
      } else if (ec == http::error::body_limit) {
        error_status_ = 413;
        error_detail_ = "the request body is larger than this route accepts";
      } else {
        error_status_ = 400;
        error_detail_ = "malformed request: " + ec.message();
      }
      return Progress::kError;
    }
  }
}

bool RequestReader::SetBodyLimit(uint64_t limit) {
  auto len = parser_->content_length();
  if (len && *len > limit) {
    error_status_ = 413;
    error_detail_ = "the request body (" + std::to_string(*len) + " bytes) is larger than the limit of " +
                    std::to_string(limit) + " bytes";
    return false;
  }
  parser_->body_limit(limit);
  return true;
}

Method RequestReader::method() const { return ParseMethod(method_name()); }
std::string_view RequestReader::method_name() const { return parser_->get().method_string(); }
std::string_view RequestReader::target() const { return parser_->get().target(); }
bool RequestReader::keep_alive() const { return parser_->get().keep_alive(); }
int RequestReader::version() const { return static_cast<int>(parser_->get().version()); }

bool RequestReader::expects_continue() const {
  const auto& msg = parser_->get();
  if (msg.version() < 11) return false;
  auto it = msg.find(http::field::expect);
  return it != msg.end() && EqualsIgnoreCase(it->value(), "100-continue");
}

void RequestReader::TakeRequest(Request* req) {
  auto& msg = parser_->get();
  std::string_view m = msg.method_string();
  req->method = ParseMethod(m);
  req->method_name.assign(m);
  std::string_view t = msg.target();
  req->target.assign(t);
  size_t q = t.find('?');
  req->path.assign(t.substr(0, q));
  if (q == std::string_view::npos)
    req->query.clear();
  else
    req->query.assign(t.substr(q + 1));
  req->version = static_cast<int>(msg.version());
  req->headers.clear();
  for (const auto& f : msg) req->headers.Add(f.name_string(), f.value());
  req->body = std::move(msg.body());
  req->params.clear();
}

namespace {

void AppendNumber(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

bool IsServerOwned(std::string_view name) {
  return EqualsIgnoreCase(name, "Content-Length") || EqualsIgnoreCase(name, "Date") ||
         EqualsIgnoreCase(name, "Connection") || EqualsIgnoreCase(name, "Transfer-Encoding");
}

bool HasNoBody(int status) { return (status >= 100 && status < 200) || status == 204 || status == 304; }

// Header values must not carry CR or LF (response splitting); drop such a field entirely.
bool SafeField(std::string_view name, std::string_view value) {
  if (name.empty()) return false;
  for (char c : name) {
    if (c == '\r' || c == '\n' || c == ':' || c == ' ') return false;
  }
  for (char c : value) {
    if (c == '\r' || c == '\n') return false;
  }
  return true;
}

}  // namespace

void AppendResponseHead(std::string& out, const Response& resp, size_t body_size, bool close,
                        bool http10_keep_alive, std::string_view date) {
  int status = resp.status >= 100 && resp.status <= 999 ? resp.status : 500;
  out += "HTTP/1.1 ";
  AppendNumber(out, static_cast<uint64_t>(status));
  out += ' ';
  out += ReasonPhrase(status);
  out += "\r\n";
  for (const auto& [name, value] : resp.headers.fields()) {
    if (IsServerOwned(name) || !SafeField(name, value)) continue;
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  if (!HasNoBody(status)) {
    if (body_size == kChunkedBody) {
      out += "Transfer-Encoding: chunked\r\n";
    } else if (body_size != kBodyUntilClose) {
      out += "Content-Length: ";
      AppendNumber(out, body_size);
      out += "\r\n";
    }
  }
  if (!date.empty()) {
    out += "Date: ";
    out += date;
    out += "\r\n";
  }
  if (close)
    out += "Connection: close\r\n";
  else if (http10_keep_alive)
    out += "Connection: keep-alive\r\n";
  out += "\r\n";
}

void FormatHttpDate(int64_t unix_seconds, std::string* out) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[40];
  size_t n = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  out->assign(buf, n);
}

}  // namespace govern::net::internal
