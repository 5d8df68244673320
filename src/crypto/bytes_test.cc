// SecretBytes ownership and constant-time comparison.
#include "crypto/bytes.h"

#include <gtest/gtest.h>

namespace govern::crypto {
namespace {

TEST(SecretBytes, CopiesAndMoves) {
  SecretBytes a = SecretBytes::FromString("key material");
  EXPECT_EQ(AsString(a.span()), "key material");
  SecretBytes b = std::move(a);
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(AsString(b.span()), "key material");
  SecretBytes c = b.Clone();
  EXPECT_NE(c.data(), b.data());
  EXPECT_TRUE(ConstantTimeEquals(c.span(), b.span()));
  b = SecretBytes(4);
  EXPECT_EQ(b.size(), 4u);
  EXPECT_EQ(b.data()[3], 0);
}

TEST(ConstantTimeEquals, ComparesBytesAndLengths) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

}  // namespace
}  // namespace govern::crypto
