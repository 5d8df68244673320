// Connection: libpq underneath, Statuses on top.
#include "db/connection.h"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <random>
#include <thread>

#include "base/log.h"

namespace govern::db {
namespace {

// Status of the connection-level error libpq reports (no SQLSTATE of its own): 08006, connection failure.
constexpr std::string_view kConnectionFailure = "08006";
constexpr size_t kCopyChunk = 256 * 1024;

std::chrono::milliseconds Jittered(std::chrono::milliseconds base, std::chrono::milliseconds cap,
                                   int attempt) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  int64_t ceiling = base.count() << std::min(attempt, 20);
  ceiling = std::clamp<int64_t>(ceiling, 1, std::max<int64_t>(1, cap.count()));
  // Full jitter: uniform in [ceiling/2, ceiling], so many clients spread out but still back off.
  std::uniform_int_distribution<int64_t> dist(ceiling / 2, ceiling);
  return std::chrono::milliseconds(dist(rng));
}

std::string Trim(const char* m) {
  std::string s(m ? m : "");
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

// Server notices would otherwise go to stderr. A FATAL one arriving while idle is the server saying
// it is about to close this connection (pg_terminate_backend, shutdown): remember that.
void Connection::OnNotice(void* self, const pg_result* res) {
  auto* c = static_cast<Connection*>(self);
  const char* sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
  std::string_view severity = sev ? sev : "";
  std::string msg = Trim(PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY));
  if (severity == "FATAL" || severity == "PANIC") {
    c->broken_ = true;
    log::Info("db", "server closed the connection", {{"reason", msg}});
  } else if (severity == "WARNING") {
    log::Warn("db", "server warning", {{"message", msg}});
  } else {
    log::Debug("db", "server notice", {{"message", msg}});
  }
}

// ---------------------------------------------------------------------------------------------------
// Connecting.

Connection::Connection(std::string conninfo, ConnectOptions options)
    : conninfo_(std::move(conninfo)), options_(std::move(options)) {}

Connection::~Connection() {
  if (conn_) PQfinish(conn_);
}

Result<std::unique_ptr<Connection>> Connection::Connect(std::string conninfo, ConnectOptions options) {
  std::unique_ptr<Connection> c(new Connection(std::move(conninfo), std::move(options)));
  GOVERN_RETURN_IF_ERROR(c->Open());
  return c;
}

Status Connection::Open() {
  if (conn_) {
    PQfinish(conn_);
    conn_ = nullptr;
  }
  prepared_.clear();
  in_tx_ = false;
  broken_ = false;
  auto secs = (options_.connect_timeout.count() + 999) / 1000;
  std::string timeout = std::to_string(std::max<int64_t>(1, secs));
  // dbname is expanded as a full conninfo; the keys after it override what it says.
  const char* keys[] = {"dbname", "connect_timeout", "application_name", nullptr};
  const char* values[] = {conninfo_.c_str(), timeout.c_str(), options_.application_name.c_str(), nullptr};
  conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (!conn_) return ResourceExhausted("libpq could not allocate a connection");
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string msg = Trim(PQerrorMessage(conn_));
    PQfinish(conn_);
    conn_ = nullptr;
    broken_ = true;
    bool auth = msg.find("authentication failed") != std::string::npos ||
                msg.find("no password supplied") != std::string::npos ||
                msg.find("password authentication") != std::string::npos;
    if (auth) return SqlError("28P01", msg);
    if (msg.find("does not exist") != std::string::npos) return SqlError("3D000", msg).WithContext("connect");
    return SqlError(kConnectionFailure, msg).WithContext("connect");
  }
  PQsetNoticeReceiver(conn_, &Connection::OnNotice, this);
  // Re-LISTEN what this connection listened to before it was cut.
  for (const std::string& ch : channels_) {
    char* ident = PQescapeIdentifier(conn_, ch.data(), ch.size());
    if (!ident) return Internal("could not quote a channel name");
    std::string sql = std::string("LISTEN ") + ident;
    PQfreemem(ident);
    PGresult* r = PQexec(conn_, sql.c_str());
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) {
      broken_ = true;
      return SqlError(kConnectionFailure, "could not LISTEN again after reconnecting");
    }
  }
  return OkStatus();
}

Status Connection::Reconnect() {
  auto deadline = std::chrono::steady_clock::now() + options_.reconnect_budget;
  Status last;
  for (int attempt = 0;; ++attempt) {
    last = Open();
    if (last.ok()) {
      ++reconnects_;
      log::Info("db", "reconnected", {{"attempt", attempt + 1}});
      return last;
    }
    // Wrong credentials or a missing database will not heal by waiting.
    std::string_view st = SqlStateOf(last);
    if (st == "28P01" || st == "3D000") return last;
    auto wait = Jittered(options_.backoff_initial, options_.backoff_max, attempt);
    if (std::chrono::steady_clock::now() + wait >= deadline) break;
    std::this_thread::sleep_for(wait);
  }
  return last.WithContext("reconnect gave up after " + std::to_string(options_.reconnect_budget.count()) +
                          " ms");
}

bool Connection::Healthy() {
  if (!conn_ || broken_ || PQstatus(conn_) != CONNECTION_OK) return false;
  // An idle connection the server has closed (pg_terminate_backend, shutdown) is readable: it holds
  // the FATAL message and then EOF. Reading it tells us without a round trip.
  // The FATAL message may come in one read and the EOF in the next, so read while there is input;
  // PQisBusy() parses what was read, which hands a FATAL notice to OnNotice().
  for (int i = 0; i < 4; ++i) {
    pollfd p{PQsocket(conn_), POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) break;
    if (!PQconsumeInput(conn_) || PQstatus(conn_) != CONNECTION_OK) {
      broken_ = true;
      return false;
    }
    (void)PQisBusy(conn_);
    if (broken_) return false;
  }
  return true;
}

Status Connection::EnsureConnected() {
  if (Healthy()) return OkStatus();
  if (in_tx_) {
    // Reconnecting silently would run the rest of the transaction's statements outside it.
    in_tx_ = false;
    return SqlError(kConnectionFailure,
                    "connection lost inside a transaction; the transaction was rolled back");
  }
  return Reconnect();
}

Status Connection::Ping() { return Exec("SELECT 1").status(); }

bool Connection::InTransaction() const {
  if (!conn_) return false;
  auto t = PQtransactionStatus(conn_);
  return t == PQTRANS_INTRANS || t == PQTRANS_INERROR || t == PQTRANS_ACTIVE;
}

int Connection::BackendPid() const { return conn_ ? PQbackendPID(conn_) : 0; }

int Connection::socket() const { return conn_ ? PQsocket(conn_) : -1; }

// ---------------------------------------------------------------------------------------------------
// Statements.

Status Connection::ConnectionError(std::string_view what) {
  broken_ = PQstatus(conn_) != CONNECTION_OK;
  std::string msg = Trim(PQerrorMessage(conn_));
  return SqlError(kConnectionFailure, std::string(what) + ": " + msg);
}

void Connection::AfterStatement() {
  if (PQstatus(conn_) != CONNECTION_OK) {
    broken_ = true;  // keep in_tx_ as it was: the next call must learn the transaction is gone
    return;
  }
  auto t = PQtransactionStatus(conn_);
  in_tx_ = t == PQTRANS_INTRANS || t == PQTRANS_INERROR;
}

Result<Rows> Connection::Finish(PGresult* res, bool /*command_ok_expected*/) {
  if (!res) {
    AfterStatement();
    return ConnectionError("statement failed");
  }
  Rows rows(res);
  ExecStatusType st = PQresultStatus(res);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY) {
    AfterStatement();
    return rows;
  }
  if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT || st == PGRES_COPY_BOTH) {
    // A COPY reached Exec(): end it so the connection stays usable, and point to CopyFrom().
    if (st == PGRES_COPY_OUT) {
      char* buf = nullptr;
      while (PQgetCopyData(conn_, &buf, 0) > 0) PQfreemem(buf);
    } else {
      PQputCopyEnd(conn_, "COPY through Exec() is not supported");
    }
    while (PGresult* r = PQgetResult(conn_)) PQclear(r);
    AfterStatement();
    return InvalidArgument("COPY goes through Connection::CopyFrom(), not Exec()");
  }
  const char* state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
  std::string msg = Trim(PQresultErrorMessage(res));
  AfterStatement();
  if (!state) {
    // libpq reports a lost connection as a result without a SQLSTATE.
    return SqlError(kConnectionFailure, msg.empty() ? "connection lost" : msg);
  }
  if (IsConnectionLoss(SqlError(state, ""))) broken_ = true;
  return SqlError(state, msg);
}

namespace {
Status CheckSql(std::string_view sql) {
  if (sql.find('\0') != std::string_view::npos) return InvalidArgument("SQL text holds a NUL byte");
  return OkStatus();
}
}  // namespace

Result<Rows> Connection::Exec(std::string_view sql, const Params& params) {
  GOVERN_RETURN_IF_ERROR(CheckSql(sql));
  GOVERN_RETURN_IF_ERROR(params.error());
  GOVERN_RETURN_IF_ERROR(EnsureConnected());
  std::string q(sql);
  Params::Raw raw = params.raw();
  PGresult* res = PQexecParams(conn_, q.c_str(), static_cast<int>(raw.values.size()), raw.types.data(),
                               raw.values.data(), raw.lengths.data(), raw.formats.data(), 0);
  return Finish(res, false);
}

Result<std::string> Connection::PreparedName(std::string_view sql, const Params& params, bool* created) {
  *created = false;
  std::string key(sql);
  auto it = prepared_.find(key);
  if (it != prepared_.end()) return it->second;
  std::string name = "govern_s" + std::to_string(++next_statement_);
  *created = true;
  (void)params;
  prepared_.emplace(std::move(key), name);
  return name;
}

Result<Rows> Connection::ExecPrepared(std::string_view sql, const Params& params) {
  return ExecPrepared(sql, params, /*may_reprepare=*/true);
}

Result<Rows> Connection::ExecPrepared(std::string_view sql, const Params& params, bool may_reprepare) {
  GOVERN_RETURN_IF_ERROR(CheckSql(sql));
  GOVERN_RETURN_IF_ERROR(params.error());
  GOVERN_RETURN_IF_ERROR(EnsureConnected());
  bool created = false;
  GOVERN_ASSIGN_OR_RETURN(std::string name, PreparedName(sql, params, &created));
  if (created) {
    std::string q(sql);
    PGresult* res =
        PQprepare(conn_, name.c_str(), q.c_str(), static_cast<int>(params.size()), params.types().data());
    auto r = Finish(res, true);
    if (!r.ok()) {
      prepared_.erase(std::string(sql));
      return r.status();
    }
  }
  Params::Raw raw = params.raw();
  PGresult* res = PQexecPrepared(conn_, name.c_str(), static_cast<int>(raw.values.size()), raw.values.data(),
                                 raw.lengths.data(), raw.formats.data(), 0);
  auto r = Finish(res, false);
  // A schema change (ALTER TABLE) can invalidate a cached statement's result type. Outside a
  // transaction nothing was done, so forget it and prepare it again, once.
  if (may_reprepare && !r.ok() && !in_tx_ && SqlStateOf(r.status()) == "0A000" &&
      r.status().message().find("cached plan must not change result type") != std::string::npos) {
    prepared_.erase(std::string(sql));
    std::string dealloc = "DEALLOCATE " + name;  // our own generated name, no outside text
    (void)Finish(PQexec(conn_, dealloc.c_str()), true);
    return ExecPrepared(sql, params, false);
  }
  return r;
}

Status Connection::ExecScript(std::string_view sql) {
  GOVERN_RETURN_IF_ERROR(CheckSql(sql));
  GOVERN_RETURN_IF_ERROR(EnsureConnected());
  std::string q(sql);
  // PQexec returns only the last result; an error stops the script and is that last result.
  PGresult* res = PQexec(conn_, q.c_str());
  return Finish(res, true).status();
}

// ---------------------------------------------------------------------------------------------------
// Pipeline.

Result<std::vector<Rows>> Connection::Pipeline(std::span<const Statement> statements) {
  for (const Statement& s : statements) {
    GOVERN_RETURN_IF_ERROR(CheckSql(s.sql));
    GOVERN_RETURN_IF_ERROR(s.params.error());
  }
  GOVERN_RETURN_IF_ERROR(EnsureConnected());
  if (!PQenterPipelineMode(conn_)) return ConnectionError("enter pipeline mode");

  // What each result that will come back belongs to: a statement (index) or a Prepare (-1).
  std::vector<int> expect;
  expect.reserve(statements.size());
  std::vector<std::string> new_names;  // forgotten again if the pipeline fails
  Status send_error;
  for (size_t i = 0; i < statements.size() && send_error.ok(); ++i) {
    const Statement& s = statements[i];
    Params::Raw raw = s.params.raw();
    int n = static_cast<int>(raw.values.size());
    int ok = 0;
    if (s.prepared) {
      bool created = false;
      auto name = PreparedName(s.sql, s.params, &created);
      if (created) {
        new_names.push_back(s.sql);
        if (!PQsendPrepare(conn_, name->c_str(), s.sql.c_str(), n, s.params.types().data())) {
          send_error = ConnectionError("pipeline prepare");
          break;
        }
        expect.push_back(-1);
      }
      ok = PQsendQueryPrepared(conn_, name->c_str(), n, raw.values.data(), raw.lengths.data(),
                               raw.formats.data(), 0);
    } else {
      ok = PQsendQueryParams(conn_, s.sql.c_str(), n, raw.types.data(), raw.values.data(), raw.lengths.data(),
                             raw.formats.data(), 0);
    }
    if (!ok) {
      send_error = ConnectionError("pipeline send");
      break;
    }
    expect.push_back(static_cast<int>(i));
  }
  if (send_error.ok() && !PQpipelineSync(conn_)) send_error = ConnectionError("pipeline sync");

  std::vector<Rows> out(statements.size());
  Status first_error = send_error;
  if (send_error.ok()) {
    for (int idx : expect) {
      PGresult* res = PQgetResult(conn_);
      if (!res) {
        first_error = ConnectionError("pipeline result missing");
        break;
      }
      ExecStatusType st = PQresultStatus(res);
      if (st == PGRES_PIPELINE_ABORTED) {
        PQclear(res);
      } else {
        auto r = Finish(res, idx < 0);
        if (!r.ok()) {
          if (first_error.ok()) {
            first_error = r.status().WithContext(idx < 0 ? "pipeline prepare"
                                                         : "pipeline statement " + std::to_string(idx + 1));
          }
        } else if (idx >= 0) {
          out[static_cast<size_t>(idx)] = std::move(r).value();
        }
      }
      // Each statement's results end with a null.
      if (PGresult* extra = PQgetResult(conn_)) PQclear(extra);
      if (PQstatus(conn_) != CONNECTION_OK) break;
    }
    if (PQstatus(conn_) == CONNECTION_OK) {
      PGresult* sync = PQgetResult(conn_);
      if (!sync || PQresultStatus(sync) != PGRES_PIPELINE_SYNC) {
        if (first_error.ok()) first_error = ConnectionError("pipeline did not end with its sync");
      }
      if (sync) PQclear(sync);
    }
  }
  if (PQstatus(conn_) == CONNECTION_OK && !PQexitPipelineMode(conn_)) {
    if (first_error.ok()) first_error = ConnectionError("exit pipeline mode");
    broken_ = true;  // a connection stuck in pipeline mode is not reusable
  }
  if (PQstatus(conn_) != CONNECTION_OK) broken_ = true;
  AfterStatement();
  if (!first_error.ok()) {
    for (const std::string& sql : new_names) prepared_.erase(sql);
    return first_error;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// COPY.

Result<CopyIn> Connection::CopyFrom(std::string_view copy_sql) {
  GOVERN_RETURN_IF_ERROR(EnsureConnected());
  std::string q(copy_sql);
  PGresult* res = PQexecParams(conn_, q.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0);
  if (res && PQresultStatus(res) == PGRES_COPY_IN) {
    PQclear(res);
    return CopyIn(this);
  }
  auto r = Finish(res, true);
  if (!r.ok()) return r.status();
  return InvalidArgument("not a COPY ... FROM STDIN statement");
}

CopyIn::CopyIn(CopyIn&& other) noexcept
    : conn_(other.conn_),
      enc_(std::move(other.enc_)),
      chunk_(std::move(other.chunk_)),
      error_(std::move(other.error_)),
      done_(other.done_) {
  other.done_ = true;
}

CopyIn::~CopyIn() {
  if (!done_) (void)Abort("abandoned");
}

Status CopyIn::Flush() {
  if (!error_.ok()) return error_;
  if (enc_.buffer().empty()) return OkStatus();
  enc_.Take(&chunk_);
  if (PQputCopyData(conn_->conn_, chunk_.data(), static_cast<int>(chunk_.size())) != 1) {
    error_ = conn_->ConnectionError("COPY data");
  }
  return error_;
}

CopyEncoder& CopyIn::Row(int16_t fields) {
  if (enc_.buffer().size() >= kCopyChunk && enc_.status().ok()) (void)Flush();
  return enc_.Row(fields);
}

Result<int64_t> CopyIn::Finish() {
  if (done_) return FailedPrecondition("COPY already finished");
  enc_.Finish();
  if (!enc_.status().ok()) {
    Status s = enc_.status();
    (void)Abort(s.message());
    return s;
  }
  GOVERN_RETURN_IF_ERROR(Flush());
  done_ = true;
  PGconn* c = conn_->conn_;
  if (PQputCopyEnd(c, nullptr) != 1) return conn_->ConnectionError("COPY end");
  PGresult* res = PQgetResult(c);
  // Drain before Finish() reads the transaction status: until PQgetResult returns null libpq still
  // reports the COPY as active (not "in transaction"), and a wrong in_tx_ would let the next call
  // reconnect silently and run outside the transaction it belongs to.
  while (PGresult* extra = PQgetResult(c)) PQclear(extra);
  auto r = conn_->Finish(res, true);
  if (!r.ok()) return r.status();
  return r->affected();
}

Status CopyIn::Abort(std::string_view reason) {
  if (done_) return OkStatus();
  done_ = true;
  PGconn* c = conn_->conn_;
  std::string why(reason);
  if (PQputCopyEnd(c, why.c_str()) != 1) return conn_->ConnectionError("COPY abort");
  // The server answers the abort with an error (57014): expected, so only a lost connection counts.
  PGresult* res = PQgetResult(c);
  while (PGresult* extra = PQgetResult(c)) PQclear(extra);  // first: see Finish()
  (void)conn_->Finish(res, true);
  return OkStatus();
}

// ---------------------------------------------------------------------------------------------------
// LISTEN/NOTIFY.

Status Connection::Listen(std::string_view channel) {
  GOVERN_RETURN_IF_ERROR(EnsureConnected());
  char* ident = PQescapeIdentifier(conn_, channel.data(), channel.size());
  if (!ident) return InvalidArgument("bad channel name: " + Trim(PQerrorMessage(conn_)));
  std::string sql = std::string("LISTEN ") + ident;
  PQfreemem(ident);
  GOVERN_RETURN_IF_ERROR(Exec(sql).status());
  if (std::find(channels_.begin(), channels_.end(), channel) == channels_.end()) {
    channels_.emplace_back(channel);
  }
  return OkStatus();
}

Status Connection::Unlisten(std::string_view channel) {
  GOVERN_RETURN_IF_ERROR(EnsureConnected());
  char* ident = PQescapeIdentifier(conn_, channel.data(), channel.size());
  if (!ident) return InvalidArgument("bad channel name: " + Trim(PQerrorMessage(conn_)));
  std::string sql = std::string("UNLISTEN ") + ident;
  PQfreemem(ident);
  channels_.erase(std::remove(channels_.begin(), channels_.end(), channel), channels_.end());
  return Exec(sql).status();
}

Status Connection::Notify(std::string_view channel, std::string_view payload) {
  return Exec("SELECT pg_notify($1, $2)", Params(channel, payload)).status();
}

Result<std::optional<Notification>> Connection::PollNotification() {
  if (!conn_ || broken_) GOVERN_RETURN_IF_ERROR(EnsureConnected());
  if (!PQconsumeInput(conn_)) {
    broken_ = true;
    return ConnectionError("reading notifications");
  }
  PGnotify* n = PQnotifies(conn_);
  if (!n) return std::optional<Notification>();
  Notification out{n->relname ? n->relname : "", n->extra ? n->extra : "", n->be_pid};
  PQfreemem(n);
  return std::optional<Notification>(std::move(out));
}

Result<std::optional<Notification>> Connection::WaitForNotification(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    GOVERN_ASSIGN_OR_RETURN(auto n, PollNotification());
    if (n) return n;
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::optional<Notification>();
    pollfd p{PQsocket(conn_), POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (r < 0 && errno != EINTR) return ErrnoStatus(errno, "poll");
  }
}

// ---------------------------------------------------------------------------------------------------
// Transactions.

Status Connection::Transact(const std::function<Status(Connection&)>& body, const TxOptions& options) {
  std::string begin = "BEGIN ISOLATION LEVEL ";
  switch (options.isolation) {
    case Isolation::kReadCommitted:
      begin += "READ COMMITTED";
      break;
    case Isolation::kRepeatableRead:
      begin += "REPEATABLE READ";
      break;
    case Isolation::kSerializable:
      begin += "SERIALIZABLE";
      break;
  }
  if (options.read_only) begin += " READ ONLY";
  if (InTransaction()) return FailedPrecondition("Transact() inside an open transaction");

  Status last;
  for (int attempt = 0; attempt < std::max(1, options.max_attempts); ++attempt) {
    if (attempt > 0)
      std::this_thread::sleep_for(Jittered(options.backoff_initial, options.backoff_max, attempt - 1));
    bool commit_sent = false;
    Status s = Exec(begin).status();
    if (s.ok()) s = body(*this);
    if (s.ok()) {
      commit_sent = true;
      auto r = Exec("COMMIT");
      if (r.ok() && r->tag() == "ROLLBACK") {
        // The body swallowed an error: PostgreSQL turned COMMIT into ROLLBACK.
        s = Aborted("transaction was rolled back because a statement in it failed");
      } else {
        s = r.status();
      }
      if (s.ok()) return s;
    }
    if (!commit_sent || !IsConnectionLoss(s)) {
      if (conn_ && !broken_ && InTransaction()) (void)Exec("ROLLBACK");
    }
    if (commit_sent && IsConnectionLoss(s)) {
      in_tx_ = false;
      return Unavailable("connection lost during COMMIT; the outcome is unknown: " + s.message());
    }
    if (IsConnectionLoss(s)) in_tx_ = false;  // the server rolled it back when the connection went
    if (!IsRetryableConflict(s) && !IsConnectionLoss(s)) return s;
    last = s;
  }
  return last.WithContext("transaction failed after " + std::to_string(options.max_attempts) + " attempts");
}

}  // namespace govern::db
