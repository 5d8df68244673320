// UpstreamClient: the gateway's asynchronous HTTP/1.1 client to model providers. A call's response body
// is read piece by piece as it arrives (a stream is relayed chunk by chunk, with back-pressure: the
// caller asks for the next piece only when it can take it), on event loops the client owns.
//
// Promises:
//  - Keep-alive connections are pooled per scheme://host:port on each loop and reused. A pooled
//    connection is checked before reuse (one non-blocking peek: a provider that closed it, or sent
//    anything unasked, makes it unusable) and closed once idle longer than idle_timeout.
//  - Never sends a request twice when any byte of it may have reached the provider (a POST is not
//    idempotent and is billed). A call is retried only (a) on a fresh connection when a pooled one
//    failed before any byte of the request was written, and (b) when connecting failed (every resolved
//    address is tried, and the connect is tried connect_attempts times). A connection that fails after
//    bytes were written fails the call with kUnavailable ("not resent").
//  - Timeouts: connect_timeout (TCP connect plus TLS handshake, per attempt), header_timeout (from the
//    first byte written until the response head is read), read_timeout (the longest wait for the next
//    bytes of the body). Expiry gives kDeadlineExceeded.
//  - Cancel() closes the call's connection at once (the provider sees it go, and stops its work); the
//    pending callback, if any, runs with kCancelled. A cancelled or failed call's connection is closed,
//    never pooled.
//  - https:// verifies the provider against ca_file or the system store, with host name checking.
//
// Threads: a call made (NewCall) on a net::Server's event loop (in a handler, or a callback on that
// loop: net::EventLoop::Current()) runs on that same loop, so a proxied request never changes threads;
// the client keeps a pool per such loop, and a stop hook closes it (and cancels the calls there) when
// the server stops, so Server::Stop() is not kept waiting. Calls made elsewhere run on the client's own
// loops (Create starts `threads` of them), in turn. Start() may be called from any thread; a call stays
// on one loop, and its callbacks run there (they must not block). Cancel() and Post() are thread-safe;
// Read() is called from the call's callbacks (or from Post). The client's destructor cancels every call
// in flight (their pending callbacks run with kCancelled) and joins its loops; a call object may outlive
// the client (its methods then do nothing, Post drops the function).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "net/http.h"

namespace govern::gateway {

struct UpstreamOptions {
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds header_timeout{600000};  // a whole non-streamed answer can take minutes
  std::chrono::milliseconds read_timeout{300000};
  std::chrono::milliseconds idle_timeout{15000};  // below the usual provider keep-alive (60 s and more)
  size_t max_idle_per_host = 64;                  // per loop
  int connect_attempts = 2;
  int threads = 1;
  std::string ca_file;      // PEM bundle for https upstreams; empty: the system store
  bool verify_peer = true;  // false only for tests against throwaway certificates
};

struct UpstreamRequest {
  std::string url;       // "http://host:port/path" or "https://..."
  net::Headers headers;  // Host and Content-Length are set by the client
  std::string body;      // sent as a POST
  // Per-call overrides of UpstreamOptions (a deployment's own timeouts, routing.h); unset: the client's.
  std::optional<std::chrono::milliseconds> connect_timeout, header_timeout, read_timeout;
};

class UpstreamCall;

// Whether the provider client can call `url` (http:// or https://, a host, a numeric port): routes are
// checked with it when they load, so no call fails on its URL.
Status CheckUpstreamUrl(std::string_view url);

class UpstreamClient {
 public:
  // Errors: kInvalidArgument (threads < 1, an unreadable ca_file).
  static Result<std::unique_ptr<UpstreamClient>> Create(UpstreamOptions options);
  ~UpstreamClient();
  UpstreamClient(const UpstreamClient&) = delete;
  UpstreamClient& operator=(const UpstreamClient&) = delete;

  // A call of `request` on one of the loops, not started yet (so its owner holds it before any
  // callback can run).
  std::shared_ptr<UpstreamCall> NewCall(UpstreamRequest request);

  struct Stats {
    uint64_t connections_opened = 0;
    uint64_t connections_reused = 0;  // calls that went out on a pooled connection
    uint64_t stale_dropped = 0;       // pooled connections found closed (or unusable) at reuse
    uint64_t retried = 0;             // calls retried under the rules above
  };
  Stats stats() const;

 private:
  friend class UpstreamCall;
  struct Impl;
  explicit UpstreamClient(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

class UpstreamCall {
 public:
  ~UpstreamCall();
  UpstreamCall(const UpstreamCall&) = delete;
  UpstreamCall& operator=(const UpstreamCall&) = delete;

  // Connects (or reuses a pooled connection), writes the request and reads the response head. `on_head`
  // runs once, on the call's loop (on the calling thread when the URL is bad or the client is
  // stopping): ok (status() and headers() are set), or kInvalidArgument (bad URL), kUnavailable (connect
  // or exchange failed), kDeadlineExceeded, kCancelled. Once per call.
  void Start(std::function<void(Status)> on_head);

  // After a successful head.
  int status() const;
  const net::Headers& headers() const;

  // Reads the next bytes of the body (at most 16 KiB). `done` runs once on the call's loop: the bytes,
  // "" once the body is complete (the connection is then pooled when it can be), kDataLoss (the
  // connection ended before the body did), kDeadlineExceeded (read_timeout), kCancelled. One Read at a
  // time. What is known at once (the end of a body already read, an error, a cancelled call) is handed
  // to `done` before Read returns, so `done` may run inside Read: a caller must not touch state after
  // Read that `done` may have changed. Bytes always come later, from the loop.
  void Read(std::function<void(Result<std::string>)> done);
  // Reads the rest of the body, at most max_bytes (kResourceExhausted beyond).
  void ReadAll(size_t max_bytes, std::function<void(Result<std::string>)> done);
  // Runs `fn` on the call's loop (dropped when the client is gone). On a server loop that has stopped
  // (nothing runs on it any more), `fn` runs on the calling thread, so an owner can still end the call.
  void Post(std::function<void()> fn);
  // Runs `fn` on the call's loop after `delay` (a retry's backoff); dropped when the client stops first.
  // False for a call whose URL did not parse (it answers at once with that error and has no loop:
  // Post and PostAfter drop what they are given).
  bool has_loop() const;
  void PostAfter(std::chrono::milliseconds delay, std::function<void()> fn);
  // Thread-safe, idempotent.
  void Cancel();
  // Whether any byte of the request was handed to the connection (the provider may have it).
  bool request_sent() const;
  // When the request's write began (last attempt on a connection; unset before), and how long the call
  // waited for connections (resolve, connect, TLS handshake) before it: the gateway's own time up to
  // the provider is what lies between, less that wait (docs/gateway.md "Measuring the overhead"). Read
  // on the call's loop, after on_head.
  std::chrono::steady_clock::time_point request_write_began() const;
  std::chrono::steady_clock::duration connect_wait() const;

  struct Impl;
  explicit UpstreamCall(std::shared_ptr<Impl> impl);

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace govern::gateway
