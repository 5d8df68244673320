#include "services/gateway/budget.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "base/log.h"
#include "db/connection.h"
#include "db/pool.h"
#include "gateway/json_util.h"

namespace govern::gateway {

struct BudgetBook::Lease {
  size_t budget = 0;
  std::string period;
  // All guarded by the book's mutex.
  int64_t held = 0;      // granted to this replica from the budget's row
  int64_t spent = 0;     // settled cost
  int64_t reserved = 0;  // held by requests in flight
  // Admitted requests not yet settled. With reserve 0 they hold nothing, yet their cost is still to
  // come: a lease with tickets out is neither released nor forgotten (its period may have ended).
  int64_t tickets = 0;
  int64_t reported = 0;        // `spent` as last written to the database
  bool registered = false;     // this replica has a lease row for it
  int64_t valid_until_ns = 0;  // monotonic; spending stops after it until the next renewal
};

namespace {

using Json = nlohmann::json;

Result<int64_t> Micros(const Json& obj, const char* key, std::string_view path, bool required) {
  GOVERN_ASSIGN_OR_RETURN(auto v, detail::OptNumber(obj, key, path));
  if (!v) {
    if (required) return InvalidArgument(std::string(path) + "." + key + " is required");
    return int64_t{-1};
  }
  if (!(*v >= 0) || *v > 9e12) return InvalidArgument(std::string(path) + "." + key + " must be 0 or more");
  return CostToMicros(*v);
}

}  // namespace

int64_t CostToMicros(double cost) {
  if (!(cost > 0)) return 0;
  return static_cast<int64_t>(std::llround(cost * 1e6));
}

std::string PeriodKey(BudgetPeriod period, int64_t unix_micros) {
  if (period == BudgetPeriod::kTotal) return "total";
  time_t secs = static_cast<time_t>(unix_micros / 1'000'000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[32];
  switch (period) {
    case BudgetPeriod::kHour:
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                    tm.tm_hour);
      break;
    case BudgetPeriod::kDay:
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
      break;
    default:
      std::snprintf(buf, sizeof buf, "%04d-%02d", tm.tm_year + 1900, tm.tm_mon + 1);
  }
  return buf;
}

Result<std::vector<BudgetConfig>> ParseBudgets(std::string_view routes_json) {
  GOVERN_ASSIGN_OR_RETURN(Json j, detail::ParseJson(routes_json, "gateway config"));
  std::vector<BudgetConfig> out;
  if (!j.is_object()) return out;
  auto it = j.find("budgets");
  if (it == j.end()) return out;
  if (!it->is_array()) return InvalidArgument("gateway config: budgets must be an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& e = (*it)[i];
    std::string path = "budgets[" + std::to_string(i) + "]";
    if (!e.is_object()) return InvalidArgument(path + " must be an object");
    BudgetConfig b;
    GOVERN_ASSIGN_OR_RETURN(b.id, detail::ReqString(e, "id", path));
    // Refusals name the budget as "budget <id> ..." (governance.cc reads it back): no spaces or colons.
    if (b.id.empty() || b.id.size() > 200 || b.id.find_first_of(" :\t\n") != std::string::npos)
      return InvalidArgument(path + ".id must be 1 to 200 characters without spaces or colons");
    for (const auto& other : out) {
      if (other.id == b.id) return InvalidArgument(path + ".id " + b.id + " is used twice");
    }
    GOVERN_ASSIGN_OR_RETURN(std::string scope, detail::ReqString(e, "scope", path));
    if (scope == "org") {
      b.scope = BudgetScope::kOrg;
      GOVERN_ASSIGN_OR_RETURN(b.match, detail::ReqString(e, "org", path));
    } else if (scope == "key") {
      b.scope = BudgetScope::kKey;
      GOVERN_ASSIGN_OR_RETURN(b.match, detail::ReqString(e, "key", path));
      if (b.match.rfind("gvg_", 0) != 0) return InvalidArgument(path + ".key must be a gvg_ virtual key");
    } else if (scope == "principal") {
      b.scope = BudgetScope::kPrincipal;
      GOVERN_ASSIGN_OR_RETURN(b.match, detail::ReqString(e, "principal", path));
      if (b.match.rfind("Agent:", 0) != 0 && b.match.rfind("User:", 0) != 0)
        return InvalidArgument(path + ".principal must be Agent:<id> or User:<id>");
    } else if (scope == "team") {
      b.scope = BudgetScope::kTeam;
      auto m = e.find("members");
      if (m == e.end() || !m->is_array() || m->empty())
        return InvalidArgument(path + ".members must be a non-empty array of keys and principals");
      for (const Json& member : *m) {
        if (!member.is_string()) return InvalidArgument(path + ".members must hold strings");
        b.members.push_back(member.get<std::string>());
      }
    } else {
      return InvalidArgument(path + ".scope must be org, key, team or principal");
    }
    GOVERN_ASSIGN_OR_RETURN(auto period, detail::OptString(e, "period", path));
    std::string p = period.value_or("month");
    if (p == "hour") {
      b.period = BudgetPeriod::kHour;
    } else if (p == "day") {
      b.period = BudgetPeriod::kDay;
    } else if (p == "month") {
      b.period = BudgetPeriod::kMonth;
    } else if (p == "total") {
      b.period = BudgetPeriod::kTotal;
    } else {
      return InvalidArgument(path + ".period must be hour, day, month or total");
    }
    GOVERN_ASSIGN_OR_RETURN(b.limit_micros, Micros(e, "limit", path, true));
    GOVERN_ASSIGN_OR_RETURN(int64_t lease, Micros(e, "lease", path, false));
    GOVERN_ASSIGN_OR_RETURN(int64_t reserve, Micros(e, "reserve", path, false));
    b.lease_micros = lease > 0 ? lease : std::max<int64_t>(1, b.limit_micros / 10);
    b.reserve_micros = std::max<int64_t>(0, reserve);
    out.push_back(std::move(b));
  }
  return out;
}

BudgetBook::BudgetBook(std::vector<BudgetConfig> budgets, BudgetOptions options)
    : budgets_(std::move(budgets)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : Clock::Real()) {}

BudgetBook::~BudgetBook() = default;

bool BudgetBook::Applies(const BudgetConfig& b, const BudgetSubject& who) const {
  switch (b.scope) {
    case BudgetScope::kOrg:
      return who.org == b.match;
    case BudgetScope::kKey:
      return !who.key.empty() && who.key == b.match;
    case BudgetScope::kPrincipal:
      return !who.principal.empty() && who.principal == b.match;
    case BudgetScope::kTeam:
      for (const std::string& m : b.members) {
        if ((!who.key.empty() && m == who.key) || (!who.principal.empty() && m == who.principal)) return true;
      }
      return false;
  }
  return false;
}

std::shared_ptr<BudgetBook::Lease> BudgetBook::LeaseFor(size_t budget, const std::string& period) {
  auto& slot = leases_[{budget, period}];
  if (!slot) {
    slot = std::make_shared<Lease>();
    slot->budget = budget;
    slot->period = period;
  }
  return slot;
}

Result<BudgetBook::Ticket> BudgetBook::Admit(const BudgetSubject& who) {
  Ticket t;
  if (budgets_.empty()) return t;
  int64_t now_us = clock_.UnixMicros();
  int64_t now_ns = clock_.MonotonicNanos();
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < budgets_.size(); ++i) {
    const BudgetConfig& b = budgets_[i];
    if (!Applies(b, who)) continue;
    std::shared_ptr<Lease> lease = LeaseFor(i, PeriodKey(b.period, now_us));
    if (now_ns >= lease->valid_until_ns)
      return Unavailable("budget " + b.id +
                         ": no current spend lease (the budget store has not been reached)");
    // A reserve of 0 still needs some room: a lease spent to its end admits nothing more.
    int64_t need = std::max<int64_t>(1, b.reserve_micros);
    if (lease->held - lease->spent - lease->reserved < need)
      return ResourceExhausted("budget " + b.id + " is exhausted");
    t.held.emplace_back(std::move(lease), b.reserve_micros);
  }
  for (auto& [lease, amount] : t.held) {
    lease->reserved += amount;
    ++lease->tickets;
  }
  return t;
}

void BudgetBook::Settle(Ticket& ticket, double cost) {
  if (ticket.held.empty()) return;
  int64_t micros = CostToMicros(cost);
  std::lock_guard lock(mu_);
  for (auto& [lease, amount] : ticket.held) {
    lease->reserved -= amount;
    --lease->tickets;
    lease->spent += micros;
  }
  ticket.held.clear();
}

BudgetBook::View BudgetBook::ViewOf(std::string_view budget_id) const {
  View v;
  int64_t now_us = clock_.UnixMicros();
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < budgets_.size(); ++i) {
    if (budgets_[i].id != budget_id) continue;
    auto it = leases_.find({i, PeriodKey(budgets_[i].period, now_us)});
    if (it == leases_.end()) return v;
    const Lease& l = *it->second;
    v.held = l.held;
    v.spent = l.spent;
    v.reserved = l.reserved;
    v.valid = clock_.MonotonicNanos() < l.valid_until_ns;
  }
  return v;
}

void BudgetBook::GrantForBenchmark(std::string_view budget_id, int64_t micros) {
  int64_t now_us = clock_.UnixMicros();
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < budgets_.size(); ++i) {
    if (budgets_[i].id != budget_id) continue;
    auto lease = LeaseFor(i, PeriodKey(budgets_[i].period, now_us));
    lease->held += micros;
    lease->valid_until_ns = clock_.MonotonicNanos() + int64_t{3600} * 1'000'000'000;
  }
}

Status BudgetBook::SyncLease(db::Connection& conn, const std::shared_ptr<Lease>& lease, bool current,
                             bool release) {
  const BudgetConfig& b = budgets_[lease->budget];
  int64_t start_ns = clock_.MonotonicNanos();
  int64_t held, spent, reserved, reported, tickets;
  bool registered;
  {
    std::lock_guard lock(mu_);
    held = lease->held;
    spent = lease->spent;
    reserved = lease->reserved;
    tickets = lease->tickets;
    reported = lease->reported;
    registered = lease->registered;
  }
  // A lease with requests still in flight is kept until they settle (reserve 0: they hold nothing, but
  // their cost is still to be reported).
  if (release && (reserved != 0 || tickets != 0)) release = false;
  if (release && !registered && held == 0 && spent == 0) return OkStatus();  // never used
  int64_t new_held = held;
  const std::string ttl_s = std::to_string(static_cast<double>(options_.lease_ttl.count()) / 1000.0);
  Status s = conn.Transact([&](db::Connection& c) -> Status {
    int64_t h = held;
    GOVERN_RETURN_IF_ERROR(c.ExecPrepared("INSERT INTO gateway_budgets (budget_id, period, limit_micros) "
                                          "VALUES ($1, $2, $3) ON CONFLICT (budget_id, period) DO UPDATE "
                                          "SET limit_micros = EXCLUDED.limit_micros",
                                          db::Params(b.id, lease->period, b.limit_micros))
                               .status());
    // Other replicas' leases not renewed within the TTL: their unspent part goes back to the row.
    // (This statement also locks the row until commit, serialising the claims below.)
    GOVERN_RETURN_IF_ERROR(
        c.ExecPrepared(
             "WITH stale AS (DELETE FROM gateway_budget_leases WHERE budget_id = $1 AND period = $2 AND "
             "replica <> $3 AND renewed_at < now() - make_interval(secs => $4::float8) "
             "RETURNING GREATEST(held_micros - spent_micros, 0) AS unused) "
             "UPDATE gateway_budgets SET claimed_micros = claimed_micros - "
             "(SELECT COALESCE(sum(unused), 0) FROM stale)::bigint WHERE budget_id = $1 AND period = $2",
             db::Params(b.id, lease->period, options_.replica, ttl_s))
            .status());
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows mine,
        c.ExecPrepared("SELECT held_micros FROM gateway_budget_leases WHERE budget_id = $1 AND period = $2 "
                       "AND replica = $3",
                       db::Params(b.id, lease->period, options_.replica)));
    // Ours was taken back (this replica went unrenewed past the TTL): the row still counts what we had
    // reported as spent, nothing more.
    if (registered && mine.empty()) h = reported;
    GOVERN_ASSIGN_OR_RETURN(db::Rows row,
                            c.ExecPrepared("SELECT limit_micros, claimed_micros FROM gateway_budgets WHERE "
                                           "budget_id = $1 AND period = $2",
                                           db::Params(b.id, lease->period)));
    if (row.size() != 1) return Internal("gateway_budgets row vanished");
    GOVERN_ASSIGN_OR_RETURN(int64_t limit, row.Int64(0, 0));
    GOVERN_ASSIGN_OR_RETURN(int64_t claimed, row.Int64(0, 1));
    if (release) {
      // Past period: what was spent stays claimed, the rest goes back.
      claimed += spent - h;
      h = spent;
      GOVERN_RETURN_IF_ERROR(c.ExecPrepared("UPDATE gateway_budgets SET claimed_micros = $3, spent_micros = "
                                            "spent_micros + $4 WHERE budget_id = $1 AND period = $2",
                                            db::Params(b.id, lease->period, claimed, spent - reported))
                                 .status());
      GOVERN_RETURN_IF_ERROR(c.ExecPrepared("DELETE FROM gateway_budget_leases WHERE budget_id = $1 AND "
                                            "period = $2 AND replica = $3",
                                            db::Params(b.id, lease->period, options_.replica))
                                 .status());
      new_held = h;
      return OkStatus();
    }
    // Spend that ran past the lease (requests that cost more than their reservation) is claimed whatever
    // the limit says: it happened, and the other replicas must see it.
    int64_t overrun = std::max<int64_t>(0, spent + reserved - h);
    claimed += overrun;
    h += overrun;
    if (current) {
      int64_t room = h - spent - reserved;
      if (room < std::max<int64_t>(b.lease_micros / 2, std::max<int64_t>(1, b.reserve_micros))) {
        int64_t grant = std::min(b.lease_micros, std::max<int64_t>(0, limit - claimed));
        claimed += grant;
        h += grant;
      }
    }
    GOVERN_RETURN_IF_ERROR(c.ExecPrepared("UPDATE gateway_budgets SET claimed_micros = $3, spent_micros = "
                                          "spent_micros + $4 WHERE budget_id = $1 AND period = $2",
                                          db::Params(b.id, lease->period, claimed, spent - reported))
                               .status());
    GOVERN_RETURN_IF_ERROR(
        c.ExecPrepared("INSERT INTO gateway_budget_leases (budget_id, period, replica, held_micros, "
                       "spent_micros, renewed_at) VALUES ($1, $2, $3, $4, $5, now()) ON CONFLICT (budget_id, "
                       "period, replica) DO UPDATE SET held_micros = EXCLUDED.held_micros, spent_micros = "
                       "EXCLUDED.spent_micros, renewed_at = now()",
                       db::Params(b.id, lease->period, options_.replica, h, spent))
            .status());
    new_held = h;
    return OkStatus();
  });
  if (!s.ok()) return s.WithContext("budget " + b.id + " " + lease->period);
  std::lock_guard lock(mu_);
  lease->held = new_held;
  lease->reported = spent;
  lease->registered = !release;
  // The row counts a lease as live until its renewal is lease_ttl old; this replica stops spending from
  // it at half that, measured from before the renewal was sent.
  lease->valid_until_ns =
      release
          ? 0
          : start_ns + std::chrono::duration_cast<std::chrono::nanoseconds>(options_.lease_ttl).count() / 2;
  return OkStatus();
}

Status BudgetBook::SyncOnce(db::Connection& conn) {
  int64_t now_us = clock_.UnixMicros();
  int64_t ahead_us =
      now_us + std::chrono::duration_cast<std::chrono::microseconds>(options_.claim_ahead).count();
  std::vector<std::pair<std::shared_ptr<Lease>, bool>> work;  // lease, in a current (or next) period
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < budgets_.size(); ++i) {
      LeaseFor(i, PeriodKey(budgets_[i].period, now_us));
      LeaseFor(i, PeriodKey(budgets_[i].period, ahead_us));
    }
    for (auto& [key, lease] : leases_) {
      BudgetPeriod p = budgets_[key.first].period;
      bool current = key.second == PeriodKey(p, now_us) || key.second == PeriodKey(p, ahead_us);
      work.emplace_back(lease, current);
    }
  }
  Status first;
  for (auto& [lease, current] : work) {
    Status s = SyncLease(conn, lease, current, !current);
    if (!s.ok() && first.ok()) first = s;
  }
  std::lock_guard lock(mu_);
  for (auto it = leases_.begin(); it != leases_.end();) {
    BudgetPeriod p = budgets_[it->first.first].period;
    const Lease& l = *it->second;
    bool past = it->first.second != PeriodKey(p, now_us) && it->first.second != PeriodKey(p, ahead_us);
    if (past && !l.registered && l.reserved == 0 && l.tickets == 0 && l.spent == l.reported) {
      it = leases_.erase(it);
    } else {
      ++it;
    }
  }
  return first;
}

Status BudgetBook::ReleaseAll(db::Connection& conn) {
  std::vector<std::shared_ptr<Lease>> all;
  {
    std::lock_guard lock(mu_);
    for (auto& [key, lease] : leases_) all.push_back(lease);
  }
  Status first;
  for (auto& lease : all) {
    Status s = SyncLease(conn, lease, false, true);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

BudgetSync::BudgetSync(BudgetBook& book, db::Pool& pool, std::chrono::milliseconds interval)
    : book_(book), pool_(pool), interval_(interval) {}

BudgetSync::~BudgetSync() { Stop(); }

Status BudgetSync::Start() {
  Status first;
  {
    auto conn = pool_.Checkout();
    first = conn.ok() ? book_.SyncOnce(**conn) : conn.status();
  }
  thread_ = std::thread([this] { Loop(); });
  return first;
}

void BudgetSync::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, interval_, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    auto conn = pool_.Checkout();
    Status s = conn.ok() ? book_.SyncOnce(**conn) : conn.status();
    if (!s.ok()) log::Warn("gateway", "budget sync failed", {{"error", s.ToString()}});
    lock.lock();
  }
}

void BudgetSync::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (!thread_.joinable()) return;
  thread_.join();
  auto conn = pool_.Checkout();
  Status s = conn.ok() ? book_.ReleaseAll(**conn) : conn.status();
  if (!s.ok()) log::Warn("gateway", "budget leases not released", {{"error", s.ToString()}});
}

}  // namespace govern::gateway
