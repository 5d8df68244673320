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

#include "audit/merkle.h"
#include "base/log.h"
#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "db/connection.h"
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

constexpr std::string_view kLockHeads =
    "SELECT org, next_seq, head_hash, compact_range FROM audit_heads WHERE org = ANY($1::text[]) "
    "ORDER BY org FOR UPDATE";
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
    "FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) AS v(org, n, hh, cr) WHERE h.org = v.org";

// Calls `completed(level, index, hash)` for each complete subtree at a stride level (audit/merkle.h
// kDefaultStride) that appending `leaf` to `range` completes: exactly the merges CompactRange::Append
// is about to do (one per trailing one bit of the size), whose hashes the service stores.
template <typename F>
void CompletedStrideNodes(const audit::CompactRange& range, const audit::Hash& leaf, F completed) {
  audit::Hash h = leaf;
  const std::vector<audit::Hash>& hs = range.hashes();
  size_t k = hs.size();
  uint64_t index = range.size();
  int level = 0;
  for (uint64_t sz = range.size(); sz & 1; sz >>= 1) {
    h = audit::NodeHash(hs[--k], h);
    ++level;
    index >>= 1;
    if (level % static_cast<int>(audit::kDefaultStride) == 0) completed(level, index, h);
  }
}

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
        int64_t next_seq = 1;
        audit::Hash head{};
        audit::CompactRange range;
        bool changed = false;
      };
      std::map<std::string, Head> heads;
      // BEGIN, the head locks and the idempotency lookup in one round trip. READ COMMITTED: the lookup
      // runs after the locks are granted, so it sees every commit of a transaction that held them.
      std::vector<db::Statement> first = {
          {"BEGIN", {}, false},
          // Acknowledged means flushed, whatever the database or role defaults say.
          {"SET LOCAL synchronous_commit TO on", {}, false},
          {std::string(kLockHeads), db::Params(orgs_array), true},
          {kExisting, db::Params(key_orgs_array, keys_array), true},
      };
      GOVERN_ASSIGN_OR_RETURN(std::vector<db::Rows> res, tx.Pipeline(first));
      const db::Rows& hr = res[2];
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
      if (heads.size() != orgs.size()) return Internal("a chain head is missing after it was created");
      // (org, idempotency key) -> the stored (or, earlier in this batch, the new) entry.
      std::unordered_map<std::string, StoredEntry> known;
      auto known_key = [](std::string_view org, std::string_view key) {
        return std::string(org) + '\n' + std::string(key);
      };
      const db::Rows& er = res[3];
      for (int i = 0; i < er.size(); ++i) {
        GOVERN_ASSIGN_OR_RETURN(StoredEntry e, EntryFromRow(er, i));
        std::string k = known_key(e.entry.org, e.entry.idempotency_key);
        known.emplace(std::move(k), std::move(e));
      }

      // Column arrays of the new entries.
      std::vector<std::string> c_org, c_seq, c_key, c_time, c_actor, c_action, c_target, c_outcome, c_details,
          c_prev, c_hash, c_leaf;
      struct Node {
        std::string org;
        int level;
        uint64_t index;
        audit::Hash hash;
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
          e.entry = audit::Entry{.org = r->org,
                                 .seq = static_cast<uint64_t>(head.next_seq),
                                 .time_us = in.time_micros.value_or(now_micros),
                                 .actor = in.actor,
                                 .action = in.action,
                                 .target = in.target,
                                 .outcome = in.outcome,
                                 .details = in.details,
                                 .idempotency_key = in.idempotency_key};
          e.leaf_hash = audit::Seal(e.entry, head.head);
          CompletedStrideNodes(head.range, e.leaf_hash, [&](int level, uint64_t index, const audit::Hash& h) {
            nodes.push_back({r->org, level, index, h});
          });
          head.range.Append(e.leaf_hash);
          head.head = e.entry.entry_hash;
          ++head.next_seq;
          head.changed = true;
          c_org.push_back(e.entry.org);
          c_seq.push_back(std::to_string(e.entry.seq));
          c_key.push_back(e.entry.idempotency_key);
          c_time.push_back(std::to_string(e.entry.time_us));
          c_actor.push_back(e.entry.actor);
          c_action.push_back(e.entry.action);
          c_target.push_back(e.entry.target);
          c_outcome.push_back(e.entry.outcome);
          c_details.push_back(e.entry.details);
          c_prev.push_back(audit::HashToHex(e.entry.prev_hash));
          c_hash.push_back(audit::HashToHex(e.entry.entry_hash));
          c_leaf.push_back(audit::HashToHex(e.leaf_hash));
          r->outcome.entries.push_back(e);
          r->outcome.created.push_back(true);
          known.emplace(std::move(k), std::move(e));
        }
      }
      // The entries, the heads, the completed subtrees and COMMIT in one more round trip: the head locks
      // are held for two round trips and the commit's flush.
      std::vector<db::Statement> last;
      if (!c_org.empty()) {
        db::Params p;
        for (const auto* col : {&c_org, &c_seq, &c_key, &c_time, &c_actor, &c_action, &c_target, &c_outcome,
                                &c_details, &c_prev, &c_hash, &c_leaf}) {
          p.Add(ArrayLiteral(*col));
        }
        last.push_back({std::string(kInsertEntries), std::move(p), true});
      }
      std::vector<std::string> u_org, u_next, u_head, u_range;
      for (auto& [org, h] : heads) {
        if (!h.changed) continue;
        u_org.push_back(org);
        u_next.push_back(std::to_string(h.next_seq));
        u_head.push_back(audit::HashToHex(h.head));
        std::string cr = h.range.Encode();
        u_range.push_back(crypto::HexEncode(crypto::AsBytes(cr)));
      }
      if (!u_org.empty()) {
        last.push_back({std::string(kUpdateHeads),
                        db::Params(ArrayLiteral(u_org), ArrayLiteral(u_next), ArrayLiteral(u_head),
                                   ArrayLiteral(u_range)),
                        true});
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
      GOVERN_ASSIGN_OR_RETURN(std::vector<db::Rows> done, tx.Pipeline(last));
      const db::Rows& updated = done[c_org.empty() ? 0 : 1];
      if (!u_org.empty() && updated.affected() != static_cast<int64_t>(u_org.size())) {
        return Internal("chain head update lost rows");  // cannot happen: the heads are locked
      }
      if (done.back().tag() != "COMMIT") return Aborted("the transaction was rolled back");
      return OkStatus();
    };
    // Not Connection::Transact: BEGIN and COMMIT travel in the pipelines above. No retry here: a failed
    // batch is refused (503) and its writers retry with the same keys, which is safe whatever happened.
    Status s = body(c);
    if (!s.ok() && c.InTransaction()) (void)c.Exec("ROLLBACK");
    return s;
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
