#include "base/status.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace govern {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  GOVERN_ASSIGN_OR_RETURN(int h, Half(x));
  GOVERN_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(StatusTest, OkAndError) {
  EXPECT_TRUE(OkStatus().ok());
  Status s = NotFound("no such segment");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.ToString(), "not_found: no such segment");
  EXPECT_EQ(s.WithContext("open wal").message(), "open wal: no such segment");
}

TEST(StatusTest, ResultPropagates) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Quarter(6).value_or(-1), -1);
}

TEST(StatusTest, ErrnoMapping) {
  EXPECT_EQ(ErrnoStatus(ENOSPC, "append").code(), Code::kResourceExhausted);
  EXPECT_EQ(ErrnoStatus(ENOENT, "open").code(), Code::kNotFound);
  EXPECT_EQ(ErrnoStatus(EIO, "fsync").code(), Code::kDataLoss);
  EXPECT_NE(ErrnoStatus(ENOSPC, "append").message().find("No space left"), std::string::npos);
}

}  // namespace
}  // namespace govern
