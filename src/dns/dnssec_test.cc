#include "dns/dnssec.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "crypto/bytes.h"
#include "crypto/signature.h"
#include "dns/rdata.h"
#include "dns/wire.h"
#include "dns/zonefile.h"

namespace govern::dns {
namespace {

// RFC 6605 section 6.1: the example KSK of example.net., its key tag and its SHA-256 DS.
TEST(DnssecTest, KeyTagAndDsMatchRfc6605) {
  auto recs = ParseZoneFile(
      "example.net. 3600 IN DNSKEY 257 3 13 ( "
      "GojIhhXUN/u4v54ZQqGSnyhWJwaubCvTmeexv7bR6edbkrSqQpF64cYbcB7wNcP+\n"
      "  e+MAnLr+Wi9xMWyQLc8NAA== )\n",
      "example.net.");
  ASSERT_TRUE(recs.ok()) << recs.status().ToString();
  const Record& k = (*recs)[0];
  EXPECT_EQ(KeyTag(k.rdata), 55648);
  EXPECT_EQ(RdataToText(kDS, DsRdataFor(k.owner, k.rdata)),
            "55648 13 2 B4C8C1FE2E7477127B27115656AD6256F424625BF5C1E2770CE6D6E37DF61D17");
}

TEST(DnssecTest, KeysRoundTripThroughTheirPrivateForm) {
  for (auto alg : {Algorithm::kEcdsaP256Sha256, Algorithm::kEd25519}) {
    auto k = SigningKey::Generate(alg, 257);
    ASSERT_TRUE(k.ok());
    auto priv = k->Private();
    ASSERT_TRUE(priv.ok());
    auto again = SigningKey::FromPrivate(alg, 257, *priv);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(again->dnskey_rdata(), k->dnskey_rdata());
    EXPECT_EQ(again->key_tag(), k->key_tag());
    EXPECT_EQ(static_cast<uint8_t>(k->dnskey_rdata()[3]), static_cast<uint8_t>(alg));
    EXPECT_EQ(k->dnskey_rdata().size(), alg == Algorithm::kEd25519 ? 4u + 32 : 4u + 64);
  }
  EXPECT_FALSE(SigningKey::FromPrivate(Algorithm::kEcdsaP256Sha256, 257, "not a key").ok());
  EXPECT_FALSE(SigningKey::FromPrivate(Algorithm::kEd25519, 257, "AAAA").ok());
}

// The RRSIG fields (RFC 4034 section 3.1): covered type, algorithm, labels without the wildcard label,
// original TTL, times, key tag and signer; the signature length of the algorithm.
TEST(DnssecTest, RrsigFields) {
  auto k = SigningKey::Generate(Algorithm::kEcdsaP256Sha256, 257);
  ASSERT_TRUE(k.ok());
  auto owner = NameFromText("*.Wild.Example.NET.");
  auto signer = NameFromText("example.net.");
  std::vector<std::string> rdatas = {std::string("\xc0\x00\x02\x01", 4), std::string("\xc0\x00\x02\x02", 4)};
  auto sig = SignRRset(*k, *signer, *owner, kA, 300, rdatas, 1000, 2000);
  ASSERT_TRUE(sig.ok());
  std::string text = RdataToText(kRRSIG, *sig);
  EXPECT_EQ(text.substr(0, text.rfind(' ')),
            "A 13 3 300 19700101003320 19700101001640 " + std::to_string(k->key_tag()) + " example.net.");
  EXPECT_EQ(sig->size(), 18 + signer->size() + 64);
}

// What a validator checks (RFC 4034 section 3.1.8.1): the signature over the RRSIG RDATA without the
// signature, then each record in canonical form (owner lower-case, RDATA sorted), made here by hand
// and checked with the public key from the DNSKEY RDATA.
bool Verifies(const SigningKey& key, const std::string& rrsig, size_t signer_size,
              std::string_view lower_owner, uint16_t type, uint32_t ttl,
              std::vector<std::string> canonical_rdatas) {
  size_t prefix = 18 + signer_size;
  if (rrsig.size() <= prefix) return false;
  std::sort(canonical_rdatas.begin(), canonical_rdatas.end());
  std::string data = rrsig.substr(0, prefix);
  for (const auto& rd : canonical_rdatas) {
    data += lower_owner;
    uint8_t h[10];
    Put16(h, type);
    Put16(h + 2, kClassIN);
    Put32(h + 4, ttl);
    Put16(h + 8, static_cast<uint16_t>(rd.size()));
    data.append(reinterpret_cast<char*>(h), 10);
    data += rd;
  }
  auto msg = crypto::AsBytes(data);
  std::string sig = rrsig.substr(prefix);
  auto sig_bytes = crypto::AsBytes(sig);
  const std::string& dnskey = key.dnskey_rdata();
  if (key.algorithm() == Algorithm::kEcdsaP256Sha256) {
    std::string point = "\x04" + dnskey.substr(4);
    auto pub = crypto::EcdsaP256PublicKey::FromUncompressed(crypto::AsBytes(point));
    return pub.ok() && pub->VerifyRaw(msg, sig_bytes).ok();
  }
  auto pub = crypto::Ed25519PublicKey::FromRaw(crypto::AsBytes(std::string_view(dnskey).substr(4)));
  return pub.ok() && pub->Verify(msg, sig_bytes).ok();
}

// SignRRset and SignOneInto are one signing path: both verify against the DNSKEY, for both algorithms
// and many signatures in a row (each P-256 signature draws a fresh nonce); the RRset is taken in
// canonical form (owner lowered, RDATA sorted, duplicates once, names in MX RDATA lowered); a one-record
// RRset gets the same RRSIG fields either way.
TEST(DnssecTest, SignaturesVerifyAgainstTheDnskey) {
  auto signer = NameFromText("Example.NET.");
  auto owner = NameFromText("WWW.Example.NET.");
  auto lower_owner = NameFromText("www.example.net.");
  ASSERT_TRUE(signer.ok() && owner.ok() && lower_owner.ok());
  for (auto alg : {Algorithm::kEcdsaP256Sha256, Algorithm::kEd25519}) {
    auto k = SigningKey::Generate(alg, 257);
    ASSERT_TRUE(k.ok());
    std::string a1("\xc0\x00\x02\x01", 4), a2("\xc0\x00\x02\x02", 4);
    std::vector<std::string> set = {a2, a1, a2};
    for (int i = 0; i < 20; ++i) {
      auto sig = SignRRset(*k, *signer, *owner, kA, 300, set, 1000 + i, 2000 + i);
      ASSERT_TRUE(sig.ok());
      EXPECT_TRUE(Verifies(*k, *sig, signer->size(), *lower_owner, kA, 300, {a1, a2})) << i;
      // A changed record set does not verify.
      EXPECT_FALSE(Verifies(*k, *sig, signer->size(), *lower_owner, kA, 300, {a1}));
    }
    auto mail = NameFromText("MAIL.Example.NET.");
    auto lower_mail = NameFromText("mail.example.net.");
    ASSERT_TRUE(mail.ok() && lower_mail.ok());
    std::string mx = std::string("\x00\x0a", 2) + *mail;
    std::string rrsig;
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(SignOneInto(*k, *signer, *owner, kMX, 600, mx, 1000, 2000, &rrsig).ok());
      EXPECT_TRUE(Verifies(*k, rrsig, signer->size(), *lower_owner, kMX, 600,
                           {std::string("\x00\x0a", 2) + *lower_mail}));
    }
    const std::string one[1] = {mx};
    auto whole = SignRRset(*k, *signer, *owner, kMX, 600, one, 1000, 2000);
    ASSERT_TRUE(whole.ok());
    size_t prefix = 18 + signer->size();
    EXPECT_EQ(whole->substr(0, prefix), rrsig.substr(0, prefix));
    EXPECT_EQ(whole->size(), rrsig.size());
  }
}

}  // namespace
}  // namespace govern::dns
