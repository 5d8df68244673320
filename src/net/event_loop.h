// EventLoop: one of a net::Server's event loops, for a component that runs sockets and timers of its own
// on the loop that serves a connection (the gateway's provider client: a request then needs no hand-off
// between threads in either direction).
//
// Includes Asio: include it only from .cc files that use Asio anyway (http_server.h only names it).
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace govern::net {

class EventLoop {
 public:
  explicit EventLoop(std::shared_ptr<boost::asio::io_context> io) : io_(std::move(io)) {}
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // The loop's io_context, shared: sockets and timers made on it may outlive the Server (the io_context
  // goes with its last owner), but it runs only while the Server does.
  const std::shared_ptr<boost::asio::io_context>& io() const { return io_; }

  // The server loop the calling thread runs (in a handler, or in any callback on that loop); null on
  // every other thread.
  static EventLoop* Current();

  // Runs `fn` on this loop when the Server stops: after the drain and after it closed its connections,
  // before it waits for the loop to run out of work (and joins its thread). Whatever would keep the loop
  // busy (idle pooled sockets, armed timers, operations in flight) must be closed or cancelled by then,
  // or Stop() waits for it. Loop thread only (so from a handler); hooks run once, in the order added.
  void OnStop(std::function<void()> fn) { stop_hooks_.push_back(std::move(fn)); }

  // The server's side: runs (and forgets) the stop hooks, on the loop thread.
  void RunStopHooks() {
    auto hooks = std::move(stop_hooks_);
    stop_hooks_.clear();
    for (auto& fn : hooks) fn();
  }

 private:
  std::shared_ptr<boost::asio::io_context> io_;
  std::vector<std::function<void()>> stop_hooks_;
};

}  // namespace govern::net
