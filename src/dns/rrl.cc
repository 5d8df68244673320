#include "dns/rrl.h"

#include <netinet/in.h>

#include <cstring>
#include <string_view>

#include "dns/wire.h"

namespace govern::dns {
namespace {

uint64_t Fnv(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t FnvLower(uint64_t h, std::string_view name) {
  for (char c : name) {
    uint8_t b = static_cast<uint8_t>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    h ^= b;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

RateLimiter::RateLimiter(const RrlOptions& options) : options_(options) {
  int bits = options.table_bits < 4 ? 4 : (options.table_bits > 24 ? 24 : options.table_bits);
  mask_ = (size_t{1} << bits) - 1;
  table_.reset(new std::atomic<uint64_t>[mask_ + 1]);
  for (size_t i = 0; i <= mask_; ++i) table_[i].store(0, std::memory_order_relaxed);
}

RateLimiter::Action RateLimiter::Check(const sockaddr* peer, std::span<const uint8_t> r, const ZoneSet& zones,
                                       uint32_t now) {
  if (!enabled() || peer == nullptr || r.size() < kHeaderSize) return Action::kSend;
  uint64_t h = 0xcbf29ce484222325ull;
  uint8_t block[16] = {};
  if (peer->sa_family == AF_INET) {
    std::memcpy(block, &reinterpret_cast<const sockaddr_in*>(peer)->sin_addr, 4);
    int p = options_.ipv4_prefix;
    for (int i = 0; i < 4; ++i)
      block[i] &=
          static_cast<uint8_t>(p >= 8 * (i + 1) ? 0xff : (p <= 8 * i ? 0 : 0xff << (8 - (p - 8 * i))));
    h = Fnv(h, block, 4);
  } else if (peer->sa_family == AF_INET6) {
    std::memcpy(block, &reinterpret_cast<const sockaddr_in6*>(peer)->sin6_addr, 16);
    int p = options_.ipv6_prefix;
    for (int i = 0; i < 16; ++i)
      block[i] &=
          static_cast<uint8_t>(p >= 8 * (i + 1) ? 0xff : (p <= 8 * i ? 0 : 0xff << (8 - (p - 8 * i))));
    h = Fnv(h, block, 16);
  } else {
    return Action::kSend;
  }
  uint8_t rcode = r[3] & 0xf;
  uint16_t an = Get16(&r[6]);
  std::string_view rest(reinterpret_cast<const char*>(r.data()) + kHeaderSize, r.size() - kHeaderSize);
  size_t nl = Get16(&r[4]) == 1 ? WireNameLength(rest) : 0;
  h = Fnv(h, &rcode, 1);
  if (nl == 0 || rest.size() < nl + 4) {
    // no question: the rcode alone
  } else if (rcode == kNoError && an > 0) {
    h = FnvLower(h, rest.substr(0, nl));
    h = Fnv(h, rest.data() + nl, 2);
  } else if (rcode == kNoError || rcode == kNXDomain) {
    char lower[kMaxName + 1];
    LowerNameInto(rest.substr(0, nl), lower);
    const Zone* z = zones.Find(std::string_view(lower, nl));
    h = z ? Fnv(h, z->apex().data(), z->apex().size()) : FnvLower(h, rest.substr(0, nl));
  }
  auto& slot = table_[h & mask_];
  uint64_t tag = (h >> 32) & 0xffffffffull;
  uint64_t sec = now & 0xffff;
  uint64_t count = 0;
  uint64_t old = slot.load(std::memory_order_relaxed);
  for (;;) {
    bool same = (old >> 32) == tag && ((old >> 16) & 0xffff) == sec;
    count = same ? (old & 0xffff) + 1 : 1;
    if (count > 0xffff) count = 0xffff;
    uint64_t word = tag << 32 | sec << 16 | count;
    if (slot.compare_exchange_weak(old, word, std::memory_order_relaxed)) break;
  }
  auto rate = static_cast<uint64_t>(options_.responses_per_second);
  if (count <= rate) return Action::kSend;
  if (options_.slip > 0 && (count - rate) % static_cast<uint64_t>(options_.slip) == 0) {
    slipped_.fetch_add(1, std::memory_order_relaxed);
    return Action::kSlip;
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return Action::kDrop;
}

size_t RateLimiter::Truncate(uint8_t* r, size_t length) {
  if (length < kHeaderSize) return length;
  size_t end = kHeaderSize;
  if (Get16(r + 4) == 1) {
    std::string_view rest(reinterpret_cast<const char*>(r) + kHeaderSize, length - kHeaderSize);
    size_t nl = WireNameLength(rest);
    if (nl == 0 || rest.size() < nl + 4) {
      Put16(r + 4, 0);
    } else {
      end += nl + 4;
    }
  }
  Put16(r + 6, 0);
  Put16(r + 8, 0);
  Put16(r + 10, 0);
  r[2] |= 0x02;  // TC
  return end;
}

}  // namespace govern::dns
