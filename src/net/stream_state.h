// Internal to src/net (no Boost): the state a BodyStream shares with whatever sends its bytes (the
// server's connection, or the collecting fallback of ResponseSink::OpenStream).
//
// Thread-safe: the producer calls the BodyStream side from any thread, the driver calls its side from
// its own (the connection's event loop). Callbacks and Wake() run with no lock held.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "net/http.h"

namespace govern::net::internal {

// Sends a stream's bytes. Wake() is called from any thread when something became due (data to flush,
// the end, an abort); the driver then calls StreamState::Next() on its own thread.
class StreamDriver {
 public:
  virtual ~StreamDriver() = default;
  virtual void Wake() = 0;
};

class StreamState {
 public:
  explicit StreamState(const StreamOptions& options);

  // The driver to wake; held weakly (a driver that is gone simply misses the wake: it closed the
  // stream when it went), or with `own` also strongly until Close() (a driver nothing else holds).
  void SetDriver(const std::shared_ptr<StreamDriver>& driver, bool own = false);

  // Producer side (see BodyStream).
  bool Write(std::string_view data);
  void Flush();
  void Finish();
  void Abort();
  bool writable() const;
  bool closed() const;
  bool WaitWritable(std::chrono::milliseconds timeout);
  void OnWritable(std::function<void()> fn);
  size_t buffered() const;
  size_t peak_buffered() const;
  uint64_t bytes_sent() const;

  // Driver side.
  struct Batch {
    std::string data;     // body bytes to send now (may be empty)
    bool finish = false;  // after `data`, the body is complete
    bool abort = false;   // close the connection without completing the body
  };
  // What is due now: the pending bytes when flush_bytes are pending, Flush() asked, or Finish() was
  // called; the end once everything was taken. Taken bytes count as buffered until Sent().
  Batch Next();
  // `n` bytes taken by Next() were written to the socket (writable callbacks may run, on this thread).
  void Sent(size_t n);
  // The driver is done (the client went away, the body was completed, or the server stops): the
  // stream is closed for the producer; waiters and callbacks are woken.
  void Close();

 private:
  bool WritableLocked() const;
  bool EndedLocked() const { return closed_ || finished_ || aborted_; }
  // Marks a wake as due; returns the driver to wake (outside the lock) or null when one is pending.
  std::shared_ptr<StreamDriver> WakeLocked();
  void RunCallbacks(std::vector<std::function<void()>> fns);

  const StreamOptions opt_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::weak_ptr<StreamDriver> driver_;
  std::shared_ptr<StreamDriver> owned_driver_;
  std::string pending_;
  size_t in_flight_ = 0;
  size_t peak_ = 0;
  uint64_t sent_ = 0;
  bool flush_due_ = false;
  bool finished_ = false;
  bool finish_taken_ = false;
  bool aborted_ = false;
  bool closed_ = false;
  bool wake_pending_ = false;
  std::vector<std::function<void()>> on_writable_;
};

}  // namespace govern::net::internal
