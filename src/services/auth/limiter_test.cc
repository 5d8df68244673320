// The per-address limiter: address parsing, prefixes, X-Forwarded-For with trusted and untrusted
// proxies, token buckets and eviction.
#include "services/auth/limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

namespace govern::auth_service {
namespace {

IpAddr Ip(std::string_view s) {
  auto a = ParseIp(s);
  EXPECT_TRUE(a.ok()) << s;
  return a.ok() ? *a : IpAddr{};
}

TEST(Limiter, ParsesAddresses) {
  EXPECT_TRUE(Ip("203.0.113.7").v4);
  EXPECT_EQ(FormatIp(Ip("203.0.113.7")), "203.0.113.7");
  EXPECT_FALSE(Ip("2001:db8::1").v4);
  EXPECT_EQ(FormatIp(Ip("[2001:db8::1]")), "2001:db8::1");
  // IPv4-mapped IPv6 is the IPv4 address, so a dual-stack socket cannot double an address's budget.
  EXPECT_EQ(Ip("::ffff:198.51.100.2"), Ip("198.51.100.2"));
  for (const char* bad : {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.4 ", "abc", "::g",
                          "fe80::1%eth0", "1.2.3.4:80", "[1.2.3.4", "::1::2"}) {
    EXPECT_FALSE(ParseIp(bad).ok()) << bad;
  }
}

TEST(Limiter, PrefixKeys) {
  EXPECT_EQ(LimitKey(Ip("203.0.113.7"), 32, 64), "203.0.113.7/32");
  EXPECT_EQ(LimitKey(Ip("203.0.113.7"), 24, 64), "203.0.113.0/24");
  EXPECT_EQ(LimitKey(Ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), 32, 64), "2001:db8:1:2::/64");
  // Two addresses of one /64 share a key; the neighbouring /64 does not.
  EXPECT_EQ(LimitKey(Ip("2001:db8:1:2::1"), 32, 64), LimitKey(Ip("2001:db8:1:2:ffff::9"), 32, 64));
  EXPECT_NE(LimitKey(Ip("2001:db8:1:2::1"), 32, 64), LimitKey(Ip("2001:db8:1:3::1"), 32, 64));
  EXPECT_EQ(LimitKey(Ip("2001:db8::1"), 32, 56), "2001:db8::/56");
  EXPECT_EQ(LimitKey(Ip("2001:db8::1"), 32, 200), "2001:db8::1/128");
  EXPECT_EQ(LimitKey(Ip("10.1.2.3"), 0, 64), "0.0.0.0/0");
  EXPECT_EQ(LimitKey(Ip("10.1.2.3"), 20, 64), "10.1.0.0/20");
}

TEST(Limiter, ParsesCidrs) {
  auto c = ParseCidr("10.0.0.0/8");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->Contains(Ip("10.200.1.1")));
  EXPECT_FALSE(c->Contains(Ip("11.0.0.1")));
  EXPECT_FALSE(c->Contains(Ip("::a00:1")));  // an IPv6 address is never in an IPv4 block
  auto host = ParseCidr("192.0.2.5");
  ASSERT_TRUE(host.ok());
  EXPECT_EQ(host->bits, 32);
  EXPECT_TRUE(host->Contains(Ip("192.0.2.5")));
  EXPECT_FALSE(host->Contains(Ip("192.0.2.6")));
  auto v6 = ParseCidr("2001:db8::/32");
  ASSERT_TRUE(v6.ok());
  EXPECT_TRUE(v6->Contains(Ip("2001:db8:ffff::1")));
  EXPECT_FALSE(v6->Contains(Ip("2001:db9::1")));
  for (const char* bad : {"10.0.0.0/33", "10.0.0.0/", "10.0.0.0/x", "::/129", "nope/8", "10.0.0.0/-1"}) {
    EXPECT_FALSE(ParseCidr(bad).ok()) << bad;
  }
  auto list = ParseCidrList({"10.0.0.0/8", "bad"});
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.status().message().find("bad"), std::string::npos);
}

TEST(Limiter, ForwardedForOnlyFromTrustedProxies) {
  auto trusted = ParseCidrList({"10.0.0.0/8", "fd00::/8"});
  ASSERT_TRUE(trusted.ok());
  auto client = [&](std::string_view peer, std::optional<std::string_view> xff) {
    auto a = ClientAddress(peer, xff, *trusted);
    return a ? FormatIp(*a) : std::string("none");
  };
  // Untrusted peer: its header is ignored whatever it says.
  EXPECT_EQ(client("198.51.100.9", "1.2.3.4"), "198.51.100.9");
  EXPECT_EQ(client("198.51.100.9", std::nullopt), "198.51.100.9");
  // Trusted peer: the rightmost untrusted hop; what the client wrote on the left is not believed.
  EXPECT_EQ(client("10.0.0.1", "203.0.113.7"), "203.0.113.7");
  EXPECT_EQ(client("10.0.0.1", "6.6.6.6, 203.0.113.7"), "203.0.113.7");
  EXPECT_EQ(client("10.0.0.1", "6.6.6.6, 203.0.113.7, 10.9.9.9"), "203.0.113.7");
  EXPECT_EQ(client("10.0.0.1", " 2001:db8::5 ,fd00::1"), "2001:db8::5");
  // Every hop trusted: the leftmost one is the client.
  EXPECT_EQ(client("10.0.0.1", "10.2.2.2, 10.3.3.3"), "10.2.2.2");
  // Garbage where a client is expected: the last trusted hop, never the garbage or anything left of it.
  EXPECT_EQ(client("10.0.0.1", "6.6.6.6, nonsense"), "10.0.0.1");
  EXPECT_EQ(client("10.0.0.1", "6.6.6.6, nonsense, 10.4.4.4"), "10.4.4.4");
  EXPECT_EQ(client("10.0.0.1", ""), "10.0.0.1");
  // A trusted peer without the header is the client.
  EXPECT_EQ(client("10.0.0.1", std::nullopt), "10.0.0.1");
  // No trusted proxies configured (the default): always the peer.
  EXPECT_EQ(FormatIp(*ClientAddress("10.0.0.1", "203.0.113.7", {})), "10.0.0.1");
  // A Unix socket has no peer address.
  EXPECT_FALSE(ClientAddress("", "203.0.113.7", *trusted).has_value());
}

TEST(Limiter, BucketRefusesPastBurstAndRefills) {
  AddressLimiter lim({.per_minute = 10, .burst = 3, .capacity = 100});
  const int64_t t0 = 1'000'000'000;
  EXPECT_EQ(lim.Check("a", t0), 0);
  EXPECT_EQ(lim.Spend("a", t0), 0);
  EXPECT_EQ(lim.Spend("a", t0), 0);
  EXPECT_EQ(lim.Spend("a", t0), 6);  // empty: one token comes back in 60/10 s
  EXPECT_EQ(lim.Check("a", t0), 6);
  EXPECT_EQ(lim.Check("b", t0), 0);  // another key is untouched
  EXPECT_EQ(lim.Check("a", t0 + 3'000'000), 3);
  EXPECT_EQ(lim.Check("a", t0 + 6'000'000), 0);
  EXPECT_EQ(lim.Spend("a", t0 + 6'000'000), 6);
  // Long idle refills to the burst and no further.
  const int64_t later = t0 + 3'600'000'000LL;
  EXPECT_EQ(lim.Spend("a", later), 0);
  EXPECT_EQ(lim.Spend("a", later), 0);
  EXPECT_GT(lim.Spend("a", later), 0);
}

TEST(Limiter, TableIsCappedAndEvictsLeastRecentlySpent) {
  AddressLimiter lim({.per_minute = 1, .burst = 1, .capacity = 3});
  const int64_t t = 5'000'000;
  for (const char* k : {"a", "b", "c"}) EXPECT_GT(lim.Spend(k, t), 0);
  EXPECT_EQ(lim.size(), 3u);
  EXPECT_GT(lim.Spend("a", t), 0);  // "a" is now the most recent; "b" the least
  EXPECT_GT(lim.Spend("d", t), 0);
  EXPECT_EQ(lim.size(), 3u);
  EXPECT_EQ(lim.Check("b", t), 0);  // evicted: forgotten
  EXPECT_GT(lim.Check("a", t), 0);
  EXPECT_GT(lim.Check("c", t), 0);
  EXPECT_GT(lim.Check("d", t), 0);
  for (int i = 0; i < 1000; ++i) lim.Spend("k" + std::to_string(i), t);
  EXPECT_EQ(lim.size(), 3u);
}

TEST(Limiter, AcquireTakesBeforeAndRefundGivesBack) {
  AddressLimiter lim({.per_minute = 10, .burst = 2, .capacity = 100});
  const int64_t t0 = 1'000'000'000;
  EXPECT_EQ(lim.Acquire("a", t0), 0);
  EXPECT_EQ(lim.Acquire("a", t0), 0);
  EXPECT_EQ(lim.Acquire("a", t0), 6);  // both tokens are held by running attempts
  EXPECT_EQ(lim.Check("a", t0), 6);
  lim.Refund("a", t0);  // one attempt succeeded
  EXPECT_EQ(lim.Check("a", t0), 0);
  EXPECT_EQ(lim.Acquire("a", t0), 0);  // ... so its token serves the next one
  EXPECT_GT(lim.Acquire("a", t0), 0);
  lim.Refund("a", t0);
  lim.Refund("a", t0);
  EXPECT_EQ(lim.size(), 0u);  // back at its burst: forgotten
  lim.Refund("never-seen", t0);
  EXPECT_EQ(lim.size(), 0u);
  // A refused Acquire takes nothing: the refill is not pushed back.
  EXPECT_EQ(lim.Acquire("b", t0), 0);
  EXPECT_EQ(lim.Acquire("b", t0), 0);
  for (int i = 0; i < 5; ++i) EXPECT_GT(lim.Acquire("b", t0 + 1'000'000), 0);
  EXPECT_EQ(lim.Acquire("b", t0 + 6'000'000), 0);
}

// Many threads start attempts on one key at once (the auth workers): exactly `burst` may pass an empty
// key, and after failures nobody passes, however the threads interleave. Check-then-Spend let every
// thread through here.
TEST(Limiter, AcquireIsAtomicUnderThreads) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    AddressLimiter lim({.per_minute = 1, .burst = 3, .capacity = 100});
    const int64_t t = 1'000'000;
    std::atomic<int> passed{0};
    std::barrier start(kThreads);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&] {
        start.arrive_and_wait();
        for (int j = 0; j < 4; ++j) {
          if (lim.Acquire("203.0.113.7/32", t) == 0) passed.fetch_add(1);  // a failure: never refunded
        }
      });
    }
    for (auto& th : threads) th.join();
    ASSERT_EQ(passed.load(), 3) << "round " << round;
    EXPECT_GT(lim.Check("203.0.113.7/32", t), 0);
  }
  // Mixed: successes refund, failures keep; the bucket never lets more failures through than its burst.
  AddressLimiter lim({.per_minute = 1, .burst = 5, .capacity = 100});
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int j = 0; j < 2000; ++j) {
        if (lim.Acquire("k", 1'000'000) != 0) continue;
        if ((i + j) % 3 == 0) {
          failures.fetch_add(1);
        } else {
          lim.Refund("k", 1'000'000);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 5);
}

}  // namespace
}  // namespace govern::auth_service
