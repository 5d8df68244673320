// StubServer: the model stub's HTTP/1.1 server (keep-alive, chunked SSE streams paced at a token rate,
// faults injected per request; see stub.h for what it answers).
//
// It has its own small Asio/Beast server rather than net::Server because it must write a response in
// pieces over time (streams, a cut mid-way), which net::Responder cannot yet. It is a test and bench
// tool: no TLS, no admission, no auth (any key is accepted).
//
// Thread-safety: Start, port() and Stop() from one thread; connections are served on `threads` threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "services/model_stub/stub.h"

namespace govern::model_stub {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 7760;  // 0: pick a free port
  int threads = 1;
  int64_t tokens_per_second = 0;  // 0: every token at once
  size_t max_body_bytes = 32 * 1024 * 1024;
  StubConfig stub;
};

class StubServer {
 public:
  // Binds and starts serving. Errors: a bad address, the port in use.
  static Result<std::unique_ptr<StubServer>> Start(ServerOptions options);
  ~StubServer();  // Stop()s
  StubServer(const StubServer&) = delete;
  StubServer& operator=(const StubServer&) = delete;

  uint16_t port() const;

  // What the server saw so far (for tests of a client: retries, pooling, cancellation).
  struct Stats {
    uint64_t connections_accepted = 0;
    uint64_t open_connections = 0;  // accepted and not yet closed
    uint64_t requests = 0;          // requests read whole (each one a provider call a client paid for)
    uint64_t answers_cut = 0;       // answers whose write failed: the client went away mid-answer
  };
  Stats stats() const;
  // Closes the listener and every connection (streams in flight are cut), joins the threads. Idempotent.
  void Stop();

 private:
  struct Impl;
  explicit StubServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::model_stub
