// CBOR decoder: bytes in, value or refusal out (RFC 8949 Appendix A examples and the refusals).
#include "webauthn/cbor.h"

#include <gtest/gtest.h>

#include "crypto/encoding.h"

namespace govern::webauthn::cbor {
namespace {

std::vector<uint8_t> H(std::string_view hex) { return *crypto::HexDecode(hex); }

TEST(CborTest, DecodesRfc8949Examples) {
  struct Case {
    const char* hex;
    Value want;
  };
  std::vector<Case> cases = {
      {"00", Value::Int(0)},
      {"17", Value::Int(23)},
      {"1818", Value::Int(24)},
      {"1903e8", Value::Int(1000)},
      {"1a000f4240", Value::Int(1000000)},
      {"1b000000e8d4a51000", Value::Int(1000000000000)},
      {"1bffffffffffffffff", Value::Unsigned(18446744073709551615ULL)},
      {"20", Value::Int(-1)},
      {"3903e7", Value::Int(-1000)},
      {"3b7fffffffffffffff", Value::Int(INT64_MIN)},
      {"40", Value::Bytes({})},
      {"4401020304", Value::Bytes({1, 2, 3, 4})},
      {"60", Value::Text("")},
      {"6449455446", Value::Text("IETF")},
      {"62c3bc", Value::Text("\xc3\xbc")},
      {"f4", Value::Bool(false)},
      {"f5", Value::Bool(true)},
      {"f6", Value::Null()},
      {"83010203", Value::Array({Value::Int(1), Value::Int(2), Value::Int(3)})},
      {"8301820203820405", Value::Array({Value::Int(1), Value::Array({Value::Int(2), Value::Int(3)}),
                                         Value::Array({Value::Int(4), Value::Int(5)})})},
      {"a201020304", Value::Map({{Value::Int(1), Value::Int(2)}, {Value::Int(3), Value::Int(4)}})},
      {"a26161016162820203", Value::Map({{Value::Text("a"), Value::Int(1)},
                                         {Value::Text("b"), Value::Array({Value::Int(2), Value::Int(3)})}})},
  };
  for (const auto& c : cases) {
    auto v = Decode(H(c.hex));
    ASSERT_TRUE(v.ok()) << c.hex << ": " << v.status().ToString();
    EXPECT_EQ(*v, c.want) << c.hex;
    EXPECT_EQ(crypto::HexEncode(Encode(*v)), c.hex) << "re-encoding " << c.hex;
  }
}

TEST(CborTest, RefusesWhatWebAuthnDoesNotUse) {
  struct Case {
    const char* hex;
    const char* why;
  };
  std::vector<Case> cases = {
      {"", "truncated"},
      {"5f42010243030405ff", "indefinite length"},
      {"9fff", "indefinite length"},
      {"c074323031332d30332d32315432303a30343a30305a", "tags are not supported"},
      {"f93c00", "unsupported simple value or float"},
      {"fb3ff199999999999a", "unsupported simple value or float"},
      {"f7", "unsupported simple value or float"},
      {"1817", "non-canonical head"},
      {"190017", "non-canonical head"},
      {"1a0000ffff", "non-canonical head"},
      {"1b00000000ffffffff", "non-canonical head"},
      {"5803010203", "non-canonical head"},
      {"1c", "reserved additional information"},
      {"3bffffffffffffffff", "negative integer below -2^63"},
      {"a201020103", "duplicate map key"},
      {"a1810102", "map key is an array or map"},
      {"4401", "runs past the end"},
      {"8301", "runs past the end"},
      {"9bffffffffffffffff", "runs past the end"},
      {"bbffffffffffffffff", "runs past the end"},
      {"0000", "trailing bytes"},
      {"62c328", "not valid UTF-8"},
      {"62c081", "not valid UTF-8"},
      {"63eda080", "not valid UTF-8"},
      {"19", "truncated head"},
  };
  for (const auto& c : cases) {
    auto v = Decode(H(c.hex));
    ASSERT_FALSE(v.ok()) << c.hex;
    EXPECT_EQ(v.status().code(), Code::kInvalidArgument);
    EXPECT_NE(v.status().message().find(c.why), std::string::npos) << c.hex << ": " << v.status().message();
  }
}

TEST(CborTest, LimitsDepthAndItems) {
  std::vector<uint8_t> deep(40, 0x81);
  deep.push_back(0x00);
  auto v = Decode(deep);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("nesting deeper than 16"), std::string::npos);
  Limits small;
  small.max_items = 3;
  EXPECT_TRUE(Decode(H("820102"), small).ok());
  auto many = Decode(H("83010203"), small);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("more than 3 items"), std::string::npos);
}

TEST(CborTest, DecodePrefixReportsLength) {
  size_t used = 0;
  auto v = DecodePrefix(H("a10102ffff"), &used);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(used, 3u);
  EXPECT_EQ(v->Find(1)->AsInt(), 2);
  EXPECT_EQ(v->Find(2), nullptr);
  EXPECT_EQ(v->Find("a"), nullptr);
}

}  // namespace
}  // namespace govern::webauthn::cbor
