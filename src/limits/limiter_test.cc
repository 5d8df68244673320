// The Limiter with a ManualClock: class fractions at saturation, health probes, organisation shares,
// bookkeeping that never goes negative, the limit following latency, and a multi-threaded stress test.
#include "limits/limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

namespace govern::limits {
namespace {

using net::AdmissionTicket;
using net::RequestClass;
using std::chrono::milliseconds;

LimiterOptions Fixed(int limit) {
  LimiterOptions o;
  o.algorithm = std::make_unique<FixedLimit>(limit);
  return o;
}

// Admits requests of `cls` until one is refused; returns the admitted tickets.
std::vector<AdmissionTicket> Fill(Limiter& l, RequestClass cls, std::string_view org = "", int max = 100000) {
  std::vector<AdmissionTicket> out;
  for (int i = 0; i < max; ++i) {
    auto t = l.TryAdmit(cls, org);
    if (!t.admitted) break;
    out.push_back(t);
  }
  return out;
}

void ReleaseAll(Limiter& l, std::vector<AdmissionTicket>& tickets, bool ok = true) {
  for (auto& t : tickets) l.Release(t, ok);
  tickets.clear();
}

TEST(Limiter, ClassFractionsAtSaturation) {
  ManualClock clock;
  Limiter l(clock, Fixed(100));
  auto bulk = Fill(l, RequestClass::kBulk);
  EXPECT_EQ(bulk.size(), 60u);  // bulk stops at 60% of the limit
  EXPECT_FALSE(l.TryAdmit(RequestClass::kBulk, "").admitted);
  auto normal = Fill(l, RequestClass::kNormal);
  EXPECT_EQ(normal.size(), 30u);  // normal fills up to 90%
  auto interactive = Fill(l, RequestClass::kInteractive);
  EXPECT_EQ(interactive.size(), 10u);  // interactive has the last 10%
  EXPECT_EQ(l.inflight(), 100);
  for (auto cls : {RequestClass::kInteractive, RequestClass::kNormal, RequestClass::kBulk}) {
    EXPECT_FALSE(l.TryAdmit(cls, "").admitted);
  }
  // Health probes are admitted under any load and do not count.
  for (int i = 0; i < 1000; ++i) {
    auto h = l.TryAdmit(RequestClass::kHealth, "org");
    ASSERT_TRUE(h.admitted);
    l.Release(h, true);
  }
  EXPECT_EQ(l.inflight(), 100);

  // Freeing bulk capacity does not let bulk back in while interactive and normal hold 40%+: bulk is
  // admitted only while fewer than 60 are in flight in total.
  l.Release(bulk.back(), true);
  bulk.pop_back();
  EXPECT_FALSE(l.TryAdmit(RequestClass::kBulk, "").admitted);
  auto in2 = l.TryAdmit(RequestClass::kInteractive, "");
  EXPECT_TRUE(in2.admitted);
  l.Release(in2, true);

  auto st = l.Stats();
  EXPECT_EQ(st.inflight_by_class[static_cast<int>(RequestClass::kBulk)], 59);
  EXPECT_EQ(st.inflight_by_class[static_cast<int>(RequestClass::kNormal)], 30);
  EXPECT_GE(st.shed_by_class[static_cast<int>(RequestClass::kBulk)], 2);
  EXPECT_EQ(st.shed_by_class[static_cast<int>(RequestClass::kHealth)], 0);
  ReleaseAll(l, bulk);
  ReleaseAll(l, normal);
  ReleaseAll(l, interactive);
  EXPECT_EQ(l.inflight(), 0);
}

TEST(Limiter, ConfigurableFractions) {
  ManualClock clock;
  auto o = Fixed(10);
  o.class_fraction = {1.0, 1.0, 0.5, 0.2};
  Limiter l(clock, std::move(o));
  auto bulk = Fill(l, RequestClass::kBulk);
  EXPECT_EQ(bulk.size(), 2u);
  auto normal = Fill(l, RequestClass::kNormal);
  EXPECT_EQ(normal.size(), 3u);
}

TEST(Limiter, OneOrganisationAloneMayUseTheWholeLimit) {
  ManualClock clock;
  Limiter l(clock, Fixed(100));
  auto a = Fill(l, RequestClass::kInteractive, "acme");
  EXPECT_EQ(a.size(), 100u);
  EXPECT_EQ(l.org_inflight(a[0].org_slot), 100);
  ReleaseAll(l, a);
  EXPECT_EQ(l.org_inflight(l.OrgSlot("acme")), 0);
}

TEST(Limiter, FloodingOrganisationLeavesRoomForAnother) {
  ManualClock clock;
  Limiter l(clock, Fixed(100));
  ASSERT_NE(l.OrgSlot("acme"), l.OrgSlot("globex"));
  // acme floods while alone and takes everything.
  auto a = Fill(l, RequestClass::kNormal, "acme");
  ASSERT_EQ(a.size(), 90u);
  auto a_more = Fill(l, RequestClass::kInteractive, "acme");
  ASSERT_EQ(a_more.size(), 10u);
  a.insert(a.end(), a_more.begin(), a_more.end());
  // globex arrives and is refused while below its share: organisations now compete.
  EXPECT_FALSE(l.TryAdmit(RequestClass::kNormal, "globex").admitted);
  EXPECT_TRUE(l.Stats().org_fairness_active);

  // As acme's requests finish, acme keeps flooding but is held to its share; globex gets the rest.
  std::vector<AdmissionTicket> g;
  for (int i = 0; i < 1000 && !a.empty(); ++i) {
    l.Release(a.back(), true);
    a.pop_back();
    clock.Advance(milliseconds(1));
    auto more_a = Fill(l, RequestClass::kNormal, "acme");
    a.insert(a.end(), more_a.begin(), more_a.end());
    auto t = l.TryAdmit(RequestClass::kNormal, "globex");
    if (t.admitted) g.push_back(t);
    if (static_cast<int64_t>(a.size()) <= 50 && g.size() >= 40) break;
  }
  EXPECT_LE(a.size(), 50u);
  EXPECT_GE(g.size(), 40u);  // globex got (nearly) its share: 90% normal cap minus acme's 50
  EXPECT_GT(l.Stats().shed_by_org_share, 0);
  // acme still cannot take more while globex is active.
  EXPECT_FALSE(l.TryAdmit(RequestClass::kInteractive, "acme").admitted);
  // Requests without an organisation count only against the global limit.
  const int64_t before = l.inflight();
  auto none = Fill(l, RequestClass::kInteractive, "");
  EXPECT_EQ(static_cast<int64_t>(none.size()), 100 - before);
  EXPECT_EQ(l.inflight(), 100);
  ReleaseAll(l, a);
  ReleaseAll(l, g);
  ReleaseAll(l, none);
  EXPECT_EQ(l.inflight(), 0);
}

TEST(Limiter, FairnessExpires) {
  ManualClock clock;
  auto o = Fixed(10);
  o.fairness_hold_nanos = 1'000'000'000;
  Limiter l(clock, std::move(o));
  auto a = Fill(l, RequestClass::kInteractive, "acme");
  ASSERT_EQ(a.size(), 10u);
  EXPECT_FALSE(l.TryAdmit(RequestClass::kInteractive, "globex").admitted);
  ReleaseAll(l, a);
  EXPECT_EQ(Fill(l, RequestClass::kInteractive, "acme").size(), 5u);  // held to its share
  clock.Advance(milliseconds(1001));
  EXPECT_EQ(Fill(l, RequestClass::kInteractive, "acme").size(), 5u);  // alone again: the rest
}

TEST(Limiter, ReleaseNeverGoesNegative) {
  ManualClock clock;
  Limiter l(clock, Fixed(10));
  AdmissionTicket refused;  // admitted=false
  l.Release(refused, true);
  auto t = l.TryAdmit(RequestClass::kNormal, "acme");
  ASSERT_TRUE(t.admitted);
  l.Release(t, true);
  l.Release(t, true);  // a caller bug: counted, not applied
  AdmissionTicket forged{.admitted = true, .cls = RequestClass::kBulk, .org_slot = 999999, .start_nanos = 0};
  l.Release(forged, false);
  auto st = l.Stats();
  EXPECT_EQ(st.inflight, 0);
  for (auto v : st.inflight_by_class) EXPECT_EQ(v, 0);
  EXPECT_EQ(l.org_inflight(t.org_slot), 0);
  EXPECT_EQ(st.release_underflows, 2);
  EXPECT_EQ(Fill(l, RequestClass::kInteractive).size(), 10u);  // nothing leaked or double-freed
}

// Runs `rounds` rounds: admit as many normal requests as the limit allows, let `rtt` pass, release.
void Drive(Limiter& l, ManualClock& clock, int rounds, milliseconds rtt, bool ok = true) {
  for (int i = 0; i < rounds; ++i) {
    auto tickets = Fill(l, RequestClass::kInteractive);
    clock.Advance(rtt);
    ReleaseAll(l, tickets, ok);
  }
}

TEST(Limiter, LimitGrowsWithFlatLatencyAndShrinksWhenItRises) {
  ManualClock clock;
  LimiterOptions o;
  o.window_min_nanos = 50'000'000;
  Limiter l(clock, std::move(o));
  const int start = l.limit();
  Drive(l, clock, 300, milliseconds(10));
  const int grown = l.limit();
  EXPECT_GT(grown, start * 2);
  EXPECT_GT(l.Stats().windows, 20);
  Drive(l, clock, 100, milliseconds(40));
  EXPECT_LT(l.limit(), grown / 2);
  EXPECT_GE(l.limit(), 20);  // Gradient2's min_limit
}

TEST(Limiter, DropsShrinkTheLimit) {
  ManualClock clock;
  Limiter l(clock);
  Drive(l, clock, 200, milliseconds(10));
  const int grown = l.limit();
  Drive(l, clock, 20, milliseconds(10), /*ok=*/false);
  EXPECT_LT(l.limit(), grown);
}

TEST(Limiter, RetryAfterFollowsLatency) {
  ManualClock clock;
  Limiter l(clock);
  EXPECT_EQ(l.RetryAfterSeconds(), 1);
  Drive(l, clock, 20, milliseconds(10));
  EXPECT_EQ(l.RetryAfterSeconds(), 1);
  Drive(l, clock, 20, milliseconds(3000));
  EXPECT_GE(l.RetryAfterSeconds(), 6);
  EXPECT_LE(l.RetryAfterSeconds(), 30);
}

// 8 threads x 100k admit/release of random classes and organisations, on a limit that moves (real
// clock, Gradient2): afterwards every counter is back to zero and every attempt was either admitted
// or shed.
TEST(Limiter, StressCountersStayConsistent) {
  LimiterOptions o;
  o.window_min_nanos = 1'000'000;
  o.org_slots = 8;
  Limiter l(Clock::Real(), std::move(o));
  constexpr int kThreads = 8;
  constexpr int kOps = 100'000;
  std::atomic<int64_t> admitted{0}, shed{0}, negative_seen{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::minstd_rand rng(t + 1);
      const char* orgs[] = {"", "a", "b", "c", "d", "e"};
      std::vector<AdmissionTicket> held;
      for (int i = 0; i < kOps; ++i) {
        auto cls = static_cast<RequestClass>(rng() % 4);
        auto ticket = l.TryAdmit(cls, orgs[rng() % 6]);
        if (ticket.admitted) {
          ++admitted;
          held.push_back(ticket);
        } else {
          ++shed;
        }
        // Hold a few requests at a time so the limit is actually reached.
        if (held.size() > 8 || (rng() % 3 == 0 && !held.empty())) {
          l.Release(held.front(), rng() % 50 != 0);
          held.erase(held.begin());
        }
        if (l.inflight() < 0) ++negative_seen;
      }
      for (auto& h : held) l.Release(h, true);
    });
  }
  for (auto& th : threads) th.join();
  auto st = l.Stats();
  EXPECT_EQ(admitted + shed, kThreads * kOps);
  int64_t admitted_sum = 0, shed_sum = 0;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(st.inflight_by_class[i], 0);
    admitted_sum += st.admitted_by_class[i];
    shed_sum += st.shed_by_class[i];
  }
  EXPECT_EQ(admitted_sum, admitted.load());
  EXPECT_EQ(shed_sum, shed.load());
  EXPECT_EQ(st.inflight, 0);
  EXPECT_EQ(st.release_underflows, 0);
  EXPECT_EQ(negative_seen.load(), 0);
  for (uint32_t s = 1; s <= 8; ++s) EXPECT_EQ(l.org_inflight(s), 0);
  EXPECT_GT(shed.load(), 0);  // the limit was reached
}

// With a fixed limit, concurrent admission never lets more requests in than a class may have.
TEST(Limiter, ConcurrentAdmissionNeverExceedsTheCap) {
  ManualClock clock;
  Limiter l(clock, Fixed(16));
  std::atomic<int64_t> max_seen{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::minstd_rand rng(t + 100);
      std::vector<AdmissionTicket> held;
      for (int i = 0; i < 50'000; ++i) {
        auto cls = rng() % 2 ? RequestClass::kBulk : RequestClass::kInteractive;
        auto ticket = l.TryAdmit(cls, "");
        if (ticket.admitted) {
          int64_t now = l.inflight();
          int64_t cur = max_seen.load();
          while (now > cur && !max_seen.compare_exchange_weak(cur, now)) {
          }
          held.push_back(ticket);
        }
        if (held.size() > 3) {
          l.Release(held.back(), true);
          held.pop_back();
        }
      }
      for (auto& h : held) l.Release(h, true);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(max_seen.load(), 16);
  EXPECT_EQ(l.inflight(), 0);
}

}  // namespace
}  // namespace govern::limits
