// SQLSTATE mapping and extraction.
#include "db/error.h"

#include <gtest/gtest.h>

namespace govern::db {
namespace {

TEST(ErrorTest, MapsSqlStates) {
  struct Case {
    const char* state;
    Code code;
  } cases[] = {
      {"23505", Code::kAlreadyExists},    {"40001", Code::kAborted},
      {"40P01", Code::kAborted},          {"08006", Code::kUnavailable},
      {"57P01", Code::kUnavailable},      {"28P01", Code::kUnauthenticated},
      {"42501", Code::kPermissionDenied}, {"22P02", Code::kInvalidArgument},
      {"42601", Code::kInvalidArgument},  {"53100", Code::kResourceExhausted},
      {"57014", Code::kCancelled},        {"23503", Code::kFailedPrecondition},
      {"XX001", Code::kDataLoss},         {"P0001", Code::kInternal},
      {"bad", Code::kInternal},
  };
  for (const Case& c : cases) EXPECT_EQ(CodeForSqlState(c.state), c.code) << c.state;
}

TEST(ErrorTest, SqlStateSurvivesContext) {
  Status s = SqlError("40001", "could not serialize access\n");
  EXPECT_EQ(s.message(), "sqlstate 40001: could not serialize access");
  EXPECT_EQ(SqlStateOf(s), "40001");
  EXPECT_TRUE(IsRetryableConflict(s.WithContext("insert")));
  EXPECT_FALSE(IsConnectionLoss(s));
  EXPECT_TRUE(IsConnectionLoss(SqlError("57P01", "terminating connection due to administrator command")));
  EXPECT_EQ(SqlStateOf(Internal("no state here")), "");
}

}  // namespace
}  // namespace govern::db
