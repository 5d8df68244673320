// Budgets: spend per period (hour, day, month or in total) per virtual key, team, principal or
// organisation, enforced locally with no database statement on the request path and reconciled across
// gateway replicas through PostgreSQL in the background, by spend leases.
//
// A budget's PostgreSQL row (gateway_budgets: limit, claimed, spent per budget and period) is the one
// shared ledger. Each replica claims chunks of it (`lease`, default a tenth of the limit) in the
// background and spends locally from what it holds: a request is admitted only when, for every budget
// that applies to it, the replica's lease has room left (at least the budget's per-request `reserve`,
// which is held from admission until the request's cost is known). The sum of what replicas hold never
// exceeds the limit, so a budget overshoots only by what requests cost beyond their reservation; the
// exact bound, the lease expiry that keeps it when the database is unreachable, and what a crash does,
// are in docs/gateway.md ("Budgets").
//
// Amounts are integer micro-units of the price table's currency (1 = 10^-6), so replicas add exactly.
//
// Thread-safety: BudgetBook is safe from any number of threads (one mutex, held for a few map lookups on
// admission and settlement; SyncOnce takes it only to copy and to apply, never across a database
// statement). BudgetSync owns one background thread; Start/Stop from one owner thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/status.h"

namespace govern::db {
class Connection;
class Pool;
}  // namespace govern::db

namespace govern::gateway {

enum class BudgetScope { kOrg, kKey, kTeam, kPrincipal };
enum class BudgetPeriod { kHour, kDay, kMonth, kTotal };

struct BudgetConfig {
  std::string id;  // names the budget's row; unique
  BudgetScope scope = BudgetScope::kOrg;
  // kOrg: the organisation id; kKey: the whole virtual key (gvg_...); kPrincipal: "Agent:<id>" or
  // "User:<id>" (a Govern token's principal). kTeam: unused (see members).
  std::string match;
  std::vector<std::string> members;  // kTeam: virtual keys and principals ("Agent:<id>", "User:<id>")
  BudgetPeriod period = BudgetPeriod::kMonth;
  int64_t limit_micros = 0;
  int64_t lease_micros = 0;    // claimed from the row at a time
  int64_t reserve_micros = 0;  // held per request from admission until its cost is known
};

// The "budgets" array of the routes file:
//   [{"id", "scope": "org"|"key"|"team"|"principal", "org"|"key"|"principal"|"members",
//     "limit" (currency units), "period": "hour"|"day"|"month"|"total" (default month),
//     "lease" (default limit/10), "reserve" (default 0)}]
// Absent: none. InvalidArgument naming the entry.
Result<std::vector<BudgetConfig>> ParseBudgets(std::string_view routes_json);

// The period a moment falls in, in UTC: "2026-11-30T17" (hour), "2026-11-30" (day), "2026-11" (month),
// "total".
std::string PeriodKey(BudgetPeriod period, int64_t unix_micros);

int64_t CostToMicros(double cost);

// Who a request is charged to.
struct BudgetSubject {
  std::string_view org;
  std::string_view key;        // the virtual key; "" for a token
  std::string_view principal;  // "Agent:<id>", "User:<id>"; "" for a virtual key
};

struct BudgetOptions {
  std::string replica;  // this replica's name in gateway_budget_leases; unique among live replicas
  // A lease not renewed for this long is taken back by the other replicas; this replica stops spending
  // from a lease it could not renew for half of it.
  std::chrono::milliseconds lease_ttl{std::chrono::seconds(60)};
  // How far ahead of a period's start its first lease is claimed (set it to about two sync intervals,
  // so the new period has a lease when it begins).
  std::chrono::milliseconds claim_ahead{std::chrono::seconds(2)};
  const Clock* clock = nullptr;  // nullptr: Clock::Real()
};

class BudgetBook {
 public:
  BudgetBook(std::vector<BudgetConfig> budgets, BudgetOptions options);
  ~BudgetBook();
  BudgetBook(const BudgetBook&) = delete;
  BudgetBook& operator=(const BudgetBook&) = delete;

  struct Lease;
  // What an admitted request holds until it is settled. Move-only; settle it exactly once.
  struct Ticket {
    std::vector<std::pair<std::shared_ptr<Lease>, int64_t>> held;  // lease, amount reserved
    bool empty() const { return held.empty(); }
  };

  // Admits a request charged to `who`: ok with the reservations made (empty when no budget applies), or
  // ResourceExhausted whose message names the budget ("budget acme-month is exhausted"), or Unavailable
  // when a budget's lease is not current (never claimed, or not renewed for half the lease TTL).
  Result<Ticket> Admit(const BudgetSubject& who);
  // Replaces the ticket's reservations by the request's cost (in currency units). Clears the ticket.
  void Settle(Ticket& ticket, double cost);

  // One reconciliation with the database: reports spend, renews leases, claims more where a lease runs
  // low (or spend ran past it), takes back other replicas' expired leases, releases leases of past
  // periods. Runs a short transaction per lease; the book's mutex is not held across statements.
  Status SyncOnce(db::Connection& conn);
  // At shutdown (after the last settlement): reports spend and gives back what is unspent.
  Status ReleaseAll(db::Connection& conn);

  // For tests and the report: this replica's view of one budget in the current period.
  struct View {
    int64_t held = 0, spent = 0, reserved = 0;
    bool valid = false;  // renewed recently enough to spend from
  };
  View ViewOf(std::string_view budget_id) const;
  // Benchmarks only: grants this replica `micros` of the budget's current period locally, as if claimed.
  void GrantForBenchmark(std::string_view budget_id, int64_t micros);
  size_t size() const { return budgets_.size(); }

 private:
  struct Key;
  std::shared_ptr<Lease> LeaseFor(size_t budget, const std::string& period);
  Status SyncLease(db::Connection& conn, const std::shared_ptr<Lease>& lease, bool current, bool release);
  bool Applies(const BudgetConfig& b, const BudgetSubject& who) const;

  std::vector<BudgetConfig> budgets_;
  BudgetOptions options_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::map<std::pair<size_t, std::string>, std::shared_ptr<Lease>> leases_;  // (budget, period)
};

// Runs BudgetBook::SyncOnce every `interval` on a thread of its own, with a connection from `pool`;
// errors are logged (the leases keep serving until they expire). Stop releases the leases.
class BudgetSync {
 public:
  BudgetSync(BudgetBook& book, db::Pool& pool, std::chrono::milliseconds interval);
  ~BudgetSync();
  BudgetSync(const BudgetSync&) = delete;
  BudgetSync& operator=(const BudgetSync&) = delete;

  // One synchronous round (at start, so the first requests have leases), then the thread.
  Status Start();
  void Stop();

 private:
  void Loop();
  BudgetBook& book_;
  db::Pool& pool_;
  std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace govern::gateway
