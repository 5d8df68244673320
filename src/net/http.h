// HTTP messages as services see them: Request, Response, Headers, and the Responder a handler answers
// through, with a whole Response (Send) or a body produced piece by piece (Stream: chunked transfer
// coding, server-sent events). Plain value types with no Boost in sight, so a service header can
// include this freely.
//
// Request and Response are values (not synchronised). A Responder may be moved to and used from any
// thread; Send() or Stream() may be called once. A BodyStream is thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace govern::net {

enum class Method : uint8_t { kGet, kHead, kPost, kPut, kPatch, kDelete, kOptions, kOther };

// "GET", "POST", ...; "OTHER" for kOther.
std::string_view MethodName(Method m);
// Parses a method token; unknown tokens give kOther.
Method ParseMethod(std::string_view token);

// ASCII case-insensitive equality, as HTTP field names compare.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// A list of header fields in arrival order. Lookup is case-insensitive; names keep their spelling.
class Headers {
 public:
  // The first value of `name`, or nullopt.
  std::optional<std::string_view> Get(std::string_view name) const;
  bool Has(std::string_view name) const { return Get(name).has_value(); }
  // Replaces every field called `name` with one field.
  void Set(std::string_view name, std::string_view value);
  // Appends a field (fields may repeat, e.g. Set-Cookie).
  void Add(std::string_view name, std::string_view value) { fields_.emplace_back(name, value); }
  void Remove(std::string_view name);

  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }
  size_t size() const { return fields_.size(); }
  void clear() { fields_.clear(); }
  void reserve(size_t n) { fields_.reserve(n); }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

struct Request {
  Method method = Method::kGet;
  std::string method_name;  // the token as sent ("GET"), useful when method is kOther
  std::string target;       // as sent: "/v1/orgs/acme/events?limit=10"
  std::string path;         // target up to '?', not percent-decoded: "/v1/orgs/acme/events"
  std::string query;        // after '?', raw: "limit=10"
  int version = 11;         // 10 or 11
  Headers headers;
  std::string body;
  // Path parameters filled by the router, percent-decoded: {"org", "acme"}.
  std::vector<std::pair<std::string, std::string>> params;
  // The address the connection came from (the direct peer, not X-Forwarded-For): "203.0.113.7" or
  // "2001:db8::1" (IPv4-mapped IPv6 addresses are given as IPv4). Empty with port 0 on a Unix socket.
  std::string peer_ip;
  uint16_t peer_port = 0;

  // The path parameter `name` ("" when absent).
  std::string_view Param(std::string_view name) const;
  // The first query parameter `name`, percent- and '+'-decoded; nullopt when absent.
  std::optional<std::string> QueryParam(std::string_view name) const;
  // Every query parameter, decoded, in order.
  std::vector<std::pair<std::string, std::string>> QueryParams() const;
};

struct Response {
  int status = 200;
  Headers headers;  // Content-Length, Date and Connection are added by the server
  std::string body;

  Response() = default;
  Response(int s, std::string b, std::string_view content_type = "text/plain; charset=utf-8")
      : status(s), body(std::move(b)) {
    headers.Set("Content-Type", content_type);
  }
};

// The token of an `Authorization: Bearer <token>` header (RFC 6750 section 2.1: the scheme is
// case-insensitive, the token is b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" )
// *"="). nullopt when there is no Authorization header, it has another scheme, or the token is empty or
// malformed. The view points into `req`.
std::optional<std::string_view> BearerToken(const Request& req);

// Percent-decodes `s` ("%2F" -> "/"); with plus_as_space, '+' becomes ' ' (query strings). Invalid
// escapes are kept as they are.
std::string PercentDecode(std::string_view s, bool plus_as_space);

struct StreamOptions {
  // Back-pressure: writable() is false while this many bytes are written but not yet taken by the
  // socket (the producer should wait: WaitWritable / OnWritable). Write() itself never refuses data
  // for being over it, so memory is bounded by this plus the producer's largest single write.
  size_t max_buffered_bytes = 256 * 1024;
  // Written bytes are sent as a chunk once this many are pending; Flush() sends them sooner.
  size_t flush_bytes = 16 * 1024;
};

namespace internal {
class StreamState;
}  // namespace internal

// The body of a streamed response, written piece by piece from any thread (thread-safe). The status
// line and headers are already on their way when a BodyStream is handed out. On HTTP/1.1 the body
// goes out in the chunked transfer coding; to an HTTP/1.0 client it is delimited by closing the
// connection; for HEAD nothing of it is sent (closed() is true at once).
//
// It ends with Finish() (the terminating chunk: the client sees a complete body) or Abort() (the
// connection is closed without it: the client sees a truncated body and knows it). Destroying a
// BodyStream that was not finished aborts it. When the client goes away (or is too slow to take a
// write within the server's write_timeout, or the server stops), the stream is closed: Write()
// returns false, WaitWritable() returns false, OnWritable callbacks run: the producer should stop.
class BodyStream {
 public:
  BodyStream() = default;  // an empty stream: closed
  explicit BodyStream(std::shared_ptr<internal::StreamState> state) : state_(std::move(state)) {}
  BodyStream(BodyStream&&) noexcept = default;
  BodyStream& operator=(BodyStream&& other) noexcept;
  BodyStream(const BodyStream&) = delete;
  BodyStream& operator=(const BodyStream&) = delete;
  ~BodyStream();

  // Queues `data` as the next bytes of the body; it is sent once flush_bytes are pending or at Flush()
  // or Finish(). False when the stream is closed (client gone, finished, aborted): nothing was queued.
  bool Write(std::string_view data);
  // Sends what is pending now (an event that must not wait for more, as with server-sent events).
  void Flush();
  // Sends what is pending and ends the body. Further writes return false.
  void Finish();
  // Ends the response without completing the body (the connection is closed at once; bytes not yet
  // sent may be dropped).
  void Abort();

  // True while fewer than max_buffered_bytes wait to be sent and the stream is open.
  bool writable() const;
  // True once the stream cannot take more (client gone, finished, aborted, HEAD).
  bool closed() const;
  // Blocks the calling thread (never an event loop) until writable() or closed(), or the timeout.
  // Returns writable().
  bool WaitWritable(std::chrono::milliseconds timeout);
  // Calls `fn` once, as soon as writable() or closed() (at once, on this thread, if so already;
  // otherwise on the connection's event loop: it must not block). For producers that must not block.
  void OnWritable(std::function<void()> fn);
  // Bytes written and not yet taken by the socket now, and the most there ever were (for tests and
  // metrics: with a producer that waits for writable(), at most max_buffered_bytes plus one write).
  size_t buffered() const;
  size_t peak_buffered() const;
  // Body bytes taken by the socket so far.
  uint64_t bytes_sent() const;

 private:
  std::shared_ptr<internal::StreamState> state_;
};

// Server-sent events (text/event-stream): one event in the wire format, ready for BodyStream::Write
// (then Flush). `data` may hold newlines (each line becomes a "data:" field); `event` and `id` are left
// out when empty and must not hold CR or LF (they are dropped if they do).
std::string FormatSseEvent(std::string_view data, std::string_view event = {}, std::string_view id = {});
// The head of an event stream: 200, Content-Type text/event-stream, Cache-Control no-store.
Response SseResponseHead();

// Where a Responder delivers its response. Implemented by the server (one per connection); a test or a
// fuzz target may implement it to capture responses. Deliver() may be called from any thread.
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  // `seq` identifies the request on this sink; a stale seq (the request already timed out) is ignored.
  virtual void Deliver(uint64_t seq, Response&& response) = 0;
  // Starts a streamed response with `head` (status and headers; its body, if any, is the first bytes
  // of the stream). The default collects the whole body and Deliver()s it at Finish (a sink that
  // cannot stream, such as a test's capture); the server streams for real.
  virtual BodyStream OpenStream(uint64_t seq, Response&& head, const StreamOptions& options);
  // Registers `on_close` for request `seq` (Responder::OnClose). The default keeps nothing and never
  // calls it (a sink with no peer to lose); the server implements it.
  virtual void WatchClose(uint64_t seq, std::function<void()> on_close) {
    (void)seq;
    (void)on_close;
  }
};

// The one-shot handle a handler answers through, now or later, from any thread. Cheap to move. If it
// is destroyed without Send(), the client gets a 500 problem response, so a lost request never hangs.
class Responder {
 public:
  Responder() = default;
  Responder(std::shared_ptr<ResponseSink> sink, uint64_t seq) : sink_(std::move(sink)), seq_(seq) {}
  Responder(Responder&& other) noexcept = default;
  Responder& operator=(Responder&& other) noexcept;
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;
  ~Responder();

  // Sends the response. Calls after the first (or on an empty Responder) do nothing.
  void Send(Response&& response);
  // Answers with a streamed body instead: sends `head` (status and headers; the server owns
  // Content-Length, Transfer-Encoding and Connection, and any head.body is the first bytes of the body)
  // and returns the stream to write the body to. Like Send, once: afterwards (or on an empty Responder)
  // it returns a closed stream. The request counts as answered for timeouts, metrics and admission once
  // the head is handed over (a long stream does not hold an admission slot: its producer bounds its
  // own concurrency). The server's write_timeout applies to each write; an idle stream (waiting for its
  // producer, as an event stream does) is never timed out by the server.
  BodyStream Stream(Response&& head, const StreamOptions& options = {});
  // True until Send() or Stream() was called.
  bool pending() const { return sink_ != nullptr; }
  // Asks to be told if the client goes away before this request is answered: `on_close` runs at most
  // once, on the connection's event loop (it must not block), when the server sees the client close or
  // reset the connection while the response is still pending (before Send or Stream reached the
  // connection); the request then counts as answered with 499 in the server's metrics, and a later
  // Send is dropped. It never runs once the response is under way, nor when the server itself closes
  // the connection (stopping, timeouts). The watch is one read posted on the connection: it ends
  // without a call if the client sends more bytes first (a pipelined request; its leaving is then not
  // noticed) or had sent them already. Costs nothing for a handler that does not call it. Once, from
  // any thread; on an answered (or empty) Responder it does nothing. The callback is dropped (destroyed,
  // on the loop) when the request is answered, so it may hold what the answer needs.
  void OnClose(std::function<void()> on_close);

 private:
  std::shared_ptr<ResponseSink> sink_;
  uint64_t seq_ = 0;
};

// An asynchronous handler: answer through the Responder, now or later, from any thread.
using Handler = std::function<void(Request&&, Responder)>;
// A synchronous handler, for answers computed at once on the event loop (must not block).
using SyncHandler = std::function<Response(Request&)>;

}  // namespace govern::net
