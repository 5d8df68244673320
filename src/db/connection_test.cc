// Connection against the shared test PostgreSQL: parameters, pipeline, COPY, LISTEN/NOTIFY,
// transactions and reconnection.
#include "db/connection.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>

#include "db/testing.h"

namespace govern::db {
namespace {

#define ASSERT_OK(expr)                                  \
  do {                                                   \
    auto&& ok_value_ = (expr);                           \
    ASSERT_TRUE(ok_value_.ok()) << ok_value_.ToString(); \
  } while (0)

class ConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_.emplace(std::move(db).value());
    auto c = Connection::Connect(db_->conninfo());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    conn_ = std::move(c).value();
  }

  Result<std::unique_ptr<Connection>> Another() { return Connection::Connect(db_->conninfo()); }

  std::optional<testing::TestDatabase> db_;
  std::unique_ptr<Connection> conn_;
};

TEST_F(ConnectionTest, HostileStringsTravelAsData) {
  ASSERT_TRUE(conn_->Exec("CREATE TABLE t (id int PRIMARY KEY, s text NOT NULL)").ok());
  const std::string hostile[] = {
      "'; DROP TABLE t; --",
      "\"quoted\" and 'single' and \\backslash\\",
      "$1 $2 ? %s {}",
      "unicode: zażółć gęślą jaźń, 漢字, emoji \xF0\x9F\x98\x80",
      "",
      std::string(100000, 'x'),
  };
  int id = 0;
  for (const std::string& s : hostile) {
    auto r = conn_->Exec("INSERT INTO t (id, s) VALUES ($1, $2)", Params(++id, s));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->affected(), 1);
  }
  id = 0;
  for (const std::string& s : hostile) {
    auto r = conn_->ExecPrepared("SELECT s, length(s) FROM t WHERE id = $1", Params(++id));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->size(), 1);
    EXPECT_EQ(r->Text(0, 0), s);
  }
  auto count = conn_->Exec("SELECT count(*) FROM t");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count->Int64(0, 0), static_cast<int64_t>(std::size(hostile)));
}

TEST_F(ConnectionTest, NulInTextIsRefusedBeforeSending) {
  auto r = conn_->Exec("SELECT $1::text", Params(std::string_view("a\0b", 3)));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  // As bytea the same bytes are fine and come back whole.
  auto b = conn_->Exec("SELECT $1::bytea", Params(Bytea{std::string_view("a\0b", 3)}));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(*b->Bytes(0, 0), std::string("a\0b", 3));
}

TEST_F(ConnectionTest, InvalidUtf8IsAClearError) {
  auto r = conn_->Exec("SELECT $1::text", Params(std::string_view("\xff\xfe")));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(SqlStateOf(r.status()), "22021");
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(conn_->Ping().ok());
}

TEST_F(ConnectionTest, TypedParamsAndGetters) {
  auto r = conn_->Exec("SELECT $1 + $2, $3 * 2, NOT $4, $5::text IS NULL, $6::jsonb ->> 'k'",
                       Params(int32_t{40}, int64_t{2}, 1.25, false, std::optional<int>(), "{\"k\": \"v\"}"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r->Int64(0, 0), 42);
  EXPECT_EQ(*r->Double(0, 1), 2.5);
  EXPECT_EQ(*r->Bool(0, 2), true);
  EXPECT_EQ(*r->Bool(0, 3), true);
  EXPECT_EQ(r->Text(0, 4), "v");
  // Wrong-type reads are errors, not crashes.
  EXPECT_FALSE(r->Int64(0, 4).ok());
  EXPECT_FALSE(r->Int64(5, 0).ok());
  auto special = conn_->Exec("SELECT $1, $2, $3::float8 = 'NaN'", Params(1e300, -1.0 / 0.0, 0.0 / 0.0));
  ASSERT_TRUE(special.ok()) << special.status().ToString();
  EXPECT_EQ(*special->Double(0, 0), 1e300);
  EXPECT_EQ(*special->Double(0, 1), -1.0 / 0.0);
  EXPECT_TRUE(*special->Bool(0, 2));
  EXPECT_EQ(conn_->Exec(std::string_view("SELECT 1\0; DROP TABLE x", 21)).status().code(),
            Code::kInvalidArgument);
  auto n = conn_->Exec("SELECT NULL::int");
  ASSERT_TRUE(n.ok());
  EXPECT_TRUE(n->IsNull(0, 0));
  EXPECT_EQ(n->Int64(0, 0).status().code(), Code::kFailedPrecondition);
}

TEST_F(ConnectionTest, ErrorsCarrySqlStateAndCode) {
  ASSERT_TRUE(conn_->Exec("CREATE TABLE u (k text PRIMARY KEY)").ok());
  ASSERT_TRUE(conn_->Exec("INSERT INTO u VALUES ($1)", Params("a")).ok());
  auto dup = conn_->Exec("INSERT INTO u VALUES ($1)", Params("a"));
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), Code::kAlreadyExists);
  EXPECT_EQ(SqlStateOf(dup.status()), "23505");
  auto syntax = conn_->Exec("SELEC 1");
  EXPECT_EQ(syntax.status().code(), Code::kInvalidArgument);
  // Two statements in one Exec are refused: no smuggling a second statement in.
  auto two = conn_->Exec("SELECT 1; SELECT 2");
  EXPECT_FALSE(two.ok());
  EXPECT_TRUE(conn_->Ping().ok());
}

TEST_F(ConnectionTest, PreparedStatementSurvivesSchemaChange) {
  ASSERT_TRUE(conn_->Exec("CREATE TABLE s (a int)").ok());
  ASSERT_TRUE(conn_->Exec("INSERT INTO s VALUES (1)").ok());
  auto before = conn_->ExecPrepared("SELECT * FROM s WHERE a = $1", Params(1));
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(before->columns(), 1);
  ASSERT_TRUE(conn_->Exec("ALTER TABLE s ADD COLUMN b text DEFAULT 'x'").ok());
  auto after = conn_->ExecPrepared("SELECT * FROM s WHERE a = $1", Params(1));
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->columns(), 2);
  EXPECT_EQ(after->Text(0, 1), "x");
}

TEST_F(ConnectionTest, PipelineRunsManyStatementsAndReturnsEachResult) {
  ASSERT_TRUE(conn_->Exec("CREATE TABLE p (id int PRIMARY KEY, v text)").ok());
  std::vector<Statement> batch;
  for (int i = 0; i < 2000; ++i) {
    batch.push_back(
        {"INSERT INTO p VALUES ($1, $2) RETURNING id * 10", Params(i, "v" + std::to_string(i)), true});
  }
  batch.push_back({"SELECT count(*) FROM p", Params(), false});
  auto r = conn_->Pipeline(batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), batch.size());
  for (int i = 0; i < 2000; ++i) EXPECT_EQ(*(*r)[static_cast<size_t>(i)].Int64(0, 0), i * 10);
  EXPECT_EQ(*r->back().Int64(0, 0), 2000);
  // The connection is usable afterwards, and the prepared statement is cached.
  auto again = conn_->Pipeline(
      std::vector<Statement>{{"INSERT INTO p VALUES ($1, $2) RETURNING id * 10", Params(5000, "x"), true}});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*(*again)[0].Int64(0, 0), 50000);
}

TEST_F(ConnectionTest, PipelineFailureRollsBackTheWholeBatch) {
  ASSERT_TRUE(conn_->Exec("CREATE TABLE p (id int PRIMARY KEY)").ok());
  std::vector<Statement> batch = {
      {"INSERT INTO p VALUES ($1)", Params(1)},
      {"INSERT INTO p VALUES ($1)", Params(1)},  // duplicate: fails
      {"INSERT INTO p VALUES ($1)", Params(2)},  // skipped
  };
  auto r = conn_->Pipeline(batch);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kAlreadyExists);
  EXPECT_NE(r.status().message().find("statement 2"), std::string::npos) << r.status().ToString();
  auto count = conn_->Exec("SELECT count(*) FROM p");
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(*count->Int64(0, 0), 0);
}

TEST_F(ConnectionTest, BinaryCopyOfEveryTypeReadsBackExactly) {
  ASSERT_TRUE(conn_
                  ->Exec("CREATE TABLE c (i2 int2, i4 int4, i8 int8, f8 float8, b bool, t text, "
                         "by bytea, ts timestamptz, j jsonb)")
                  .ok());
  constexpr int kRows = 50000;
  auto row_text = [](int i) {
    return "row " + std::to_string(i) + (i % 7 == 0 ? " 'quoted' \"dq\" \\ ünïcødé 😀" : "");
  };
  auto row_bytes = [](int i) {
    std::string b;
    for (int k = 0; k < i % 17; ++k) b.push_back(static_cast<char>((i * 31 + k) & 0xff));
    return b;
  };
  auto row_ts = [](int i) {
    return int64_t{1700000000000000} + int64_t{i} * 1234567 - (i % 2 ? 1 : 0) * int64_t{4000000000000000};
  };
  auto row_f8 = [](int i) { return i * 0.1 - 1e-300 * (i % 3); };
  auto row_json = [](int i) { return "{\"i\": " + std::to_string(i) + ", \"s\": \"x\\\"y\"}"; };
  {
    auto copy = conn_->CopyFrom("COPY c FROM STDIN (FORMAT binary)");
    ASSERT_TRUE(copy.ok()) << copy.status().ToString();
    for (int i = 0; i < kRows; ++i) {
      CopyEncoder& row = copy->Row(9);
      if (i % 11 == 0) {
        row.Null();
      } else {
        row.Int16(static_cast<int16_t>(i % 32768 - (i % 2 ? 16384 : 0)));
      }
      row.Int32(i * 3 - 70000).Int64(int64_t{i} * 1000000007LL - (int64_t{1} << 40)).Float8(row_f8(i));
      row.Bool(i % 2 == 0)
          .Text(row_text(i))
          .Bytea(row_bytes(i))
          .TimestampUnixMicros(row_ts(i))
          .Jsonb(row_json(i));
    }
    auto n = copy->Finish();
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(*n, kRows);
  }
  auto r = conn_->Exec(
      "SELECT i2, i4, i8, f8, b, t, by, (extract(epoch FROM ts) * 1000000)::int8, j::text FROM c "
      "ORDER BY i4");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), kRows);
  for (int i = 0; i < kRows; ++i) {
    if (i % 11 == 0) {
      EXPECT_TRUE(r->IsNull(i, 0));
    } else {
      EXPECT_EQ(*r->Int64(i, 0), i % 32768 - (i % 2 ? 16384 : 0));
    }
    EXPECT_EQ(*r->Int64(i, 1), i * 3 - 70000);
    EXPECT_EQ(*r->Int64(i, 2), int64_t{i} * 1000000007LL - (int64_t{1} << 40));
    EXPECT_EQ(*r->Double(i, 3), row_f8(i));
    EXPECT_EQ(*r->Bool(i, 4), i % 2 == 0);
    EXPECT_EQ(r->Text(i, 5), row_text(i));
    EXPECT_EQ(*r->Bytes(i, 6), row_bytes(i));
    EXPECT_EQ(*r->Int64(i, 7), row_ts(i));
    EXPECT_EQ(r->Text(i, 8), row_json(i));
    if (::testing::Test::HasFailure()) FAIL() << "first mismatch at row " << i;
  }
}

TEST_F(ConnectionTest, CopyWithABadRowStoresNothing) {
  ASSERT_TRUE(conn_->Exec("CREATE TABLE c (a int4, b text)").ok());
  {
    auto copy = conn_->CopyFrom("COPY c FROM STDIN (FORMAT binary)");
    ASSERT_TRUE(copy.ok()) << copy.status().ToString();
    copy->Row(2).Int32(1).Text("fine");
    copy->Row(2).Int32(2);  // one field short
    auto n = copy->Finish();
    EXPECT_EQ(n.status().code(), Code::kInvalidArgument);
  }
  {
    // Wrong binary type for a column: the server refuses, nothing stored.
    auto copy = conn_->CopyFrom("COPY c FROM STDIN (FORMAT binary)");
    ASSERT_TRUE(copy.ok());
    copy->Row(2).Int64(1).Text("int8 for an int4 column");
    EXPECT_FALSE(copy->Finish().ok());
  }
  {
    auto copy = conn_->CopyFrom("COPY c FROM STDIN (FORMAT binary)");
    ASSERT_TRUE(copy.ok());
    copy->Row(2).Int32(1).Text("abandoned");
  }  // destroyed without Finish: aborted
  auto count = conn_->Exec("SELECT count(*) FROM c");
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(*count->Int64(0, 0), 0);
}

// Regression: CopyIn::Finish once recorded the transaction state before draining libpq's results, so
// a COPY inside BEGIN left the connection believing it was outside a transaction; a connection lost
// right then made the next statement reconnect silently and run outside the transaction.
TEST_F(ConnectionTest, CopyInsideATransactionKeepsTheTransaction) {
  ASSERT_TRUE(conn_->Exec("CREATE TABLE ct (a int4)").ok());
  ASSERT_TRUE(conn_->Exec("BEGIN").ok());
  {
    auto copy = conn_->CopyFrom("COPY ct FROM STDIN (FORMAT binary)");
    ASSERT_TRUE(copy.ok()) << copy.status().ToString();
    copy->Row(1).Int32(7);
    auto n = copy->Finish();
    ASSERT_TRUE(n.ok()) << n.status().ToString();
  }
  EXPECT_TRUE(conn_->InTransaction());
  ASSERT_TRUE(conn_->Exec("ROLLBACK").ok());
  EXPECT_FALSE(conn_->InTransaction());
}

TEST_F(ConnectionTest, CopyThroughExecIsRefusedAndTheConnectionStaysUsable) {
  ASSERT_TRUE(conn_->Exec("CREATE TABLE c (a int4)").ok());
  EXPECT_EQ(conn_->Exec("COPY c FROM STDIN").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(conn_->Exec("COPY (SELECT 1) TO STDOUT").status().code(), Code::kInvalidArgument);
  auto r = conn_->Exec("SELECT count(*) FROM c");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r->Int64(0, 0), 0);
  EXPECT_EQ(conn_->reconnects(), 0);
}

TEST_F(ConnectionTest, ListenNotify) {
  auto sender = Another();
  ASSERT_TRUE(sender.ok());
  const std::string channel = "events with \"odd\" name";
  ASSERT_OK(conn_->Listen(channel));
  EXPECT_GE(conn_->socket(), 0);
  // Nothing yet.
  auto none = conn_->WaitForNotification(std::chrono::milliseconds(50));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  ASSERT_OK((*sender)->Notify(channel, "payload 'one'"));
  ASSERT_OK((*sender)->Notify("other channel", "not for us"));
  ASSERT_OK((*sender)->Notify(channel, "two"));
  auto first = conn_->WaitForNotification(std::chrono::seconds(10));
  ASSERT_TRUE(first.ok() && first->has_value()) << first.status().ToString();
  EXPECT_EQ((*first)->channel, channel);
  EXPECT_EQ((*first)->payload, "payload 'one'");
  EXPECT_EQ((*first)->backend_pid, (*sender)->BackendPid());
  auto second = conn_->WaitForNotification(std::chrono::seconds(10));
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_EQ((*second)->payload, "two");

  // Notifications sent inside a transaction arrive only when it commits.
  ASSERT_OK((*sender)->Transact([&](Connection& c) { return c.Notify(channel, "committed"); }));
  auto third = conn_->WaitForNotification(std::chrono::seconds(10));
  ASSERT_TRUE(third.ok() && third->has_value());
  EXPECT_EQ((*third)->payload, "committed");

  ASSERT_OK(conn_->Unlisten(channel));
  ASSERT_OK((*sender)->Notify(channel, "after unlisten"));
  ASSERT_OK(conn_->Ping());  // the round trip guarantees the notify would have arrived
  auto after = conn_->PollNotification();
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->has_value());
}

TEST_F(ConnectionTest, SerializationFailureIsRetried) {
  ASSERT_TRUE(conn_->Exec("CREATE TABLE acct (id int PRIMARY KEY, balance int NOT NULL)").ok());
  ASSERT_TRUE(conn_->Exec("INSERT INTO acct VALUES (1, 0), (2, 0)").ok());
  auto other = Another();
  ASSERT_TRUE(other.ok());

  // Two SERIALIZABLE transactions each read both rows, then the first time they wait for each other
  // before writing: a write-skew that PostgreSQL must break with 40001 for one of them.
  std::barrier sync(2);
  std::atomic<int> attempts{0};
  auto body = [&](int id) {
    return [&, id](Connection& c) -> Status {
      int attempt = attempts.fetch_add(1);
      GOVERN_ASSIGN_OR_RETURN(Rows sum, c.Exec("SELECT sum(balance) FROM acct"));
      if (attempt < 2) sync.arrive_and_wait();  // both have read before either writes
      GOVERN_RETURN_IF_ERROR(
          c.Exec("UPDATE acct SET balance = balance + 1 + $1 WHERE id = $2", Params(*sum.Int64(0, 0), id))
              .status());
      return OkStatus();
    };
  };
  TxOptions opts;
  opts.isolation = Isolation::kSerializable;
  Status s1, s2;
  Connection* c1 = conn_.get();
  Connection* c2 = other->get();
  std::thread t1([&] { s1 = c1->Transact(body(1), opts); });
  std::thread t2([&] { s2 = c2->Transact(body(2), opts); });
  t1.join();
  t2.join();
  ASSERT_TRUE(s1.ok()) << s1.ToString();
  ASSERT_TRUE(s2.ok()) << s2.ToString();
  EXPECT_GE(attempts.load(), 3);  // one of them ran again
  // Serial outcome: the second saw the first's +1, so the total is 1 + 2 = 3.
  auto total = conn_->Exec("SELECT sum(balance) FROM acct");
  ASSERT_TRUE(total.ok());
  EXPECT_EQ(*total->Int64(0, 0), 3);
}

TEST_F(ConnectionTest, TransactionBodyErrorRollsBackWithoutRetry) {
  ASSERT_TRUE(conn_->Exec("CREATE TABLE t (id int PRIMARY KEY)").ok());
  int runs = 0;
  Status s = conn_->Transact([&](Connection& c) -> Status {
    ++runs;
    GOVERN_RETURN_IF_ERROR(c.Exec("INSERT INTO t VALUES (1)").status());
    return FailedPrecondition("business rule says no");
  });
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(conn_->InTransaction());
  // A body that swallows a statement error cannot commit half a transaction.
  s = conn_->Transact([&](Connection& c) -> Status {
    (void)c.Exec("INSERT INTO t VALUES (2)");
    (void)c.Exec("INSERT INTO nonexistent VALUES (1)");
    return OkStatus();
  });
  EXPECT_EQ(s.code(), Code::kAborted);
  auto count = conn_->Exec("SELECT count(*) FROM t");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count->Int64(0, 0), 0);
}

TEST_F(ConnectionTest, ReconnectsAfterTerminateAndRestoresListen) {
  auto admin = Another();
  ASSERT_TRUE(admin.ok());
  ASSERT_OK(conn_->Listen("ch"));
  ASSERT_TRUE(conn_->ExecPrepared("SELECT $1::int + 1", Params(1)).ok());
  int old_pid = conn_->BackendPid();
  auto killed = (*admin)->Exec("SELECT pg_terminate_backend($1)", Params(old_pid));
  ASSERT_TRUE(killed.ok()) << killed.status().ToString();
  // Wait until the backend is gone, so its FATAL message has reached our socket.
  for (int i = 0; i < 500; ++i) {
    auto alive = (*admin)->Exec("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", Params(old_pid));
    ASSERT_TRUE(alive.ok());
    if (*alive->Int64(0, 0) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto r = conn_->ExecPrepared("SELECT $1::int + 1", Params(41));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r->Int64(0, 0), 42);
  EXPECT_NE(conn_->BackendPid(), old_pid);
  EXPECT_EQ(conn_->reconnects(), 1);
  ASSERT_OK((*admin)->Notify("ch", "still listening"));
  auto n = conn_->WaitForNotification(std::chrono::seconds(10));
  ASSERT_TRUE(n.ok() && n->has_value()) << n.status().ToString();
  EXPECT_EQ((*n)->payload, "still listening");
}

TEST_F(ConnectionTest, ConnectionLostInsideTransactionIsReportedThenRetried) {
  ASSERT_TRUE(conn_->Exec("CREATE TABLE t (id int PRIMARY KEY)").ok());
  auto admin = Another();
  ASSERT_TRUE(admin.ok());
  int runs = 0;
  Status s = conn_->Transact([&](Connection& c) -> Status {
    ++runs;
    GOVERN_RETURN_IF_ERROR(c.Exec("INSERT INTO t VALUES ($1)", Params(runs)).status());
    if (runs == 1) {
      // Cut this connection in the middle of the transaction.
      GOVERN_RETURN_IF_ERROR(
          (*admin)->Exec("SELECT pg_terminate_backend($1)", Params(c.BackendPid())).status());
      GOVERN_RETURN_IF_ERROR(c.Exec("SELECT pg_sleep(5)").status());
    }
    return OkStatus();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(runs, 2);
  auto ids = conn_->Exec("SELECT array_agg(id) FROM t");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->Text(0, 0), "{2}");  // the first attempt's insert died with its connection
}

TEST(ConnectionConnectTest, UnreachableServerIsUnavailable) {
  ConnectOptions o;
  o.connect_timeout = std::chrono::milliseconds(1000);
  auto c = Connection::Connect("host=/nonexistent/dir port=1 dbname=x user=y password=sekrit", o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kUnavailable);
  EXPECT_EQ(c.status().message().find("sekrit"), std::string::npos);
}

TEST(ConnectionConnectTest, WrongPasswordIsUnauthenticatedAndNotEchoed) {
  const char* dir = std::getenv("GOVERN_TEST_PG_DIR");
  ASSERT_NE(dir, nullptr);
  auto socket_info = testing::SharedClusterConnInfo();
  ASSERT_TRUE(socket_info.ok());
  // The shared cluster listens on 127.0.0.1 with scram: read its port from the socket conninfo.
  auto port_at = socket_info->find("port=");
  std::string port = socket_info->substr(port_at + 5, socket_info->find(' ', port_at) - port_at - 5);
  auto c = Connection::Connect("host=127.0.0.1 port=" + port +
                               " dbname=postgres user=postgres password=hunter2-wrong");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kUnauthenticated) << c.status().ToString();
  EXPECT_EQ(c.status().message().find("hunter2"), std::string::npos);
}

}  // namespace
}  // namespace govern::db
