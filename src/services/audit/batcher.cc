// The append path: group commit of many organisations' entries in one transaction.
#include "services/audit/batcher.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "base/log.h"
#include "db/connection.h"
#include "db/pool.h"

namespace govern::audit_service {
namespace {

// A PostgreSQL array literal of values that need no escaping beyond quotes (org names, idempotency keys
// and hex hold no '"' or '\\').
std::string ArrayLiteral(const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += '"';
    out += values[i];
    out += '"';
  }
  out += '}';
  return out;
}

constexpr std::string_view kLockHeads =
    "SELECT org, next_seq, head_hash, compact_range FROM audit_heads WHERE org = ANY($1::text[]) "
    "ORDER BY org FOR UPDATE";
constexpr std::string_view kExisting =
    "SELECT e.org, e.seq, e.idem_key, (extract(epoch from e.time) * 1000000)::bigint, e.actor, e.action, "
    "e.target, e.outcome, e.details, e.prev_hash, e.entry_hash, e.leaf_hash FROM audit_entries e "
    "JOIN unnest($1::text[], $2::text[]) AS k(org, idem) ON e.org = k.org AND e.idem_key = k.idem";
constexpr std::string_view kUpdateHeads =
    "UPDATE audit_heads h SET next_seq = v.n, head_hash = decode(v.hh, 'hex'), "
    "compact_range = decode(v.cr, 'hex'), updated_at = now() "
    "FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) AS v(org, n, hh, cr) WHERE h.org = v.org";

}  // namespace

struct Batcher::Impl {
  struct Request {
    std::string org;
    std::vector<AppendInput> entries;
    Callback done;
    AppendOutcome outcome;  // filled by a flush
  };

  db::Pool* pool;
  BatcherOptions opt;
  const Clock* clock;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::unique_ptr<Request>> queue;
  size_t queued_entries = 0;
  int64_t oldest_nanos = 0;  // monotonic arrival of queue.front()
  bool stop = false;
  std::vector<std::thread> threads;
  Stats stats;
  std::unordered_set<std::string> known_heads;  // heads committed to exist (never deleted)

  // Takes up to max_batch entries (at least one request) from the queue. mu held.
  std::vector<std::unique_ptr<Request>> Take() {
    std::vector<std::unique_ptr<Request>> batch;
    size_t n = 0;
    while (!queue.empty() && (batch.empty() || n + queue.front()->entries.size() <= opt.max_batch)) {
      n += queue.front()->entries.size();
      queued_entries -= queue.front()->entries.size();
      batch.push_back(std::move(queue.front()));
      queue.pop_front();
    }
    if (!queue.empty()) oldest_nanos = clock->MonotonicNanos();
    return batch;
  }

  void Run() {
    std::unique_lock lk(mu);
    for (;;) {
      cv.wait(lk, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;  // stopping, and nothing left
      // Wait for company until the first entry has waited flush_interval or the batch is full.
      while (!stop && queued_entries < opt.max_batch) {
        int64_t deadline = oldest_nanos + std::chrono::nanoseconds(opt.flush_interval).count();
        int64_t now = clock->MonotonicNanos();
        if (now >= deadline) break;
        cv.wait_for(lk, std::chrono::nanoseconds(deadline - now));
        if (queue.empty()) break;
      }
      if (queue.empty()) continue;
      std::vector<std::unique_ptr<Request>> batch = Take();
      if (!queue.empty()) cv.notify_one();
      lk.unlock();
      Status s = Flush(batch);
      lk.lock();
      if (s.ok()) {
        ++stats.batches;
        for (auto& r : batch) {
          for (bool c : r->outcome.created) ++(c ? stats.entries_written : stats.entries_existing);
        }
      } else {
        ++stats.batches_failed;
      }
      lk.unlock();
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
      lk.lock();
    }
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

  Status Flush(std::vector<std::unique_ptr<Request>>& batch) {
    auto lease = pool->Checkout();
    if (!lease.ok()) return lease.status();
    db::Connection& c = **lease;

    std::vector<std::string> orgs;
    std::vector<std::string> key_orgs, keys;
    for (auto& r : batch) {
      orgs.push_back(r->org);
      for (const AppendInput& in : r->entries) {
        key_orgs.push_back(r->org);
        keys.push_back(in.idempotency_key);
      }
    }
    std::sort(orgs.begin(), orgs.end());
    orgs.erase(std::unique(orgs.begin(), orgs.end()), orgs.end());
    GOVERN_RETURN_IF_ERROR(EnsureHeads(c, orgs));
    const std::string orgs_array = ArrayLiteral(orgs);
    const std::string key_orgs_array = ArrayLiteral(key_orgs);
    const std::string keys_array = ArrayLiteral(keys);
    const int64_t now_micros = clock->UnixMicros();

    auto body = [&](db::Connection& tx) -> Status {
      struct Head {
        int64_t next_seq;
        Hash head;
        CompactRange range;
        bool changed = false;
      };
      std::map<std::string, Head> heads;
      std::vector<db::Statement> first = {
          {std::string(kLockHeads), db::Params(orgs_array), true},
          {std::string(kExisting), db::Params(key_orgs_array, keys_array), true},
      };
      GOVERN_ASSIGN_OR_RETURN(std::vector<db::Rows> res, tx.Pipeline(first));
      const db::Rows& hr = res[0];
      for (int i = 0; i < hr.size(); ++i) {
        Head h;
        GOVERN_ASSIGN_OR_RETURN(h.next_seq, hr.Int64(i, 1));
        GOVERN_ASSIGN_OR_RETURN(h.head, hr.Bytes(i, 2));
        GOVERN_ASSIGN_OR_RETURN(std::string cr, hr.Bytes(i, 3));
        GOVERN_ASSIGN_OR_RETURN(h.range, CompactRange::Decode(static_cast<uint64_t>(h.next_seq - 1), cr));
        heads.emplace(std::string(hr.Text(i, 0)), std::move(h));
      }
      if (heads.size() != orgs.size()) return Internal("a chain head is missing after it was created");
      // (org, idempotency key) -> the stored (or, earlier in this batch, the new) entry.
      std::unordered_map<std::string, StoredEntry> known;
      auto known_key = [](std::string_view org, std::string_view key) {
        return std::string(org) + '\n' + std::string(key);
      };
      const db::Rows& er = res[1];
      for (int i = 0; i < er.size(); ++i) {
        StoredEntry e;
        e.fields.org = er.Text(i, 0);
        GOVERN_ASSIGN_OR_RETURN(e.fields.seq, er.Int64(i, 1));
        e.fields.idempotency_key = er.Text(i, 2);
        GOVERN_ASSIGN_OR_RETURN(e.fields.time_micros, er.Int64(i, 3));
        e.fields.actor = er.Text(i, 4);
        e.fields.action = er.Text(i, 5);
        e.fields.target = er.Text(i, 6);
        e.fields.outcome = er.Text(i, 7);
        e.fields.details = er.Text(i, 8);
        GOVERN_ASSIGN_OR_RETURN(e.prev_hash, er.Bytes(i, 9));
        GOVERN_ASSIGN_OR_RETURN(e.entry_hash, er.Bytes(i, 10));
        GOVERN_ASSIGN_OR_RETURN(e.leaf_hash, er.Bytes(i, 11));
        std::string k = known_key(e.fields.org, e.fields.idempotency_key);
        known.emplace(std::move(k), std::move(e));
      }

      GOVERN_ASSIGN_OR_RETURN(
          db::CopyIn copy, tx.CopyFrom("COPY audit_entries (org, seq, idem_key, time, actor, action, target, "
                                       "outcome, details, prev_hash, entry_hash, leaf_hash) FROM STDIN "
                                       "(FORMAT binary)"));
      struct Node {
        std::string org;
        int level;
        uint64_t index;
        Hash hash;
      };
      std::vector<Node> nodes;
      for (auto& r : batch) {
        r->outcome = AppendOutcome{};
        Head& head = heads.at(r->org);
        for (const AppendInput& in : r->entries) {
          std::string k = known_key(r->org, in.idempotency_key);
          if (auto it = known.find(k); it != known.end()) {
            r->outcome.entries.push_back(it->second);
            r->outcome.created.push_back(false);
            continue;
          }
          StoredEntry e;
          e.fields = EntryFields{.org = r->org,
                                 .seq = head.next_seq,
                                 .idempotency_key = in.idempotency_key,
                                 .time_micros = in.time_micros.value_or(now_micros),
                                 .actor = in.actor,
                                 .action = in.action,
                                 .target = in.target,
                                 .outcome = in.outcome,
                                 .details = in.details};
          std::string canonical = CanonicalEncoding(e.fields);
          e.prev_hash = head.head;
          e.entry_hash = ChainHash(head.head, canonical);
          e.leaf_hash = LeafHash(canonical);
          head.range.Append(e.leaf_hash, [&](int level, uint64_t index, const Hash& h) {
            if (level % kNodeStride == 0) nodes.push_back({r->org, level, index, h});
          });
          head.head = e.entry_hash;
          ++head.next_seq;
          head.changed = true;
          copy.Row(12)
              .Text(e.fields.org)
              .Int64(e.fields.seq)
              .Text(e.fields.idempotency_key)
              .TimestampUnixMicros(e.fields.time_micros)
              .Text(e.fields.actor)
              .Text(e.fields.action)
              .Text(e.fields.target)
              .Text(e.fields.outcome)
              .Text(e.fields.details)
              .Bytea(e.prev_hash)
              .Bytea(e.entry_hash)
              .Bytea(e.leaf_hash);
          r->outcome.entries.push_back(e);
          r->outcome.created.push_back(true);
          known.emplace(std::move(k), std::move(e));
        }
      }
      GOVERN_RETURN_IF_ERROR(copy.Finish().status());
      if (!nodes.empty()) {
        GOVERN_ASSIGN_OR_RETURN(
            db::CopyIn nc,
            tx.CopyFrom("COPY audit_tree_nodes (org, level, idx, hash) FROM STDIN (FORMAT binary)"));
        for (const Node& n : nodes) {
          nc.Row(4)
              .Text(n.org)
              .Int16(static_cast<int16_t>(n.level))
              .Int64(static_cast<int64_t>(n.index))
              .Bytea(n.hash);
        }
        GOVERN_RETURN_IF_ERROR(nc.Finish().status());
      }
      std::vector<std::string> u_org, u_next, u_head, u_range;
      for (auto& [org, h] : heads) {
        if (!h.changed) continue;
        u_org.push_back(org);
        u_next.push_back(std::to_string(h.next_seq));
        u_head.push_back(HexHash(h.head));
        u_range.push_back(HexHash(h.range.Encode()));
      }
      if (!u_org.empty()) {
        GOVERN_ASSIGN_OR_RETURN(
            db::Rows updated,
            tx.ExecPrepared(kUpdateHeads, db::Params(ArrayLiteral(u_org), ArrayLiteral(u_next),
                                                     ArrayLiteral(u_head), ArrayLiteral(u_range))));
        if (updated.affected() != static_cast<int64_t>(u_org.size()))
          return Internal("chain head update lost rows");
      }
      if (opt.before_commit) opt.before_commit();
      return OkStatus();
    };
    db::TxOptions tx;
    tx.max_attempts = 3;  // a retry re-reads heads and keys, so a commit that did land is found again
    return c.Transact(body, tx);
  }
};

Batcher::Batcher(db::Pool* pool, BatcherOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->pool = pool;
  impl_->opt = std::move(options);
  impl_->clock = impl_->opt.clock != nullptr ? impl_->opt.clock : &Clock::Real();
  impl_->opt.max_batch = std::max<size_t>(1, impl_->opt.max_batch);
  int n = std::max(1, impl_->opt.flushers);
  for (int i = 0; i < n; ++i) impl_->threads.emplace_back([impl = impl_.get()] { impl->Run(); });
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
  if (impl_->queued_entries + entries.size() > impl_->opt.max_queued) {
    lk.unlock();
    done(Unavailable("too many appends waiting; retry later"));
    return;
  }
  if (impl_->queue.empty()) impl_->oldest_nanos = impl_->clock->MonotonicNanos();
  impl_->queued_entries += entries.size();
  auto r = std::make_unique<Impl::Request>();
  r->org = std::move(org);
  r->entries = std::move(entries);
  r->done = std::move(done);
  impl_->queue.push_back(std::move(r));
  impl_->cv.notify_one();
  if (impl_->queued_entries >= impl_->opt.max_batch) impl_->cv.notify_all();
}

Result<AppendOutcome> Batcher::AppendBlocking(std::string org, std::vector<AppendInput> entries) {
  std::promise<Result<AppendOutcome>> p;
  auto f = p.get_future();
  Append(std::move(org), std::move(entries), [&p](Result<AppendOutcome> r) { p.set_value(std::move(r)); });
  return f.get();
}

Batcher::Stats Batcher::GetStats() const {
  std::lock_guard lk(impl_->mu);
  return impl_->stats;
}

}  // namespace govern::audit_service
