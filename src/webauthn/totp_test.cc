// TOTP/HOTP against RFC 6238 Appendix B and RFC 4226 Appendix D, base32 against RFC 4648 section 10.
#include "webauthn/totp.h"

#include <gtest/gtest.h>

#include "webauthn/errors.h"

namespace govern::webauthn {
namespace {

std::vector<uint8_t> Seed(std::string_view s) { return {s.begin(), s.end()}; }

TEST(TotpTest, Rfc6238AppendixB) {
  auto sha1 = Seed("12345678901234567890");
  auto sha256 = Seed("12345678901234567890123456789012");
  auto sha512 = Seed("1234567890123456789012345678901234567890123456789012345678901234");
  struct Case {
    int64_t time;
    const char* sha1;
    const char* sha256;
    const char* sha512;
  };
  std::vector<Case> cases = {
      {59, "94287082", "46119246", "90693936"},         {1111111109, "07081804", "68084774", "25091201"},
      {1111111111, "14050471", "67062674", "99943326"}, {1234567890, "89005924", "91819424", "93441116"},
      {2000000000, "69279037", "90698825", "38618901"}, {20000000000, "65353130", "77737706", "47863826"},
  };
  for (const auto& c : cases) {
    TotpParams p;
    p.digits = 8;
    p.algorithm = HashAlgorithm::kSha1;
    EXPECT_EQ(*Totp(sha1, c.time, p), c.sha1) << c.time;
    p.algorithm = HashAlgorithm::kSha256;
    EXPECT_EQ(*Totp(sha256, c.time, p), c.sha256) << c.time;
    p.algorithm = HashAlgorithm::kSha512;
    EXPECT_EQ(*Totp(sha512, c.time, p), c.sha512) << c.time;
  }
}

TEST(TotpTest, Rfc4226AppendixD) {
  auto secret = Seed("12345678901234567890");
  const char* want[] = {"755224", "287082", "359152", "969429", "338314",
                        "254676", "287922", "162583", "399871", "520489"};
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(*Hotp(secret, i, 6), want[i]) << i;
}

TEST(TotpTest, WindowAndReplay) {
  auto secret = Seed("12345678901234567890");
  const int64_t now = 1111111111;  // step 37037037, 1 s into it
  const int64_t step = TotpStep(now, 30);
  auto code_at = [&](int64_t s) { return *Hotp(secret, static_cast<uint64_t>(s), 6); };
  // The current step and one either side.
  for (int64_t d : {-1, 0, 1}) {
    auto r = VerifyTotp(secret, code_at(step + d), now, std::nullopt);
    ASSERT_TRUE(r.ok()) << d << ": " << r.status().ToString();
    EXPECT_EQ(*r, step + d);
  }
  for (int64_t d : {-2, 2}) {
    EXPECT_EQ(ErrorOf(VerifyTotp(secret, code_at(step + d), now, std::nullopt).status()), Error::kWrongCode)
        << d;
  }
  // The service stores the returned step: the same code again, or an older one, is refused.
  auto first = VerifyTotp(secret, code_at(step), now, std::nullopt);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(ErrorOf(VerifyTotp(secret, code_at(step), now + 5, *first).status()), Error::kCodeReused);
  EXPECT_EQ(ErrorOf(VerifyTotp(secret, code_at(step - 1), now, *first).status()), Error::kCodeReused);
  EXPECT_TRUE(VerifyTotp(secret, code_at(step + 1), now + 30, *first).ok());
  // Not a code.
  for (const char* bad : {"", "12345", "1234567", "12345a", " 12345", "-12345"}) {
    EXPECT_EQ(ErrorOf(VerifyTotp(secret, bad, now, std::nullopt).status()), Error::kWrongCode) << bad;
  }
  // Nonsense parameters.
  TotpParams p;
  p.digits = 9;
  EXPECT_EQ(VerifyTotp(secret, "123456789", now, std::nullopt, p).status().code(), Code::kInvalidArgument);
  p = {};
  p.period_seconds = 0;
  EXPECT_EQ(Totp(secret, now, p).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Totp(secret, -1).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Hotp({}, 0, 6).status().code(), Code::kInvalidArgument);
}

TEST(TotpTest, Base32Rfc4648) {
  struct Case {
    const char* plain;
    const char* padded;
    const char* bare;
  };
  std::vector<Case> cases = {{"", "", ""},
                             {"f", "MY======", "MY"},
                             {"fo", "MZXQ====", "MZXQ"},
                             {"foo", "MZXW6===", "MZXW6"},
                             {"foob", "MZXW6YQ=", "MZXW6YQ"},
                             {"fooba", "MZXW6YTB", "MZXW6YTB"},
                             {"foobar", "MZXW6YTBOI======", "MZXW6YTBOI"}};
  for (const auto& c : cases) {
    auto plain = Seed(c.plain);
    EXPECT_EQ(Base32Encode(plain), c.bare);
    EXPECT_EQ(*Base32Decode(c.padded), plain) << c.padded;
    EXPECT_EQ(*Base32Decode(c.bare), plain) << c.bare;
    std::string lower = c.bare;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(ch));
    EXPECT_EQ(*Base32Decode(lower), plain) << lower;
  }
  for (const char* bad : {"M", "MZX", "MZXW6Y", "MY=", "MY=======", "M1", "MZ", "MY==== ==", "========"}) {
    EXPECT_FALSE(Base32Decode(bad).ok()) << bad;
  }
}

TEST(TotpTest, OtpauthUriAndFreshSecrets) {
  auto secret = Seed("12345678901234567890");
  EXPECT_EQ(OtpauthUri("Govern Inc", "ada@example.com", secret),
            "otpauth://totp/"
            "Govern%20Inc:ada%40example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Govern%20Inc"
            "&algorithm=SHA1&digits=6&period=30");
  auto a = NewTotpSecret();
  auto b = NewTotpSecret();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 20u);
  EXPECT_NE(Base32Encode(a->span()), Base32Encode(b->span()));
}

}  // namespace
}  // namespace govern::webauthn
