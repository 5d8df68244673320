// Argon2id: the reference implementation's test vector, round trips, stored parameters, refusals.
#include "crypto/password.h"

#include <gtest/gtest.h>

namespace govern::crypto {
namespace {

// From the Argon2 reference implementation's test suite (phc-winner-argon2 src/test.c, version 0x13):
// password "password", salt "somesalt", m=65536 KiB, t=2, p=1.
constexpr char kReference[] =
    "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc";

TEST(Argon2id, VerifiesReferenceHash) {
  EXPECT_TRUE(VerifyPassword("password", kReference).ok());
  EXPECT_EQ(VerifyPassword("passwore", kReference).code(), Code::kUnauthenticated);
  auto p = ParsePasswordHashParams(kReference);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->memory_kib, 65536u);
  EXPECT_EQ(p->passes, 2u);
  EXPECT_EQ(p->lanes, 1u);
}

TEST(Argon2id, TamperedHashFails) {
  std::string h = kReference;
  h[h.size() - 5] = h[h.size() - 5] == 'A' ? 'B' : 'A';
  EXPECT_EQ(VerifyPassword("password", h).code(), Code::kUnauthenticated);
  std::string salt = kReference;
  salt.replace(salt.find("c29tZXNhbHQ"), 11, "c29tZXNhbHR");
  EXPECT_NE(VerifyPassword("password", salt).code(), Code::kOk);
}

TEST(Argon2id, RoundTripWithDefaultsAndCustomCost) {
  auto h = HashPassword("correct horse battery staple");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->rfind("$argon2id$v=19$m=19456,t=2,p=1$", 0), 0u) << *h;
  EXPECT_TRUE(VerifyPassword("correct horse battery staple", *h).ok());
  EXPECT_EQ(VerifyPassword("correct horse battery stapl", *h).code(), Code::kUnauthenticated);
  EXPECT_NE(*HashPassword("correct horse battery staple"), *h);  // fresh salt
  EXPECT_FALSE(NeedsRehash(*h));

  Argon2Params cheap{.memory_kib = 64, .passes = 1, .lanes = 2};
  auto c = HashPassword("", cheap);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rfind("$argon2id$v=19$m=64,t=1,p=2$", 0), 0u) << *c;
  EXPECT_TRUE(VerifyPassword("", *c).ok());  // verify uses the stored cost, not the defaults
  EXPECT_TRUE(NeedsRehash(*c));
}

TEST(Argon2id, RefusesMalformedAndAbusiveHashes) {
  EXPECT_EQ(VerifyPassword("x", "").code(), Code::kInvalidArgument);
  EXPECT_EQ(VerifyPassword("x", "$2y$10$abcdefghijklmnopqrstuu").code(), Code::kInvalidArgument);
  EXPECT_EQ(VerifyPassword(
                "x", "$argon2i$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc")
                .code(),
            Code::kInvalidArgument);
  EXPECT_EQ(VerifyPassword("x", "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ").code(), Code::kInvalidArgument);
  EXPECT_EQ(VerifyPassword("x", "$argon2id$v=19$m=,t=2,p=1$c29tZXNhbHQ$CTFh").code(), Code::kInvalidArgument);
  // 4 TiB of memory would be an attack on the verifier: refused before running.
  EXPECT_EQ(
      VerifyPassword(
          "x", "$argon2id$v=19$m=4294967295,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc")
          .code(),
      Code::kInvalidArgument);
  EXPECT_EQ(HashPassword("x", {.memory_kib = 1, .passes = 1, .lanes = 1}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(HashPassword("x", {.memory_kib = 64, .passes = 0, .lanes = 1}).status().code(),
            Code::kInvalidArgument);
}

}  // namespace
}  // namespace govern::crypto
