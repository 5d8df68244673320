// The decision hot path allocates nothing: with a reused Outcome, deciding a request whose policies
// neither error nor build sets or records at run time makes no heap allocation. Its own binary,
// because it replaces global operator new.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "policy/cedar.h"

namespace {
std::atomic<long> allocations{0};
}  // namespace

// AddressSanitizer owns operator new, so the counting replacement exists only without it.
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

namespace govern::policy {
namespace {

TEST(AllocTest, AuthorizeAllocatesNothing) {
  if (!GOVERN_COUNTS_ALLOCATIONS) GTEST_SKIP() << "allocation counting is off under AddressSanitizer";
  auto set = PolicySet::Parse(R"(
    forbid(principal, action == Action::"call_tool", resource == Tool::"shell") unless { principal in Group::"admins" };
    forbid(principal, action, resource) when { context.cost_cents > 500 };
    forbid(principal, action, resource) when { context has args.url && context.args.url like "*internal.corp*" };
    permit(principal == Agent::"a1", action == Action::"call_tool", resource in ToolSet::"s")
      when { context.args.max_results <= 10 && ["a", "b"].contains(context.mode) && ip("10.0.0.1").isLoopback() == false
             && decimal("1.5").lessThan(decimal("2.0")) && datetime("2024-01-01") < datetime("2024-01-02") };
    permit(principal in Team::"t", action, resource) when { principal.tier >= 1 };)");
  ASSERT_TRUE(set.ok()) << set.status().message();
  auto ents = Entities::FromJson(R"([
    {"uid": {"type": "Agent", "id": "a1"}, "attrs": {"tier": 2}, "parents": [{"type": "Team", "id": "t"}]},
    {"uid": {"type": "Tool", "id": "search"}, "attrs": {}, "parents": [{"type": "ToolSet", "id": "s"}]}])");
  ASSERT_TRUE(ents.ok());
  auto req = Request::Make(
      {"Agent", "a1"}, {"Action", "call_tool"}, {"Tool", "search"},
      R"({"args": {"max_results": 5, "url": "https://example.com"}, "cost_cents": 1, "mode": "a"})");
  ASSERT_TRUE(req.ok());
  Outcome out;
  Authorize(*set, *ents, *req, &out);  // warms the Outcome's vectors
  ASSERT_EQ(out.decision, Decision::kAllow);
  ASSERT_EQ(out.reason.size(), 2u);
  ASSERT_TRUE(out.errors.empty());
  long before = allocations.load();
  for (int k = 0; k < 100; ++k) Authorize(*set, *ents, *req, &out);
  EXPECT_EQ(allocations.load() - before, 0);
  EXPECT_EQ(out.decision, Decision::kAllow);
}

}  // namespace
}  // namespace govern::policy
