// HTTP messages as services see them: Request, Response, Headers, and the Responder a handler answers
// through. Plain value types with no Boost in sight, so a service header can include this freely.
//
// Request and Response are values (not synchronised). A Responder may be moved to and used from any
// thread; Send() may be called at most once.
#pragma once

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

// Percent-decodes `s` ("%2F" -> "/"); with plus_as_space, '+' becomes ' ' (query strings). Invalid
// escapes are kept as they are.
std::string PercentDecode(std::string_view s, bool plus_as_space);

// Where a Responder delivers its response. Implemented by the server (one per connection); a test or a
// fuzz target may implement it to capture responses. Deliver() may be called from any thread.
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  // `seq` identifies the request on this sink; a stale seq (the request already timed out) is ignored.
  virtual void Deliver(uint64_t seq, Response&& response) = 0;
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
  // True until Send() was called.
  bool pending() const { return sink_ != nullptr; }

 private:
  std::shared_ptr<ResponseSink> sink_;
  uint64_t seq_ = 0;
};

// An asynchronous handler: answer through the Responder, now or later, from any thread.
using Handler = std::function<void(Request&&, Responder)>;
// A synchronous handler, for answers computed at once on the event loop (must not block).
using SyncHandler = std::function<Response(Request&)>;

}  // namespace govern::net
