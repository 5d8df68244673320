// BundleCache: hits only for the exact version, newer versions win, bounded by bytes (LRU).
#include "services/policy/bundle_cache.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace govern::policy_service {
namespace {

std::shared_ptr<const std::string> Bytes(size_t n, char c) {
  return std::make_shared<const std::string>(n, c);
}

TEST(BundleCacheTest, HitsOnlyTheVersionAsked) {
  BundleCache cache(1000);
  EXPECT_EQ(cache.Get("acme", 1), nullptr);
  cache.Put("acme", 1, Bytes(10, 'a'));
  ASSERT_NE(cache.Get("acme", 1), nullptr);
  EXPECT_EQ(*cache.Get("acme", 1), std::string(10, 'a'));
  // Another replica published version 2: this server reads 2 from PostgreSQL and misses.
  EXPECT_EQ(cache.Get("acme", 2), nullptr);
  EXPECT_EQ(cache.Get("globex", 1), nullptr);
  BundleCache::Stats st = cache.GetStats();
  EXPECT_EQ(st.hits, 2u);
  EXPECT_EQ(st.misses, 3u);
  EXPECT_EQ(st.entries, 1u);
  EXPECT_EQ(st.bytes, 10u);
}

TEST(BundleCacheTest, ANewerVersionReplacesAndAnOlderOneDoesNot) {
  BundleCache cache(1000);
  cache.Put("acme", 2, Bytes(10, '2'));
  cache.Put("acme", 1, Bytes(20, '1'));  // a slow fetch of the old version finishing late
  EXPECT_EQ(cache.Get("acme", 1), nullptr);
  ASSERT_NE(cache.Get("acme", 2), nullptr);
  cache.Put("acme", 3, Bytes(30, '3'));
  EXPECT_EQ(cache.Get("acme", 2), nullptr);
  ASSERT_NE(cache.Get("acme", 3), nullptr);
  EXPECT_EQ(cache.GetStats().entries, 1u);
  EXPECT_EQ(cache.GetStats().bytes, 30u);
}

TEST(BundleCacheTest, InvalidateForgetsTheOrganisation) {
  BundleCache cache(1000);
  cache.Put("acme", 4, Bytes(10, 'a'));
  cache.Put("globex", 1, Bytes(10, 'g'));
  cache.Invalidate("acme");
  cache.Invalidate("nobody");
  EXPECT_EQ(cache.Get("acme", 4), nullptr);
  EXPECT_NE(cache.Get("globex", 1), nullptr);
  EXPECT_EQ(cache.GetStats().bytes, 10u);
}

TEST(BundleCacheTest, StaysUnderItsBoundEvictingTheLeastRecentlyUsed) {
  BundleCache cache(100);
  cache.Put("a", 1, Bytes(40, 'a'));
  cache.Put("b", 1, Bytes(40, 'b'));
  ASSERT_NE(cache.Get("a", 1), nullptr);  // b is now the least recently used
  cache.Put("c", 1, Bytes(40, 'c'));
  EXPECT_NE(cache.Get("a", 1), nullptr);
  EXPECT_EQ(cache.Get("b", 1), nullptr);
  EXPECT_NE(cache.Get("c", 1), nullptr);
  EXPECT_LE(cache.GetStats().bytes, 100u);
  cache.Put("huge", 1, Bytes(101, 'h'));  // larger than the whole cache: not kept, nothing evicted
  EXPECT_EQ(cache.Get("huge", 1), nullptr);
  EXPECT_EQ(cache.GetStats().entries, 2u);
  // A bytes a reader still holds outlive their eviction.
  auto held = cache.Get("a", 1);
  cache.Invalidate("a");
  EXPECT_EQ(*held, std::string(40, 'a'));
}

TEST(BundleCacheTest, ManyThreadsAtOnce) {
  BundleCache cache(10000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      for (uint64_t v = 1; v <= 2000; ++v) {
        std::string org = "org" + std::to_string(v % 7);
        cache.Put(org, v, Bytes(100 + t, 'x'));
        if (auto b = cache.Get(org, v)) {
          EXPECT_GE(b->size(), 100u);
        }
        if (v % 13 == 0) cache.Invalidate(org);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(cache.GetStats().bytes, 10000u);
}

}  // namespace
}  // namespace govern::policy_service
