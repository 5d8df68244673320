// UpstreamCall: one HTTP/1.1 request to a model provider whose response body is read piece by piece
// as it arrives (net::HttpClient hands back only whole bodies, and a stream must be relayed chunk by
// chunk). Plain http:// only in this slice; one fresh connection per call (no pooling yet).
//
// Blocking: Open() and Read() run on the caller's thread. Cancel() may be called from any other
// thread and makes a blocked Read() return at once (the socket is shut down): that is how a client
// that went away cancels the provider's work.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"
#include "net/http.h"

namespace govern::gateway {

struct UpstreamRequest {
  std::string url;  // "http://host:port/path"
  net::Headers headers;
  std::string body;
  std::chrono::milliseconds connect_timeout{5000};
};

class UpstreamCall {
 public:
  // Connects, sends the request and reads the response head. Errors: kInvalidArgument (bad URL),
  // kUnavailable (connect, write or head read failed).
  static Result<std::unique_ptr<UpstreamCall>> Open(const UpstreamRequest& request);
  ~UpstreamCall();
  UpstreamCall(const UpstreamCall&) = delete;
  UpstreamCall& operator=(const UpstreamCall&) = delete;

  int status() const;
  const net::Headers& headers() const;
  // The next bytes of the body, or "" once the body is complete. kDataLoss when the connection ended
  // before the body did (a cut stream), kCancelled after Cancel().
  Result<std::string> Read();
  // Reads the rest of the body, at most max_bytes (kResourceExhausted beyond).
  Result<std::string> ReadAll(size_t max_bytes = 64 * 1024 * 1024);
  // Thread-safe: shuts the connection down; a blocked Read() returns kCancelled.
  void Cancel();

 private:
  struct Impl;
  explicit UpstreamCall(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::gateway
