// SHA-256 (FIPS 180) and HMAC-SHA256 (RFC 4231) known answers, and tamper checks.
#include "crypto/sha256.h"

#include <gtest/gtest.h>
#include <openssl/err.h>

#include <string>
#include <thread>

#include "crypto/test_util.h"

namespace govern::crypto {
namespace {

using testing::Hex;
using testing::ToHex;

TEST(Sha256, Fips180Vectors) {
  EXPECT_EQ(ToHex(*Sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ToHex(*Sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(ToHex(*Sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(ToHex(*Sha256(std::string(1'000'000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalMatchesOneShotAndResets) {
  auto h = Sha256Hasher::Create();
  ASSERT_TRUE(h.ok());
  // The million 'a' in uneven chunks.
  size_t left = 1'000'000;
  for (size_t chunk = 1; left > 0; chunk = chunk * 3 + 1) {
    size_t n = std::min(left, chunk % 9973);
    ASSERT_TRUE(h->Update(std::string(n, 'a')).ok());
    left -= n;
  }
  EXPECT_EQ(ToHex(*h->Finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  ASSERT_TRUE(h->Update("ab").ok());
  ASSERT_TRUE(h->Update("c").ok());
  EXPECT_EQ(ToHex(*h->Finish()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

struct HmacCase {
  std::vector<uint8_t> key;
  std::string data;
  const char* mac;
};

std::vector<HmacCase> Rfc4231() {
  return {
      {std::vector<uint8_t>(20, 0x0b), "Hi There",
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {{'J', 'e', 'f', 'e'},
       "what do ya want for nothing?",
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {std::vector<uint8_t>(20, 0xaa), std::string(50, '\xdd'),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
      {Hex("0102030405060708090a0b0c0d0e0f10111213141516171819"), std::string(50, '\xcd'),
       "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
      {std::vector<uint8_t>(131, 0xaa), "Test Using Larger Than Block-Size Key - Hash Key First",
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
      {std::vector<uint8_t>(131, 0xaa),
       "This is a test using a larger than block-size key and a larger than block-size data. The key needs "
       "to "
       "be hashed before being used by the HMAC algorithm.",
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
}

TEST(HmacSha256, Rfc4231Vectors) {
  for (const auto& c : Rfc4231()) {
    auto key = HmacSha256Key::Create(c.key);
    ASSERT_TRUE(key.ok());
    // Twice with the same key: the pre-keyed state must not be consumed by a MAC.
    EXPECT_EQ(ToHex(*key->Mac(c.data)), c.mac) << c.data;
    EXPECT_EQ(ToHex(*key->Mac(c.data)), c.mac) << c.data;
    EXPECT_EQ(ToHex(*HmacSha256(c.key, AsBytes(c.data))), c.mac);
    EXPECT_TRUE(key->Verify(AsBytes(c.data), Hex(c.mac)).ok());
  }
}

TEST(HmacSha256, TamperedMessageOrMacFails) {
  auto key = HmacSha256Key::Create(AsBytes("a key"));
  ASSERT_TRUE(key.ok());
  auto mac = *key->Mac("message");
  EXPECT_TRUE(key->Verify(AsBytes("message"), mac).ok());
  EXPECT_EQ(key->Verify(AsBytes("messagf"), mac).code(), Code::kUnauthenticated);
  mac[31] ^= 1;
  EXPECT_EQ(key->Verify(AsBytes("message"), mac).code(), Code::kUnauthenticated);
  EXPECT_EQ(key->Verify(AsBytes("message"), std::span<const uint8_t>(mac).first(16)).code(),
            Code::kUnauthenticated);
  EXPECT_EQ(HmacSha256Key::Create(std::span<const uint8_t>()).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ERR_peek_error(), 0u);
}

TEST(HmacSha256, SharedKeyAcrossThreads) {
  auto key = HmacSha256Key::Create(std::vector<uint8_t>(20, 0x0b));
  ASSERT_TRUE(key.ok());
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        if (ToHex(*key->Mac("Hi There")) !=
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7") {
          ++bad;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace govern::crypto
