// Hex and base64 round trips, RFC 4648 vectors, and the strict decoders' refusals.
#include "crypto/encoding.h"

#include <gtest/gtest.h>

#include "crypto/bytes.h"

namespace govern::crypto {
namespace {

std::string Decoded(const Result<std::vector<uint8_t>>& r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::string(r->begin(), r->end()) : "";
}

TEST(Hex, RoundTripAndCase) {
  std::vector<uint8_t> b = {0x00, 0x01, 0xab, 0xff};
  EXPECT_EQ(HexEncode(b), "0001abff");
  EXPECT_EQ(*HexDecode("0001ABff"), b);
  EXPECT_TRUE(HexDecode("").ok());
}

TEST(Hex, RejectsOddLengthAndBadCharacters) {
  EXPECT_EQ(HexDecode("abc").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(HexDecode("0g").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(HexDecode(" 00").status().code(), Code::kInvalidArgument);
  EXPECT_NE(HexDecode("00zz").status().message().find("offset 2"), std::string::npos);
}

// RFC 4648 section 10.
TEST(Base64, Rfc4648Vectors) {
  const std::pair<std::string, std::string> cases[] = {{"", ""},
                                                       {"f", "Zg=="},
                                                       {"fo", "Zm8="},
                                                       {"foo", "Zm9v"},
                                                       {"foob", "Zm9vYg=="},
                                                       {"fooba", "Zm9vYmE="},
                                                       {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, enc] : cases) {
    EXPECT_EQ(Base64Encode(plain), enc);
    EXPECT_EQ(Decoded(Base64Decode(enc)), plain);
    std::string url = enc.substr(0, enc.find('='));
    EXPECT_EQ(Base64UrlEncode(plain), url);
    EXPECT_EQ(Decoded(Base64UrlDecode(url)), plain);
  }
}

TEST(Base64, StrictStandardDecoding) {
  EXPECT_FALSE(Base64Decode("Zg").ok());      // padding required
  EXPECT_FALSE(Base64Decode("Zg=").ok());     // wrong padding
  EXPECT_FALSE(Base64Decode("Z===").ok());    // too much padding
  EXPECT_FALSE(Base64Decode("Zh==").ok());    // non-zero trailing bits
  EXPECT_FALSE(Base64Decode("Zm9v\n").ok());  // whitespace
  EXPECT_FALSE(Base64Decode("Zm=v").ok());    // padding in the middle
  EXPECT_FALSE(Base64Decode("-_8=").ok());    // URL alphabet
  EXPECT_TRUE(Base64Decode("+/8=").ok());
}

TEST(Base64Url, EdgeCases) {
  std::vector<uint8_t> b = {0xfb, 0xff, 0xbf};
  EXPECT_EQ(Base64UrlEncode(b), "-_-_");
  EXPECT_EQ(*Base64UrlDecode("-_-_"), b);
  EXPECT_FALSE(Base64UrlDecode("+/+/").ok());   // standard alphabet refused
  EXPECT_FALSE(Base64UrlDecode("Zg==").ok());   // JOSE forbids padding
  EXPECT_FALSE(Base64UrlDecode("Zm9vY").ok());  // length 1 mod 4 cannot be valid
  EXPECT_FALSE(Base64UrlDecode("Zh").ok());     // non-canonical trailing bits
  EXPECT_FALSE(Base64UrlDecode("Zm9v.").ok());
  EXPECT_FALSE(Base64UrlDecode(std::string_view("Zm\0v", 4)).ok());
  EXPECT_TRUE(Base64UrlDecode("").ok());
  // The JWS example header of RFC 7515 appendix A.1.
  EXPECT_EQ(Decoded(Base64UrlDecode("eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9")),
            "{\"typ\":\"JWT\",\r\n \"alg\":\"HS256\"}");
}

TEST(Base64, AllLengthsRoundTrip) {
  std::vector<uint8_t> b;
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(*Base64Decode(Base64Encode(b)), b);
    EXPECT_EQ(*Base64UrlDecode(Base64UrlEncode(b)), b);
    EXPECT_EQ(*HexDecode(HexEncode(b)), b);
    b.push_back(static_cast<uint8_t>(i * 37 + 11));
  }
}

}  // namespace
}  // namespace govern::crypto
