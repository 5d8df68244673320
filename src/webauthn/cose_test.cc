// COSE keys: the three accepted kinds verify real signatures; every other kind is refused by name.
#include "webauthn/cose.h"

#include <gtest/gtest.h>

#include "webauthn/testing_authenticator.h"

namespace govern::webauthn {
namespace {

using cbor::Value;
using testing::TestKey;

// ES256 signatures: only canonical DER (one encoding per signature); a BER long-form length or a
// padded integer is refused even though OpenSSL alone might accept it.
TEST(CoseTest, Es256RefusesNonCanonicalDer) {
  TestKey k(Algorithm::kEs256);
  auto key = PublicKey::FromCose(k.Cose());
  ASSERT_TRUE(key.ok());
  auto msg = testing::Bytes("message");
  auto sig = k.Sign(msg);
  ASSERT_TRUE(key->Verify(msg, sig).ok());
  ASSERT_EQ(sig[0], 0x30);
  ASSERT_LT(sig[1], 0x80);
  std::vector<uint8_t> long_form = {0x30, 0x81};
  long_form.insert(long_form.end(), sig.begin() + 1, sig.end());
  EXPECT_EQ(key->Verify(msg, long_form).code(), Code::kUnauthenticated);
  std::vector<uint8_t> trailing = sig;
  trailing.push_back(0);
  EXPECT_EQ(key->Verify(msg, trailing).code(), Code::kUnauthenticated);
}

TEST(CoseTest, VerifiesEachAlgorithm) {
  for (Algorithm alg : {Algorithm::kEs256, Algorithm::kEdDsa, Algorithm::kRs256}) {
    TestKey k(alg);
    auto key = PublicKey::FromCose(k.Cose());
    ASSERT_TRUE(key.ok()) << key.status().ToString();
    EXPECT_EQ(key->algorithm(), alg);
    auto msg = testing::Bytes("authenticator data and client data hash");
    auto sig = k.Sign(msg);
    EXPECT_TRUE(key->Verify(msg, sig).ok());
    msg[0] ^= 1;
    Status bad = key->Verify(msg, sig);
    EXPECT_EQ(bad.code(), Code::kUnauthenticated) << static_cast<int>(alg);
    EXPECT_EQ(key->Verify(msg, {}).code(), Code::kUnauthenticated);
    // A key of another signer does not verify.
    TestKey other(alg);
    msg[0] ^= 1;
    EXPECT_EQ(PublicKey::FromCose(other.Cose())->Verify(msg, sig).code(), Code::kUnauthenticated);
  }
}

Value Modified(const std::vector<uint8_t>& cose, int64_t label, std::optional<Value> v) {
  Value m = *cbor::Decode(cose);
  std::vector<std::pair<Value, Value>> out;
  bool done = false;
  for (const auto& [k, x] : m.map()) {
    if (k.AsInt() == label) {
      done = true;
      if (v) out.emplace_back(k, *v);
    } else {
      out.emplace_back(k, x);
    }
  }
  if (!done && v) out.emplace_back(Value::Int(label), *v);
  return Value::Map(std::move(out));
}

TEST(CoseTest, RefusesOtherKeys) {
  TestKey ec(Algorithm::kEs256), ed(Algorithm::kEdDsa), rsa(Algorithm::kRs256);
  struct Case {
    Value key;
    const char* why;
  };
  std::vector<Case> cases = {
      {Value::Int(1), "not a map"},
      {Modified(ec.Cose(), 1, std::nullopt), "missing kty"},
      {Modified(ec.Cose(), 3, std::nullopt), "missing alg"},
      {Modified(ec.Cose(), 3, Value::Int(-35)), "EC2 key with alg -35"},
      {Modified(ec.Cose(), -1, Value::Int(2)), "EC2 curve 2"},
      {Modified(ec.Cose(), -2, Value::Bytes(std::vector<uint8_t>(31, 1))), "32 bytes each"},
      {Modified(ec.Cose(), -3, Value::Bytes(std::vector<uint8_t>(32, 1))), "point refused"},
      {Modified(cbor::Encode(Modified(ec.Cose(), -2, Value::Bytes(std::vector<uint8_t>(32, 0)))), -3,
                Value::Bytes(std::vector<uint8_t>(32, 0))),
       "point refused"},  // (0, 0): what an encoder might make of the point at infinity
      {Modified(ec.Cose(), -2, Value::Bytes(std::vector<uint8_t>(32, 0xFF))), "point refused"},  // x >= p
      {Modified(ec.Cose(), -4, Value::Bytes(std::vector<uint8_t>(32, 1))), "private key part"},
      {Modified(ec.Cose(), -2, Value::Text("x")), "not a byte string"},
      {Modified(ed.Cose(), -1, Value::Int(7)), "OKP curve 7"},
      {Modified(ed.Cose(), 3, Value::Int(-7)), "OKP key with alg -7"},
      {Modified(rsa.Cose(), 3, Value::Int(-37)), "RSA key with alg -37"},
      {Modified(rsa.Cose(), -1, Value::Bytes(std::vector<uint8_t>(128, 0xC1))), "1024 bits"},
      {Modified(rsa.Cose(), -2, Value::Bytes({1, 0, 0})), "small odd number"},
      {Modified(ec.Cose(), 1, Value::Int(4)), "key type 4"},
  };
  for (const auto& c : cases) {
    auto k = PublicKey::FromCbor(c.key);
    ASSERT_FALSE(k.ok()) << c.why;
    EXPECT_EQ(k.status().code(), Code::kInvalidArgument);
    EXPECT_NE(k.status().message().find(c.why), std::string::npos) << k.status().message();
  }
  EXPECT_FALSE(PublicKey::FromCose(testing::Bytes("\xa0\x00")).ok());  // trailing bytes
}

}  // namespace
}  // namespace govern::webauthn
