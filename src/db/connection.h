// Connection: one libpq connection to PostgreSQL, with safe parameters, cached prepared statements,
// pipelining, binary COPY, LISTEN/NOTIFY, retried transactions and reconnection.
//
// Every statement with data goes through PQexecParams/PQexecPrepared with its values bound as
// Params; the only text-only entry point, ExecScript(), is for SQL compiled into the binary
// (migrations). Errors carry their SQLSTATE (see error.h) and never contain the connection string.
//
// Connection loss: when a call finds the connection already cut (the server closed it, or a previous
// call failed with a connection error) it reconnects first, with exponential backoff and jitter up to
// ConnectOptions::reconnect_budget, then runs the statement; a statement that was in flight when the
// connection broke is never re-sent (it may have run), it fails with Unavailable. A connection cut in
// the middle of a transaction fails the next call too (the transaction is gone) before reconnecting.
// Prepared statements and LISTEN registrations are restored after a reconnect; notifications sent
// while the connection was down are lost (NOTIFY is not durable), so a listener that sees
// reconnects() change should re-read the state it follows.
//
// Not thread-safe: one thread at a time (a Pool hands each connection to one holder).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "db/copy_encoder.h"
#include "db/error.h"
#include "db/params.h"
#include "db/rows.h"

struct pg_conn;
struct pg_result;

namespace govern::db {

struct ConnectOptions {
  // Limit for one connection attempt (libpq's connect_timeout; it rounds below 2 s up to 2 s).
  std::chrono::milliseconds connect_timeout{5000};
  // Total time spent retrying when reconnecting after a loss; 0 means one attempt.
  std::chrono::milliseconds reconnect_budget{10000};
  std::chrono::milliseconds backoff_initial{20};
  std::chrono::milliseconds backoff_max{1000};
  std::string application_name = "govern";
};

enum class Isolation { kReadCommitted, kRepeatableRead, kSerializable };

struct TxOptions {
  Isolation isolation = Isolation::kReadCommitted;
  bool read_only = false;
  // Attempts in all, for serialization failures (40001), deadlocks (40P01) and connections lost
  // before COMMIT was sent. Backoff between attempts doubles from backoff_initial with full jitter.
  int max_attempts = 10;
  std::chrono::milliseconds backoff_initial{2};
  std::chrono::milliseconds backoff_max{200};
};

// One statement of a pipeline. `prepared` caches it as a prepared statement on this connection.
struct Statement {
  std::string sql;
  Params params;
  bool prepared = false;
};

struct Notification {
  std::string channel;
  std::string payload;
  int backend_pid = 0;
};

class Connection;

// CopyIn: an open COPY ... FROM STDIN (FORMAT binary). Write rows with Row(n).Int64(..)..., then
// Finish(). Rows are streamed to the server in chunks as the buffer fills. Destroying it without
// Finish() aborts the COPY (nothing is stored). Borrows the Connection, which must outlive it and is
// not to be used for anything else until Finish() or Abort().
class CopyIn {
 public:
  CopyIn(CopyIn&& other) noexcept;
  CopyIn& operator=(CopyIn&&) = delete;
  ~CopyIn();

  // Starts the next row of `fields` values, sending what is buffered when it passes the chunk size.
  CopyEncoder& Row(int16_t fields);
  // Sends the rest and ends the COPY; returns the number of rows stored.
  Result<int64_t> Finish();
  // Ends the COPY with an error: no row of it is stored.
  Status Abort(std::string_view reason);

 private:
  friend class Connection;
  explicit CopyIn(Connection* conn) : conn_(conn) {}
  Status Flush();

  Connection* conn_;
  CopyEncoder enc_;
  std::string chunk_;
  Status error_;
  bool done_ = false;
};

class Connection {
 public:
  // Connects to `conninfo` (libpq keyword/value or URI form). Fails with Unavailable when the server
  // cannot be reached within the connect timeout, Unauthenticated when it refuses the credentials.
  static Result<std::unique_ptr<Connection>> Connect(std::string conninfo, ConnectOptions options = {});
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // One statement with bound parameters (PQexecParams; a single statement only).
  Result<Rows> Exec(std::string_view sql, const Params& params = {});
  // The same through a prepared statement cached on this connection under the SQL text.
  Result<Rows> ExecPrepared(std::string_view sql, const Params& params = {});
  // Several statements without parameters (simple query protocol). For SQL compiled into the binary
  // only (migrations, fixtures), never for SQL that holds outside data.
  Status ExecScript(std::string_view sql);

  // Sends every statement without waiting for answers (libpq pipeline mode), then reads all results.
  // The statements run as one implicit transaction unless they manage their own (BEGIN/COMMIT):
  // when one fails the ones after it are skipped and the first error is returned.
  Result<std::vector<Rows>> Pipeline(std::span<const Statement> statements);

  // Starts `COPY ... FROM STDIN (FORMAT binary)`.
  Result<CopyIn> CopyFrom(std::string_view copy_sql);

  // LISTEN/UNLISTEN `channel` (quoted as an identifier, so any name is safe).
  Status Listen(std::string_view channel);
  Status Unlisten(std::string_view channel);
  // pg_notify(channel, payload).
  Status Notify(std::string_view channel, std::string_view payload);
  // Returns the next notification, waiting up to `timeout`; nullopt when none came in time.
  Result<std::optional<Notification>> WaitForNotification(std::chrono::milliseconds timeout);
  // Notifications already received, without waiting or blocking (for event loops polling socket()).
  Result<std::optional<Notification>> PollNotification();
  // The socket, for an event loop to poll for readability; -1 when not connected. It changes after
  // a reconnect.
  int socket() const;

  // Runs `body` inside BEGIN ... COMMIT, retrying the whole transaction on serialization failure,
  // deadlock, or a connection lost before COMMIT. When `body` returns an error the transaction is
  // rolled back and the error returned (retried only if it is one of those). A connection lost during
  // COMMIT returns Unavailable: the outcome is unknown and the body is not run again.
  Status Transact(const std::function<Status(Connection&)>& body, const TxOptions& options = {});

  // Closes and opens the connection again, with backoff, within the reconnect budget.
  Status Reconnect();
  // Cheap check without a round trip: false when the connection is known broken or the server has
  // closed it.
  bool Healthy();
  // A round trip (SELECT 1).
  Status Ping();
  // Inside a transaction block (BEGIN without COMMIT/ROLLBACK yet).
  bool InTransaction() const;
  // The backend process id serving this connection.
  int BackendPid() const;
  // Reconnections so far (for tests and metrics).
  int reconnects() const { return reconnects_; }

 private:
  friend class CopyIn;
  static void OnNotice(void* self, const pg_result* res);
  Connection(std::string conninfo, ConnectOptions options);
  Status Open();
  // Before a statement: reconnects when the connection is known to be cut.
  Status EnsureConnected();
  // Turns a libpq result into Rows or an error, and notes connection loss.
  Result<Rows> Finish(pg_result* res, bool command_ok_expected);
  Status ConnectionError(std::string_view what);
  Result<Rows> ExecPrepared(std::string_view sql, const Params& params, bool may_reprepare);
  Result<std::string> PreparedName(std::string_view sql, const Params& params, bool* created);
  void AfterStatement();

  std::string conninfo_;  // may hold a password: never logged, never in an error
  ConnectOptions options_;
  pg_conn* conn_ = nullptr;
  bool in_tx_ = false;  // last known transaction state, kept when the connection breaks
  bool broken_ = false;
  int reconnects_ = 0;
  std::unordered_map<std::string, std::string> prepared_;  // SQL text -> statement name
  std::vector<std::string> channels_;                      // LISTENed, restored after reconnect
  uint64_t next_statement_ = 0;
};

}  // namespace govern::db
