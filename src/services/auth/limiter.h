// Per-address limits for sign-in and the token endpoint, held in memory (no database statement per check).
//
// Addresses: ParseIp reads IPv4 dotted quads and IPv6 text (RFC 4291, with an optional "[...]" and no zone);
// an IPv4-mapped IPv6 address (::ffff:a.b.c.d) counts as its IPv4 address. LimitKey masks an address to
// its limiting prefix (IPv4 /32 and IPv6 /64 by default: one host gets one IPv6 /64, so a /128 key would
// let it rotate through 2^64 addresses).
//
// Client address and spoofing: ClientAddress takes the direct peer unless the peer is a trusted proxy.
// Only then is X-Forwarded-For read, from the right: hops are skipped while they are trusted proxies, and
// the first untrusted one is the client. Entries left of it were written by the client itself and are
// never believed. A malformed hop where a client is expected ends the walk at the last trusted hop.
//
// AddressLimiter: a token bucket per key (`burst` tokens, refilled at `per_minute` a minute). Check says
// how long to wait before the next attempt (0: go ahead); Spend takes a token for a failed attempt.
// Acquire and Refund are the race-free pair the service uses: an attempt takes its token before it runs
// (check and take in one step under the lock) and gives it back when it did not fail, so N attempts
// racing on a bucket with k tokens let exactly k through instead of all N. The table holds at most `capacity`
// keys; a new key past that evicts the least recently spent one (its bucket is the likeliest to have
// refilled, so the least is forgotten). Thread-safe (one mutex).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace govern::auth_service {

struct IpAddr {
  std::array<uint8_t, 16> bytes{};  // IPv4 in the first 4 bytes
  bool v4 = false;
  bool operator==(const IpAddr&) const = default;
};

Result<IpAddr> ParseIp(std::string_view text);
std::string FormatIp(const IpAddr& a);

// An address block "10.0.0.0/8", "2001:db8::/32"; a bare address is its /32 or /128.
struct Cidr {
  IpAddr base;  // masked to `bits`
  int bits = 0;
  bool Contains(const IpAddr& a) const;
};
Result<Cidr> ParseCidr(std::string_view text);
Result<std::vector<Cidr>> ParseCidrList(const std::vector<std::string>& items);

// The address with the bits past the prefix cleared: `v4_bits` for IPv4, `v6_bits` for IPv6.
IpAddr Mask(const IpAddr& a, int v4_bits, int v6_bits);
// "203.0.113.7/32", "2001:db8:1:2::/64": the key a limiter counts under.
std::string LimitKey(const IpAddr& a, int v4_bits, int v6_bits);

// The client's address as described above; nullopt when `peer_ip` is empty (a Unix socket) or unreadable.
std::optional<IpAddr> ClientAddress(std::string_view peer_ip, std::optional<std::string_view> forwarded_for,
                                    const std::vector<Cidr>& trusted);

class AddressLimiter {
 public:
  struct Options {
    double per_minute = 10;
    double burst = 20;
    size_t capacity = 100'000;
  };
  explicit AddressLimiter(Options o);

  // Whole seconds to wait before an attempt from `key` is allowed (at least 1 when refused); 0: allowed.
  int64_t Check(std::string_view key, int64_t now_us);
  // Takes one token from `key` (a failed attempt); returns the wait as Check would after it.
  int64_t Spend(std::string_view key, int64_t now_us);
  // Takes one token for an attempt about to run: 0 when taken (the attempt may run; Refund it unless it
  // fails), else the wait, and nothing is taken. Only failures cost in the end, as with Check + Spend,
  // but an attempt is counted while it runs.
  int64_t Acquire(std::string_view key, int64_t now_us);
  // Gives an acquired token back (the attempt succeeded or did not count). A bucket back at its burst is
  // forgotten, so addresses that never fail do not fill the table.
  void Refund(std::string_view key, int64_t now_us);

  size_t size() const;
  const Options& options() const { return o_; }

 private:
  struct Entry {
    double tokens;
    int64_t at_us;
    std::list<std::string>::iterator lru;
  };
  double Refilled(const Entry& e, int64_t now_us) const;
  int64_t WaitFor(double tokens) const;

  Options o_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> table_;
  std::list<std::string> lru_;  // front: most recently spent
};

}  // namespace govern::auth_service
