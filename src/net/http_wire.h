// Internal to src/net (includes Beast): the request parser and response serializer the server uses,
// shared with the fuzz target so that fuzzing exercises exactly the server's parsing path.
//
// A RequestReader belongs to one connection and is used by one thread at a time.
#pragma once

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "net/http.h"

namespace govern::net::internal {

class RequestReader {
 public:
  explicit RequestReader(uint32_t max_header_bytes) : max_header_bytes_(max_header_bytes) {}

  // Begins a new message (call before the first Feed and after each complete request).
  void Start();

  enum class Progress { kNeedMore, kHeaderDone, kDone, kError };
  // Parses bytes from `data`; `*consumed` says how many were used (the rest belong to a later call).
  // kHeaderDone is returned once per message, when the header is complete and the body is not yet
  // parsed: the caller then routes the request and calls SetBodyLimit before feeding on.
  Progress Feed(const char* data, size_t size, size_t* consumed);

  // After kHeaderDone. Returns false when the declared Content-Length is over `limit` (413).
  bool SetBodyLimit(uint64_t limit);
  Method method() const;
  std::string_view method_name() const;
  std::string_view target() const;
  bool keep_alive() const;
  bool expects_continue() const;
  int version() const;

  // After kError: the status to answer (400, 413 or 431) and why.
  int error_status() const { return error_status_; }
  const std::string& error_detail() const { return error_detail_; }

  // After kDone: moves the message into `req` (path and query split from the target).
  void TakeRequest(Request* req);

 private:
  uint32_t max_header_bytes_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  bool header_reported_ = false;
  int error_status_ = 0;
  std::string error_detail_;
};

// body_size values for a streamed body: "Transfer-Encoding: chunked", or no framing header at all (the
// body ends when the connection closes: HTTP/1.0).
inline constexpr size_t kChunkedBody = static_cast<size_t>(-1);
inline constexpr size_t kBodyUntilClose = static_cast<size_t>(-2);

// Appends the status line and header block of `resp` to `out`. The server owns Content-Length (from
// `body_size`), Transfer-Encoding, Date and Connection; a handler's own values for those are ignored.
void AppendResponseHead(std::string& out, const Response& resp, size_t body_size, bool close,
                        bool http10_keep_alive, std::string_view date);

// Writes an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") for `unix_seconds` into `out` (29 chars).
void FormatHttpDate(int64_t unix_seconds, std::string* out);

}  // namespace govern::net::internal
