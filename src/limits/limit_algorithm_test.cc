// Gradient2 and Vegas fed with synthetic windows: grow on flat latency, shrink when it rises or on a
// drop, hold when app-limited, stay within bounds.
#include "limits/limit_algorithm.h"

#include <gtest/gtest.h>

namespace govern::limits {
namespace {

constexpr int64_t kMs = 1'000'000;

LimitSample Window(int64_t rtt, int64_t inflight, bool dropped = false) {
  return LimitSample{.avg_rtt_nanos = rtt,
                     .min_rtt_nanos = rtt,
                     .max_inflight = inflight,
                     .samples = 100,
                     .dropped = dropped};
}

template <typename Algo>
int RunWindows(Algo& algo, int windows, int64_t rtt) {
  int limit = algo.initial_limit();
  for (int i = 0; i < windows; ++i) limit = algo.Update(Window(rtt, limit));
  return limit;
}

TEST(Gradient2, GrowsWhileLatencyIsFlat) {
  Gradient2Limit g;
  int prev = g.initial_limit();
  for (int i = 0; i < 100; ++i) {
    int next = g.Update(Window(10 * kMs, prev));
    EXPECT_GE(next, prev);
    prev = next;
  }
  EXPECT_GT(prev, 100);
}

TEST(Gradient2, ShrinksWhenLatencyRises) {
  Gradient2Limit g;
  int limit = RunWindows(g, 100, 10 * kMs);
  int high = limit;
  for (int i = 0; i < 10; ++i) limit = g.Update(Window(40 * kMs, limit));
  EXPECT_LT(limit, high * 0.7);
  EXPECT_GE(limit, 20);  // min_limit
}

TEST(Gradient2, ToleratesSmallLatencyIncrease) {
  Gradient2Limit g;
  int limit = RunWindows(g, 50, 10 * kMs);
  int next = g.Update(Window(13 * kMs, limit));  // within rtt_tolerance 1.5
  EXPECT_GE(next, limit);
}

TEST(Gradient2, DropShrinksAndAppLimitedHolds) {
  Gradient2Limit g;
  int limit = RunWindows(g, 50, 10 * kMs);
  int after_drop = g.Update(Window(10 * kMs, limit, /*dropped=*/true));
  EXPECT_LT(after_drop, limit);
  EXPECT_NEAR(after_drop, limit * 0.9, 1.0);
  // Only a few requests in flight: the limit is not being tested, so it does not move.
  EXPECT_EQ(g.Update(Window(10 * kMs, after_drop / 4)), after_drop);
}

TEST(Gradient2, StaysWithinBounds) {
  Gradient2Options o;
  o.initial_limit = 5;
  o.min_limit = 10;
  o.max_limit = 50;
  Gradient2Limit g(o);
  EXPECT_EQ(g.initial_limit(), 5);
  int limit = RunWindows(g, 500, 10 * kMs);
  EXPECT_EQ(limit, 50);
  for (int i = 0; i < 100; ++i) limit = g.Update(Window(10 * kMs, limit, true));
  EXPECT_EQ(limit, 10);
}

TEST(Gradient2, ProbePinsTheLimitThenRestoresItWithANewBaseline) {
  Gradient2Options o;
  o.probe.interval_windows = 10;
  Gradient2Limit g(o);
  int limit = g.initial_limit();
  int pinned_windows = 0;
  int before_probe = 0;
  for (int i = 0; i < 10 && pinned_windows == 0; ++i) {
    int next = g.Update(Window(10 * kMs, limit));
    if (next == o.min_limit && limit > o.min_limit) {
      ++pinned_windows;
      before_probe = limit;
    }
    limit = next;
  }
  ASSERT_EQ(pinned_windows, 1);
  EXPECT_EQ(g.Update(Window(30 * kMs, limit)), o.min_limit);  // draining window: still pinned
  // The measuring window sees 5 ms at low concurrency: the baseline becomes 5 ms and the limit returns.
  EXPECT_GE(g.Update(Window(5 * kMs, limit)), before_probe);
  EXPECT_DOUBLE_EQ(g.long_rtt_nanos(), 5.0 * kMs);
}

TEST(Vegas, GrowsWhenFlatShrinksWhenQueueing) {
  VegasLimit v;
  int limit = RunWindows(v, 60, 10 * kMs);
  EXPECT_GT(limit, 60);
  int high = limit;
  for (int i = 0; i < 10; ++i) limit = v.Update(Window(30 * kMs, limit));
  EXPECT_LT(limit, high);
  int before = limit;
  EXPECT_LT(v.Update(Window(30 * kMs, limit, true)), before);
}

TEST(FixedLimit, NeverMoves) {
  FixedLimit f(7);
  EXPECT_EQ(RunWindows(f, 10, kMs), 7);
  EXPECT_EQ(f.Update(Window(100 * kMs, 7, true)), 7);
}

}  // namespace
}  // namespace govern::limits
