// Server: an HTTP/1.1 server with keep-alive, one event loop per worker thread, size and time limits,
// admission (load shedding) before every handler, and the built-in /healthz, /readyz and /metrics.
//
// Requests on one connection are handled one after another (pipelined requests wait their turn).
// Handlers run on the connection's event loop and must not block; they may answer later, from any
// thread, through their Responder. A handler may run work of its own on that loop (sockets, timers):
// EventLoop::Current() (net/event_loop.h, which includes Asio) names it, with a hook to close that work
// when the server stops. Every error the server produces itself is RFC 9457 problem+json.
//
// Thread-safety: configure (router, readiness checks) and Start() on one thread; afterwards port(),
// metrics() and Stop() may be called from any thread except a handler (Stop waits for the loops).
// A Responder must be used or dropped before the Server is destroyed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "net/admission.h"
#include "net/http.h"
#include "net/metrics.h"
#include "net/router.h"

namespace govern::net {

struct ServerConfig {
  std::string address = "127.0.0.1";  // "0.0.0.0" or "::" to listen everywhere
  uint16_t port = 0;                  // 0: pick a free port (see Server::port())
  int workers = 0;                    // event loops (threads); 0: one per core
  // false (default): one acceptor hands connections to the workers in turn, which spreads long-lived
  // keep-alive connections evenly (measured: 62k vs 35k requests/s with 2 workers and 64 wrk
  // connections on 2 cores). true: every worker has its own SO_REUSEPORT acceptor and the kernel
  // hashes connections to them, which scales accepting better for many short connections.
  bool reuse_port = false;

  size_t max_header_bytes = 16 * 1024;      // over it: 431
  size_t max_body_bytes = 8 * 1024 * 1024;  // default per route (RouteOptions::max_body_bytes); over: 413
  size_t max_connections = 10000;           // more are closed at once after accept

  std::chrono::milliseconds header_timeout{10000};   // first byte to end of header (also TLS handshake): 408
  std::chrono::milliseconds body_timeout{30000};     // end of header to end of body: 408
  std::chrono::milliseconds idle_timeout{60000};     // keep-alive connection waiting for a request: closed
  std::chrono::milliseconds handler_timeout{30000};  // a handler that has not answered by then: 503
  std::chrono::milliseconds write_timeout{30000};    // a client too slow to take the response: closed
  std::chrono::milliseconds drain_timeout{10000};    // Stop(): how long in-flight requests may finish

  // Also serve plain HTTP (never TLS) on a Unix domain socket at this path, when set: created at Start
  // (an old socket file there is replaced), removed at Stop. File permissions follow the umask.
  std::string unix_socket;

  // TLS: both set means HTTPS only (PEM files: certificate chain and private key).
  std::string tls_cert_file;
  std::string tls_key_file;

  // Load shedding, asked before each handler (including the built-in ones). Not owned; may be null.
  Admission* admission = nullptr;
  // The organisation a request counts against, for admission. Default: none ("").
  std::function<std::string(const Request&)> org_of;
  // Where the server registers its metrics; null: a registry of the server's own (see metrics()).
  MetricsRegistry* metrics = nullptr;
};

class Server {
 public:
  Server(ServerConfig config, Router router);
  ~Server();  // Stop()s if running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // A named readiness check for /readyz (true: ready). Called on an event loop per probe: keep it cheap.
  // Before Start() only.
  void AddReadinessCheck(std::string name, std::function<bool()> check);

  // Validates the router and config, binds, and starts the workers. Errors: a bad route, an address
  // in use, unreadable TLS files.
  Status Start();
  // The bound port (useful with port 0). 0 before Start().
  uint16_t port() const;

  // Graceful shutdown: stops accepting, closes idle connections, lets in-flight requests finish (each
  // answered with Connection: close) for up to drain_timeout, then closes everything and joins the
  // workers. Idempotent.
  void Stop();

  MetricsRegistry& metrics();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::net
