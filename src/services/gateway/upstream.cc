// The gateway's asynchronous provider client: event loops of its own, a keep-alive pool per loop and
// origin, timeouts on beast::tcp_stream, and retries only where no byte of the request can have reached
// the provider (see upstream.h).
#include "services/gateway/upstream.h"

#include <openssl/ssl.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <cerrno>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "net/event_loop.h"
#include "net/url.h"

namespace govern::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

namespace {

// A provider URL as net::ParseUrl reads it (the parser the security checks use too), with the
// authority as the URL gave it for the Host header.
struct Url : net::Url {
  std::string authority;  // host[:port] as the URL gave it
};

Result<Url> ParseUrl(std::string_view url) {
  auto parsed = net::ParseUrl(url);
  if (!parsed.ok()) {
    std::string msg = parsed.status().message();
    if (msg.starts_with("url must start")) return InvalidArgument("upstream URL must be http:// or https://");
    if (msg.starts_with("url ")) msg = "upstream URL " + msg.substr(4);
    return InvalidArgument(msg);
  }
  Url u;
  static_cast<net::Url&>(u) = std::move(*parsed);
  const std::string_view rest = url.substr(url.find("://") + 3);
  u.authority = std::string(rest.substr(0, rest.find('/')));
  // `host:` with no digits: a port left out by mistake, not the default one.
  if (u.authority.ends_with(":")) return InvalidArgument("upstream URL has a bad port");
  return u;
}

Status FromError(const beast::error_code& ec, std::string_view what) {
  if (ec == beast::error::timeout) return DeadlineExceeded(std::string(what) + ": timed out");
  if (ec == asio::error::operation_aborted) return Cancelled(std::string(what) + ": cancelled");
  if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == http::error::partial_message)
    return Unavailable(std::string(what) + ": the provider closed the connection");
  return Unavailable(std::string(what) + ": " + ec.message());
}

// One connection: plain or TLS over a beast::tcp_stream (which carries the timeouts).
struct Conn {
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
  SteadyClock::time_point idle_since{};
  beast::tcp_stream& tcp() { return tls ? tls->next_layer() : *plain; }
  void Close() {
    beast::error_code ec;
    tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
    tcp().close();
  }
  // An idle HTTP/1.1 connection must have nothing to read: end of stream means the provider closed
  // it, and bytes it was not asked for mean it cannot be trusted with a request.
  bool Usable() {
    if (!tcp().socket().is_open()) return false;
    char b;
    ssize_t n = ::recv(tcp().socket().native_handle(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
};

}  // namespace

// One event loop's state: the client's own loop (with its thread), or a net::Server's loop the client
// runs calls on (attached: the calls made on that loop's thread).
struct Loop : std::enable_shared_from_this<Loop> {
  explicit Loop(std::shared_ptr<asio::io_context> owner, bool attached_to_server)
      : io_owner(std::move(owner)), attached(attached_to_server) {}
  // Declared first so it is destroyed last: the io_context outlives this loop's sockets and timers.
  std::shared_ptr<asio::io_context> io_owner;
  asio::io_context& io = *io_owner;
  const bool attached;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;  // own loops
  std::thread thread;                                                               // own loops
  // Loop thread only.
  std::unordered_map<std::string, std::deque<std::unique_ptr<Conn>>> idle;  // newest at the back
  size_t idle_count = 0;
  asio::steady_timer sweep{io};
  bool sweep_armed = false;
  bool shut = false;  // Shutdown ran: nothing is pooled or armed any more
  // Calls holding a connection (weakly: a call dropped with one closes it itself).
  std::unordered_map<UpstreamCall::Impl*, std::weak_ptr<UpstreamCall::Impl>> active;
  // Pending PostAfter timers, cancelled when the client stops.
  std::unordered_map<asio::steady_timer*, std::weak_ptr<asio::steady_timer>> timers;

  // Closes the pool, cancels the sweep and the PostAfter timers and closes every call's connection (its
  // pending operation completes, cancelled), so the loop runs out of this client's work. Loop thread.
  void Shutdown();

  // Whether the calling thread may run a call's steps itself: it runs this loop.
  bool InThisThread() const { return io.get_executor().running_in_this_thread(); }
};

struct UpstreamClient::Impl {
  UpstreamOptions opts;
  asio::ssl::context ssl{asio::ssl::context::tls_client};
  std::vector<std::shared_ptr<Loop>> loops;  // the client's own
  std::atomic<size_t> next{0};
  std::mutex mu;  // guards stopping and `attached` against posts from other threads
  bool stopping = false;
  // Server loops calls run on (net::EventLoop::Current() at NewCall), one pool each; an entry goes when
  // its server stops (the stop hook).
  std::unordered_map<net::EventLoop*, std::shared_ptr<Loop>> attached;
  std::atomic<uint64_t> opened{0}, reused{0}, stale{0}, retried{0};

  // The loop for a new call: the server loop the caller runs on (made on first use, with a stop hook
  // that shuts it down), else one of the client's own in turn.
  std::shared_ptr<Loop> LoopForCall(const std::shared_ptr<Impl>& self) {
    net::EventLoop* ev = net::EventLoop::Current();
    if (ev != nullptr) {
      std::lock_guard lock(mu);
      if (!stopping) {
        auto& loop = attached[ev];
        if (!loop) {
          loop = std::make_shared<Loop>(ev->io(), true);
          ev->OnStop([weak = std::weak_ptr<Impl>(self), ev, loop] {
            if (auto client = weak.lock()) {
              std::lock_guard client_lock(client->mu);
              client->attached.erase(ev);
            }
            loop->Shutdown();
          });
        }
        return loop;
      }
    }
    return loops[next.fetch_add(1, std::memory_order_relaxed) % loops.size()];
  }

  enum class Posted { kQueued, kDropped, kLoopStopped };
  // Posts `fn` to `loop` unless the client is stopping (then kDropped; fn is dropped). A server loop
  // that has stopped (its run() returned: nothing runs on it any more) gives kLoopStopped, fn unrun.
  template <class Fn>
  Posted PostTo(Loop& loop, Fn&& fn) {
    std::lock_guard lock(mu);
    if (stopping) return Posted::kDropped;
    if (loop.attached) {
      // Held while checking, so the loop cannot run out of work between the check and the post.
      auto work = asio::make_work_guard(loop.io);
      if (loop.io.stopped()) return Posted::kLoopStopped;
      asio::post(loop.io, std::forward<Fn>(fn));
      return Posted::kQueued;
    }
    asio::post(loop.io, std::forward<Fn>(fn));
    return Posted::kQueued;
  }

  std::unique_ptr<Conn> TakeIdle(Loop& loop, const std::string& origin) {
    auto it = loop.idle.find(origin);
    if (it == loop.idle.end()) return nullptr;
    auto now = SteadyClock::now();
    while (!it->second.empty()) {
      std::unique_ptr<Conn> c = std::move(it->second.back());
      it->second.pop_back();
      --loop.idle_count;
      if (now - c->idle_since < opts.idle_timeout && c->Usable()) return c;
      stale.fetch_add(1, std::memory_order_relaxed);
      c->Close();
    }
    return nullptr;
  }

  void PutIdle(Loop& loop, const std::string& origin, std::unique_ptr<Conn> c) {
    auto& list = loop.idle[origin];
    if (list.size() >= opts.max_idle_per_host || loop.shut) {
      c->Close();
      return;
    }
    c->tcp().expires_never();
    c->idle_since = SteadyClock::now();
    list.push_back(std::move(c));
    ++loop.idle_count;
    ArmSweep(loop, opts.idle_timeout);
  }

  static void ArmSweep(Loop& loop, std::chrono::milliseconds idle_timeout) {
    if (loop.sweep_armed || loop.shut) return;
    loop.sweep_armed = true;
    loop.sweep.expires_after(idle_timeout);
    // Holds the loop (not the client, which may go first on a server's loop).
    loop.sweep.async_wait([lp = loop.shared_from_this(), idle_timeout](beast::error_code ec) {
      lp->sweep_armed = false;
      if (ec || lp->shut) return;
      auto now = SteadyClock::now();
      for (auto& [origin, list] : lp->idle) {
        // Oldest at the front.
        while (!list.empty() && now - list.front()->idle_since >= idle_timeout) {
          list.front()->Close();
          list.pop_front();
          --lp->idle_count;
        }
      }
      if (lp->idle_count > 0) ArmSweep(*lp, idle_timeout);
    });
  }
};

constexpr size_t kFirstRead = 16 * 1024;

struct UpstreamCall::Impl : std::enable_shared_from_this<UpstreamCall::Impl> {
  // Declared first so it is destroyed last: the loops' io_contexts outlive this call's sockets.
  std::shared_ptr<UpstreamClient::Impl> client;
  std::shared_ptr<Loop> loop;
  Url url;
  Status url_error;
  http::request<http::string_body> req;
  std::chrono::milliseconds connect_timeout{}, header_timeout{}, read_timeout{};  // effective
  std::function<void(Status)> on_head;
  std::unique_ptr<Conn> conn;  // loop thread only
  beast::flat_buffer buffer;
  std::optional<http::response_parser<http::buffer_body>> parser;
  net::Headers headers;
  int status = 0;
  bool body_done = false;
  Status pending_error;  // an error that came with the last bytes, reported by the next Read
  std::atomic<bool> cancelled{false};
  std::atomic<bool> sent{false};
  SteadyClock::time_point write_began{};  // loop thread only
  SteadyClock::duration connect_wait{};   // loop thread only
  char tmp[16 * 1024];

  // A call dropped while it holds a connection (its owner gave up without reading to the end) closes
  // it; the loop's `active` entry is weak, so nothing reaches this call afterwards.
  ~Impl() {
    if (conn) conn->Close();
  }

  void SetConn(std::unique_ptr<Conn> c) {
    conn = std::move(c);
    loop->active.insert_or_assign(this, weak_from_this());
  }
  std::unique_ptr<Conn> TakeConn() {
    loop->active.erase(this);
    return std::move(conn);
  }
  void DropConn() {
    if (auto c = TakeConn()) c->Close();
  }

  template <class Fn>
  auto WithStream(Fn&& fn) {
    return conn->tls ? fn(*conn->tls) : fn(*conn->plain);
  }

  asio::awaitable<Result<std::unique_ptr<Conn>>> Connect() {
    beast::error_code ec;
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    tcp::resolver resolver(loop->io);
    auto endpoints = co_await resolver.async_resolve(url.host, url.port, token);
    if (ec) co_return Unavailable("resolving " + url.host + ": " + ec.message());
    if (cancelled.load()) co_return Cancelled("upstream call cancelled");
    auto c = std::make_unique<Conn>();
    if (url.tls) {
      c->tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(loop->io, client->ssl);
    } else {
      c->plain = std::make_unique<beast::tcp_stream>(loop->io);
    }
    // Held by the call while connecting, so Cancel() can close it.
    SetConn(std::move(c));
    conn->tcp().expires_after(connect_timeout);
    co_await conn->tcp().async_connect(endpoints, token);
    if (ec) {
      DropConn();
      co_return FromError(ec, "connecting to " + url.origin);
    }
    conn->tcp().socket().set_option(tcp::no_delay(true), ec);
    client->opened.fetch_add(1, std::memory_order_relaxed);
    if (url.tls) {
      // SSL_set_tlsext_host_name, spelled out because the macro uses a C cast.
      if (!SSL_ctrl(conn->tls->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                    const_cast<char*>(url.host.c_str()))) {
        DropConn();
        co_return Unavailable("tls: cannot set the server name");
      }
      if (client->opts.verify_peer)
        conn->tls->set_verify_callback(asio::ssl::host_name_verification(url.host));
      co_await conn->tls->async_handshake(asio::ssl::stream_base::client, token);
      if (ec) {
        DropConn();
        co_return FromError(ec, "tls handshake with " + url.origin);
      }
    }
    co_return TakeConn();
  }

  asio::awaitable<Status> Exchange() {
    const UpstreamOptions& opts = client->opts;
    int connect_failures = 0;
    bool allow_pool = true;
    while (true) {
      if (cancelled.load()) co_return Cancelled("upstream call cancelled");
      std::unique_ptr<Conn> c;
      bool pooled = false;
      if (allow_pool) {
        c = client->TakeIdle(*loop, url.origin);
        pooled = c != nullptr;
      }
      if (!c) {
        auto connect_began = SteadyClock::now();
        auto r = co_await Connect();
        if (r.ok()) connect_wait += SteadyClock::now() - connect_began;
        if (!r.ok()) {
          if (cancelled.load()) co_return Cancelled("upstream call cancelled");
          // Connecting sends nothing: safe to try again, after a short pause.
          if (++connect_failures < opts.connect_attempts) {
            client->retried.fetch_add(1, std::memory_order_relaxed);
            asio::steady_timer pause(loop->io, std::chrono::milliseconds(50) * connect_failures);
            beast::error_code ignored;
            co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
            connect_wait += SteadyClock::now() - connect_began;
            continue;
          }
          co_return r.status();
        }
        c = std::move(*r);
      } else {
        client->reused.fetch_add(1, std::memory_order_relaxed);
      }
      SetConn(std::move(c));
      if (cancelled.load()) co_return Cancelled("upstream call cancelled");

      beast::error_code ec;
      auto token = asio::redirect_error(asio::use_awaitable, ec);
      conn->tcp().expires_after(header_timeout);
      write_began = SteadyClock::now();
      size_t written = co_await WithStream([&](auto& s) { return http::async_write(s, req, token); });
      if (written > 0) sent.store(true);
      if (ec) {
        if (cancelled.load()) co_return Cancelled("upstream call cancelled");
        if (pooled && written == 0) {
          // The pooled connection failed before any byte of the request left: nothing can have
          // reached the provider, so a fresh connection may carry it.
          DropConn();
          client->retried.fetch_add(1, std::memory_order_relaxed);
          allow_pool = false;
          continue;
        }
        co_return FromError(ec, "sending to " + url.origin + " (not resent)");
      }
      parser.emplace();
      parser->body_limit(boost::none);
      // Room for a whole small answer (head and body) in one read: into an empty buffer beast reads
      // only 512 bytes, which costs a 700-byte chat answer three reads and as many trips round the loop.
      if (buffer.capacity() < kFirstRead) buffer.reserve(kFirstRead);
      co_await WithStream([&](auto& s) { return http::async_read_header(s, buffer, *parser, token); });
      if (ec) {
        if (cancelled.load()) co_return Cancelled("upstream call cancelled");
        // The request was sent: the provider may be working on it, so it is never sent again.
        co_return FromError(ec, "reading the answer of " + url.origin + " (not resent)");
      }
      co_return OkStatus();
    }
  }

  // `self` keeps the call alive while its coroutine runs.
  asio::awaitable<void> Run(std::shared_ptr<Impl> self) {
    (void)self;
    Status st = co_await Exchange();
    if (st.ok()) {
      status = static_cast<int>(parser->get().result_int());
      for (const auto& field : parser->get()) headers.Add(field.name_string(), field.value());
      if (parser->is_done()) Complete();
    } else {
      DropConn();
    }
    auto cb = std::move(on_head);
    cb(st);
  }

  // The body is complete: the connection serves another call when the provider keeps it open and sent
  // nothing beyond the answer.
  void Complete() {
    body_done = true;
    std::unique_ptr<Conn> c = TakeConn();
    if (!c) return;
    if (parser->keep_alive() && buffer.size() == 0 && !cancelled.load()) {
      client->PutIdle(*loop, url.origin, std::move(c));
    } else {
      c->Close();
    }
  }

  // What Read knows at once (the end, an error) is handed to `done` before Read returns (see upstream.h);
  // bytes always come from a completed read, on a later turn of the loop.
  void Read(std::function<void(Result<std::string>)> done) {
    auto self = shared_from_this();
    auto finish = [&](Result<std::string> r) { done(std::move(r)); };
    if (cancelled.load()) return finish(Cancelled("upstream call cancelled"));
    if (!pending_error.ok()) return finish(pending_error);
    if (body_done) return finish(std::string());
    if (!conn || !parser) return finish(FailedPrecondition("upstream call has no open answer"));
    conn->tcp().expires_after(read_timeout);
    parser->get().body().data = tmp;
    parser->get().body().size = sizeof tmp;
    WithStream([&](auto& s) {
      http::async_read_some(s, buffer, *parser,
                            [self, done = std::move(done)](beast::error_code ec, size_t) mutable {
                              self->OnRead(ec, std::move(done));
                            });
    });
  }

  void OnRead(beast::error_code ec, std::function<void(Result<std::string>)> done) {
    if (ec == http::error::need_buffer) ec = {};
    size_t got = sizeof tmp - parser->get().body().size;
    if (cancelled.load()) {
      DropConn();
      return done(Cancelled("upstream call cancelled"));
    }
    if (!ec && parser->is_done()) Complete();
    if (ec) {
      DropConn();
      Status st = ec == beast::error::timeout ? DeadlineExceeded("upstream answer: no bytes in time")
                                              : DataLoss("upstream answer cut: " + ec.message());
      if (got == 0) return done(st);
      pending_error = st;
    }
    if (got > 0 || body_done) return done(std::string(tmp, got));
    Read(std::move(done));  // progress without body bytes (a chunk header): read on
  }

  void ReadAll(size_t max_bytes, std::shared_ptr<std::string> all,
               std::function<void(Result<std::string>)> done) {
    auto self = shared_from_this();
    Read([self, max_bytes, all, done = std::move(done)](Result<std::string> piece) mutable {
      if (!piece.ok()) return done(piece.status());
      if (piece->empty()) return done(std::move(*all));
      *all += *piece;
      if (all->size() > max_bytes) {
        self->Cancel();
        return done(ResourceExhausted("upstream answer too large"));
      }
      self->ReadAll(max_bytes, all, std::move(done));
    });
  }

  void Cancel() {
    if (cancelled.exchange(true)) return;
    auto close = [self = shared_from_this()] {
      if (self->conn) self->conn->Close();  // pending operations end with operation_aborted
    };
    if (loop->InThisThread()) return close();
    client->PostTo(*loop, std::move(close));
  }
};

void Loop::Shutdown() {
  shut = true;
  sweep.cancel();
  for (auto& [origin, list] : idle) {
    for (auto& c : list) c->Close();
  }
  idle.clear();
  idle_count = 0;
  // Every call holding a connection: closed, so its pending operation completes (cancelled).
  for (auto& [raw, weak] : active) {
    auto call = weak.lock();
    if (!call) continue;
    call->cancelled.store(true);
    if (call->conn) call->conn->Close();
  }
  for (auto& [raw, weak] : timers) {
    if (auto t = weak.lock()) t->cancel();
  }
}

UpstreamClient::UpstreamClient(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<UpstreamClient>> UpstreamClient::Create(UpstreamOptions options) {
  if (options.threads < 1) return InvalidArgument("upstream client: threads must be at least 1");
  if (options.connect_attempts < 1) options.connect_attempts = 1;
  auto impl = std::make_shared<Impl>();
  impl->opts = std::move(options);
  beast::error_code ec;
  impl->ssl.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                            asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                            asio::ssl::context::no_tlsv1_1,
                        ec);
  if (impl->opts.verify_peer) {
    impl->ssl.set_verify_mode(asio::ssl::verify_peer, ec);
    if (!impl->opts.ca_file.empty()) {
      impl->ssl.load_verify_file(impl->opts.ca_file, ec);
      if (ec) return InvalidArgument("upstream tls ca file " + impl->opts.ca_file + ": " + ec.message());
    } else {
      impl->ssl.set_default_verify_paths(ec);
      if (ec) return InvalidArgument("upstream tls system trust store: " + ec.message());
    }
  } else {
    impl->ssl.set_verify_mode(asio::ssl::verify_none, ec);
  }
  for (int i = 0; i < impl->opts.threads; ++i) {
    auto loop = std::make_shared<Loop>(std::make_shared<asio::io_context>(1), false);
    loop->guard.emplace(loop->io.get_executor());
    loop->thread = std::thread([l = loop.get()] { l->io.run(); });
    impl->loops.push_back(std::move(loop));
  }
  return std::unique_ptr<UpstreamClient>(new UpstreamClient(std::move(impl)));
}

UpstreamClient::~UpstreamClient() {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    s.stopping = true;
    for (auto& lp : s.loops) asio::post(lp->io, [loop = lp] { loop->Shutdown(); });
    // Server loops still running: shut down there (not waited for; the calls and the sweep hold what they
    // use). A server that stopped already ran its hook.
    for (auto& [ev, lp] : s.attached) {
      auto work = asio::make_work_guard(lp->io);
      if (lp->InThisThread()) {
        lp->Shutdown();
      } else if (!lp->io.stopped()) {
        asio::post(lp->io, [loop = lp] { loop->Shutdown(); });
      }
    }
    s.attached.clear();
  }
  for (auto& lp : s.loops) lp->guard.reset();
  for (auto& lp : s.loops) {
    if (lp->thread.joinable()) lp->thread.join();
  }
  // The loops ran out of work, so no handler holds a call any more; calls held elsewhere keep impl_
  // (and so the io_contexts their sockets belong to) alive until they go.
}

std::shared_ptr<UpstreamCall> UpstreamClient::NewCall(UpstreamRequest request) {
  auto call = std::make_shared<UpstreamCall::Impl>();
  call->client = impl_;
  auto url = ParseUrl(request.url);
  if (!url.ok()) {
    call->url_error = url.status();
    return std::make_shared<UpstreamCall>(call);
  }
  call->url = std::move(*url);
  call->loop = impl_->LoopForCall(impl_);
  http::request<http::string_body>& req = call->req;
  req.method(http::verb::post);
  req.target(call->url.target);
  req.version(11);
  for (const auto& [name, value] : request.headers.fields()) {
    if (net::EqualsIgnoreCase(name, "Host") || net::EqualsIgnoreCase(name, "Content-Length") ||
        net::EqualsIgnoreCase(name, "Connection") || net::EqualsIgnoreCase(name, "Transfer-Encoding"))
      continue;
    req.insert(name, value);
  }
  req.set(http::field::host, call->url.authority);
  call->connect_timeout = request.connect_timeout.value_or(impl_->opts.connect_timeout);
  call->header_timeout = request.header_timeout.value_or(impl_->opts.header_timeout);
  call->read_timeout = request.read_timeout.value_or(impl_->opts.read_timeout);
  req.body() = std::move(request.body);
  req.prepare_payload();
  return std::make_shared<UpstreamCall>(call);
}

UpstreamClient::Stats UpstreamClient::stats() const {
  return {impl_->opened.load(), impl_->reused.load(), impl_->stale.load(), impl_->retried.load()};
}

UpstreamCall::UpstreamCall(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
UpstreamCall::~UpstreamCall() = default;

int UpstreamCall::status() const { return impl_->status; }
const net::Headers& UpstreamCall::headers() const { return impl_->headers; }
bool UpstreamCall::request_sent() const { return impl_->sent.load(); }
SteadyClock::time_point UpstreamCall::request_write_began() const { return impl_->write_began; }
SteadyClock::duration UpstreamCall::connect_wait() const { return impl_->connect_wait; }

void UpstreamCall::Start(std::function<void(Status)> on_head) {
  Impl& c = *impl_;
  if (!c.url_error.ok()) return on_head(c.url_error);
  c.on_head = std::move(on_head);
  if (c.loop->InThisThread() && !c.loop->shut) {
    asio::co_spawn(c.loop->io, c.Run(impl_), asio::detached);
    return;
  }
  auto posted = c.client->PostTo(
      *c.loop, [call = impl_] { asio::co_spawn(call->loop->io, call->Run(call), asio::detached); });
  if (posted != UpstreamClient::Impl::Posted::kQueued) {
    auto cb = std::move(c.on_head);
    cb(Cancelled("the upstream client is stopping"));
  }
}

void UpstreamCall::Read(std::function<void(Result<std::string>)> done) { impl_->Read(std::move(done)); }

void UpstreamCall::ReadAll(size_t max_bytes, std::function<void(Result<std::string>)> done) {
  impl_->ReadAll(max_bytes, std::make_shared<std::string>(), std::move(done));
}

void UpstreamCall::Post(std::function<void()> fn) {
  if (impl_->loop == nullptr) return;
  auto posted = impl_->client->PostTo(*impl_->loop, fn);
  // Nothing runs on a stopped server loop any more: the caller's thread is the call's only one now.
  if (posted == UpstreamClient::Impl::Posted::kLoopStopped) fn();
}

Status CheckUpstreamUrl(std::string_view url) { return ParseUrl(url).status(); }

bool UpstreamCall::has_loop() const { return impl_->loop != nullptr; }

void UpstreamCall::PostAfter(std::chrono::milliseconds delay, std::function<void()> fn) {
  if (impl_->loop == nullptr) return;
  std::shared_ptr<Loop> loop = impl_->loop;
  impl_->client->PostTo(*loop, [loop, delay, fn = std::move(fn)]() mutable {
    if (loop->shut) return;
    auto timer = std::make_shared<asio::steady_timer>(loop->io, delay);
    loop->timers.emplace(timer.get(), timer);
    timer->async_wait([loop, timer, fn = std::move(fn)](beast::error_code ec) {
      loop->timers.erase(timer.get());
      if (!ec) fn();
    });
  });
}

void UpstreamCall::Cancel() {
  if (impl_->loop == nullptr) {
    impl_->cancelled.store(true);
    return;
  }
  impl_->Cancel();
}

}  // namespace govern::gateway
