// Ed25519 (RFC 8032 section 7.1 vectors 1-3) and ECDSA P-256 (RFC 6979 A.2.5 known signature), round
// trips through every import/export form, and tampering.
#include "crypto/signature.h"

#include <gtest/gtest.h>
#include <openssl/err.h>

#include "crypto/test_util.h"

namespace govern::crypto {
namespace {

using testing::Hex;
using testing::ToHex;

struct Ed25519Vector {
  const char* secret;
  const char* pub;
  const char* message;
  const char* signature;
};

constexpr Ed25519Vector kRfc8032[] = {
    {"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
     "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
     "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
     "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
    {"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
     "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
     "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
     "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
    {"c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
     "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
     "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac"
     "18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"},
};

TEST(Ed25519, Rfc8032Vectors) {
  for (const auto& v : kRfc8032) {
    auto priv = Ed25519PrivateKey::FromRaw(Hex(v.secret));
    ASSERT_TRUE(priv.ok()) << priv.status().ToString();
    auto pub = priv->PublicKey();
    ASSERT_TRUE(pub.ok());
    EXPECT_EQ(ToHex(pub->Raw()), v.pub);
    auto msg = Hex(v.message);
    auto sig = priv->Sign(msg);
    ASSERT_TRUE(sig.ok());
    EXPECT_EQ(ToHex(*sig), v.signature);  // Ed25519 is deterministic
    auto imported = Ed25519PublicKey::FromRaw(Hex(v.pub));
    ASSERT_TRUE(imported.ok());
    EXPECT_TRUE(imported->Verify(msg, Hex(v.signature)).ok());
    EXPECT_EQ(ToHex((*priv->Raw()).span()), v.secret);
  }
}

TEST(Ed25519, GenerateSignVerifyAndTamper) {
  auto priv = Ed25519PrivateKey::Generate();
  ASSERT_TRUE(priv.ok());
  auto pub = *priv->PublicKey();
  auto msg = AsBytes("the message");
  auto sig = *priv->Sign(msg);
  EXPECT_TRUE(pub.Verify(msg, sig).ok());
  for (size_t bit : {0, 100, 511}) {
    auto bad = sig;
    bad[bit / 8] ^= static_cast<uint8_t>(1 << (bit % 8));
    EXPECT_EQ(pub.Verify(msg, bad).code(), Code::kUnauthenticated) << bit;
  }
  EXPECT_EQ(pub.Verify(AsBytes("the messagE"), sig).code(), Code::kUnauthenticated);
  EXPECT_EQ(pub.Verify(msg, std::span<const uint8_t>(sig).first(63)).code(), Code::kInvalidArgument);
  auto other = *Ed25519PrivateKey::Generate();
  EXPECT_EQ((*other.PublicKey()).Verify(msg, sig).code(), Code::kUnauthenticated);
  EXPECT_EQ(Ed25519PublicKey::FromRaw(Hex("00")).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ERR_peek_error(), 0u) << "an OpenSSL error was left on the queue";
}

// RFC 6979 appendix A.2.5: P-256 key, SHA-256, message "sample".
constexpr char kP256X[] = "60fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6";
constexpr char kP256Y[] = "7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299";
constexpr char kSampleR[] = "efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716";
constexpr char kSampleS[] = "f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8";

TEST(EcdsaP256, VerifiesKnownSignature) {
  auto point = Hex(std::string("04") + kP256X + kP256Y);
  auto pub = EcdsaP256PublicKey::FromUncompressed(point);
  ASSERT_TRUE(pub.ok()) << pub.status().ToString();
  auto raw = Hex(std::string(kSampleR) + kSampleS);
  EXPECT_TRUE(pub->VerifyRaw(AsBytes("sample"), raw).ok());
  auto der = EcdsaRawToDer(raw);
  ASSERT_TRUE(der.ok());
  EXPECT_TRUE(pub->VerifyDer(AsBytes("sample"), *der).ok());
  EXPECT_EQ(pub->VerifyRaw(AsBytes("samplf"), raw).code(), Code::kUnauthenticated);
  raw[63] ^= 0x01;
  EXPECT_EQ(pub->VerifyRaw(AsBytes("sample"), raw).code(), Code::kUnauthenticated);
  EXPECT_EQ(ERR_peek_error(), 0u);
}

TEST(EcdsaP256, RoundTripThroughEveryForm) {
  auto priv = EcdsaP256PrivateKey::Generate();
  ASSERT_TRUE(priv.ok());
  auto pub = *priv->PublicKey();
  auto msg = AsBytes("payload");

  auto der = *priv->SignDer(msg);
  EXPECT_TRUE(pub.VerifyDer(msg, der).ok());
  auto raw = *priv->SignRaw(msg);
  EXPECT_TRUE(pub.VerifyRaw(msg, raw).ok());
  EXPECT_EQ(ToHex(*EcdsaDerToRaw(*EcdsaRawToDer(raw))), ToHex(raw));

  auto point = *pub.Uncompressed();
  ASSERT_EQ(point.size(), 65u);
  EXPECT_EQ(point[0], 0x04);
  auto from_point = EcdsaP256PublicKey::FromUncompressed(point);
  ASSERT_TRUE(from_point.ok());
  EXPECT_TRUE(from_point->VerifyDer(msg, der).ok());

  auto pem = *pub.Pem();
  EXPECT_EQ(pem.rfind("-----BEGIN PUBLIC KEY-----", 0), 0u);
  auto from_pem = EcdsaP256PublicKey::FromPem(pem);
  ASSERT_TRUE(from_pem.ok()) << from_pem.status().ToString();
  EXPECT_TRUE(from_pem->VerifyRaw(msg, raw).ok());
  auto from_der = EcdsaP256PublicKey::FromSpkiDer(*pub.SpkiDer());
  ASSERT_TRUE(from_der.ok());
  EXPECT_EQ(ToHex(*from_der->Uncompressed()), ToHex(point));

  auto pkcs8 = *priv->Pkcs8Pem();
  auto reloaded = EcdsaP256PrivateKey::FromPkcs8Pem(AsString(pkcs8.span()));
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().ToString();
  EXPECT_TRUE(pub.VerifyRaw(msg, *reloaded->SignRaw(msg)).ok());
  EXPECT_EQ(ERR_peek_error(), 0u);
}

TEST(EcdsaP256, RefusesMalformedKeysAndSignatures) {
  auto priv = *EcdsaP256PrivateKey::Generate();
  auto pub = *priv.PublicKey();
  auto msg = AsBytes("payload");
  auto point = *pub.Uncompressed();
  point[64] ^= 1;  // off the curve
  EXPECT_EQ(EcdsaP256PublicKey::FromUncompressed(point).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(EcdsaP256PublicKey::FromUncompressed(std::span<const uint8_t>(point).first(33)).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(EcdsaP256PublicKey::FromPem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
                .status()
                .code(),
            Code::kInvalidArgument);
  EXPECT_FALSE(EcdsaP256PublicKey::FromPem("not a pem").ok());
  // An Ed25519 key in SPKI form is not a P-256 key.
  const char kEdPem[] =
      "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n"
      "-----END PUBLIC KEY-----\n";
  EXPECT_EQ(EcdsaP256PublicKey::FromPem(kEdPem).status().code(), Code::kInvalidArgument);

  auto der = *priv.SignDer(msg);
  auto padded = der;
  padded.push_back(0);
  EXPECT_EQ(pub.VerifyDer(msg, padded).code(), Code::kInvalidArgument);
  EXPECT_EQ(pub.VerifyDer(msg, Hex("3000")).code(), Code::kInvalidArgument);
  EXPECT_EQ(pub.VerifyRaw(msg, std::vector<uint8_t>(63)).code(), Code::kInvalidArgument);
  EXPECT_EQ(pub.VerifyRaw(msg, std::vector<uint8_t>(64)).code(), Code::kUnauthenticated);
  der[der.size() - 1] ^= 0x01;
  EXPECT_EQ(pub.VerifyDer(msg, der).code(), Code::kUnauthenticated);
  EXPECT_EQ(ERR_peek_error(), 0u);
}

}  // namespace
}  // namespace govern::crypto
