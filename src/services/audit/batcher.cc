// The append path: group commit of many organisations' entries in one transaction.
#include "services/audit/batcher.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "audit/merkle.h"
#include "base/log.h"
#include "base/thread_name.h"
#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "db/connection.h"
#include "db/error.h"
#include "db/pool.h"
#include "services/audit/store.h"

namespace govern::audit_service {
namespace {

// A PostgreSQL array literal of text values (every element quoted, '"' and '\\' escaped). Values hold
// no NUL (the parser refuses it).
std::string ArrayLiteral(const std::vector<std::string>& values) {
  size_t n = 2;
  for (const std::string& v : values) n += v.size() + 3;
  std::string out;
  out.reserve(n);
  out += '{';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += '"';
    for (char c : values[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

// The new entries as one multi-row INSERT (arrays unnested), so it can travel in the COMMIT pipeline.
constexpr std::string_view kInsertEntries =
    "INSERT INTO audit_entries (org, seq, idem_key, time, actor, action, target, outcome, details, "
    "prev_hash, "
    "entry_hash, leaf_hash) SELECT o, s, k, 'epoch'::timestamptz + t * interval '1 microsecond', a, ac, tg, "
    "oc, d, "
    "decode(p, 'hex'), decode(e, 'hex'), decode(l, 'hex') FROM unnest($1::text[], $2::bigint[], $3::text[], "
    "$4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], "
    "$12::text[]) AS v(o, s, k, t, a, ac, tg, oc, d, p, e, l)";

// The head locks: the first organisation's waiting, the others' only if free (SKIP LOCKED). A batch
// never waits while it holds a head lock, so transactions of several replicas over overlapping
// organisations never queue behind each other in chains (and never deadlock); the requests of heads
// that were busy go back to the front of their lane for its next batch.
constexpr std::string_view kLockFirstHead =
    "SELECT org, next_seq, head_hash, compact_range FROM audit_heads WHERE org = $1 FOR UPDATE";
constexpr std::string_view kLockFreeHeads =
    "SELECT org, next_seq, head_hash, compact_range FROM audit_heads WHERE org = ANY($1::text[]) "
    "AND org <> $2 FOR UPDATE SKIP LOCKED";
// Session settings of the batch transaction (set_config(..., true): this transaction only), in one
// statement. synchronous_commit: acknowledged means flushed, whatever the database or role defaults
// say (either this commit flushes, or the barrier after it does). plan_cache_mode: the statements take
// arrays whose contents (and the tables) change all the time; a generic plan made once (when the
// tables were empty, or from an organisation count that no longer holds) picked an index on `org`
// alone or a sequential scan and read the whole chain per batch. Planning each batch's statements
// with their actual arrays costs far less.
constexpr std::string_view kSettings =
    "SELECT set_config('synchronous_commit', $1, true), set_config('plan_cache_mode', 'force_custom_plan', "
    "true)";
const std::string kExisting =
    "SELECT " + std::string(kEntryColumns) +
    " FROM audit_entries JOIN unnest($1::text[], $2::text[]) AS k(korg, kidem) ON org = "
    "k.korg AND idem_key = k.kidem";
constexpr std::string_view kInsertNodes =
    "INSERT INTO audit_tree_nodes (org, level, idx, hash) SELECT o, l, i, decode(h, 'hex') "
    "FROM unnest($1::text[], $2::smallint[], $3::bigint[], $4::text[]) AS v(o, l, i, h)";
constexpr std::string_view kUpdateHeads =
    "UPDATE audit_heads h SET next_seq = v.n, head_hash = decode(v.hh, 'hex'), "
    "compact_range = decode(v.cr, 'hex'), updated_at = now() "
    "FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) AS v(org, n, hh, cr) WHERE h.org = v.org "
    // Without it the plan is a sequential scan of audit_heads, every dead row version included (the
    // heads are updated by every batch), under the head locks.
    "AND h.org = ANY($1::text[])";
// One head (every batch of a hot organisation), by its key: the generic plan is the primary key's.
constexpr std::string_view kUpdateOneHead =
    "UPDATE audit_heads SET next_seq = $2::bigint, head_hash = decode($3, 'hex'), "
    "compact_range = decode($4, 'hex'), updated_at = now() WHERE org = $1";
// The rest of the transaction's statements use their cached generic plans (see Attempt).
constexpr std::string_view kGenericPlans = "SELECT set_config('plan_cache_mode', 'force_generic_plan', true)";

// The batch under its head locks, in PostgreSQL (schema.cc, migration 4): lock, look keys up, seq and
// hashes, Merkle, INSERT, head UPDATE. Rows: ordinal, state, seq, prev, entry, leaf, and for state 'e'
// the stored entry's time, actor, action, target, outcome, details; then lock wait and hold (us).
constexpr std::string_view kAppend =
    "SELECT * FROM audit_append($1, $2::text[], $3::boolean, $4::integer, $5::text[], $6::text[], "
    "$7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[])";

// The durability barrier (Impl::Barrier) must write WAL of its own besides its commit record:
// PostgreSQL flushes at commit only a transaction that has an xid *and* wrote WAL before its commit
// record (RecordTransactionCommit); one that only took an xid (pg_current_xact_id()) commits
// asynchronously whatever synchronous_commit says, and so flushed nothing. A transactional logical
// message (no table, no lock, any role, any wal_level) takes the xid and writes one small record.
// Usual form: one statement in an implicit transaction, answering the synchronous_commit its commit
// runs under.
constexpr std::string_view kQuickBarrier =
    "SELECT pg_logical_emit_message(true, 'govern-audit-barrier', ''), "
    "current_setting('synchronous_commit')";

// Whether a commit under this synchronous_commit returns only after its commit record is flushed
// locally (every value but off; remote_* and on also wait for synchronous standbys, if any).
bool FlushesOnCommit(std::string_view synchronous_commit) {
  return synchronous_commit == "on" || synchronous_commit == "local" ||
         synchronous_commit == "remote_write" || synchronous_commit == "remote_apply";
}

int64_t Micros(int64_t from_nanos, int64_t to_nanos) { return (to_nanos - from_nanos) / 1000; }

}  // namespace

struct Batcher::Impl {
  struct Request {
    std::string org;
    std::vector<AppendInput> entries;
    Callback done;
    int64_t arrived_nanos = 0;
    AppendOutcome outcome;  // filled by a flush
  };
  struct Lane {
    std::deque<std::unique_ptr<Request>> queue;
    size_t queued_entries = 0;
    bool busy = false;  // a transaction of this lane holds (or waits for) head locks
  };
  // Phase timings of one flush, for Stats.
  struct Timing {
    int64_t lock_us = 0, compute_us = 0, commit_us = 0, flush_us = 0;
    size_t orgs = 0;
    size_t late_requests = 0;
    size_t lookups = 0;        // 1: the batch's keys were looked up (before or under the lock)
    size_t key_conflicts = 0;  // 1: the first attempt met a stored key and the batch ran once more
  };
  // Where a batch's transaction looks its idempotency keys up: not at all (a stored key fails the
  // INSERT), before waiting for the head, or once it holds the heads (then it sees every key).
  enum class Lookup { kNone, kBeforeLock, kUnderLock };
  // A batch committed with its head locks released, waiting for the durability barrier (RunDurable).
  struct Committed {
    std::vector<std::unique_ptr<Request>> batch;
    Timing timing;
    int64_t started = 0;    // when it was taken from its lane (monotonic nanoseconds)
    int64_t committed = 0;  // when its COMMIT returned
  };
  static constexpr std::chrono::nanoseconds kLookupAfterConflict = std::chrono::seconds(1);

  db::Pool* pool;
  BatcherOptions opt;
  const Clock* clock;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::vector<Lane> lanes;
  size_t queued_entries = 0;  // over all lanes
  size_t next_lane = 0;       // where the next free-lane search starts (fairness)
  bool stop = false;
  std::vector<std::thread> threads;
  // With flush_outside_lock: batches waiting for the next barrier, and the thread that runs it.
  std::vector<Committed> committed;
  std::condition_variable durable_cv;
  bool durable_stop = false;  // set once the lanes' threads have ended
  std::thread durable_thread;
  Stats stats;
  Stats logged;  // stats at the last log line
  int64_t last_log_nanos = 0;
  std::unordered_set<std::string> known_heads;  // heads committed to exist (never deleted)
  // Until then (monotonic nanoseconds) batches look their keys up before waiting for the head: set
  // when a batch met a stored key (a writer's retry), which often come in runs (a replica died and
  // its writers retry elsewhere). Otherwise new keys are not looked up at all (see Flush).
  int64_t lookup_until_nanos = 0;

  size_t LaneOf(std::string_view org) const { return std::hash<std::string_view>{}(org) % lanes.size(); }

  // A free lane with work, or -1. mu held.
  int FreeLane() {
    for (size_t i = 0; i < lanes.size(); ++i) {
      size_t l = (next_lane + i) % lanes.size();
      if (!lanes[l].busy && !lanes[l].queue.empty()) {
        next_lane = (l + 1) % lanes.size();
        return static_cast<int>(l);
      }
    }
    return -1;
  }

  // Takes up to max_batch entries (at least one request) from the lane. mu held.
  std::vector<std::unique_ptr<Request>> Take(Lane& lane) {
    std::vector<std::unique_ptr<Request>> batch;
    size_t n = 0;
    while (!lane.queue.empty() &&
           (batch.empty() || n + lane.queue.front()->entries.size() <= opt.max_batch)) {
      size_t k = lane.queue.front()->entries.size();
      n += k;
      lane.queued_entries -= k;
      queued_entries -= k;
      batch.push_back(std::move(lane.queue.front()));
      lane.queue.pop_front();
    }
    return batch;
  }

  void Run() {
    NameThisThread("audit-batch");
    std::unique_lock lk(mu);
    for (;;) {
      int l = -1;
      auto ready = [&] { return (l = FreeLane()) >= 0 || (stop && queued_entries == 0); };
      while (!ready()) {
        if (opt.stats_interval.count() > 0) {
          // Idle: still log the statistics of the last batches (the benchmark reads them per row).
          cv.wait_for(lk, opt.stats_interval);
          MaybeLogStats();
        } else {
          cv.wait(lk);
        }
      }
      if (l < 0) return;  // stopping, and nothing left
      Lane& lane = lanes[static_cast<size_t>(l)];
      lane.busy = true;
      // Optionally wait for company until the oldest entry has waited flush_interval or the batch is
      // full. By default (0) the lane flushes at once: what queues while it runs makes the next batch.
      while (!stop && opt.flush_interval.count() > 0 && lane.queued_entries < opt.max_batch &&
             !lane.queue.empty()) {
        int64_t deadline =
            lane.queue.front()->arrived_nanos + std::chrono::nanoseconds(opt.flush_interval).count();
        int64_t now = clock->MonotonicNanos();
        if (now >= deadline) break;
        cv.wait_for(lk, std::chrono::nanoseconds(deadline - now));
      }
      if (lane.queue.empty()) {
        lane.busy = false;
        continue;
      }
      std::vector<std::unique_ptr<Request>> batch = Take(lane);
      if (stop) cv.notify_all();  // threads waiting for the queue to drain
      const int64_t started = clock->MonotonicNanos();
      lk.unlock();
      Timing timing;
      std::vector<std::unique_ptr<Request>> deferred;
      bool released = false;
      // Frees the lane once this batch's head locks are released (its COMMIT returned), so the lane's
      // next batch can start. With flush_outside_lock this batch then waits for its flush on the
      // durability thread; without, its COMMIT itself waited for the flush.
      auto release_lane = [&] {
        if (released) return;
        released = true;
        std::lock_guard g(mu);
        // Deferred requests go back to the front, oldest first, for the lane's next batch.
        for (auto it = deferred.rbegin(); it != deferred.rend(); ++it) {
          size_t k = (*it)->entries.size();
          lane.queued_entries += k;
          queued_entries += k;
          lane.queue.push_front(std::move(*it));
        }
        deferred.clear();
        lane.busy = false;
        if (stop) {
          cv.notify_all();
        } else if (!lane.queue.empty()) {
          cv.notify_one();
        }
      };
      Status s = Flush(batch, deferred, timing, release_lane, lane);
      release_lane();
      if (s.ok() && opt.flush_outside_lock) {
        // Committed, not yet flushed: the durability thread's next barrier covers it (and every other
        // batch committed meanwhile), then acknowledges it. This thread goes on to the next batch.
        lk.lock();
        committed.push_back({std::move(batch), timing, started, clock->MonotonicNanos()});
        durable_cv.notify_one();
        continue;
      }
      Finish(batch, timing, started, s);
      lk.lock();
    }
  }

  // The durability thread: one barrier for every batch committed (head locks released) since the last
  // one began, then their acknowledgements. A barrier's commit record lies after the commit records of
  // the batches handed over before it started, so its flush covers them all: with lanes of three
  // replicas committing all the time, one barrier (one transaction, one round trip) per flush instead
  // of one per batch, and the lanes' threads never wait for a flush. A batch committed while a barrier
  // runs waits for the next one. A failed barrier fails its batches (Unavailable: stored but not known
  // to be durable; a retry with the same keys gets the original entries back).
  //
  // The thread keeps one connection for its barriers (taken at the first, given back after a failure),
  // so that a barrier never waits in the pool behind reads and the lanes: committed batches would fail
  // for want of a connection. A barrier that fails on the kept connection (it may have been closed
  // meanwhile) is tried once more on a new one. Every batch's callbacks run on this thread.
  void RunDurable() {
    NameThisThread("audit-sync");
    std::optional<db::Pool::Lease> lease;
    std::unique_lock lk(mu);
    for (;;) {
      durable_cv.wait(lk, [&] { return !committed.empty() || durable_stop; });
      if (committed.empty()) return;  // stopping, and nothing left
      std::vector<Committed> cohort = std::move(committed);
      committed.clear();
      lk.unlock();
      if (opt.before_barrier) opt.before_barrier(cohort.size());
      Status s;
      for (;;) {
        const bool fresh = !lease.has_value();
        if (fresh) {
          auto l = pool->Checkout();
          if (!l.ok()) {
            s = l.status();
            break;
          }
          lease.emplace(std::move(*l));
        }
        s = Barrier(**lease);
        if (s.ok()) break;
        lease.reset();  // perhaps broken: the pool discards it
        if (fresh) break;
      }
      const int64_t now = clock->MonotonicNanos();
      lk.lock();
      if (s.ok()) ++stats.barriers;
      lk.unlock();
      for (Committed& b : cohort) {
        b.timing.flush_us = Micros(b.committed, now);
        Finish(b.batch, b.timing, b.started, s);
      }
      lk.lock();
    }
  }

  // A batch's outcome: its statistics, then its callbacks. mu not held.
  void Finish(std::vector<std::unique_ptr<Request>>& batch, const Timing& timing, int64_t started,
              const Status& s) {
    {
      std::lock_guard lk(mu);
      if (s.ok()) {
        ++stats.batches;
        size_t entries = 0;
        for (auto& r : batch) {
          entries += r->entries.size();
          for (bool c : r->outcome.created) ++(c ? stats.entries_written : stats.entries_existing);
        }
        stats.requests += batch.size();
        stats.late_requests += timing.late_requests;
        stats.lookups += timing.lookups;
        stats.key_conflicts += timing.key_conflicts;
        stats.orgs += timing.orgs;
        stats.max_batch_entries = std::max<uint64_t>(stats.max_batch_entries, entries);
        stats.queue_us += static_cast<uint64_t>(Micros(batch.front()->arrived_nanos, started));
        stats.lock_us += static_cast<uint64_t>(timing.lock_us);
        stats.compute_us += static_cast<uint64_t>(timing.compute_us);
        stats.commit_us += static_cast<uint64_t>(timing.commit_us);
        stats.flush_us += static_cast<uint64_t>(timing.flush_us);
      } else {
        ++stats.batches_failed;
      }
      MaybeLogStats();
    }
    if (!s.ok()) {
      log::Warn("audit", "append batch failed",
                {{"requests", static_cast<int64_t>(batch.size())}, {"error", s.message()}});
    }
    for (auto& r : batch) {
      if (s.ok()) {
        r->done(std::move(r->outcome));
      } else {
        r->done(Unavailable("the audit store could not commit this append (" + s.message() +
                            "); retry with the same idempotency keys"));
      }
    }
  }

  // One info line per stats_interval with the means of the interval (the benchmark reads them). mu held.
  void MaybeLogStats() {
    if (opt.stats_interval.count() <= 0) return;
    int64_t now = clock->MonotonicNanos();
    if (now - last_log_nanos < std::chrono::nanoseconds(opt.stats_interval).count()) return;
    last_log_nanos = now;
    const Stats& a = stats;
    const Stats& b = logged;
    uint64_t n = a.batches - b.batches;
    if (n == 0 && a.batches_failed == b.batches_failed && a.queue_full == b.queue_full) return;
    auto mean = [&](uint64_t x, uint64_t y) {
      return n == 0 ? int64_t{0} : static_cast<int64_t>((x - y) / n);
    };
    log::Info("audit", "append batches",
              {{"batches", static_cast<int64_t>(n)},
               {"failed", static_cast<int64_t>(a.batches_failed - b.batches_failed)},
               {"entries", static_cast<int64_t>(a.entries_written + a.entries_existing - b.entries_written -
                                                b.entries_existing)},
               {"entries_per_batch",
                mean(a.entries_written + a.entries_existing, b.entries_written + b.entries_existing)},
               {"requests_per_batch", mean(a.requests, b.requests)},
               {"late_requests", static_cast<int64_t>(a.late_requests - b.late_requests)},
               {"lookups", static_cast<int64_t>(a.lookups - b.lookups)},
               {"key_conflicts", static_cast<int64_t>(a.key_conflicts - b.key_conflicts)},
               {"orgs_per_batch", mean(a.orgs, b.orgs)},
               {"max_batch", static_cast<int64_t>(a.max_batch_entries)},
               {"queue_us", mean(a.queue_us, b.queue_us)},
               {"lock_us", mean(a.lock_us, b.lock_us)},
               {"compute_us", mean(a.compute_us, b.compute_us)},
               {"commit_us", mean(a.commit_us, b.commit_us)},
               {"flush_us", mean(a.flush_us, b.flush_us)},
               {"barriers", static_cast<int64_t>(a.barriers - b.barriers)},
               {"queue_full", static_cast<int64_t>(a.queue_full - b.queue_full)}});
    logged = stats;
    stats.max_batch_entries = 0;
  }

  Status EnsureHeads(db::Connection& c, const std::vector<std::string>& orgs) {
    std::vector<std::string> missing;
    {
      std::lock_guard lk(mu);
      for (const std::string& o : orgs) {
        if (!known_heads.contains(o)) missing.push_back(o);
      }
    }
    if (missing.empty()) return OkStatus();
    // Its own statement, before the batch transaction: it takes no lock that the batch could wait on
    // in another order.
    GOVERN_RETURN_IF_ERROR(
        c.ExecPrepared("INSERT INTO audit_heads (org) SELECT unnest($1::text[]) ORDER BY 1 "
                       "ON CONFLICT DO NOTHING",
                       db::Params(ArrayLiteral(missing)))
            .status());
    std::lock_guard lk(mu);
    for (std::string& o : missing) known_heads.insert(std::move(o));
    return OkStatus();
  }

  // The columns of the new entries that do not depend on the chain head, as array literals. Built
  // before the head locks are taken; rebuilt under them only when some keys turn out to be stored.
  struct FixedColumns {
    std::vector<std::string> org, key, time, actor, action, target, outcome, details;
    void Add(const std::string& o, const AppendInput& in, int64_t now_micros) {
      org.push_back(o);
      key.push_back(in.idempotency_key);
      time.push_back(std::to_string(in.time_micros.value_or(now_micros)));
      actor.push_back(in.actor);
      action.push_back(in.action);
      target.push_back(in.target);
      outcome.push_back(in.outcome);
      details.push_back(in.details);
    }
    std::vector<std::string> Literals() const {
      std::vector<std::string> out;
      for (const auto* col : {&org, &key, &time, &actor, &action, &target, &outcome, &details})
        out.push_back(ArrayLiteral(*col));
      return out;
    }
  };

  // Takes, from the lane's queue, requests for heads this batch holds that arrived while it waited for
  // the locks (late joiners), up to `room` entries; none whose key is in `seen` (already in the batch)
  // or repeats one of its own. Their keys were not looked up under the locks: a key stored already (a
  // retry) makes the INSERT fail with a unique violation, and the batch runs again without them
  // joining late (Flush).
  template <typename Held>
  std::vector<std::unique_ptr<Request>> TakeLate(Lane& lane, const Held& held, size_t room,
                                                 std::unordered_set<std::string>& seen) {
    std::vector<std::unique_ptr<Request>> out;
    std::lock_guard g(mu);
    for (auto it = lane.queue.begin(); it != lane.queue.end() && room > 0;) {
      Request& r = **it;
      if (!held.contains(r.org) || r.entries.size() > room) {
        ++it;
        continue;
      }
      std::vector<std::string> ks;
      bool dup = false;
      std::unordered_set<std::string> own;
      for (const AppendInput& in : r.entries) {
        std::string k = r.org + '\n' + in.idempotency_key;
        if (seen.contains(k) || !own.insert(k).second) {
          dup = true;
          break;
        }
        ks.push_back(std::move(k));
      }
      if (dup) {
        ++it;
        continue;
      }
      for (std::string& k : ks) seen.insert(std::move(k));
      size_t n = r.entries.size();
      room -= n;
      lane.queued_entries -= n;
      queued_entries -= n;
      out.push_back(std::move(*it));
      it = lane.queue.erase(it);
    }
    return out;
  }

  // Runs the batch's transaction. Calls `release_lane` as soon as its head locks are released.
  // Requests whose heads were busy are moved from `batch` to `deferred` (not failed: the caller queues
  // them again); requests of `lane` for the heads it holds may join it late (TakeLate).
  Status Flush(std::vector<std::unique_ptr<Request>>& batch, std::vector<std::unique_ptr<Request>>& deferred,
               Timing& timing, const std::function<void()>& release_lane, Lane& lane) {
    auto lease = pool->Checkout();
    if (!lease.ok()) return lease.status();
    db::Connection& c = **lease;
    if (opt.append_in_database) {
      timing.lookups = 1;  // audit_append always looks the keys up
      Status s = AttemptInDatabase(c, batch, deferred, timing, /*lookup_first=*/true);
      if (!s.ok() && c.InTransaction()) (void)c.Exec("ROLLBACK");
      if (!s.ok() && db::SqlStateOf(s) == "23505") {
        timing.key_conflicts = 1;
        // A key was stored (a writer's retry racing its first attempt on another replica) after the
        // lookup ran, before this batch got the head: once more, every key looked up under the locks.
        s = AttemptInDatabase(c, batch, deferred, timing, /*lookup_first=*/false);
        if (!s.ok() && c.InTransaction()) (void)c.Exec("ROLLBACK");
      }
      release_lane();
      return s;
    }
    bool late_taken = false;
    // Keys are normally not looked up: the unique index on (org, idempotency key) finds a stored one
    // anyway, failing the INSERT. The lookup (planned for every batch's arrays) cost PostgreSQL more
    // CPU per entry than the INSERT itself at 1 organisation x 64 writers, to find nothing. Only for a
    // while after a batch met a stored key are keys looked up first (before the lock wait).
    Lookup lookup = Lookup::kNone;
    {
      std::lock_guard g(mu);
      if (clock->MonotonicNanos() < lookup_until_nanos) lookup = Lookup::kBeforeLock;
    }
    timing.lookups = lookup == Lookup::kNone ? 0 : 1;
    Status s = Attempt(c, batch, deferred, timing, &lane, &late_taken, lookup);
    if (!s.ok() && c.InTransaction()) (void)c.Exec("ROLLBACK");
    if (!s.ok() && db::SqlStateOf(s) == "23505") {
      // A key was stored already (a writer's retry; one stored after the lookup ran, if there was
      // one), or a late joiner's: once more, every key looked up under the locks. Nothing of the
      // first attempt was committed.
      {
        std::lock_guard g(mu);
        lookup_until_nanos = clock->MonotonicNanos() + kLookupAfterConflict.count();
      }
      timing.late_requests = 0;
      timing.key_conflicts = 1;
      timing.lookups = 1;
      s = Attempt(c, batch, deferred, timing, nullptr, &late_taken, Lookup::kUnderLock);
      if (!s.ok() && c.InTransaction()) (void)c.Exec("ROLLBACK");
    }
    release_lane();
    return s;
  }

  // One try of the batch's transaction (see Flush).
  Status Attempt(db::Connection& c, std::vector<std::unique_ptr<Request>>& batch,
                 std::vector<std::unique_ptr<Request>>& deferred, Timing& timing, Lane* late_lane,
                 bool* late_taken, Lookup lookup) {
    std::vector<std::string> orgs;
    std::vector<std::string> key_orgs, keys;
    const int64_t now_micros = clock->UnixMicros();
    FixedColumns fixed;
    bool dup_in_batch = false;  // the same key twice in this batch: the slow path below
    std::unordered_set<std::string> seen;
    for (auto& r : batch) {
      orgs.push_back(r->org);
      for (const AppendInput& in : r->entries) {
        key_orgs.push_back(r->org);
        keys.push_back(in.idempotency_key);
        fixed.Add(r->org, in, now_micros);
        if (!seen.insert(r->org + '\n' + in.idempotency_key).second) dup_in_batch = true;
      }
    }
    std::sort(orgs.begin(), orgs.end());
    orgs.erase(std::unique(orgs.begin(), orgs.end()), orgs.end());
    timing.orgs = orgs.size();
    GOVERN_RETURN_IF_ERROR(EnsureHeads(c, orgs));
    const std::string orgs_array = ArrayLiteral(orgs);
    const std::string key_orgs_array = ArrayLiteral(key_orgs);
    const std::string keys_array = ArrayLiteral(keys);
    std::vector<std::string> fixed_literals = fixed.Literals();
    const bool outside = opt.flush_outside_lock;

    auto body = [&](db::Connection& tx) -> Status {
      struct Head {
        int64_t next_seq = 1;
        audit::Hash head{};
        audit::CompactRange range;
        bool changed = false;
      };
      std::map<std::string, Head> heads;
      // BEGIN, the idempotency lookup (if any) and the head locks in one round trip. Before the lock
      // wait (kBeforeLock) its index probes are not part of the hold (READ COMMITTED: it sees what
      // was committed when it ran). A key it did not see (none looked up, or one committed after it
      // by the holder of the head: a writer's retry that raced its first attempt) makes the INSERT
      // fail with a unique violation, and Flush runs the batch again with the lookup after the
      // locks, which then sees every commit of a transaction that held them.
      const std::string& first_org = batch.front()->org;  // the oldest request's: worth waiting for
      std::vector<db::Statement> first = {
          {"BEGIN", {}, false},
          {std::string(kSettings), db::Params(outside ? "off" : "on"), true},
      };
      size_t lookup_at = 0;  // the lookup's statement, if any
      if (lookup == Lookup::kBeforeLock) {
        lookup_at = first.size();
        first.push_back({kExisting, db::Params(key_orgs_array, keys_array), true});
      }
      const size_t first_head = first.size();
      first.push_back({std::string(kLockFirstHead), db::Params(first_org), true});
      // A batch of one organisation (every batch of a hot one) has no other heads: one statement less
      // to plan and run while the head is locked.
      const bool more_heads = orgs.size() > 1;
      if (more_heads) first.push_back({std::string(kLockFreeHeads), db::Params(orgs_array, first_org), true});
      const size_t end_heads = first.size();
      if (lookup == Lookup::kUnderLock) {
        lookup_at = first.size();
        first.push_back({kExisting, db::Params(key_orgs_array, keys_array), true});
      }
      int64_t t0 = clock->MonotonicNanos();
      GOVERN_ASSIGN_OR_RETURN(std::vector<db::Rows> res, tx.Pipeline(first));
      int64_t t1 = clock->MonotonicNanos();
      timing.lock_us = Micros(t0, t1);
      for (size_t part = first_head; part < end_heads; ++part) {
        const db::Rows& hr = res[part];
        for (int i = 0; i < hr.size(); ++i) {
          Head h;
          GOVERN_ASSIGN_OR_RETURN(h.next_seq, hr.Int64(i, 1));
          GOVERN_ASSIGN_OR_RETURN(std::string head, hr.Bytes(i, 2));
          GOVERN_ASSIGN_OR_RETURN(h.head, HashFromBytes(head));
          GOVERN_ASSIGN_OR_RETURN(std::string cr, hr.Bytes(i, 3));
          GOVERN_ASSIGN_OR_RETURN(h.range, audit::CompactRange::Decode(cr));
          if (h.range.size() != static_cast<uint64_t>(h.next_seq - 1)) {
            return DataLoss("the chain head of '" + std::string(hr.Text(i, 0)) + "' is inconsistent");
          }
          heads.emplace(std::string(hr.Text(i, 0)), std::move(h));
        }
      }
      if (!heads.contains(first_org)) return Internal("a chain head is missing after it was created");
      if (heads.size() != orgs.size()) {
        // Heads another transaction holds: their requests wait for this lane's next batch.
        std::vector<std::unique_ptr<Request>> kept;
        for (auto& r : batch) (heads.contains(r->org) ? kept : deferred).push_back(std::move(r));
        batch = std::move(kept);
        timing.orgs = heads.size();
      }
      // (org, idempotency key) -> the stored (or, with dup_in_batch, earlier in this batch) entry.
      std::unordered_map<std::string, StoredEntry> known;
      auto known_key = [](std::string_view org, std::string_view key) {
        return std::string(org) + '\n' + std::string(key);
      };
      if (lookup != Lookup::kNone) {
        const db::Rows& er = res[lookup_at];  // only rows of locked heads are used
        for (int i = 0; i < er.size(); ++i) {
          GOVERN_ASSIGN_OR_RETURN(StoredEntry e, EntryFromRow(er, i));
          std::string k = known_key(e.entry.org, e.entry.idempotency_key);
          known.emplace(std::move(k), std::move(e));
        }
      }
      const bool all_new = known.empty() && !dup_in_batch && deferred.empty();
      if (!all_new) fixed = FixedColumns{};
      if (late_lane != nullptr) {
        size_t n = 0;
        for (auto& r : batch) n += r->entries.size();
        if (n < opt.max_batch) {
          std::vector<std::unique_ptr<Request>> late = TakeLate(*late_lane, heads, opt.max_batch - n, seen);
          if (!late.empty()) {
            *late_taken = true;
            timing.late_requests = late.size();
            // Their default time is when they joined, not when the batch began.
            const int64_t late_now = clock->UnixMicros();
            for (auto& r : late) {
              for (AppendInput& in : r->entries) {
                if (!in.time_micros) in.time_micros = late_now;
                if (all_new) fixed.Add(r->org, in, now_micros);
              }
              batch.push_back(std::move(r));
            }
            if (all_new) fixed_literals = fixed.Literals();
          }
        }
      }

      // The head-dependent columns of the new entries.
      std::vector<std::string> c_seq, c_prev, c_hash, c_leaf;
      struct Node {
        std::string org;
        uint32_t level;
        uint64_t index;
        audit::Hash hash;
      };
      std::vector<Node> nodes;
      size_t new_entries = 0;
      for (auto& r : batch) {
        r->outcome = AppendOutcome{};
        r->outcome.entries.reserve(r->entries.size());
        Head& head = heads.at(r->org);
        for (AppendInput& in : r->entries) {
          if (!all_new) {
            std::string k = known_key(r->org, in.idempotency_key);
            if (auto it = known.find(k); it != known.end()) {
              r->outcome.entries.push_back(it->second);
              r->outcome.created.push_back(false);
              continue;
            }
            fixed.Add(r->org, in, now_micros);
          }
          StoredEntry e;
          e.entry = audit::Entry{.org = r->org,
                                 .seq = static_cast<uint64_t>(head.next_seq),
                                 .time_us = in.time_micros.value_or(now_micros),
                                 // Copied: a second attempt (Flush) needs the inputs again.
                                 .actor = in.actor,
                                 .action = in.action,
                                 .target = in.target,
                                 .outcome = in.outcome,
                                 .details = in.details,
                                 .idempotency_key = in.idempotency_key};
          e.leaf_hash = audit::Seal(e.entry, head.head);
          head.range.Append(e.leaf_hash, audit::kDefaultStride,
                            [&](uint32_t level, uint64_t index, const audit::Hash& h) {
                              nodes.push_back({r->org, level, index, h});
                            });
          head.head = e.entry.entry_hash;
          ++head.next_seq;
          head.changed = true;
          ++new_entries;
          c_seq.push_back(std::to_string(e.entry.seq));
          c_prev.push_back(audit::HashToHex(e.entry.prev_hash));
          c_hash.push_back(audit::HashToHex(e.entry.entry_hash));
          c_leaf.push_back(audit::HashToHex(e.leaf_hash));
          r->outcome.created.push_back(true);
          if (!all_new) known.emplace(known_key(r->org, in.idempotency_key), e);
          r->outcome.entries.push_back(std::move(e));
        }
      }
      if (!all_new) fixed_literals = fixed.Literals();
      // The entries, the heads, the completed subtrees and COMMIT in one more round trip. Under the
      // locks every statement costs hold time, so those that read no table by a parameter (the two
      // INSERTs from arrays, the UPDATE of one head by its key) run their cached generic plans instead
      // of being planned again for every batch (kSettings asked for custom plans, which the lookup and
      // the statements over several heads need); the UPDATE of several heads goes first, still planned
      // with its arrays.
      std::vector<db::Statement> last;
      std::vector<std::string> u_org, u_next, u_head, u_range;
      for (auto& [org, h] : heads) {
        if (!h.changed) continue;
        u_org.push_back(org);
        u_next.push_back(std::to_string(h.next_seq));
        u_head.push_back(audit::HashToHex(h.head));
        std::string cr = h.range.Encode();
        u_range.push_back(crypto::HexEncode(crypto::AsBytes(cr)));
      }
      size_t update_at = 0;  // the statement updating the heads, when there is one
      if (u_org.size() > 1) {
        update_at = last.size();
        last.push_back({std::string(kUpdateHeads),
                        db::Params(ArrayLiteral(u_org), ArrayLiteral(u_next), ArrayLiteral(u_head),
                                   ArrayLiteral(u_range)),
                        true});
      }
      last.push_back({std::string(kGenericPlans), {}, true});
      if (new_entries > 0) {
        db::Params p;
        p.Add(fixed_literals[0]);
        p.Add(ArrayLiteral(c_seq));
        for (size_t i = 1; i < fixed_literals.size(); ++i) p.Add(fixed_literals[i]);
        for (const auto* col : {&c_prev, &c_hash, &c_leaf}) p.Add(ArrayLiteral(*col));
        last.push_back({std::string(kInsertEntries), std::move(p), true});
      }
      if (u_org.size() == 1) {
        update_at = last.size();
        last.push_back(
            {std::string(kUpdateOneHead), db::Params(u_org[0], u_next[0], u_head[0], u_range[0]), true});
      }
      if (!nodes.empty()) {
        std::vector<std::string> n_org, n_level, n_idx, n_hash;
        for (const Node& n : nodes) {
          n_org.push_back(n.org);
          n_level.push_back(std::to_string(n.level));
          n_idx.push_back(std::to_string(n.index));
          n_hash.push_back(audit::HashToHex(n.hash));
        }
        last.push_back({std::string(kInsertNodes),
                        db::Params(ArrayLiteral(n_org), ArrayLiteral(n_level), ArrayLiteral(n_idx),
                                   ArrayLiteral(n_hash)),
                        true});
      }
      if (opt.before_commit) opt.before_commit();
      last.push_back({"COMMIT", {}, false});
      int64_t t2 = clock->MonotonicNanos();
      timing.compute_us = Micros(t1, t2);
      GOVERN_ASSIGN_OR_RETURN(std::vector<db::Rows> done, tx.Pipeline(last));
      int64_t t3 = clock->MonotonicNanos();
      timing.commit_us = Micros(t2, t3);
      if (!u_org.empty() && done[update_at].affected() != static_cast<int64_t>(u_org.size())) {
        return Internal("chain head update lost rows");  // cannot happen: the heads are locked
      }
      if (done.back().tag() != "COMMIT") return Aborted("the transaction was rolled back");
      return OkStatus();
    };
    // Not Connection::Transact: BEGIN and COMMIT travel in the pipelines above. No retry here (but for
    // late joiners, Flush): a failed batch is refused (503) and its writers retry with the same keys,
    // which is safe whatever happened.
    return body(c);
  }

  // One try of the batch's transaction with BatcherOptions::append_in_database (see Flush): one round
  // trip, BEGIN + settings + audit_append + COMMIT in a pipeline, so the head locks are held only while
  // PostgreSQL works on the batch.
  Status AttemptInDatabase(db::Connection& c, std::vector<std::unique_ptr<Request>>& batch,
                           std::vector<std::unique_ptr<Request>>& deferred, Timing& timing,
                           bool lookup_first) {
    const int64_t now_micros = clock->UnixMicros();
    // The entries grouped by organisation (in the order organisations first appear, so the oldest
    // request's comes first), each (org, key) once: a key repeated in the batch gets the first one's
    // entry. slot[r][j]: the ordinal (0-based) of entry j of request r in the arrays sent.
    std::vector<std::string> orgs;
    std::vector<std::vector<std::pair<size_t, size_t>>> by_org;
    {
      std::unordered_map<std::string_view, size_t> org_index;
      for (size_t r = 0; r < batch.size(); ++r) {
        auto [it, fresh] = org_index.emplace(batch[r]->org, orgs.size());
        if (fresh) {
          orgs.push_back(batch[r]->org);
          by_org.emplace_back();
        }
        for (size_t j = 0; j < batch[r]->entries.size(); ++j) by_org[it->second].push_back({r, j});
      }
    }
    GOVERN_RETURN_IF_ERROR(EnsureHeads(c, orgs));
    std::vector<std::vector<size_t>> slot(batch.size());
    for (size_t r = 0; r < batch.size(); ++r) slot[r].resize(batch[r]->entries.size());
    std::vector<std::pair<size_t, size_t>> creator;  // per ordinal: the (request, entry) sent
    std::vector<std::string> c_org, c_key, c_time, c_actor, c_action, c_target, c_outcome, c_details,
        c_before, c_after;
    audit::Entry probe;  // reused: its strings keep their capacity
    for (size_t g = 0; g < orgs.size(); ++g) {
      std::unordered_map<std::string_view, size_t> key_slot;
      for (auto [r, j] : by_org[g]) {
        const AppendInput& in = batch[r]->entries[j];
        auto [it, fresh] = key_slot.emplace(in.idempotency_key, creator.size());
        slot[r][j] = it->second;
        if (!fresh) continue;
        creator.push_back({r, j});
        probe.org = orgs[g];
        probe.time_us = in.time_micros.value_or(now_micros);
        probe.actor = in.actor;
        probe.action = in.action;
        probe.target = in.target;
        probe.outcome = in.outcome;
        probe.details = in.details;
        probe.idempotency_key = in.idempotency_key;
        audit::CanonicalParts parts = audit::CanonicalEntrySplit(probe);
        c_org.push_back(orgs[g]);
        c_key.push_back(in.idempotency_key);
        c_time.push_back(std::to_string(probe.time_us));
        c_actor.push_back(in.actor);
        c_action.push_back(in.action);
        c_target.push_back(in.target);
        c_outcome.push_back(in.outcome);
        c_details.push_back(in.details);
        c_before.push_back(std::move(parts.before_seq));
        c_after.push_back(std::move(parts.after_seq));
      }
    }
    db::Params p;
    p.Add(batch.front()->org);  // the oldest request's head: worth waiting for
    p.Add(ArrayLiteral(orgs));
    p.Add(lookup_first ? "true" : "false");
    p.Add(std::to_string(audit::kDefaultStride));
    for (const auto* col : {&c_org, &c_key, &c_time, &c_actor, &c_action, &c_target, &c_outcome, &c_details,
                            &c_before, &c_after}) {
      p.Add(ArrayLiteral(*col));
    }
    std::vector<db::Statement> stmts = {
        {"BEGIN", {}, false},
        {std::string(kSettings), db::Params(opt.flush_outside_lock ? "off" : "on"), true},
        {std::string(kAppend), std::move(p), true},
    };
    // Not Connection::Transact: BEGIN and COMMIT travel in the pipeline. The test hook needs a moment
    // between the rows and COMMIT: only then COMMIT is a second round trip.
    if (!opt.before_commit) stmts.push_back({"COMMIT", {}, false});
    const int64_t t0 = clock->MonotonicNanos();
    GOVERN_ASSIGN_OR_RETURN(std::vector<db::Rows> res, c.Pipeline(stmts));
    std::string_view tag = res.back().tag();
    db::Rows commit;
    if (opt.before_commit) {
      opt.before_commit();
      GOVERN_ASSIGN_OR_RETURN(commit, c.Exec("COMMIT"));
      tag = commit.tag();
    }
    timing.commit_us = Micros(t0, clock->MonotonicNanos());
    if (tag != "COMMIT") return Aborted("the transaction was rolled back");

    // The function's answer: one row per ordinal.
    const db::Rows& rows = res[2];
    const size_t n = creator.size();
    std::vector<int> row_of(n, -1);
    for (int i = 0; i < rows.size(); ++i) {
      GOVERN_ASSIGN_OR_RETURN(int64_t ord, rows.Int64(i, 0));
      if (ord < 1 || static_cast<size_t>(ord) > n || row_of[static_cast<size_t>(ord - 1)] >= 0) {
        return Internal("audit_append answered an unexpected ordinal");
      }
      row_of[static_cast<size_t>(ord - 1)] = i;
    }
    for (int r : row_of) {
      if (r < 0) return Internal("audit_append left an entry unanswered");
    }
    if (rows.size() > 0) {
      GOVERN_ASSIGN_OR_RETURN(timing.lock_us, rows.Int64(0, 12));
      GOVERN_ASSIGN_OR_RETURN(timing.compute_us, rows.Int64(0, 13));
    }
    // Each ordinal's stored entry (nullopt: its head was busy) and whether this batch created it.
    std::vector<std::optional<StoredEntry>> stored(n);
    std::vector<bool> created(n, false);
    for (size_t o = 0; o < n; ++o) {
      const int i = row_of[o];
      const std::string_view state = rows.Text(i, 1);
      if (state == "d") continue;
      auto [r, j] = creator[o];
      const AppendInput& in = batch[r]->entries[j];
      StoredEntry e;
      e.entry.org = batch[r]->org;
      e.entry.idempotency_key = in.idempotency_key;
      GOVERN_ASSIGN_OR_RETURN(int64_t seq, rows.Int64(i, 2));
      e.entry.seq = static_cast<uint64_t>(seq);
      GOVERN_ASSIGN_OR_RETURN(std::string prev, rows.Bytes(i, 3));
      GOVERN_ASSIGN_OR_RETURN(e.entry.prev_hash, HashFromBytes(prev));
      GOVERN_ASSIGN_OR_RETURN(std::string hash, rows.Bytes(i, 4));
      GOVERN_ASSIGN_OR_RETURN(e.entry.entry_hash, HashFromBytes(hash));
      GOVERN_ASSIGN_OR_RETURN(std::string leaf, rows.Bytes(i, 5));
      GOVERN_ASSIGN_OR_RETURN(e.leaf_hash, HashFromBytes(leaf));
      if (state == "n") {
        e.entry.time_us = in.time_micros.value_or(now_micros);
        e.entry.actor = in.actor;
        e.entry.action = in.action;
        e.entry.target = in.target;
        e.entry.outcome = in.outcome;
        e.entry.details = in.details;
        created[o] = true;
      } else if (state == "e") {
        GOVERN_ASSIGN_OR_RETURN(e.entry.time_us, rows.Int64(i, 6));
        e.entry.actor = rows.Text(i, 7);
        e.entry.action = rows.Text(i, 8);
        e.entry.target = rows.Text(i, 9);
        e.entry.outcome = rows.Text(i, 10);
        e.entry.details = rows.Text(i, 11);
      } else {
        return Internal("audit_append answered an unknown state");
      }
      stored[o] = std::move(e);
    }
    // Requests of heads another transaction held wait for this lane's next batch (an organisation's
    // entries are all done or all deferred).
    std::vector<std::unique_ptr<Request>> kept;
    std::unordered_set<std::string_view> done_orgs;
    for (size_t r = 0; r < batch.size(); ++r) {
      Request& req = *batch[r];
      if (!stored[slot[r][0]]) {
        deferred.push_back(std::move(batch[r]));
        continue;
      }
      req.outcome = AppendOutcome{};
      req.outcome.entries.reserve(req.entries.size());
      for (size_t j = 0; j < req.entries.size(); ++j) {
        const size_t o = slot[r][j];
        req.outcome.entries.push_back(*stored[o]);
        req.outcome.created.push_back(created[o] && creator[o] == std::pair<size_t, size_t>{r, j});
      }
      done_orgs.insert(req.org);
      kept.push_back(std::move(batch[r]));
    }
    batch = std::move(kept);
    timing.orgs = done_orgs.size();
    return OkStatus();
  }

  Status Barrier(db::Connection& c) {
    // The durability barrier: a transaction that writes WAL (kQuickBarrier) and commits with
    // synchronous_commit on returns once the WAL up to its commit record is flushed, which includes
    // the batch's commit written before it. PostgreSQL flushes many such commits at once. Normally one
    // statement outside a transaction (its implicit transaction commits under the session's setting,
    // which it returns); only when that setting does not flush (a database or role default of off)
    // the explicit transaction with SET LOCAL follows.
    static const std::vector<db::Statement> kBarrier = {
        {"BEGIN", {}, false},
        {"SET LOCAL synchronous_commit TO on", {}, false},
        {"SELECT pg_logical_emit_message(true, 'govern-audit-barrier', '')", {}, true},
        {"COMMIT", {}, false},
    };
    auto quick = c.ExecPrepared(kQuickBarrier);
    if (quick.ok() && quick->size() == 1 && FlushesOnCommit(quick->Text(0, 1))) return OkStatus();
    if (!quick.ok() && c.InTransaction()) (void)c.Exec("ROLLBACK");
    auto flushed = c.Pipeline(kBarrier);
    if (!flushed.ok()) {
      if (c.InTransaction()) (void)c.Exec("ROLLBACK");
      return flushed.status();
    }
    if (flushed->back().tag() != "COMMIT") return Aborted("the durability barrier was rolled back");
    return OkStatus();
  }
};

Batcher::Batcher(db::Pool* pool, BatcherOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->pool = pool;
  impl_->opt = std::move(options);
  impl_->clock = impl_->opt.clock != nullptr ? impl_->opt.clock : &Clock::Real();
  impl_->opt.max_batch = std::max<size_t>(1, impl_->opt.max_batch);
  int lanes = std::max(1, impl_->opt.flushers);
  impl_->lanes = std::vector<Impl::Lane>(static_cast<size_t>(lanes));
  // A thread per lane (a lane has one transaction at a time); with flush_outside_lock, one more runs
  // the durability barriers.
  for (int i = 0; i < lanes; ++i) impl_->threads.emplace_back([impl = impl_.get()] { impl->Run(); });
  if (impl_->opt.flush_outside_lock)
    impl_->durable_thread = std::thread([impl = impl_.get()] { impl->RunDurable(); });
}

Batcher::~Batcher() { Shutdown(); }

void Batcher::Shutdown() {
  {
    std::lock_guard lk(impl_->mu);
    if (impl_->stop && impl_->threads.empty()) return;
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  for (std::thread& t : impl_->threads) t.join();
  {
    // The lanes are drained: the last committed batches get their barrier, then the thread ends.
    std::lock_guard lk(impl_->mu);
    impl_->durable_stop = true;
  }
  impl_->durable_cv.notify_all();
  if (impl_->durable_thread.joinable()) impl_->durable_thread.join();
  std::lock_guard lk(impl_->mu);
  impl_->threads.clear();
}

void Batcher::Append(std::string org, std::vector<AppendInput> entries, Callback done) {
  if (entries.empty()) {
    done(AppendOutcome{});
    return;
  }
  std::unique_lock lk(impl_->mu);
  if (impl_->stop) {
    lk.unlock();
    done(Unavailable("the audit service is shutting down"));
    return;
  }
  // The append path's own bound (the service does not shed appends on latency): entries waiting for a
  // transaction, over all lanes.
  if (impl_->queued_entries + entries.size() > impl_->opt.max_queued) {
    ++impl_->stats.queue_full;
    lk.unlock();
    done(ResourceExhausted("too many appends waiting; retry later"));
    return;
  }
  auto r = std::make_unique<Impl::Request>();
  r->arrived_nanos = impl_->clock->MonotonicNanos();
  Impl::Lane& lane = impl_->lanes[impl_->LaneOf(org)];
  r->org = std::move(org);
  lane.queued_entries += entries.size();
  impl_->queued_entries += entries.size();
  r->entries = std::move(entries);
  r->done = std::move(done);
  lane.queue.push_back(std::move(r));
  if (!lane.busy) {
    impl_->cv.notify_one();
  } else if (impl_->opt.flush_interval.count() > 0 && lane.queued_entries >= impl_->opt.max_batch) {
    impl_->cv.notify_all();  // a lane waiting for company: its batch is full
  }
}

Result<AppendOutcome> Batcher::AppendBlocking(std::string org, std::vector<AppendInput> entries) {
  std::promise<Result<AppendOutcome>> p;
  auto f = p.get_future();
  Append(std::move(org), std::move(entries), [&p](Result<AppendOutcome> r) { p.set_value(std::move(r)); });
  return f.get();
}

Batcher::Stats Batcher::GetStats() const {
  std::lock_guard lk(impl_->mu);
  Stats s = impl_->stats;
  s.awaiting_flush = impl_->committed.size();
  return s;
}

Status CheckDurabilityBarrier(db::Pool& pool) {
  GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease lease, pool.Checkout());
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      lease->Exec("SELECT has_function_privilege('pg_catalog.pg_logical_emit_message(boolean, text, text)', "
                  "'EXECUTE'), current_user"));
  if (rows.empty() || rows.Text(0, 0) != "t") {
    std::string role = rows.empty() ? std::string("the service's role") : std::string(rows.Text(0, 1));
    return FailedPrecondition(
        "audit: the database role \"" + role +
        "\" may not execute pg_logical_emit_message, which flushes every batch before its entries are "
        "acknowledged; run: GRANT EXECUTE ON FUNCTION pg_catalog.pg_logical_emit_message(boolean, text, "
        "text) TO \"" +
        role + "\"");
  }
  return OkStatus();
}

}  // namespace govern::audit_service
