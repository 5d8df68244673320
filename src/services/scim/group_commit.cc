// Group commit: parts of one transaction under nested savepoints g1, g2, ... (no RELEASE: rolling
// back to a part's savepoint cannot reach an earlier part's writes; COMMIT ends them all).
#include "services/scim/group_commit.h"

#include <algorithm>
#include <condition_variable>
#include <iterator>
#include <utility>

#include "db/error.h"
#include "db/pool.h"

namespace govern::scim_service {

namespace {
constexpr int kMaxAttempts = 10;
}  // namespace

struct GroupCommitter::Part {
  int order_class = 0;
  std::string order_key;
  std::vector<db::Statement> statements;
  Finish finish;
  int attempts = 0;
  bool done = false;
  bool retry = false;
  std::condition_variable done_cv;  // Run() waits on it
  Status result;
};

Result<std::vector<db::Rows>> GroupTx::Pipeline(std::span<const db::Statement> statements) {
  auto r = conn_->Pipeline(statements);
  if (!r.ok() && failed_.ok()) failed_ = r.status();
  return r;
}

Result<db::Rows> GroupTx::ExecPrepared(std::string_view sql, const db::Params& params) {
  const db::Statement one[] = {{.sql = std::string(sql), .params = params, .prepared = true}};
  GOVERN_ASSIGN_OR_RETURN(std::vector<db::Rows> rows, Pipeline(one));
  return std::move(rows.front());
}

GroupCommitter::GroupCommitter(db::Pool* pool, GroupCommitOptions options) : pool_(pool), options_(options) {
  options_.lanes = std::max(options_.lanes, 1);
  options_.max_batch = std::clamp<size_t>(options_.max_batch, 1, 64);
  for (int i = 0; i < options_.lanes; ++i) lanes_.emplace_back([this, i] { Lane(i); });
}

GroupCommitter::~GroupCommitter() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
    held_ = false;
  }
  work_cv_.notify_all();
  for (std::thread& t : lanes_) t.join();
}

Status GroupCommitter::Run(int order_class, std::string order_key, std::vector<db::Statement> statements,
                           Finish finish) {
  auto part = std::make_shared<Part>();
  part->order_class = order_class;
  part->order_key = std::move(order_key);
  part->statements = std::move(statements);
  part->finish = std::move(finish);
  std::unique_lock lk(mu_);
  if (stopping_) return Unavailable("the directory is shutting down");
  queue_.push_back(part);
  // Every lane: the one that can take this part may not be the one notify_one would wake.
  work_cv_.notify_all();
  part->done_cv.wait(lk, [&] { return part->done; });
  return part->result;
}

void GroupCommitter::Hold() {
  std::lock_guard lk(mu_);
  held_ = true;
}

void GroupCommitter::Release() {
  {
    std::lock_guard lk(mu_);
    held_ = false;
  }
  work_cv_.notify_all();
}

size_t GroupCommitter::Queued() {
  std::lock_guard lk(mu_);
  return queue_.size();
}

GroupCommitter::Stats GroupCommitter::stats() {
  std::lock_guard lk(mu_);
  return stats_;
}

void GroupCommitter::Lane(int index) {
  const int skip_class = index == 0 ? -2 : options_.exclusive_class;  // -2: no class is skipped
  auto takeable = [&] {
    for (const auto& p : queue_) {
      if (p->order_class != skip_class) return true;
    }
    return false;
  };
  for (;;) {
    std::vector<std::shared_ptr<Part>> group;
    {
      std::unique_lock lk(mu_);
      work_cv_.wait(lk, [&] { return (stopping_ && queue_.empty()) || (!held_ && takeable()); });
      if (queue_.empty()) return;  // stopping
      for (auto it = queue_.begin(); it != queue_.end() && group.size() < options_.max_batch;) {
        if ((*it)->order_class == skip_class) {
          ++it;
          continue;
        }
        group.push_back(std::move(*it));
        it = queue_.erase(it);
      }
      // More waiting than this lane took: let another lane start on it now.
      if (!queue_.empty()) work_cv_.notify_all();
    }
    std::stable_sort(group.begin(), group.end(), [](const auto& a, const auto& b) {
      if (a->order_class != b->order_class) return a->order_class < b->order_class;
      return a->order_key < b->order_key;
    });
    RunGroup(group);
    bool requeued = false;
    {
      std::lock_guard lk(mu_);
      ++stats_.groups;
      for (auto& p : group) {
        if (p->retry) {
          p->retry = false;
          queue_.push_front(p);
          requeued = true;
          continue;
        }
        p->done = true;
        ++stats_.parts;
        p->done_cv.notify_one();
      }
    }
    bool wake = requeued;
    {
      std::lock_guard lk(mu_);
      wake = wake || stopping_;  // lanes that take nothing of what is left must see the queue empty
    }
    if (wake) work_cv_.notify_all();
  }
}

void GroupCommitter::RunGroup(std::vector<std::shared_ptr<Part>>& group) {
  auto fail_all = [&](const Status& why, bool keep_refusals) {
    for (auto& p : group) {
      if (keep_refusals && !p->result.ok() && !p->retry) continue;  // its own error stands
      p->retry = false;
      p->result = Unavailable("the directory's shared transaction failed, nothing of it was applied: " +
                              why.message());
    }
  };
  for (auto& p : group) {
    p->result = OkStatus();
    ++p->attempts;
  }
  auto lease = pool_->Checkout();
  if (!lease.ok()) {
    fail_all(lease.status(), false);
    return;
  }
  db::Connection& conn = **lease;
  auto abandon = [&](const Status& why) {
    fail_all(why, false);
    if (conn.InTransaction()) (void)conn.Exec("ROLLBACK");
  };
  GroupTx tx(&conn);
  // Each part's finish; false when the group cannot go on.
  auto finish = [&](Part& p, std::vector<db::Rows>& rows) {
    Status s = p.finish(rows, tx);
    if (!tx.failed_.ok()) {  // a read of finish failed: the transaction is aborted
      abandon(tx.failed_);
      return false;
    }
    if (!s.ok()) p.result = s;  // wrote nothing (finish's contract): nothing to undo
    return true;
  };

  // The fast path: every part in one pipeline.
  std::vector<db::Statement> all{{.sql = "BEGIN"}};
  std::vector<size_t> first(group.size());
  for (size_t i = 0; i < group.size(); ++i) {
    all.push_back({.sql = "SAVEPOINT g" + std::to_string(i + 1)});
    first[i] = all.size();
    for (const db::Statement& st : group[i]->statements) all.push_back(st);
  }
  auto results = conn.Pipeline(all);
  if (results.ok()) {
    for (size_t i = 0; i < group.size(); ++i) {
      auto from = results->begin() + static_cast<std::ptrdiff_t>(first[i]);
      std::vector<db::Rows> rows(
          std::make_move_iterator(from),
          std::make_move_iterator(from + static_cast<std::ptrdiff_t>(group[i]->statements.size())));
      if (!finish(*group[i], rows)) return;
    }
  } else {
    // Some statement failed: undo the whole pipeline back to the first savepoint, then run the
    // parts one at a time, each under a savepoint of its own, to find out which one failed.
    if (db::IsConnectionLoss(results.status()) || !conn.InTransaction() ||
        !conn.Exec("ROLLBACK TO SAVEPOINT g1").ok()) {
      abandon(results.status());
      return;
    }
    size_t n = group.size();
    for (size_t i = 0; i < group.size(); ++i) {
      Part& p = *group[i];
      const std::string name = "g" + std::to_string(++n);
      std::vector<db::Statement> one{{.sql = "SAVEPOINT " + name}};
      for (const db::Statement& st : p.statements) one.push_back(st);
      auto r = conn.Pipeline(one);
      if (!r.ok()) {
        if (db::IsConnectionLoss(r.status()) || !conn.Exec("ROLLBACK TO SAVEPOINT " + name).ok()) {
          abandon(r.status());
          return;
        }
        p.result = r.status();
        if (db::IsRetryableConflict(r.status()) && p.attempts < kMaxAttempts) p.retry = true;
        continue;
      }
      r->erase(r->begin());
      if (!finish(p, *r)) return;
    }
  }
  // `SELECT 1` first: in a transaction that is (against expectation) aborted, COMMIT would answer
  // ROLLBACK without an error; the SELECT fails instead, and so does the pipeline.
  const db::Statement commit[] = {{.sql = "SELECT 1"}, {.sql = "COMMIT"}};
  auto committed = conn.Pipeline(commit);
  if (!committed.ok()) {
    fail_all(committed.status(), true);
    if (conn.InTransaction()) (void)conn.Exec("ROLLBACK");
    std::lock_guard lk(mu_);
    ++stats_.commit_failures;
  }
}

}  // namespace govern::scim_service
