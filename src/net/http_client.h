// HttpClient: an HTTP/1.1 client for tests and for services that call out (the AI gateway later).
//
// Keeps idle keep-alive connections per scheme://host:port and reuses them; a request on a reused
// connection that the server had already closed is retried once on a fresh one. Timeouts bound
// connecting (including TLS) and the whole exchange. TLS verifies the server against a CA file or the
// system store, with host name checking; that context is made (the CA file or store loaded) at the
// first https connection, so a client that only speaks plain http never touches OpenSSL, and a CA
// file that cannot be read fails each https request with its name.
//
// Thread-safe: Send() may be called from many threads at once. The client runs its own event loop on
// one thread; SendAsync callbacks run there and must not block or call Send().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "net/http.h"

namespace govern::net {

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{5000};   // TCP connect plus TLS handshake
  std::chrono::milliseconds request_timeout{30000};  // writing the request and reading the response
  size_t max_response_bytes = 64 * 1024 * 1024;
  size_t max_idle_per_host = 16;
  std::string ca_file;      // PEM bundle to verify TLS servers against; empty: the system store
  bool verify_peer = true;  // false only for tests against throwaway certificates
};

struct ClientRequest {
  Method method = Method::kGet;
  std::string url;  // "http://127.0.0.1:8080/v1/x?y=1" or "https://host/..."
  Headers headers;  // Host, Content-Length and Connection are set by the client
  std::string body;
};

struct ClientResponse {
  int status = 0;
  Headers headers;
  std::string body;
};

class HttpClient {
 public:
  explicit HttpClient(ClientOptions options = {});
  // Stops the loop; requests still outstanding are dropped without a callback, so destroy the client
  // only when no Send() is in progress.
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends and waits. Errors: kInvalidArgument (bad URL), kUnavailable (connect/reset/TLS failure),
  // kDeadlineExceeded (a timeout), kResourceExhausted (response too large), kDataLoss (bad response).
  Result<ClientResponse> Send(ClientRequest request);
  Result<ClientResponse> Get(std::string url);
  Result<ClientResponse> Post(std::string url, std::string body,
                              std::string_view content_type = "application/json");

  // Sends without waiting; `done` runs once on the client's event loop thread.
  void SendAsync(ClientRequest request, std::function<void(Result<ClientResponse>)> done);

  // How many connections this client has opened (a test of keep-alive reuse reads it).
  uint64_t connections_opened() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::net
