// The HTTP server: acceptors, one event loop per worker, connections, limits, admission and metrics.
//
// Each connection reads into one reused flat buffer and parses with internal::RequestReader; the
// response head is serialized into a reused string and written with the body in one gather write.
// Timeouts are not a timer per connection: each worker sweeps its connections' deadlines on a short
// tick, which keeps the request path free of timer syscalls.
#include "net/http_server.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <charconv>
#include <optional>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/thread_name.h"
#include "net/event_loop.h"
#include "net/http_wire.h"
#include "net/problem.h"
#include "net/stream_state.h"

namespace govern::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using unix_stream = asio::local::stream_protocol;
using SteadyClock = std::chrono::steady_clock;

namespace {

thread_local EventLoop* current_loop = nullptr;

constexpr size_t kStatusSlots = 600;
constexpr size_t kReadChunk = 16 * 1024;
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr auto kDrainLingerTime = std::chrono::milliseconds(200);
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// Counts and latency for one route (the last entry of Impl::stats is for unrouted requests).
struct RouteStats {
  std::string name;
  std::string method;
  std::unique_ptr<std::atomic<uint64_t>[]> by_status;
  Histogram* latency = nullptr;
  std::unique_ptr<std::atomic<int64_t>> in_flight = std::make_unique<std::atomic<int64_t>>(0);
};

}  // namespace

class ConnBase {
 public:
  virtual ~ConnBase() = default;
  virtual void OnTick(SteadyClock::time_point now) = 0;
  virtual void OnDrain() = 0;
  virtual void CloseNow() = 0;
  size_t slot = 0;  // index in Worker::conns
};

struct ServerCore;

struct Worker {
  ServerCore* server = nullptr;
  // Shared with components that run on the loop (EventLoop, event_loop.h).
  std::shared_ptr<asio::io_context> io_owner = std::make_shared<asio::io_context>(1);
  asio::io_context& ioc = *io_owner;
  EventLoop loop{io_owner};
  std::optional<tcp::acceptor> acceptor;
  std::optional<unix_stream::acceptor> unix_acceptor;  // worker 0 only, when ServerConfig::unix_socket is set
  asio::steady_timer tick{ioc};
  asio::steady_timer accept_retry{ioc};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
  std::thread thread;
  std::vector<ConnBase*> conns;  // loop thread only
  std::string date;              // Date header value, refreshed by the tick
  int64_t date_second = -1;
  // Refreshed by the tick. Deadlines are set from it, which saves a clock read per state change;
  // a deadline may come at most one tick early (the tick is at most a quarter of every timeout).
  SteadyClock::time_point coarse_now = SteadyClock::now();
  std::atomic<bool> stopped{false};

  void Register(ConnBase* c) {
    c->slot = conns.size();
    conns.push_back(c);
  }
  void Unregister(ConnBase* c) {
    size_t i = c->slot;
    conns[i] = conns.back();
    conns[i]->slot = i;
    conns.pop_back();
  }
  void RefreshDate() {
    int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    if (now != date_second) {
      date_second = now;
      internal::FormatHttpDate(now, &date);
    }
  }
};

// Everything the workers and connections share; Server::Impl is this (kept apart so that the
// connection code, outside Server, may name it).
struct ServerCore {
  ServerConfig cfg;
  Router router;
  std::vector<std::pair<std::string, std::function<bool()>>> ready_checks;
  std::unique_ptr<MetricsRegistry> own_metrics;
  MetricsRegistry* metrics = nullptr;
  std::vector<RouteStats> stats;
  uint64_t collector_id = 0;  // the requests_total collector in `metrics`, which reads `stats`
  Gauge* in_flight = nullptr;
  Gauge* connections = nullptr;              // may be shared with other servers on the same registry
  std::atomic<int64_t> open_connections{0};  // this server's own count, for limits and draining
  Counter* shed = nullptr;
  std::unique_ptr<asio::ssl::context> ssl;
  std::vector<std::unique_ptr<Worker>> workers;
  std::atomic<bool> draining{false};
  bool running = false;
  uint16_t bound_port = 0;
  size_t next_worker = 0;  // single-acceptor mode: worker 0's loop only
  SteadyClock::duration tick_interval{};

  RouteStats& Unrouted() { return stats.back(); }
  void DoAccept(Worker* w);
  void OnAccepted(Worker* w, tcp::socket socket);
  void DoAcceptUnix(Worker* w);
  void OnAcceptedUnix(Worker* w, unix_stream::socket socket);
  void ArmTick(Worker* w);
  void AddBuiltins();
};

struct Server::Impl : ServerCore {};

namespace {

template <class Stream>
class Connection final : public ConnBase,
                         public ResponseSink,
                         public internal::StreamDriver,
                         public std::enable_shared_from_this<Connection<Stream>> {
 public:
  static constexpr bool kTls =
      !std::is_same_v<Stream, tcp::socket> && !std::is_same_v<Stream, unix_stream::socket>;

  Connection(Worker* w, Stream stream)
      : w_(w),
        s_(w->server),
        stream_(std::move(stream)),
        reader_(static_cast<uint32_t>(s_->cfg.max_header_bytes)) {}

  void SetPeer(std::string ip, uint16_t port) {
    peer_ip_ = std::move(ip);
    peer_port_ = port;
  }

  void Start() {
    auto now = w_->coarse_now;
    idle_ = true;
    deadline_ = now + s_->cfg.header_timeout;
    if constexpr (kTls) {
      state_ = State::kHandshake;
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (self->state_ == State::kClosed) return;
                                if (ec) return self->Close();
                                self->BeginRequest();
                              });
    } else {
      BeginRequest();
    }
  }

  void Deliver(uint64_t seq, Response&& r) override {
    if (w_->stopped.load(std::memory_order_acquire)) return;
    if (w_->ioc.get_executor().running_in_this_thread()) {
      OnResponse(seq, std::move(r));
      return;
    }
    asio::post(w_->ioc, [self = this->shared_from_this(), seq, r = std::move(r)]() mutable {
      self->OnResponse(seq, std::move(r));
    });
  }

  // Called from any thread by Responder::Stream. The head goes out from the event loop; until then (and
  // whenever the socket is slower than the producer) the written bytes wait in the stream's state.
  BodyStream OpenStream(uint64_t seq, Response&& head, const StreamOptions& options) override {
    auto state = std::make_shared<internal::StreamState>(options);
    if (!head.body.empty()) {
      state->Write(head.body);  // no driver yet: nothing to wake, the head's write pumps it
      head.body.clear();
    }
    // If the loop is stopped and drops the task unrun, the stream must still close for its producer.
    struct CloseUnlessStarted {
      std::shared_ptr<internal::StreamState> state;
      bool started = false;
      ~CloseUnlessStarted() {
        if (!started) state->Close();
      }
    };
    auto guard = std::make_shared<CloseUnlessStarted>();  // built in place: a temporary would close
    guard->state = state;
    auto start = [self = this->shared_from_this(), seq, head = std::move(head), guard]() mutable {
      guard->started = true;
      self->OnStreamStart(seq, std::move(head), guard->state);
    };
    if (!w_->stopped.load(std::memory_order_acquire)) {
      if (w_->ioc.get_executor().running_in_this_thread()) {
        start();
      } else {
        asio::post(w_->ioc, std::move(start));
      }
    }
    return BodyStream(std::move(state));
  }

  // Called from any thread by Responder::OnClose; the watch is set up on the loop.
  void WatchClose(uint64_t seq, std::function<void()> on_close) override {
    if (w_->stopped.load(std::memory_order_acquire)) return;
    if (w_->ioc.get_executor().running_in_this_thread()) return OnWatchClose(seq, std::move(on_close));
    asio::post(w_->ioc, [self = this->shared_from_this(), seq, fn = std::move(on_close)]() mutable {
      self->OnWatchClose(seq, std::move(fn));
    });
  }

  void Wake() override {
    if (w_->stopped.load(std::memory_order_acquire)) return;
    asio::post(w_->ioc, [self = this->shared_from_this()] { self->Pump(); });
  }

  void OnTick(SteadyClock::time_point now) override {
    if (now < deadline_) return;
    switch (state_) {
      case State::kReading:
        if (idle_) return Close();
        // A request began but its header or body is late: answer 408 once the read is cancelled.
        timed_out_ = true;
        if (!reading_) return RespondError(408, "the request was not received in time");
        state_ = State::kTimedOut;
        deadline_ = now + kLingerTime;  // if even the cancel does not finish, close on a later tick
        {
          beast::error_code ec;
          Socket().cancel(ec);
        }
        return;
      case State::kHandling:
        OnResponse(seq_, ProblemResponse(503, "the handler did not answer in time"));
        return;
      default:
        return Close();
    }
  }

  void OnDrain() override {
    if ((state_ == State::kReading && idle_) || state_ == State::kStreamEnded) Close();
  }

  void CloseNow() override { Close(); }

 private:
  // kStreaming: a streamed body is being sent (a read stays posted to notice the client leaving);
  // kStreamEnded: the body is complete and that read is still posted: it begins the next request.
  enum class State {
    kHandshake,
    kReading,
    kTimedOut,
    kHandling,
    kWriting,
    kStreaming,
    kStreamEnded,
    kLingering,
    kClosed
  };

  auto& Socket() { return beast::get_lowest_layer(stream_); }

  void BeginRequest() {
    state_ = State::kReading;
    reader_.Start();
    route_ = nullptr;
    pending_error_ = 0;
    head_request_ = false;
    http10_ = false;
    keep_alive_ = true;
    timed_out_ = false;
    auto now = w_->coarse_now;
    if (buf_.size() == 0) {
      if (s_->draining.load(std::memory_order_relaxed)) return Close();
      idle_ = true;
      deadline_ = now + (idle_first_ ? s_->cfg.header_timeout : s_->cfg.idle_timeout);
    } else {
      idle_ = false;
      deadline_ = now + s_->cfg.header_timeout;
    }
    idle_first_ = false;
    ProcessBuffer();
  }

  void DoRead() {
    reading_ = true;
    stream_.async_read_some(
        buf_.prepare(kReadChunk),
        [self = this->shared_from_this()](beast::error_code ec, size_t n) { self->OnRead(ec, n); });
  }

  void OnRead(beast::error_code ec, size_t n) {
    reading_ = false;
    if (state_ == State::kClosed) return;
    if (state_ == State::kHandling) {  // the read of a close watch (OnWatchClose)
      if (ec) {
        // The client closed or reset the connection before its answer: tell the handler, count it as
        // 499, and close (a later Send is dropped: the request is no longer the connection's).
        auto fn = std::move(close_fn_);
        close_fn_ = nullptr;
        Finish(499);
        Close();
        if (fn) fn();
        return;
      }
      // The start of a pipelined request: kept for after this answer; the watch ends (no further read
      // is posted, so the buffer is not consumed under the dispatched request).
      buf_.commit(n);
      return;
    }
    if (state_ == State::kWriting) {
      // A close watch's read completed while the answer is being written: keep what came; an end of
      // stream or a reset is seen again by the next read, after the answer.
      if (!ec) buf_.commit(n);
      return;
    }
    if (state_ == State::kStreaming) {
      if (ec) return Close();  // the client went away (or reset): the producer sees the stream closed
      // The start of a pipelined request: kept for after the stream. No further read is posted (so the
      // buffer is not consumed under one); leaving is then noticed by a failing write.
      buf_.commit(n);
      return;
    }
    if (state_ == State::kLingering) {
      if (ec) return Close();
      buf_.clear();
      return Discard();
    }
    if (state_ == State::kStreamEnded) {
      if (ec) return Close();
      buf_.commit(n);
      return BeginRequest();
    }
    if (ec) {
      if (state_ == State::kTimedOut) return RespondError(408, "the request was not received in time");
      return Close();  // EOF, reset: nothing to answer
    }
    buf_.commit(n);
    if (idle_) {
      idle_ = false;
      deadline_ = w_->coarse_now + s_->cfg.header_timeout;
    }
    if (state_ == State::kTimedOut) return RespondError(408, "the request was not received in time");
    ProcessBuffer();
  }

  void ProcessBuffer() {
    while (true) {
      size_t consumed = 0;
      auto p = reader_.Feed(static_cast<const char*>(buf_.data().data()), buf_.size(), &consumed);
      buf_.consume(consumed);
      switch (p) {
        case internal::RequestReader::Progress::kNeedMore:
          if (!reading_) DoRead();
          return;
        case internal::RequestReader::Progress::kHeaderDone:
          if (!OnHeader()) return;
          continue;
        case internal::RequestReader::Progress::kDone:
          return Dispatch();
        case internal::RequestReader::Progress::kError:
          return RespondError(reader_.error_status(), reader_.error_detail());
      }
    }
  }

  // Routes the request as soon as its header is complete, so the body limit is the route's.
  // Returns false when processing must pause (an error answer or a 100 Continue is being written).
  bool OnHeader() {
    started_ = SteadyClock::now();  // precise: the latency histogram starts here
    deadline_ = w_->coarse_now + s_->cfg.body_timeout;
    Method method = reader_.method();
    head_request_ = method == Method::kHead;
    std::string_view target = reader_.target();
    std::string_view path = target.substr(0, target.find('?'));
    if (reader_.version() != 10 && reader_.version() != 11) {
      pending_error_ = 505;
    } else if (path.empty() || path[0] != '/') {
      pending_error_ = 400;
    } else {
      Router::Match m = s_->router.Find(method, path, &params_);
      if (m.route) {
        route_ = m.route;
      } else if (m.path_known) {
        pending_error_ = 405;
        allow_ = std::move(m.allow);
      } else {
        pending_error_ = 404;
      }
    }
    size_t limit =
        route_ && route_->options.max_body_bytes ? route_->options.max_body_bytes : s_->cfg.max_body_bytes;
    if (!reader_.SetBodyLimit(limit)) {
      RespondError(413, reader_.error_detail());
      return false;
    }
    if (reader_.expects_continue()) {
      state_ = State::kWriting;
      asio::async_write(stream_, asio::buffer(kContinue.data(), kContinue.size()),
                        [self = this->shared_from_this()](beast::error_code ec, size_t) {
                          if (self->state_ == State::kClosed) return;
                          if (ec) return self->Close();
                          self->state_ = State::kReading;
                          self->deadline_ = self->w_->coarse_now + self->s_->cfg.body_timeout;
                          self->ProcessBuffer();
                        });
      return false;
    }
    return true;
  }

  void Dispatch() {
    state_ = State::kHandling;
    deadline_ = w_->coarse_now + s_->cfg.handler_timeout;
    keep_alive_ = reader_.keep_alive();
    http10_ = reader_.version() == 10;
    Request req;
    reader_.TakeRequest(&req);
    req.peer_ip = peer_ip_;
    req.peer_port = peer_port_;
    req.params = std::move(params_);
    params_.clear();
    if (pending_error_) {
      Response r;
      if (pending_error_ == 405) {
        r = ProblemResponse(405, "method " + req.method_name + " is not allowed here", req.path);
        r.headers.Set("Allow", allow_);
      } else if (pending_error_ == 404) {
        r = ProblemResponse(404, "no route for this path", req.path);
      } else if (pending_error_ == 505) {
        r = ProblemResponse(505, "only HTTP/1.0 and HTTP/1.1 are spoken here");
        keep_alive_ = false;
      } else {
        r = ProblemResponse(400, "the request target must be a path starting with '/'");
        keep_alive_ = false;
      }
      return Complete(std::move(r));
    }
    try {
      if (size_t max = route_->options.max_in_flight) {
        auto& n = *s_->stats[route_->index].in_flight;
        if (n.fetch_add(1, std::memory_order_relaxed) >= static_cast<int64_t>(max)) {
          n.fetch_sub(1, std::memory_order_relaxed);
          s_->shed->Inc();
          Response r =
              ProblemResponse(503, "too many requests of this kind in progress; retry later", req.path);
          r.headers.Set("Retry-After", std::to_string(std::max(1, route_->options.retry_after_seconds)));
          return Complete(std::move(r));
        }
        route_slot_held_ = true;
      }
      Admission* a = s_->cfg.admission;
      if (route_->options.cls == RequestClass::kOwnBound) a = nullptr;  // bounded by the route itself
      if (a) {
        std::string org = s_->cfg.org_of ? s_->cfg.org_of(req) : std::string();
        ticket_ = a->TryAdmit(route_->options.cls, org);
        if (!ticket_.admitted) {
          s_->shed->Inc();
          Response r = ProblemResponse(503, "the server is over capacity; retry later", req.path);
          r.headers.Set("Retry-After", std::to_string(a->RetryAfterSeconds()));
          return Complete(std::move(r));
        }
        ticket_held_ = true;
      }
      in_flight_ = true;
      s_->in_flight->Add(1);
      uint64_t seq = ++seq_;
      route_->handler(std::move(req), Responder(this->shared_from_this(), seq));
    } catch (const std::exception& e) {
      // The handler's Responder died in the unwinding and answered 500 (or will when it is released).
      log::Error("http", "handler threw", {{"route", route_->pattern}, {"error", e.what()}});
      if (state_ == State::kHandling && !in_flight_) Complete(ProblemResponse(500, "internal error"));
    } catch (...) {
      log::Error("http", "handler threw", {{"route", route_->pattern}});
      if (state_ == State::kHandling && !in_flight_) Complete(ProblemResponse(500, "internal error"));
    }
  }

  // On the loop: a handler asked to hear of the client leaving before its answer. One read is posted
  // (none is outstanding while a request is handled, unless a watch posted it); bytes already
  // buffered are a pipelined request, and then there is nothing to watch with.
  void OnWatchClose(uint64_t seq, std::function<void()> fn) {
    if (state_ != State::kHandling || seq != seq_) return;  // answered (or closed) already
    close_fn_ = std::move(fn);
    if (!reading_ && buf_.size() == 0) DoRead();
  }

  void OnResponse(uint64_t seq, Response&& r) {
    if (state_ != State::kHandling || seq != seq_) return;  // timed out or closed already
    Complete(std::move(r));
  }

  // Records the outcome and releases admission; exactly once per dispatched request.
  void Finish(int status) {
    RouteStats& st = route_ ? s_->stats[route_->index] : s_->Unrouted();
    size_t code = status >= 0 && static_cast<size_t>(status) < kStatusSlots ? static_cast<size_t>(status) : 0;
    st.by_status[code].fetch_add(1, std::memory_order_relaxed);
    if (st.latency && started_ != SteadyClock::time_point()) {
      st.latency->Observe(std::chrono::duration<double>(SteadyClock::now() - started_).count());
    }
    started_ = SteadyClock::time_point();
    close_fn_ = nullptr;  // answered: the client leaving no longer concerns the handler
    ReleaseRouteSlot();
    if (in_flight_) {
      in_flight_ = false;
      s_->in_flight->Add(-1);
    }
    if (ticket_held_) {
      ticket_held_ = false;
      s_->cfg.admission->Release(ticket_, status < 500);
    }
  }

  void Complete(Response&& r) {
    Finish(r.status);
    bool close = !keep_alive_ || s_->draining.load(std::memory_order_relaxed);
    Write(std::move(r), close);
  }

  // An error found before the request could be dispatched: answer it and close the connection,
  // because the rest of the stream cannot be trusted to start at a message boundary.
  void RespondError(int status, std::string detail) {
    if (state_ == State::kClosed) return;
    Finish(status);
    head_request_ = false;
    Write(ProblemResponse(status, std::move(detail)), true);
  }

  void Write(Response&& r, bool close) {
    state_ = State::kWriting;
    deadline_ = w_->coarse_now + s_->cfg.write_timeout;
    close_after_ = close;
    body_ = std::move(r.body);
    head_.clear();
    internal::AppendResponseHead(head_, r, body_.size(), close, http10_ && !close, w_->date);
    std::array<asio::const_buffer, 2> bufs{asio::buffer(head_),
                                           asio::buffer(body_.data(), head_request_ ? 0 : body_.size())};
    asio::async_write(stream_, bufs, [self = this->shared_from_this()](beast::error_code ec, size_t) {
      self->OnWritten(ec);
    });
  }

  void OnWritten(beast::error_code ec) {
    if (state_ == State::kClosed) return;
    if (ec) return Close();
    if (close_after_) return Linger();
    BeginRequest();
  }

  // Half-closes and discards what the client still sends for a while, so that closing does not
  // reset the connection before the client has read our last response (RFC 9112 section 9.6).
  void Linger() {
    state_ = State::kLingering;
    // While the server drains, a short linger keeps Stop() quick once the answers are out.
    bool draining = s_->draining.load(std::memory_order_relaxed);
    deadline_ = w_->coarse_now + (draining ? kDrainLingerTime : kLingerTime);
    beast::error_code ec;
    Socket().shutdown(asio::socket_base::shutdown_send, ec);
    if (ec) return Close();
    buf_.clear();
    if (!reading_) Discard();  // else the read a stream left posted discards when it completes
  }

  void Discard() {
    Socket().async_read_some(buf_.prepare(kReadChunk),
                             [self = this->shared_from_this()](beast::error_code ec, size_t) {
                               if (self->state_ == State::kClosed) return;
                               if (ec) return self->Close();
                               self->Discard();
                             });
  }

  // On the loop: the head of a streamed response, unless the request was answered (timed out) already.
  void OnStreamStart(uint64_t seq, Response&& head, std::shared_ptr<internal::StreamState> state) {
    if (state_ != State::kHandling || seq != seq_) {
      state->Close();
      return;
    }
    Finish(head.status);
    int st = head.status;
    stream_head_only_ = head_request_ || st < 200 || st == 204 || st == 304;
    stream_chunked_ = !http10_;
    close_after_ =
        !keep_alive_ || s_->draining.load(std::memory_order_relaxed) || (http10_ && !stream_head_only_);
    body_stream_ = std::move(state);
    state_ = State::kStreaming;
    head_.clear();
    internal::AppendResponseHead(head_, head,
                                 stream_chunked_ ? internal::kChunkedBody : internal::kBodyUntilClose,
                                 close_after_, http10_ && !close_after_, w_->date);
    if (stream_head_only_) body_stream_->Close();
    // The stream holds the connection (strongly) until it is closed: between writes, with no read
    // posted, nothing else does.
    body_stream_->SetDriver(this->shared_from_this(), /*own=*/true);
    stream_writing_ = true;
    deadline_ = w_->coarse_now + s_->cfg.write_timeout;
    asio::async_write(stream_, asio::buffer(head_),
                      [self = this->shared_from_this()](beast::error_code ec, size_t) {
                        self->OnStreamWritten(ec, 0, false);
                      });
  }

  // Sends what the stream has due, one write at a time.
  void Pump() {
    if (state_ != State::kStreaming || stream_writing_ || !body_stream_) return;
    internal::StreamState::Batch b = body_stream_->Next();
    if (b.abort) return Close();  // the client sees the body cut short
    if (b.data.empty() && !b.finish) return;
    size_t n = b.data.size();
    chunk_ = std::move(b.data);
    head_.clear();
    tail_.clear();
    if (stream_chunked_) {
      if (n > 0) {
        char hex[20];
        auto r = std::to_chars(hex, hex + sizeof hex, n, 16);
        head_.append(hex, r.ptr);
        head_ += "\r\n";
        tail_ = "\r\n";
      }
      if (b.finish) tail_ += "0\r\n\r\n";
    } else if (n == 0) {
      return EndStream();  // close-delimited: the end is the close
    }
    stream_writing_ = true;
    deadline_ = w_->coarse_now + s_->cfg.write_timeout;
    std::array<asio::const_buffer, 3> bufs{asio::buffer(head_), asio::buffer(chunk_), asio::buffer(tail_)};
    asio::async_write(stream_, bufs,
                      [self = this->shared_from_this(), n, fin = b.finish](beast::error_code ec, size_t) {
                        self->OnStreamWritten(ec, n, fin);
                      });
  }

  void OnStreamWritten(beast::error_code ec, size_t body_bytes, bool finished) {
    if (state_ == State::kClosed) return;
    if (ec) return Close();
    stream_writing_ = false;
    deadline_ = SteadyClock::time_point::max();          // an idle stream waits for its producer, untimed
    if (body_bytes > 0) body_stream_->Sent(body_bytes);  // may run the producer's writable callbacks
    if (state_ != State::kStreaming) return;             // a callback aborted and closed
    if (finished || stream_head_only_) return EndStream();
    // Watch for the client leaving, unless a pipelined request is already buffered (then the stream's
    // end begins it at once, and no read may be outstanding then).
    if (!reading_ && buf_.size() == 0) DoRead();
    Pump();
  }

  void EndStream() {
    auto self = this->shared_from_this();  // as in Close()
    if (body_stream_) {
      auto st = std::move(body_stream_);
      st->Close();
    }
    chunk_.clear();
    chunk_.shrink_to_fit();
    // A drain that began while the stream ran must close the connection now, not at its idle timeout.
    if (close_after_ || s_->draining.load(std::memory_order_relaxed)) return Linger();
    if (reading_) {
      // The read posted during the stream is still out (so nothing is buffered): it begins the next
      // request when it completes (a second read must not be posted).
      state_ = State::kStreamEnded;
      deadline_ = w_->coarse_now + s_->cfg.idle_timeout;
      return;
    }
    BeginRequest();
  }

  void ReleaseRouteSlot() {
    if (!route_slot_held_) return;
    route_slot_held_ = false;
    s_->stats[route_->index].in_flight->fetch_sub(1, std::memory_order_relaxed);
  }

  void Close() {
    if (state_ == State::kClosed) return;
    close_fn_ = nullptr;  // the server closes: not the client leaving
    ReleaseRouteSlot();
    // Closing the stream drops its reference to this connection, which may be the last (OnTick calls
    // this through a raw pointer).
    auto self = this->shared_from_this();
    if (body_stream_) {
      auto st = std::move(body_stream_);
      st->Close();  // the producer learns the client is gone
    }
    if (in_flight_ || ticket_held_) {
      // The client is gone (or the server is stopping) before the handler answered.
      if (in_flight_) {
        in_flight_ = false;
        s_->in_flight->Add(-1);
      }
      if (ticket_held_) {
        ticket_held_ = false;
        s_->cfg.admission->Release(ticket_, false);
      }
    }
    state_ = State::kClosed;
    beast::error_code ec;
    Socket().close(ec);
    w_->Unregister(this);
    s_->connections->Add(-1);
    s_->open_connections.fetch_sub(1, std::memory_order_relaxed);
  }

  Worker* w_;
  ServerCore* s_;
  Stream stream_;
  beast::flat_buffer buf_;
  internal::RequestReader reader_;
  State state_ = State::kReading;
  bool reading_ = false;
  bool idle_ = true;
  bool idle_first_ = true;  // no request yet: the wait for the first byte is bounded by header_timeout
  bool timed_out_ = false;
  bool close_after_ = false;
  bool head_request_ = false;
  bool http10_ = false;
  bool keep_alive_ = true;
  bool in_flight_ = false;
  bool ticket_held_ = false;
  bool route_slot_held_ = false;  // counted in the route's in_flight (RouteOptions::max_in_flight)
  int pending_error_ = 0;
  std::string allow_;
  SteadyClock::time_point deadline_{};
  SteadyClock::time_point started_{};
  const Route* route_ = nullptr;
  std::vector<std::pair<std::string, std::string>> params_;
  uint64_t seq_ = 0;
  std::function<void()> close_fn_;  // Responder::OnClose of the request being handled
  AdmissionTicket ticket_;
  std::string head_;
  std::string body_;
  std::string peer_ip_;
  uint16_t peer_port_ = 0;
  // Streaming (state kStreaming).
  std::shared_ptr<internal::StreamState> body_stream_;
  std::string chunk_;
  std::string tail_;
  bool stream_writing_ = false;
  bool stream_chunked_ = true;
  bool stream_head_only_ = false;
};

// "203.0.113.7" or "2001:db8::1"; IPv4-mapped IPv6 peers as IPv4.
std::string PeerIp(const asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).to_string();
  }
  return a.to_string();
}

}  // namespace

void ServerCore::DoAccept(Worker* w) {
  Worker* target = cfg.reuse_port ? w : workers[next_worker++ % workers.size()].get();
  w->acceptor->async_accept(target->ioc, [this, w, target](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !w->acceptor->is_open()) return;
    if (ec) {
      // Out of file descriptors and the like: back off briefly rather than spin.
      log::Warn("http", "accept failed", {{"error", ec.message()}});
      w->accept_retry.expires_after(std::chrono::milliseconds(50));
      w->accept_retry.async_wait([this, w](beast::error_code e) {
        if (!e) DoAccept(w);
      });
      return;
    }
    if (target == w) {
      OnAccepted(w, std::move(socket));
    } else {
      asio::post(target->ioc,
                 [this, target, s = std::move(socket)]() mutable { OnAccepted(target, std::move(s)); });
    }
    DoAccept(w);
  });
}

void ServerCore::OnAccepted(Worker* w, tcp::socket socket) {
  beast::error_code ec;
  if (draining.load(std::memory_order_relaxed) || w->stopped.load(std::memory_order_relaxed) ||
      static_cast<size_t>(open_connections.load(std::memory_order_relaxed)) >= cfg.max_connections) {
    socket.close(ec);
    return;
  }
  socket.set_option(tcp::no_delay(true), ec);
  std::string peer_ip;
  uint16_t peer_port = 0;
  tcp::endpoint remote = socket.remote_endpoint(ec);
  if (!ec) {
    peer_ip = PeerIp(remote.address());
    peer_port = remote.port();
  }
  connections->Add(1);
  open_connections.fetch_add(1, std::memory_order_relaxed);
  if (ssl) {
    using TlsStream = asio::ssl::stream<tcp::socket>;
    auto c = std::make_shared<Connection<TlsStream>>(w, TlsStream(std::move(socket), *ssl));
    c->SetPeer(std::move(peer_ip), peer_port);
    w->Register(c.get());
    c->Start();
  } else {
    auto c = std::make_shared<Connection<tcp::socket>>(w, std::move(socket));
    c->SetPeer(std::move(peer_ip), peer_port);
    w->Register(c.get());
    c->Start();
  }
}

// The Unix socket takes connections on worker 0's loop and hands them out like the TCP acceptor.
void ServerCore::DoAcceptUnix(Worker* w) {
  Worker* target = workers[next_worker++ % workers.size()].get();
  w->unix_acceptor->async_accept(
      target->ioc, [this, w, target](beast::error_code ec, unix_stream::socket socket) {
        if (ec == asio::error::operation_aborted || !w->unix_acceptor->is_open()) return;
        if (ec) {
          log::Warn("http", "accept failed", {{"error", ec.message()}});
          w->accept_retry.expires_after(std::chrono::milliseconds(50));
          w->accept_retry.async_wait([this, w](beast::error_code e) {
            if (!e) DoAcceptUnix(w);
          });
          return;
        }
        asio::post(target->ioc,
                   [this, target, s = std::move(socket)]() mutable { OnAcceptedUnix(target, std::move(s)); });
        DoAcceptUnix(w);
      });
}

void ServerCore::OnAcceptedUnix(Worker* w, unix_stream::socket socket) {
  beast::error_code ec;
  if (draining.load(std::memory_order_relaxed) || w->stopped.load(std::memory_order_relaxed) ||
      static_cast<size_t>(open_connections.load(std::memory_order_relaxed)) >= cfg.max_connections) {
    socket.close(ec);
    return;
  }
  connections->Add(1);
  open_connections.fetch_add(1, std::memory_order_relaxed);
  auto c = std::make_shared<Connection<unix_stream::socket>>(w, std::move(socket));
  w->Register(c.get());
  c->Start();
}

void ServerCore::ArmTick(Worker* w) {
  w->tick.expires_after(tick_interval);
  w->tick.async_wait([this, w](beast::error_code ec) {
    // Stop() cancels the timer, but a tick that had already fired is queued with success: it must not
    // re-arm, or the event loop never runs out of work and Stop() waits forever in join().
    if (ec || w->stopped.load(std::memory_order_acquire)) return;
    w->RefreshDate();
    auto now = SteadyClock::now();
    w->coarse_now = now;
    for (size_t i = 0; i < w->conns.size();) {
      ConnBase* c = w->conns[i];
      c->OnTick(now);
      if (i < w->conns.size() && w->conns[i] == c) ++i;  // else it closed and another took slot i
    }
    ArmTick(w);
  });
}

void ServerCore::AddBuiltins() {
  RouteOptions health{RequestClass::kHealth, 0, ""};
  if (!router.Has(Method::kGet, "/healthz")) {
    router.AddSync(
        Method::kGet, "/healthz", [](Request&) { return JsonResponse(R"({"status":"ok"})"); }, health);
  }
  if (!router.Has(Method::kGet, "/readyz")) {
    router.AddSync(
        Method::kGet, "/readyz",
        [this](Request& req) {
          std::string failed;
          if (draining.load(std::memory_order_relaxed)) failed = "shutting down";
          for (const auto& [name, check] : ready_checks) {
            bool ok = false;
            try {
              ok = check();
            } catch (...) {
              ok = false;
            }
            if (ok) continue;
            if (!failed.empty()) failed += ", ";
            failed += name;
          }
          if (failed.empty()) return JsonResponse(R"({"status":"ready"})");
          return ProblemResponse(503, "not ready: " + failed, req.path);
        },
        health);
  }
  if (!router.Has(Method::kGet, "/metrics")) {
    router.AddSync(
        Method::kGet, "/metrics",
        [this](Request&) {
          return Response(200, metrics->RenderText(), "text/plain; version=0.0.4; charset=utf-8");
        },
        health);
  }
}

Server::Server(ServerConfig config, Router router) : impl_(std::make_unique<Impl>()) {
  impl_->cfg = std::move(config);
  impl_->router = std::move(router);
  if (impl_->cfg.metrics) {
    impl_->metrics = impl_->cfg.metrics;
  } else {
    impl_->own_metrics = std::make_unique<MetricsRegistry>();
    impl_->metrics = impl_->own_metrics.get();
  }
}

Server::~Server() {
  Stop();
  // The registry may outlive the server (ServerConfig::metrics): drop what reads our state.
  if (impl_->collector_id) impl_->metrics->RemoveCollector(impl_->collector_id);
}

void Server::AddReadinessCheck(std::string name, std::function<bool()> check) {
  impl_->ready_checks.emplace_back(std::move(name), std::move(check));
}

MetricsRegistry& Server::metrics() { return *impl_->metrics; }

uint16_t Server::port() const { return impl_->bound_port; }

Status Server::Start() {
  Impl& s = *impl_;
  if (s.running) return FailedPrecondition("http server already started");
  s.AddBuiltins();
  GOVERN_RETURN_IF_ERROR(s.router.status());
  const ServerConfig& cfg = s.cfg;
  if (cfg.max_header_bytes < 256 || cfg.max_header_bytes > (1u << 30)) {
    return InvalidArgument("http max_header_bytes must be between 256 and 1 GiB");
  }

  if (!cfg.tls_cert_file.empty() || !cfg.tls_key_file.empty()) {
    if (cfg.tls_cert_file.empty() || cfg.tls_key_file.empty()) {
      return InvalidArgument("http TLS needs both a certificate file and a key file");
    }
    s.ssl = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    s.ssl->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use);
    beast::error_code ec;
    s.ssl->use_certificate_chain_file(cfg.tls_cert_file, ec);
    if (ec) return InvalidArgument("http TLS certificate " + cfg.tls_cert_file + ": " + ec.message());
    s.ssl->use_private_key_file(cfg.tls_key_file, asio::ssl::context::pem, ec);
    if (ec) return InvalidArgument("http TLS key " + cfg.tls_key_file + ": " + ec.message());
  }

  beast::error_code ec;
  asio::ip::address addr = asio::ip::make_address(cfg.address, ec);
  if (ec) return InvalidArgument("http listen address '" + cfg.address + "': " + ec.message());

  // Metrics: per-route counts by status and a latency histogram, plus server-wide gauges.
  MetricsRegistry& m = *s.metrics;
  s.in_flight = &m.AddGauge("govern_http_requests_in_flight", "HTTP requests being handled now");
  s.connections = &m.AddGauge("govern_http_connections", "Open HTTP connections");
  s.shed = &m.AddCounter("govern_http_shed_total", "HTTP requests refused with 503 by admission");
  s.stats.clear();
  auto add_stats = [&](std::string name, std::string method) {
    RouteStats st;
    st.name = std::move(name);
    st.method = std::move(method);
    st.by_status.reset(new std::atomic<uint64_t>[kStatusSlots]);
    for (size_t i = 0; i < kStatusSlots; ++i) st.by_status[i].store(0, std::memory_order_relaxed);
    st.latency = &m.AddHistogram("govern_http_request_duration_seconds",
                                 "Time from the end of the request header to the response",
                                 Histogram::LatencySeconds(), {{"route", st.name}, {"method", st.method}});
    s.stats.push_back(std::move(st));
  };
  for (const auto& r : s.router.routes()) add_stats(r->options.name, std::string(MethodName(r->method)));
  add_stats("unrouted", "any");
  if (s.collector_id) m.RemoveCollector(s.collector_id);
  s.collector_id =
      m.AddCollector("govern_http_requests_total", "HTTP requests answered, by route and status", "counter",
                     [impl = &s](std::string& out) {
                       for (const RouteStats& st : impl->stats) {
                         for (size_t code = 0; code < kStatusSlots; ++code) {
                           uint64_t n = st.by_status[code].load(std::memory_order_relaxed);
                           if (!n) continue;
                           out += "govern_http_requests_total";
                           out += MetricsRegistry::FormatLabels(
                               {{"route", st.name}, {"method", st.method}, {"code", std::to_string(code)}});
                           out += ' ';
                           out += std::to_string(n);
                           out += '\n';
                         }
                       }
                     });

  auto shortest = std::min(
      {cfg.header_timeout, cfg.body_timeout, cfg.idle_timeout, cfg.handler_timeout, cfg.write_timeout});
  s.tick_interval = std::clamp<SteadyClock::duration>(shortest / 4, std::chrono::milliseconds(5),
                                                      std::chrono::milliseconds(250));

  int n = cfg.workers > 0 ? cfg.workers : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s.workers.clear();
  for (int i = 0; i < n; ++i) {
    auto w = std::make_unique<Worker>();
    w->server = &s;
    w->RefreshDate();
    if (cfg.reuse_port || i == 0) {
      tcp::endpoint ep(addr, i == 0 ? cfg.port : s.bound_port);
      w->acceptor.emplace(w->ioc);
      w->acceptor->open(ep.protocol(), ec);
      if (!ec) w->acceptor->set_option(asio::socket_base::reuse_address(true), ec);
      if (!ec && cfg.reuse_port) {
        w->acceptor->set_option(asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>(true), ec);
      }
      if (!ec) w->acceptor->bind(ep, ec);
      if (!ec) w->acceptor->listen(asio::socket_base::max_listen_connections, ec);
      if (ec) {
        s.workers.clear();
        return Unavailable("http listen on " + cfg.address + ":" + std::to_string(ep.port()) + ": " +
                           ec.message());
      }
      if (i == 0) s.bound_port = w->acceptor->local_endpoint().port();
    }
    if (i == 0 && !cfg.unix_socket.empty()) {
      if (cfg.unix_socket.size() >= sizeof(sockaddr_un::sun_path)) {
        s.workers.clear();
        return InvalidArgument("unix socket path is longer than " +
                               std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
                               " bytes: " + cfg.unix_socket);
      }
      // A stale socket file from an earlier run would make bind fail; only a socket is removed.
      struct stat st {};
      if (::lstat(cfg.unix_socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
        ::unlink(cfg.unix_socket.c_str());
      w->unix_acceptor.emplace(w->ioc);
      unix_stream::endpoint uep(cfg.unix_socket);
      w->unix_acceptor->open(uep.protocol(), ec);
      if (!ec) w->unix_acceptor->bind(uep, ec);
      if (!ec) w->unix_acceptor->listen(asio::socket_base::max_listen_connections, ec);
      if (ec) {
        s.workers.clear();
        return Unavailable("http listen on unix socket " + cfg.unix_socket + ": " + ec.message());
      }
    }
    s.workers.push_back(std::move(w));
  }
  s.draining = false;
  for (auto& wp : s.workers) {
    Worker* w = wp.get();
    w->guard.emplace(w->ioc.get_executor());
    if (w->acceptor) asio::post(w->ioc, [&s, w] { s.DoAccept(w); });
    if (w->unix_acceptor) asio::post(w->ioc, [&s, w] { s.DoAcceptUnix(w); });
    asio::post(w->ioc, [&s, w] { s.ArmTick(w); });
    w->thread = std::thread([w] {
      NameThisThread("http");
      current_loop = &w->loop;
      w->ioc.run();
      current_loop = nullptr;
    });
  }
  s.running = true;
  log::Info("http", "listening",
            {{"address", cfg.address}, {"port", s.bound_port}, {"workers", n}, {"tls", s.ssl != nullptr}});
  return OkStatus();
}

EventLoop* EventLoop::Current() { return current_loop; }

void Server::Stop() {
  Impl& s = *impl_;
  if (!s.running) return;
  s.running = false;
  s.draining = true;
  for (auto& wp : s.workers) {
    Worker* w = wp.get();
    asio::post(w->ioc, [w] {
      beast::error_code ec;
      if (w->acceptor) w->acceptor->close(ec);
      if (w->unix_acceptor) w->unix_acceptor->close(ec);
      w->accept_retry.cancel();
      for (size_t i = w->conns.size(); i-- > 0;) {
        if (i < w->conns.size()) w->conns[i]->OnDrain();
      }
    });
  }
  auto deadline = SteadyClock::now() + s.cfg.drain_timeout;
  while (s.open_connections.load(std::memory_order_relaxed) > 0 && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (auto& wp : s.workers) {
    Worker* w = wp.get();
    asio::post(w->ioc, [w] {
      w->stopped.store(true, std::memory_order_release);
      while (!w->conns.empty()) w->conns.back()->CloseNow();
      w->tick.cancel();
      w->loop.RunStopHooks();  // other components' sockets and timers on this loop
    });
    w->guard.reset();
  }
  for (auto& wp : s.workers) {
    if (wp->thread.joinable()) wp->thread.join();
  }
  if (!s.cfg.unix_socket.empty()) ::unlink(s.cfg.unix_socket.c_str());
  log::Info("http", "stopped", {{"port", s.bound_port}});
}

}  // namespace govern::net
