#include "dns/zonefile.h"

#include <gtest/gtest.h>

#include "dns/rdata.h"
#include "dns/wire.h"
#include "dns/zone.h"

namespace govern::dns {
namespace {

constexpr const char* kZoneText = R"($ORIGIN example.test.
$TTL 1h
@ IN SOA ns1 hostmaster ( 2024010101 ; serial
      3600 900 604800 300 )
  IN NS ns1                ; owner omitted: the apex again
ns1 300 IN A 127.0.0.1
www IN 60 A 192.0.2.1
    AAAA 2001:db8::1
txt TXT "a \"quoted\" string" plain \065\066 "semi;colon"
mx MX 10 mail.other.test.
srv._tcp SRV 0 5 5060 www
caa CAA 128 issue "ca.example; account=1"
svc HTTPS 1 . alpn=h2,h3 port=8443 ipv4hint=192.0.2.1,192.0.2.2 ipv6hint=2001:db8::1 ech=AEX+DQ==
svc2 SVCB 0 svc
ds DS 12345 13 2 ( B4C8C1FE2E7477127B27115656AD6256
                   F424625BF5C1E2770CE6D6E37DF61D17 )
key DNSKEY 256 3 15 l02Woi0iS8Aa25FQkUd9RMzZHJpBoRQwAQEX1SxZJA4=
sig RRSIG A 13 2 300 20250101000000 20241201000000 12345 example.test. dGVzdA==
nsec NSEC www A AAAA RRSIG NSEC TYPE128
ptr PTR www
hinfo HINFO "PC" "Linux"
unk TYPE65000 \# 3 010203
emptyunk TYPE65001 \# 0
a\.dot TXT x
$ORIGIN sub.example.test.
deep A 192.0.2.9
)";

TEST(ZoneFileTest, ParsesEveryFormAndPrintsItBack) {
  auto recs = ParseZoneFile(kZoneText, "example.test.");
  ASSERT_TRUE(recs.ok()) << recs.status().ToString();
  std::string printed = PrintZoneFile(*recs);
  EXPECT_NE(printed.find("example.test. 3600 IN NS ns1.example.test.\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("ns1.example.test. 300 IN A 127.0.0.1\n"), std::string::npos);
  EXPECT_NE(printed.find("www.example.test. 3600 IN AAAA 2001:db8::1\n"),
            std::string::npos);  // $TTL, not the previous
  EXPECT_NE(
      printed.find(
          "txt.example.test. 3600 IN TXT \"a \\\"quoted\\\" string\" \"plain\" \"AB\" \"semi;colon\"\n"),
      std::string::npos);
  EXPECT_NE(printed.find("caa.example.test. 3600 IN CAA 128 issue \"ca.example; account=1\"\n"),
            std::string::npos);
  EXPECT_NE(printed.find(
                "svc.example.test. 3600 IN HTTPS 1 . alpn=\"h2,h3\" port=8443 ipv4hint=192.0.2.1,192.0.2.2 "
                "ech=AEX+DQ== ipv6hint=2001:db8::1\n"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("nsec.example.test. 3600 IN NSEC www.example.test. A AAAA RRSIG NSEC NXNAME\n"),
            std::string::npos);
  EXPECT_NE(printed.find("unk.example.test. 3600 IN TYPE65000 \\# 3 010203\n"), std::string::npos);
  EXPECT_NE(printed.find("emptyunk.example.test. 3600 IN TYPE65001 \\# 0\n"), std::string::npos);
  EXPECT_NE(printed.find("a\\.dot.example.test. 3600 IN TXT \"x\"\n"), std::string::npos);
  EXPECT_NE(printed.find("deep.sub.example.test. 3600 IN A 192.0.2.9\n"), std::string::npos);
  EXPECT_NE(printed.find("sig.example.test. 3600 IN RRSIG A 13 2 300 20250101000000 20241201000000 12345 "
                         "example.test. dGVzdA==\n"),
            std::string::npos);
  // Printing and parsing again gives the same records (the printer's form is a zone file).
  auto again = ParseZoneFile(printed, "example.test.");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->size(), recs->size());
  for (size_t i = 0; i < recs->size(); ++i) {
    EXPECT_EQ((*again)[i].owner, (*recs)[i].owner);
    EXPECT_EQ((*again)[i].type, (*recs)[i].type);
    EXPECT_EQ((*again)[i].ttl, (*recs)[i].ttl);
    EXPECT_EQ((*again)[i].rdata, (*recs)[i].rdata) << PrintRecord((*recs)[i]);
  }
}

void ExpectError(const std::string& text, const std::string& want) {
  auto r = ParseZoneFile(text, "example.test.");
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.status().message(), want) << text;
}

TEST(ZoneFileTest, ErrorsNameTheLine) {
  ExpectError("$TTL 300\n@ SOA ns hm 1 2 3 4 5\nwww A 1.2.3\n", "line 3: bad IPv4 address '1.2.3'");
  ExpectError("www 300 A 192.0.2.1\nx A (\n192.0.2.2\n", "line 2: '(' not closed");
  ExpectError("www A 192.0.2.1\n", "line 1: no TTL and no $TTL before it");
  ExpectError("$TTL 300\nwww CH A 192.0.2.1\n", "line 2: only class IN is served");
  ExpectError("$TTL 300\n\nwww BOGUS 1\n", "line 3: unknown type 'BOGUS'");
  ExpectError("$TTL 300\nwww TXT \"open\n", "line 2: unterminated quoted string");
  ExpectError("$TTL 300\n$INCLUDE other\n", "line 2: $INCLUDE is not supported");
  ExpectError("$TTL 300\n  A 192.0.2.1\n", "line 2: no previous owner name to repeat");
  ExpectError("$TTL 300\nwww MX 10\n", "line 2: MX takes 2 fields, got 1");
  ExpectError("$TTL 300\nwww TYPE9 \\# 2 01\n", "line 2: \\# length does not match the data");
  ExpectError("$TTL 300\nwww A \\# 3 010203\n", "line 2: \\# data is not valid A RDATA");
  ExpectError(
      "$TTL 300\nx.."
      " A 192.0.2.1\n",
      "line 2: empty label in name 'x..'");
}

TEST(ZoneFileTest, ZoneBuildChecksTheRules) {
  auto build = [](const std::string& text) {
    auto r = ParseZoneFile(text, "example.test.");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return Zone::Build("example.test.", std::move(*r));
  };
  const std::string soa = "$TTL 300\n@ SOA ns hm 1 2 3 4 5\n";
  EXPECT_TRUE(build(soa).ok());
  EXPECT_EQ(build("$TTL 300\nwww A 192.0.2.1\n").status().message(), "the zone has no SOA at its apex");
  EXPECT_EQ(build(soa + "www CNAME a\nwww A 192.0.2.1\n").status().message(),
            "www.example.test. has a CNAME and other data (RFC 1034 section 3.6.2)");
  EXPECT_EQ(build(soa + "www.other. A 192.0.2.1\n").status().message(),
            "www.other. is outside the zone example.test.");
  auto z = build(soa + "www 60 A 192.0.2.1\nwww 30 A 192.0.2.2\n");
  ASSERT_TRUE(z.ok());
  EXPECT_EQ((*z)->serial(), 1u);
  EXPECT_EQ((*z)->negative_ttl(), 5u);
  // RFC 2181 section 5.2: one TTL per RRset (the lowest).
  auto www = (*z)->Find(*NameFromText("www.example.test."));
  ASSERT_NE(www, nullptr);
  EXPECT_EQ(www->Find(kA)->ttl, 30u);
}

}  // namespace
}  // namespace govern::dns
