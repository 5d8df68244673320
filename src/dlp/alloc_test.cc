// The fast path allocates nothing: once a thread's scan state is warm, scanning or redacting a text
// without findings makes no heap allocation. Its own binary, because it replaces global operator new.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "dlp/rule_set.h"

namespace {
std::atomic<long> allocations{0};
}  // namespace

// AddressSanitizer owns operator new (and checks new/free pairing across libraries such as libhs), so
// the counting replacement exists only in builds without it; there the test is skipped.
#if defined(__SANITIZE_ADDRESS__)
#define GOVERN_COUNTS_ALLOCATIONS 0
#else
#define GOVERN_COUNTS_ALLOCATIONS 1
void* operator new(size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#endif

namespace govern::dlp {
namespace {

TEST(AllocTest, NoAllocationWithoutFindings) {
  if (!GOVERN_COUNTS_ALLOCATIONS) GTEST_SKIP() << "allocation counting is off under AddressSanitizer";
  auto rs = RuleSet::Compile(Policy{}).value();
  // Timestamps, versions and an order number that fails Luhn: raw matches the validators reject.
  const std::string clean =
      "2026-11-29T10:30:45.123Z INFO api request_id=3f9c2a71 path=/v1/orders/4821 status=200 latency_ms=37 "
      "version=1.4.25 order=1234567812345678 msg=\"please summarize the quarterly report\"";
  const std::string json = R"({"service":"api","status":200,"at":"2026-11-29T10:30:45Z","msg":"all good"})";
  std::string out;
  std::vector<Finding> findings;
  findings.reserve(4);
  for (int warm = 0; warm < 2; ++warm) {  // grow the pooled worker's buffers once
    rs->Redact(clean, &out);
    rs->Scan(clean, &findings);
    (void)rs->RedactJson(json, &out);
  }
  long before = allocations.load();
  for (int i = 0; i < 100; ++i) {
    EXPECT_FALSE(rs->Redact(clean, &out).changed);
    rs->Scan(clean, &findings);
    EXPECT_TRUE(findings.empty());
    auto r = rs->RedactJson(json, &out);
    EXPECT_TRUE(r.ok() && !r->changed);
  }
  EXPECT_EQ(allocations.load() - before, 0);
  // A finding does allocate (the output), which shows the counter works.
  rs->Redact("mail a@example.com", &out);
  EXPECT_GT(allocations.load() - before, 0);
}

}  // namespace
}  // namespace govern::dlp
