// AES-256-GCM: known answers from the GCM specification (McGrew and Viega, test cases 13, 14 and 16;
// the same vectors NIST's GCM validation uses), round trips and tampering.
#include "crypto/aead.h"

#include <gtest/gtest.h>
#include <openssl/err.h>

#include "crypto/test_util.h"

namespace govern::crypto {
namespace {

using testing::Hex;
using testing::ToHex;

struct GcmVector {
  const char* key;
  const char* iv;
  const char* plaintext;
  const char* aad;
  const char* ciphertext;
  const char* tag;
};

constexpr GcmVector kVectors[] = {
    // Test case 13: empty everything.
    {"0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000", "", "",
     "", "530f8afbc74536b9a963b4f1c4cb738b"},
    // Test case 14: one zero block.
    {"0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000",
     "00000000000000000000000000000000", "", "cea7403d4d606b6e074ec5d3baf39d18",
     "d0d1c8a799996bf0265b98b5d48ab919"},
    // Test case 16: 60 bytes with 20 bytes of AAD.
    {"feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
     "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf"
     "5aa0de"
     "657ba637b39",
     "feedfacedeadbeeffeedfacedeadbeefabaddad2",
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6"
     "393ba7a0"
     "abcc9f662",
     "76fc6ece0f4e1768cddf8853bb2d551b"},
};

TEST(Aes256Gcm, KnownAnswers) {
  for (const auto& v : kVectors) {
    auto key = Aes256GcmKey::Create(Hex(v.key));
    ASSERT_TRUE(key.ok());
    auto sealed = key->SealWithNonce(Hex(v.iv), Hex(v.plaintext), Hex(v.aad));
    ASSERT_TRUE(sealed.ok()) << sealed.status().ToString();
    EXPECT_EQ(ToHex(*sealed), std::string(v.ciphertext) + v.tag);
    auto opened = key->OpenWithNonce(Hex(v.iv), *sealed, Hex(v.aad));
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    EXPECT_EQ(ToHex(opened->span()), v.plaintext);
  }
}

TEST(Aes256Gcm, WrongTagIsAClearError) {
  const auto& v = kVectors[2];
  auto key = *Aes256GcmKey::Create(Hex(v.key));
  auto ct = Hex(std::string(v.ciphertext) + v.tag);
  ct.back() ^= 0x80;
  auto opened = key.OpenWithNonce(Hex(v.iv), ct, Hex(v.aad));
  EXPECT_EQ(opened.status().code(), Code::kUnauthenticated);
  EXPECT_NE(opened.status().message().find("authentication failed"), std::string::npos);
  EXPECT_EQ(ERR_peek_error(), 0u);
}

TEST(Aes256Gcm, SealOpenRoundTripWithRandomNonces) {
  auto key = Aes256GcmKey::Generate();
  ASSERT_TRUE(key.ok());
  auto aad = AsBytes("org=acme");
  auto a = *key->Seal(AsBytes("secret"), aad);
  auto b = *key->Seal(AsBytes("secret"), aad);
  EXPECT_EQ(a.size(), 6 + Aes256GcmKey::kOverhead);
  EXPECT_NE(ToHex(a), ToHex(b));  // fresh nonce each time
  EXPECT_EQ(AsString((*key->Open(a, aad)).span()), "secret");
  EXPECT_EQ(AsString((*key->Open(b, aad)).span()), "secret");
  EXPECT_EQ(key->Seal({}, {}).value().size(), Aes256GcmKey::kOverhead);
}

TEST(Aes256Gcm, EveryFlippedBitAndWrongAadFails) {
  auto key = *Aes256GcmKey::Generate();
  auto aad = AsBytes("aad");
  auto sealed = *key.Seal(AsBytes("attack at dawn"), aad);
  for (size_t bit = 0; bit < sealed.size() * 8; ++bit) {
    auto bad = sealed;
    bad[bit / 8] ^= static_cast<uint8_t>(1 << (bit % 8));
    EXPECT_EQ(key.Open(bad, aad).status().code(), Code::kUnauthenticated) << "bit " << bit;
  }
  EXPECT_EQ(key.Open(sealed, AsBytes("aae")).status().code(), Code::kUnauthenticated);
  EXPECT_EQ(key.Open(sealed, {}).status().code(), Code::kUnauthenticated);
  auto other = *Aes256GcmKey::Generate();
  EXPECT_EQ(other.Open(sealed, aad).status().code(), Code::kUnauthenticated);
  EXPECT_EQ(key.Open(std::span<const uint8_t>(sealed).first(27), aad).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(Aes256GcmKey::Create(Hex("00")).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(key.SealWithNonce(Hex("00"), {}, {}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ERR_peek_error(), 0u);
}

}  // namespace
}  // namespace govern::crypto
