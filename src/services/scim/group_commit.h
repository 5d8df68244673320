// GroupCommitter: concurrent write requests share one PostgreSQL transaction (group commit at the
// application layer), each request's part under its own SAVEPOINT.
//
// Run(statements, finish) queues a part and blocks until it is decided. A lane thread takes what is
// queued (up to max_batch parts) and sends them to PostgreSQL in one pipeline, one round trip for
// the whole group: BEGIN, then per part `SAVEPOINT gN` and its statements. When every statement
// succeeds, each part's finish reads its results (and may refuse, when it wrote nothing). When a
// statement fails (a 409, a deadlock), the group rolls back to its first savepoint and runs its
// parts again one at a time, each rolled back to its own savepoint when it fails, so that only that
// part is undone. Then one COMMIT for all of them. Nothing
// is answered before that COMMIT returns:
//   - a part that succeeded gets OkStatus() only when the COMMIT succeeded: it is durable;
//   - a part that failed gets its own error (its writes were rolled back to its savepoint);
//   - when the COMMIT (or the connection) fails, every part of the group gets Unavailable: nothing of
//     the group was applied, nothing is acknowledged that is not durable.
// A part that meets a deadlock or serialization failure is rolled back to its savepoint and run again
// in a later group (up to 10 times); the rest of its group is unaffected.
//
// Why: every created user is two IdP requests and each was a transaction of its own, so 16 streams
// made two commits per user and held the group row's lock (a members-only PATCH locks the group, so
// its version, the seq of its change row, grows in commit order) across each commit's WAL flush. Sharing a
// commit makes one commit record and one flush wait per group of requests, and PATCHes of the same group
// inside one group no longer wait for each other.
//
// Lock order: parts of a group run sorted by (order_class, order_key), so every group takes row locks
// in one global order and two lanes running at once cannot deadlock each other on them.
//
// finish runs on a lane thread: it must only talk to the database through the GroupTx it is given
// (no pool checkouts: that could wait for a connection a lane holds). Parts of one group see each
// other's uncommitted writes (one transaction).
//
// Thread-safe. The destructor finishes what is queued and joins the lanes.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/status.h"
#include "db/connection.h"

namespace govern::db {
class Pool;
}  // namespace govern::db

namespace govern::scim_service {

struct GroupCommitOptions {
  // Groups in flight at once (each a lane thread with its own connection while it runs): while one
  // waits for its COMMIT's flush, another runs the next requests.
  int lanes = 2;
  // Most parts in one transaction. At most 64: a backend caches 64 subtransaction ids, and more
  // makes every other backend's snapshots slower (subtransaction overflow).
  size_t max_batch = 32;
  // Parts of this order_class run on lane 0 only (-1: on any lane). For parts that lock or update a
  // few hot rows (a group's row on every membership change): with one writer no session waits on
  // those rows' locks (and where they are updated, PostgreSQL can prune their old versions: a waiter
  // pins the page, and while the page is pinned the versions pile up and every lookup walks them).
  int exclusive_class = -1;
};

// The shared transaction as a part's `finish` sees it: for reads after the group's pipeline (the
// part's own statements have run by then, and so have the statements of the parts after it).
class GroupTx {
 public:
  Result<std::vector<db::Rows>> Pipeline(std::span<const db::Statement> statements);
  Result<db::Rows> ExecPrepared(std::string_view sql, const db::Params& params = {});

 private:
  friend class GroupCommitter;
  explicit GroupTx(db::Connection* conn) : conn_(conn) {}
  db::Connection* conn_;
  Status failed_;  // a statement failed: the transaction is aborted, the whole group fails
};

class GroupCommitter {
 public:
  // Reads the results of a part's statements (one Rows per statement) and returns OkStatus() to keep
  // its writes or an error to refuse. It may refuse only when its statements wrote nothing (a
  // statement that fails is a different matter: the part's savepoint undoes it); it may read more
  // through `tx`, and it must not block otherwise.
  using Finish = std::function<Status(std::vector<db::Rows>& results, GroupTx& tx)>;

  GroupCommitter(db::Pool* pool, GroupCommitOptions options = {});
  ~GroupCommitter();
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // Runs `statements` as one part of a shared transaction (see above), then `finish` on their results,
  // and returns once the part is decided: OkStatus() when committed, the failed statement's error or
  // finish's refusal when undone, Unavailable when its group's COMMIT failed.
  Status Run(int order_class, std::string order_key, std::vector<db::Statement> statements, Finish finish);

  // For tests: while held, lanes take nothing, so the parts queued meanwhile form one group on
  // Release(). Queued(): parts waiting for a lane.
  void Hold();
  void Release();
  size_t Queued();

  // Counters (for tests and the benchmark).
  struct Stats {
    uint64_t groups = 0;           // transactions committed or failed
    uint64_t parts = 0;            // parts decided
    uint64_t commit_failures = 0;  // groups whose COMMIT failed
  };
  Stats stats();

 private:
  struct Part;
  void Lane(int index);
  void RunGroup(std::vector<std::shared_ptr<Part>>& group);

  db::Pool* pool_;
  GroupCommitOptions options_;
  std::mutex mu_;
  std::condition_variable work_cv_;  // lanes wait for parts
  std::deque<std::shared_ptr<Part>> queue_;
  bool stopping_ = false;
  bool held_ = false;
  Stats stats_;
  std::vector<std::thread> lanes_;
};

}  // namespace govern::scim_service
