#include "dns/dnssec.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace govern::dns
