// The decision hot path allocates nothing: with a reused Outcome, deciding a request whose policies
// neither error nor build sets or records at run time makes no heap allocation. Its own binary,
// because it replaces global operator new.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "policy/cedar.h"
#include "policy/limits.h"

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

// A reused RequestBuilder (typed setters or its context JSON reader) and a Decider with limits whose
// counters exist: building the request and deciding allocate nothing.
TEST(AllocTest, BuilderAndLimitsAllocateNothing) {
  if (!GOVERN_COUNTS_ALLOCATIONS) GTEST_SKIP() << "allocation counting is off under AddressSanitizer";
  ManualClock clock;
  LimitOptions options;
  options.clock = &clock;
  auto decider = Decider::FromFiles(
      {{"policies.cedar",
        R"(permit(principal, action == Action::"call_tool", resource) when { context.args.max_results <= 10 };)"},
       {"limits.json", R"([{"id": "r", "rate": {"requests": 1000000, "per": "1s"}},
                           {"id": "b", "budget": {"amount_from": "context.cost_cents", "limit": 1000000, "per": "24h"}}])"}},
      options);
  ASSERT_TRUE(decider.ok()) << decider.status().message();
  RequestBuilder b;
  Outcome out;
  auto once = [&](int k) {
    b.Reset().Principal("Agent", "a1").Action("Action", "call_tool").Resource("Tool", "search");
    if (k % 2 == 0) {
      b.Long("cost_cents", 1)
          .BeginRecord("args")
          .Long("max_results", 5)
          .String("url", "https://example.com/a/b")
          .End();
      b.BeginSet("tags").String("", "x").String("", "y").End();
      b.Ip("src", "10.1.2.3").Decimal("price", "12.50").Datetime("at", "2024-10-15T11:38:02Z");
      b.Duration("wait", "1h30m").DurationMillis("ms", 5).DecimalScaled("d", 1).DatetimeMillis("t", 0);
    } else {
      ASSERT_TRUE(b.ContextJson(R"({"args": {"max_results": 5, "url": "https://example.com/a/b"},
                                    "cost_cents": 1, "tags": ["x", "y"], "q": "a \"quoted\" text"})")
                      .ok());
    }
    decider->Decide(b, &out);
    ASSERT_EQ(out.decision, Decision::kAllow);
  };
  for (int k = 0; k < 4; ++k) once(k);  // warms the pools and creates the counters
  long before = allocations.load();
  for (int k = 0; k < 100; ++k) once(k);
  EXPECT_EQ(allocations.load() - before, 0);
}

}  // namespace
}  // namespace govern::policy
