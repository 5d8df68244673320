// Pool: checkout, return, discard.
#include "db/pool.h"

#include "base/log.h"

namespace govern::db {

Result<std::unique_ptr<Pool>> Pool::Create(PoolOptions options) {
  if (options.max_size < 1) return InvalidArgument("pool max_size must be at least 1");
  std::unique_ptr<Pool> pool(new Pool(std::move(options)));
  GOVERN_ASSIGN_OR_RETURN(auto first, Connection::Connect(pool->options_.conninfo, pool->options_.connect));
  pool->idle_.push_back(std::move(first));
  pool->open_ = 1;
  return pool;
}

Pool::~Pool() = default;

Pool::Lease::~Lease() {
  if (pool_ && conn_) pool_->Return(std::move(conn_));
}

Result<Pool::Lease> Pool::Checkout(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_ptr<Connection> conn;
  {
    std::unique_lock lock(mu_);
    while (idle_.empty() && open_ >= options_.max_size) {
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() &&
          open_ >= options_.max_size) {
        return DeadlineExceeded("no database connection free within " + std::to_string(timeout.count()) +
                                " ms (pool of " + std::to_string(options_.max_size) + ")");
      }
    }
    if (!idle_.empty()) {
      conn = std::move(idle_.back());  // most recently used: its cache is warm
      idle_.pop_back();
    } else {
      ++open_;  // reserve the slot, connect outside the lock
    }
  }
  if (!conn) {
    auto c = Connection::Connect(options_.conninfo, options_.connect);
    if (!c.ok()) {
      std::lock_guard lock(mu_);
      --open_;
      cv_.notify_one();
      return c.status();
    }
    conn = std::move(c).value();
  } else if (!conn->Healthy()) {
    Status s = conn->Reconnect();
    if (!s.ok()) {
      std::lock_guard lock(mu_);
      --open_;
      ++discarded_;
      cv_.notify_one();
      return s;
    }
  }
  return Lease(this, std::move(conn));
}

void Pool::Return(std::unique_ptr<Connection> conn) {
  bool reusable = conn->Healthy() && !conn->InTransaction();
  {
    std::lock_guard lock(mu_);
    if (reusable) {
      idle_.push_back(std::move(conn));
    } else {
      --open_;
      ++discarded_;
    }
    cv_.notify_one();
  }
  if (conn) log::Debug("db", "pool discarded a connection");
  // A discarded connection closes here, outside the lock.
}

Status Pool::Transact(const std::function<Status(Connection&)>& body, const TxOptions& options) {
  GOVERN_ASSIGN_OR_RETURN(Lease lease, Checkout());
  return lease->Transact(body, options);
}

Status Pool::HealthCheck() {
  GOVERN_ASSIGN_OR_RETURN(Lease lease, Checkout());
  return lease->Ping();
}

Pool::Stats Pool::stats() const {
  std::lock_guard lock(mu_);
  return Stats{open_, static_cast<int>(idle_.size()), discarded_};
}

}  // namespace govern::db
