// The DNS server loop: UDP and TCP on one address and port, answering from a ZoneSet.
//
// UDP: one SO_REUSEPORT socket per thread, each thread receiving and sending in batches with
// recvmmsg/sendmmsg, so the kernel spreads queries over the threads without any lock between them.
// TCP (RFC 7766): one acceptor; each connection is served by its own thread, reading length-prefixed
// queries as they come (pipelined) and writing the answers in order, batched per read; idle
// connections close after a timeout. Transfer requests and TSIG-signed messages take the slow path
// of ServerOptions::transfers (xfr.h); UDP answers pass the response rate limiter (rrl.h) when on. The zones
// are read through a ZoneSetHolder, which the caller swaps atomically when zones change; each batch answers
// from one snapshot. Start/Stop are for one owner thread; the holder is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "dns/rrl.h"
#include "dns/xfr.h"
#include "dns/zone.h"

namespace govern::dns {

class ZoneSetHolder {
 public:
  explicit ZoneSetHolder(std::shared_ptr<const ZoneSet> set) : set_(std::move(set)) {}
  std::shared_ptr<const ZoneSet> Load() const { return set_.load(std::memory_order_acquire); }
  void Store(std::shared_ptr<const ZoneSet> set) { set_.store(std::move(set), std::memory_order_release); }

 private:
  std::atomic<std::shared_ptr<const ZoneSet>> set_;
};

struct ServerOptions {
  std::string address = "127.0.0.1";  // IPv4 or IPv6 literal
  uint16_t port = 53;                 // 0 picks a free port (see Server::port)
  int udp_threads = 1;
  int max_tcp_connections = 256;
  int tcp_idle_timeout_ms = 10000;
  // Zone transfers and TSIG (xfr.h). Null: AXFR/IXFR are NOTIMP and signed queries FORMERR.
  std::shared_ptr<const Transfers> transfers;
  RrlOptions rrl;  // UDP response rate limiting; off unless responses_per_second > 0
};

class Server {
 public:
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                               std::shared_ptr<ZoneSetHolder> zones);
  ~Server();  // stops
  uint16_t port() const { return port_; }
  void Stop();
  uint64_t udp_queries() const { return udp_queries_.load(std::memory_order_relaxed); }
  uint64_t tcp_queries() const { return tcp_queries_.load(std::memory_order_relaxed); }

 private:
  Server() = default;
  void UdpLoop(int fd);
  void TcpAccept();
  void TcpServe(int fd, sockaddr_storage peer, std::atomic<bool>* done);
  ServerOptions options_;
  std::shared_ptr<ZoneSetHolder> zones_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<int> udp_fds_;
  int tcp_fd_ = -1;
  std::vector<std::thread> threads_;
  std::mutex conn_mu_;
  struct Connection {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Connection> conns_;  // finished ones are joined at the next accept
  std::atomic<int> open_connections_{0};
  std::atomic<uint64_t> udp_queries_{0}, tcp_queries_{0};
  std::unique_ptr<RateLimiter> rrl_;

 public:
  const RateLimiter* rrl() const { return rrl_.get(); }
};

}  // namespace govern::dns
