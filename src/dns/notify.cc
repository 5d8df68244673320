#include "dns/notify.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <random>

#include "dns/message.h"
#include "dns/wire.h"

namespace govern::dns {

using Clock = std::chrono::steady_clock;

struct Notifier::Pending {
  std::string apex;  // lower wire, to replace older NOTIFYs of the same zone
  NotifyTarget target;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  std::vector<uint8_t> message;  // signed when the target has a key
  std::optional<TsigSigner> signer;
  uint16_t id = 0;
  int sends = 0;
  int timeout_ms = 0;
  Clock::time_point due;
};

Result<std::unique_ptr<Notifier>> Notifier::Start(TsigKeyring keys, NotifyOptions options) {
  std::unique_ptr<Notifier> n(new Notifier());
  n->keys_ = std::make_shared<const TsigKeyring>(std::move(keys));
  n->options_ = options;
  n->fd4_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  n->fd6_ = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (n->fd4_ < 0 && n->fd6_ < 0) return Unavailable(std::string("notify socket: ") + std::strerror(errno));
  // Wakes the loop out of poll() when a NOTIFY is queued, so it goes out at once.
  n->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (n->wake_fd_ < 0) return Unavailable(std::string("notify eventfd: ") + std::strerror(errno));
  n->thread_ = std::thread([p = n.get()] { p->Loop(); });
  return n;
}

Notifier::~Notifier() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  Wake();
  if (thread_.joinable()) thread_.join();
  if (fd4_ >= 0) ::close(fd4_);
  if (fd6_ >= 0) ::close(fd6_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Notifier::SetKeys(TsigKeyring keys) {
  auto next = std::make_shared<const TsigKeyring>(std::move(keys));
  std::lock_guard lock(mu_);
  keys_ = std::move(next);
}

void Notifier::Send(std::string_view apex, uint32_t soa_ttl, std::string_view soa_rdata,
                    const std::vector<NotifyTarget>& targets) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  std::shared_ptr<const TsigKeyring> keys;
  {
    std::lock_guard lock(mu_);
    keys = keys_;
  }
  std::string lower(apex);
  LowerName(lower);
  std::vector<std::unique_ptr<Pending>> made;
  for (const auto& t : targets) {
    auto p = std::make_unique<Pending>();
    p->apex = lower;
    p->target = t;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&p->addr);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&p->addr);
    if (inet_pton(AF_INET, t.address.c_str(), &v4->sin_addr) == 1) {
      v4->sin_family = AF_INET;
      v4->sin_port = htons(t.port);
      p->addr_len = sizeof(sockaddr_in);
    } else if (inet_pton(AF_INET6, t.address.c_str(), &v6->sin6_addr) == 1) {
      v6->sin6_family = AF_INET6;
      v6->sin6_port = htons(t.port);
      p->addr_len = sizeof(sockaddr_in6);
    } else {
      failed_.fetch_add(1);
      continue;
    }
    p->id = static_cast<uint16_t>(rng());
    std::vector<uint8_t> buf(kHeaderSize + apex.size() * 2 + soa_rdata.size() + 64);
    Writer w(buf.data(), buf.size());
    w.Start(p->id, static_cast<uint16_t>(4 << 11 | 0x0400), apex, kSOA, kClassIN);
    if (w.PutRecord(apex, kSOA, kClassIN, soa_ttl, soa_rdata)) w.AddCount(0);
    buf.resize(w.size());
    if (!t.key.empty()) {
      const TsigKey* key = keys->Find(t.key);
      if (key == nullptr) {
        failed_.fetch_add(1);
        continue;
      }
      p->signer.emplace(*key, std::string());
      p->signer->Sign(buf, static_cast<uint64_t>(::time(nullptr)));
    }
    p->message = std::move(buf);
    p->timeout_ms = options_.first_timeout_ms;
    p->due = Clock::now();
    made.push_back(std::move(p));
  }
  {
    std::lock_guard lock(mu_);
    for (auto& p : made) {
      for (auto it = pending_.begin(); it != pending_.end();) {
        bool same = (*it)->apex == p->apex && (*it)->target.address == p->target.address &&
                    (*it)->target.port == p->target.port;
        it = same ? pending_.erase(it) : it + 1;
      }
      pending_.push_back(std::move(p));
    }
  }
  Wake();
}

void Notifier::Wake() {
  uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof one);
}

bool Notifier::WaitIdle(int timeout_ms) {
  auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Clock::now() < end) {
    {
      std::lock_guard lock(mu_);
      if (pending_.empty()) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::lock_guard lock(mu_);
  return pending_.empty();
}

void Notifier::Loop() {
  std::vector<uint8_t> in(65535);
  std::unique_lock lock(mu_);
  while (!stop_) {
    auto now = Clock::now();
    // Send what is due; give up on what has had its attempts.
    for (auto it = pending_.begin(); it != pending_.end();) {
      Pending& p = **it;
      if (p.due > now) {
        ++it;
        continue;
      }
      if (p.sends >= options_.attempts) {
        failed_.fetch_add(1);
        it = pending_.erase(it);
        continue;
      }
      int fd = p.addr.ss_family == AF_INET ? fd4_ : fd6_;
      if (fd >= 0)
        (void)::sendto(fd, p.message.data(), p.message.size(), 0, reinterpret_cast<sockaddr*>(&p.addr),
                       p.addr_len);
      sent_.fetch_add(1);
      ++p.sends;
      p.due = now + std::chrono::milliseconds(p.timeout_ms);
      p.timeout_ms *= 2;
      ++it;
    }
    auto wait = std::chrono::milliseconds(100);
    for (auto& p : pending_) {
      auto d = std::chrono::duration_cast<std::chrono::milliseconds>(p->due - now);
      if (d < wait) wait = d < std::chrono::milliseconds(1) ? std::chrono::milliseconds(1) : d;
    }
    int timeout = static_cast<int>(pending_.empty() ? 1000 : wait.count());
    lock.unlock();
    pollfd fds[3] = {{fd4_, POLLIN, 0}, {fd6_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int r = ::poll(fds, 3, timeout);
    lock.lock();
    if (r <= 0) continue;
    if (fds[2].revents & POLLIN) {
      uint64_t drained;
      (void)!::read(wake_fd_, &drained, sizeof drained);
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & POLLIN)) continue;
      for (;;) {
        sockaddr_storage from{};
        socklen_t fl = sizeof from;
        ssize_t n = ::recvfrom(fds[i].fd, in.data(), in.size(), 0, reinterpret_cast<sockaddr*>(&from), &fl);
        if (n < 0) break;
        if (n < static_cast<ssize_t>(kHeaderSize)) continue;
        uint16_t id = Get16(in.data()), flags = Get16(&in[2]);
        if (!(flags & 0x8000) || ((flags >> 11) & 0xf) != 4) continue;
        for (auto it = pending_.begin(); it != pending_.end(); ++it) {
          Pending& p = **it;
          if (p.id != id || p.addr.ss_family != from.ss_family) continue;
          bool same_peer = from.ss_family == AF_INET
                               ? std::memcmp(&reinterpret_cast<sockaddr_in*>(&from)->sin_addr,
                                             &reinterpret_cast<sockaddr_in*>(&p.addr)->sin_addr, 4) == 0 &&
                                     reinterpret_cast<sockaddr_in*>(&from)->sin_port ==
                                         reinterpret_cast<sockaddr_in*>(&p.addr)->sin_port
                               : std::memcmp(&reinterpret_cast<sockaddr_in6*>(&from)->sin6_addr,
                                             &reinterpret_cast<sockaddr_in6*>(&p.addr)->sin6_addr, 16) == 0 &&
                                     reinterpret_cast<sockaddr_in6*>(&from)->sin6_port ==
                                         reinterpret_cast<sockaddr_in6*>(&p.addr)->sin6_port;
          if (!same_peer) continue;
          bool good = (flags & 0xf) == kNoError;
          if (good && p.signer) {
            TsigSigner check = *p.signer;
            good = check
                       .Verify(std::span<const uint8_t>(in.data(), static_cast<size_t>(n)),
                               static_cast<uint64_t>(::time(nullptr)))
                       .ok();
          }
          (good ? answered_ : failed_).fetch_add(1);
          pending_.erase(it);
          break;
        }
      }
    }
  }
}

}  // namespace govern::dns
