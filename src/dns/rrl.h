// Response rate limiting against reflection (the scheme of BIND and Knot, after Vixie and Schryver):
// responses per second are counted per client netblock (IPv4 /24, IPv6 /56 by default) and per
// answer: the query name and type for positive answers, the zone for NXDOMAIN and NODATA (so a flood
// of random names under one zone is one bucket), the RCODE for errors. Past the rate a response is
// dropped, except every `slip`-th, which goes out truncated (TC, no records) so a real client behind a
// spoofed-looking netblock retries over TCP, which cannot be spoofed.
//
// The counters are a fixed table of atomic words (no lock, no allocation); a collision between two
// buckets makes both count from zero again, so the limit errs towards sending. Safe from any thread.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "dns/zone.h"

namespace govern::dns {

struct RrlOptions {
  int responses_per_second = 0;  // per netblock and answer; 0: off
  int slip = 2;                  // every slip-th limited response is sent truncated; 0: drop them all
  int ipv4_prefix = 24;
  int ipv6_prefix = 56;
  int table_bits = 16;  // 2^bits buckets
};

class RateLimiter {
 public:
  enum class Action { kSend, kDrop, kSlip };
  explicit RateLimiter(const RrlOptions& options);
  bool enabled() const { return options_.responses_per_second > 0; }
  // What to do with `response` to `peer` at second `now`. `zones` finds the zone of a negative answer.
  Action Check(const sockaddr* peer, std::span<const uint8_t> response, const ZoneSet& zones, uint32_t now);
  // Rewrites a response in place into its truncated form (header + question, TC); returns the length.
  static size_t Truncate(uint8_t* response, size_t length);
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t slipped() const { return slipped_.load(std::memory_order_relaxed); }

 private:
  RrlOptions options_;
  size_t mask_;
  std::unique_ptr<std::atomic<uint64_t>[]> table_;
  std::atomic<uint64_t> dropped_{0}, slipped_{0};
};

}  // namespace govern::dns
