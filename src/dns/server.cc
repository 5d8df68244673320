#include "dns/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "dns/answer.h"
#include "dns/wire.h"

namespace govern::dns {
namespace {

constexpr int kBatch = 32;
constexpr size_t kUdpMax = 4096;

uint32_t Now() { return static_cast<uint32_t>(::time(nullptr)); }

Status Errno(const std::string& what) { return Unavailable(what + ": " + std::strerror(errno)); }

Result<sockaddr_storage> Address(const std::string& host, uint16_t port, socklen_t& len) {
  sockaddr_storage ss{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof(sockaddr_in);
    return ss;
  }
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof(sockaddr_in6);
    return ss;
  }
  return InvalidArgument("not an IP address: " + host);
}

Result<int> Bind(const std::string& host, uint16_t port, int type, uint16_t* bound) {
  socklen_t len = 0;  // set by Address (GCC 12 at -O1 cannot see that)
  GOVERN_ASSIGN_OR_RETURN(sockaddr_storage ss, Address(host, port, len));
  int fd = ::socket(ss.ss_family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (ss.ss_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    Status s = Errno("bind " + host + " port " + std::to_string(port));
    ::close(fd);
    return s;
  }
  if (bound) {
    sockaddr_storage got{};
    socklen_t gl = sizeof got;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&got), &gl);
    *bound = ntohs(got.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&got)->sin_port
                                            : reinterpret_cast<sockaddr_in6*>(&got)->sin6_port);
  }
  // Receives wake up periodically so Stop() is noticed.
  timeval tv{0, 200000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

bool WriteAll(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd pfd{fd, POLLOUT, 0};
        if (::poll(&pfd, 1, 5000) <= 0) return false;
        continue;
      }
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& options,
                                              std::shared_ptr<ZoneSetHolder> zones) {
  std::unique_ptr<Server> s(new Server());
  s->options_ = options;
  s->zones_ = std::move(zones);
  if (options.rrl.responses_per_second > 0) s->rrl_ = std::make_unique<RateLimiter>(options.rrl);
  uint16_t port = options.port;
  // TCP first when the port is chosen by the kernel, so UDP follows on the same number.
  GOVERN_ASSIGN_OR_RETURN(s->tcp_fd_, Bind(options.address, port, SOCK_STREAM, &port));
  if (::listen(s->tcp_fd_, 1024) != 0) return Errno("listen");
  s->port_ = port;
  int threads = options.udp_threads < 1 ? 1 : options.udp_threads;
  for (int i = 0; i < threads; ++i) {
    auto fd = Bind(options.address, port, SOCK_DGRAM, nullptr);
    if (!fd.ok()) {
      s->Stop();
      return fd.status();
    }
    s->udp_fds_.push_back(*fd);
  }
  for (int fd : s->udp_fds_) s->threads_.emplace_back([srv = s.get(), fd] { srv->UdpLoop(fd); });
  s->threads_.emplace_back([srv = s.get()] { srv->TcpAccept(); });
  return s;
}

Server::~Server() { Stop(); }

void Server::Stop() {
  if (stop_.exchange(true)) return;
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  {
    std::lock_guard lock(conn_mu_);
    for (auto& c : conns_)
      if (c.thread.joinable()) c.thread.join();
    conns_.clear();
  }
  for (int fd : udp_fds_) ::close(fd);
  udp_fds_.clear();
  if (tcp_fd_ >= 0) ::close(tcp_fd_);
  tcp_fd_ = -1;
}

void Server::UdpLoop(int fd) {
  // Buffers live on the heap once per thread; the loop itself allocates nothing.
  struct Slot {
    uint8_t in[kUdpMax];
    uint8_t out[kUdpMax];
    sockaddr_storage addr;
    iovec in_iov, out_iov;
  };
  std::vector<Slot> slots(kBatch);
  mmsghdr in_msgs[kBatch], out_msgs[kBatch];
  while (!stop_.load(std::memory_order_relaxed)) {
    for (int i = 0; i < kBatch; ++i) {
      slots[i].in_iov = {slots[i].in, kUdpMax};
      std::memset(&in_msgs[i], 0, sizeof in_msgs[i]);
      in_msgs[i].msg_hdr.msg_iov = &slots[i].in_iov;
      in_msgs[i].msg_hdr.msg_iovlen = 1;
      in_msgs[i].msg_hdr.msg_name = &slots[i].addr;
      in_msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
    }
    // Block for the first datagram, then take whatever else is already queued.
    int n = ::recvmmsg(fd, in_msgs, kBatch, MSG_WAITFORONE, nullptr);
    if (n <= 0) continue;
    auto zones = zones_->Load();
    uint32_t now = Now();
    int m = 0;
    for (int i = 0; i < n; ++i) {
      Slot& s = slots[i];
      std::span<const uint8_t> query(s.in, in_msgs[i].msg_len);
      size_t len = 0;
      if (options_.transfers && NeedsSlowPath(query)) {
        options_.transfers->Handle(*zones, query, reinterpret_cast<const sockaddr*>(&s.addr), false, now,
                                   [&](std::span<const uint8_t> msg) {
                                     if (len == 0 && msg.size() <= kUdpMax) {
                                       std::memcpy(s.out, msg.data(), msg.size());
                                       len = msg.size();
                                     }
                                     return false;
                                   });
      } else {
        len = Answer(*zones, query, AnswerOptions{false, now}, s.out, kUdpMax);
      }
      if (len == 0) continue;
      if (rrl_) {
        auto action = rrl_->Check(reinterpret_cast<const sockaddr*>(&s.addr),
                                  std::span<const uint8_t>(s.out, len), *zones, now);
        if (action == RateLimiter::Action::kDrop) continue;
        if (action == RateLimiter::Action::kSlip) len = RateLimiter::Truncate(s.out, len);
      }
      s.out_iov = {s.out, len};
      std::memset(&out_msgs[m], 0, sizeof out_msgs[m]);
      out_msgs[m].msg_hdr.msg_iov = &s.out_iov;
      out_msgs[m].msg_hdr.msg_iovlen = 1;
      out_msgs[m].msg_hdr.msg_name = &s.addr;
      out_msgs[m].msg_hdr.msg_namelen = in_msgs[i].msg_hdr.msg_namelen;
      ++m;
    }
    udp_queries_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    int sent = 0;
    while (sent < m) {
      int r = ::sendmmsg(fd, out_msgs + sent, static_cast<unsigned>(m - sent), 0);
      if (r <= 0) {
        if (r < 0 && errno == EINTR) continue;
        ++sent;  // skip the one that failed (e.g. an unreachable peer)
        continue;
      }
      sent += r;
    }
  }
}

void Server::TcpAccept() {
  while (!stop_.load(std::memory_order_relaxed)) {
    pollfd pfd{tcp_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 200) <= 0) continue;
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof peer;
    int c = ::accept4(tcp_fd_, reinterpret_cast<sockaddr*>(&peer), &peer_len, SOCK_CLOEXEC);
    if (c < 0) continue;
    if (open_connections_.load() >= options_.max_tcp_connections) {
      ::close(c);
      continue;
    }
    int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    open_connections_.fetch_add(1);
    std::lock_guard lock(conn_mu_);
    for (size_t i = 0; i < conns_.size();) {
      if (conns_[i].done->load()) {
        conns_[i].thread.join();
        conns_[i] = std::move(conns_.back());
        conns_.pop_back();
      } else {
        ++i;
      }
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    conns_.push_back(
        Connection{std::thread([this, c, peer, d = done.get()] { TcpServe(c, peer, d); }), done});
  }
}

void Server::TcpServe(int fd, sockaddr_storage peer, std::atomic<bool>* done) {
  std::vector<uint8_t> in(65536 + 2);
  std::vector<uint8_t> out;
  std::vector<uint8_t> answer(65535);
  size_t have = 0;
  int idle_ms = 0;
  while (!stop_.load(std::memory_order_relaxed) && idle_ms < options_.tcp_idle_timeout_ms) {
    pollfd pfd{fd, POLLIN, 0};
    int pr = ::poll(&pfd, 1, 200);
    if (pr == 0) {
      idle_ms += 200;
      continue;
    }
    if (pr < 0) break;
    ssize_t r = ::recv(fd, in.data() + have, in.size() - have, 0);
    if (r <= 0) break;
    idle_ms = 0;
    have += static_cast<size_t>(r);
    size_t off = 0;
    bool failed = false;
    out.clear();
    auto zones = zones_->Load();
    uint32_t now = Now();
    while (have - off >= 2) {
      size_t len = Get16(&in[off]);
      if (have - off < 2 + len) break;
      std::span<const uint8_t> query(&in[off + 2], len);
      if (options_.transfers && NeedsSlowPath(query)) {
        // Answers already made go first (they were asked first); a transfer streams its messages.
        if (!out.empty() && !WriteAll(fd, out.data(), out.size())) {
          failed = true;
          break;
        }
        out.clear();
        tcp_queries_.fetch_add(1, std::memory_order_relaxed);
        options_.transfers->Handle(*zones, query, reinterpret_cast<const sockaddr*>(&peer), true, now,
                                   [&](std::span<const uint8_t> msg) {
                                     uint8_t pre[2];
                                     Put16(pre, static_cast<uint16_t>(msg.size()));
                                     if (!WriteAll(fd, pre, 2) || !WriteAll(fd, msg.data(), msg.size())) {
                                       failed = true;
                                       return false;
                                     }
                                     return true;
                                   });
        if (failed) break;
        off += 2 + len;
        continue;
      }
      size_t alen = Answer(*zones, std::span<const uint8_t>(&in[off + 2], len), AnswerOptions{true, now},
                           answer.data(), answer.size());
      tcp_queries_.fetch_add(1, std::memory_order_relaxed);
      if (alen > 0) {
        uint8_t pre[2];
        Put16(pre, static_cast<uint16_t>(alen));
        out.insert(out.end(), pre, pre + 2);
        out.insert(out.end(), answer.begin(), answer.begin() + static_cast<long>(alen));
      }
      off += 2 + len;
    }
    if (failed) break;
    if (off > 0) {
      std::memmove(in.data(), in.data() + off, have - off);
      have -= off;
    }
    if (!out.empty() && !WriteAll(fd, out.data(), out.size())) break;
  }
  ::close(fd);
  open_connections_.fetch_sub(1);
  done->store(true);
}

}  // namespace govern::dns
