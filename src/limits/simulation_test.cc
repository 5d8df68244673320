// A simulated server under a load past its capacity, driven by many closed-loop clients in virtual
// time (a discrete-event simulation on a ManualClock, so the run is deterministic and independent of
// the machine's speed). The server does `capacity` requests at once in `base` time; beyond that,
// requests queue and latency grows with the number in flight; a request slower than the client's
// timeout is a drop. The limit must settle near the capacity and follow it when the capacity changes.
#include <gtest/gtest.h>

#include <cstdio>
#include <queue>
#include <vector>

#include "limits/limiter.h"

namespace govern::limits {
namespace {

using net::AdmissionTicket;
using net::RequestClass;
constexpr int64_t kSimMs = 1'000'000;

struct Event {
  int64_t time;
  int64_t seq;  // ties broken by order of scheduling: deterministic
  int client;
  bool completion;
  bool ok;
  AdmissionTicket ticket;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

struct Phase {
  int capacity;
  int64_t base_nanos;
  int64_t seconds;
};

struct PhaseResult {
  double mean_limit = 0;  // over the second half of the phase
  int min_limit = 0;
  int max_limit = 0;
  double goodput = 0;    // successful requests per second over the second half
  double drop_rate = 0;  // drops / completions over the second half
};

// A group of identical closed-loop clients.
struct ClientGroup {
  int count;
  RequestClass cls = RequestClass::kNormal;
  std::string org;
  // Filled in by the run (over the second half of the last phase).
  int64_t attempts = 0;
  int64_t shed = 0;
  int64_t ok = 0;
  double ShedFraction() const {
    return attempts ? static_cast<double>(shed) / static_cast<double>(attempts) : 0;
  }
};

class Simulation {
 public:
  Simulation(std::unique_ptr<LimitAlgorithm> algo, std::vector<ClientGroup> groups)
      : groups_(std::move(groups)) {
    LimiterOptions o;
    o.algorithm = std::move(algo);
    limiter_ = std::make_unique<Limiter>(clock_, std::move(o));
    int c = 0;
    for (size_t g = 0; g < groups_.size(); ++g) {
      for (int i = 0; i < groups_[g].count; ++i, ++c) {
        group_of_.push_back(g);
        Schedule(clock_.MonotonicNanos() + c * 10'000, c, false, true, {});
      }
    }
  }

  PhaseResult Run(const Phase& p) {
    const int64_t start = clock_.MonotonicNanos();
    const int64_t end = start + p.seconds * 1'000'000'000;
    const int64_t half = start + (end - start) / 2;
    const int64_t timeout = 5 * p.base_nanos;
    int64_t next_probe = start;
    double limit_sum = 0;
    int64_t probes = 0, ok_count = 0, drops = 0;
    PhaseResult r{0, INT32_MAX, 0, 0, 0};
    for (auto& g : groups_) g.attempts = g.shed = g.ok = 0;
    while (!events_.empty() && events_.top().time < end) {
      Event e = events_.top();
      events_.pop();
      clock_.Advance(std::chrono::nanoseconds(e.time - clock_.MonotonicNanos()));
      while (next_probe <= e.time) {  // sample the limit every 10 ms of virtual time
        if (next_probe >= half) {
          int l = limiter_->limit();
          limit_sum += l;
          ++probes;
          r.min_limit = std::min(r.min_limit, l);
          r.max_limit = std::max(r.max_limit, l);
        }
        next_probe += 10 * kSimMs;
      }
      ClientGroup& group = groups_[group_of_[static_cast<size_t>(e.client)]];
      const bool measure = e.time >= half;
      if (e.completion) {
        limiter_->Release(e.ticket, e.ok);
        if (measure) (e.ok ? ok_count : drops)++;
        if (measure && e.ok) ++group.ok;
        Schedule(e.time, e.client, false, true, {});  // the client sends its next request at once
        continue;
      }
      AdmissionTicket t = limiter_->TryAdmit(group.cls, group.org);
      if (measure) ++group.attempts;
      if (!t.admitted) {
        if (measure) ++group.shed;
        Schedule(e.time + 5 * p.base_nanos, e.client, false, true, {});  // shed: retry a little later
        continue;
      }
      if (t.cls == RequestClass::kHealth) {  // a probe costs the server nothing measurable
        limiter_->Release(t, true);
        if (measure) ++group.ok;
        Schedule(e.time + 100 * kSimMs, e.client, false, true, {});
        continue;
      }
      // Latency grows with what is in flight past the capacity (a queue in front of `capacity` workers).
      const int64_t n = limiter_->inflight();
      int64_t latency = p.base_nanos * std::max<int64_t>(n, p.capacity) / p.capacity;
      bool ok = latency <= timeout;
      Schedule(e.time + (ok ? latency : timeout), e.client, true, ok, t);
    }
    const double secs = static_cast<double>(end - half) / 1e9;
    r.mean_limit = probes ? limit_sum / static_cast<double>(probes) : 0;
    r.goodput = static_cast<double>(ok_count) / secs;
    r.drop_rate = ok_count + drops ? static_cast<double>(drops) / static_cast<double>(ok_count + drops) : 0;
    std::printf("capacity=%d mean_limit=%.1f min=%d max=%d goodput=%.0f/s (capacity %.0f/s) drops=%.3f\n",
                p.capacity, r.mean_limit, r.min_limit, r.max_limit, r.goodput,
                p.capacity * 1e9 / static_cast<double>(p.base_nanos), r.drop_rate);
    return r;
  }

  Limiter& limiter() { return *limiter_; }
  const ClientGroup& group(size_t i) const { return groups_[i]; }

 private:
  void Schedule(int64_t time, int client, bool completion, bool ok, AdmissionTicket t) {
    events_.push(Event{time, seq_++, client, completion, ok, t});
  }

  ManualClock clock_;
  std::vector<ClientGroup> groups_;
  std::vector<size_t> group_of_;
  std::unique_ptr<Limiter> limiter_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  int64_t seq_ = 0;
};

void ExpectNear(const PhaseResult& r, const Phase& p) {
  const double capacity_rate = p.capacity * 1e9 / static_cast<double>(p.base_nanos);
  // The limit settles near the capacity: enough to keep the server busy, not so much that requests
  // queue into timeouts.
  EXPECT_GE(r.mean_limit, 0.8 * p.capacity);
  EXPECT_LE(r.mean_limit, 2.0 * p.capacity);
  EXPECT_GE(r.goodput, 0.75 * capacity_rate);
  EXPECT_LE(r.drop_rate, 0.05);
}

TEST(Simulation, Gradient2ConvergesNearCapacityAndFollowsIt) {
  Simulation sim(std::make_unique<Gradient2Limit>(),
                 {ClientGroup{.count = 400, .cls = RequestClass::kNormal, .org = ""}});
  Phase big{.capacity = 150, .base_nanos = 10 * kSimMs, .seconds = 40};
  ExpectNear(sim.Run(big), big);
  Phase small{.capacity = 40, .base_nanos = 10 * kSimMs, .seconds = 40};
  ExpectNear(sim.Run(small), small);
  Phase slow{.capacity = 100, .base_nanos = 25 * kSimMs, .seconds = 60};
  ExpectNear(sim.Run(slow), slow);
  EXPECT_EQ(sim.limiter().Stats().release_underflows, 0);
}

// Why the no-load probe exists: without it, Gradient2's long-term RTT learns the queue under sustained
// overload and the limit creeps far past the capacity (until the clients' own count stops it).
TEST(Simulation, Gradient2WithoutProbeCreepsUp) {
  Gradient2Options o;
  o.probe.interval_windows = 0;
  Simulation sim(std::make_unique<Gradient2Limit>(o),
                 {ClientGroup{.count = 400, .cls = RequestClass::kNormal, .org = ""}});
  Phase p{.capacity = 100, .base_nanos = 10 * kSimMs, .seconds = 40};
  EXPECT_GT(sim.Run(p).mean_limit, 3.0 * p.capacity);
}

TEST(Simulation, VegasConvergesNearCapacityAndFollowsIt) {
  Simulation sim(std::make_unique<VegasLimit>(),
                 {ClientGroup{.count = 400, .cls = RequestClass::kNormal, .org = ""}});
  Phase big{.capacity = 150, .base_nanos = 10 * kSimMs, .seconds = 40};
  ExpectNear(sim.Run(big), big);
  Phase small{.capacity = 40, .base_nanos = 10 * kSimMs, .seconds = 40};
  ExpectNear(sim.Run(small), small);
}

// Past capacity with mixed traffic: health probes are never shed, bulk gives way first, interactive
// keeps headroom, and an organisation flooding with bulk work does not starve another organisation.
TEST(Simulation, OverloadShedsBulkFirstAndKeepsOrganisationsApart) {
  Simulation sim(std::make_unique<Gradient2Limit>(),
                 {ClientGroup{.count = 300, .cls = RequestClass::kBulk, .org = "acme"},
                  ClientGroup{.count = 60, .cls = RequestClass::kNormal, .org = "globex"},
                  ClientGroup{.count = 20, .cls = RequestClass::kInteractive, .org = "initech"},
                  ClientGroup{.count = 5, .cls = RequestClass::kHealth, .org = ""}});
  Phase p{.capacity = 100, .base_nanos = 10 * kSimMs, .seconds = 40};
  sim.Run(p);
  const auto& bulk = sim.group(0);
  const auto& normal = sim.group(1);
  const auto& interactive = sim.group(2);
  const auto& health = sim.group(3);
  std::printf("shed: bulk %.3f normal %.3f interactive %.3f health %.3f\n", bulk.ShedFraction(),
              normal.ShedFraction(), interactive.ShedFraction(), health.ShedFraction());
  EXPECT_GT(health.attempts, 0);
  EXPECT_EQ(health.shed, 0);
  EXPECT_GT(bulk.ShedFraction(), 0.3);     // the flood is held back...
  EXPECT_LT(normal.ShedFraction(), 0.05);  // ...and the others get through
  EXPECT_LT(interactive.ShedFraction(), 0.05);
  EXPECT_LE(interactive.ShedFraction(), normal.ShedFraction());
  // Each of globex's and initech's clients completes several times what one of acme's does.
  EXPECT_GT(normal.ok / normal.count, 2 * (bulk.ok / bulk.count));
  EXPECT_GT(interactive.ok / interactive.count, 2 * (bulk.ok / bulk.count));
}

// Two organisations with the same class of work: acme floods with 300 clients, globex has 20. The
// organisation share keeps acme from crowding globex out.
TEST(Simulation, FloodingOrganisationDoesNotStarveAnother) {
  Simulation sim(std::make_unique<Gradient2Limit>(),
                 {ClientGroup{.count = 300, .cls = RequestClass::kNormal, .org = "acme"},
                  ClientGroup{.count = 20, .cls = RequestClass::kNormal, .org = "globex"}});
  Phase p{.capacity = 100, .base_nanos = 10 * kSimMs, .seconds = 40};
  sim.Run(p);
  const auto& acme = sim.group(0);
  const auto& globex = sim.group(1);
  std::printf("shed: acme %.3f globex %.3f; ok per client: acme %ld globex %ld\n", acme.ShedFraction(),
              globex.ShedFraction(), static_cast<long>(acme.ok / acme.count),
              static_cast<long>(globex.ok / globex.count));
  EXPECT_GT(acme.ShedFraction(), 0.1);
  EXPECT_LT(globex.ShedFraction(), acme.ShedFraction() / 2);
  EXPECT_GT(globex.ok / globex.count, 2 * (acme.ok / acme.count));
  EXPECT_GT(sim.limiter().Stats().shed_by_org_share, 0);
}

}  // namespace
}  // namespace govern::limits
