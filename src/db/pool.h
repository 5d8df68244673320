// Pool: a fixed maximum of Connections shared by many threads.
//
// Checkout() hands one connection to one holder until its Lease is destroyed. Connections are opened
// lazily up to max_size; an idle connection that the server has closed (pg_terminate_backend, a
// restart) is reconnected at checkout, with backoff; a connection returned broken, inside a transaction
// or a COPY is closed rather than reused. Checkout waits at most checkout_timeout for a free slot,
// then fails with DeadlineExceeded; repairing a dead connection may add up to the connect options'
// reconnect_budget (the database being down is Unavailable, not a full pool). Thread-safe. The Pool must
// outlive every Lease.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "db/connection.h"

namespace govern::db {

struct PoolOptions {
  std::string conninfo;  // may hold a password; never logged
  int max_size = 8;
  std::chrono::milliseconds checkout_timeout{5000};
  ConnectOptions connect;
};

class Pool {
 public:
  // Move-only handle on a checked-out connection; returns it to the pool when destroyed.
  class Lease {
   public:
    Lease(Lease&& other) noexcept : pool_(other.pool_), conn_(std::move(other.conn_)) {
      other.pool_ = nullptr;
    }
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    Connection* operator->() const { return conn_.get(); }
    Connection& operator*() const { return *conn_; }

   private:
    friend class Pool;
    Lease(Pool* pool, std::unique_ptr<Connection> conn) : pool_(pool), conn_(std::move(conn)) {}
    Pool* pool_;
    std::unique_ptr<Connection> conn_;
  };

  // Opens one connection to check the conninfo, and keeps it.
  static Result<std::unique_ptr<Pool>> Create(PoolOptions options);
  ~Pool();

  Result<Lease> Checkout() { return Checkout(options_.checkout_timeout); }
  Result<Lease> Checkout(std::chrono::milliseconds timeout);

  // Checkout() then Connection::Transact().
  Status Transact(const std::function<Status(Connection&)>& body, const TxOptions& options = {});
  // A round trip on a pooled connection: ok when the database answers.
  Status HealthCheck();

  struct Stats {
    int open = 0;  // connections held, idle or leased
    int idle = 0;
    uint64_t discarded = 0;  // closed because they came back broken
  };
  Stats stats() const;

 private:
  explicit Pool(PoolOptions options) : options_(std::move(options)) {}
  void Return(std::unique_ptr<Connection> conn);

  PoolOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> idle_;
  int open_ = 0;  // including slots reserved by a Checkout that is connecting
  uint64_t discarded_ = 0;
};

}  // namespace govern::db
