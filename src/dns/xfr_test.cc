// Zone transfers, TSIG, NOTIFY out and response rate limiting, on the library's own functions and over
// real UDP sockets (the NOTIFY test plays the secondary). The interoperability proof is the e2e test
// with NSD and Knot (tests/e2e/dns_secondaries); these pin the rules: RFC 8945 error answers, running
// MACs across messages, IXFR from the journal and its fallbacks, ACLs, RFC 1982 serials.
#include "dns/xfr.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ctime>

#include "dns/answer.h"
#include "dns/message.h"
#include "dns/notify.h"
#include "dns/rrl.h"
#include "dns/testing.h"
#include "dns/tsig.h"

namespace govern::dns {
namespace {

constexpr char kSecret[] = "c2VjcmV0IGtleSBmb3IgdGVzdHMgb25seSAzMiBieXQ=";

TsigKey Key(std::string_view name = "xfr", std::string_view alg = "hmac-sha256") {
  auto k = TsigKey::FromText(std::string(name) + ":" + std::string(alg) + ":" + kSecret);
  EXPECT_TRUE(k.ok()) << k.status().message();
  return *k;
}

std::string ZoneText(uint32_t serial, const std::string& www, int hosts) {
  std::string t = "$TTL 300\n@ 3600 SOA ns1 hm " + std::to_string(serial) +
                  " 3600 900 604800 60\n@ NS ns1\nns1 A 127.0.0.1\nwww A " + www + "\n";
  if (serial == 1) t += "old TXT \"gone in 2\"\n";
  for (int i = 0; i < hosts; ++i)
    t +=
        "h" + std::to_string(i) + " A 10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256) + "\n";
  return t;
}

std::shared_ptr<const Zone> MakeZone(uint32_t serial, const std::string& www, int hosts, ZoneKeys keys = {}) {
  auto recs = ParseZoneFile(ZoneText(serial, www, hosts), "x.test.");
  EXPECT_TRUE(recs.ok());
  auto z = Zone::Build("x.test.", std::move(*recs), keys);
  EXPECT_TRUE(z.ok()) << z.status().message();
  return *z;
}

sockaddr_in Peer(const char* ip) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, ip, &a.sin_addr);
  a.sin_port = htons(5353);
  return a;
}

// A transfer request for x.test., IXFR with `serial` in authority when given.
std::vector<uint8_t> XfrQuery(uint16_t qtype, uint32_t serial = 0, uint16_t id = 0x4242) {
  std::vector<uint8_t> q = testing::MakeQuery("x.test.", qtype, false, false, id);
  if (qtype == kIXFR) {
    auto soa = RdataFromText(
        kSOA,
        std::vector<Token>{
            {"ns1.x.test."}, {"hm.x.test."}, {std::to_string(serial)}, {"1"}, {"1"}, {"1"}, {"1"}},
        {});
    EXPECT_TRUE(soa.ok());
    std::vector<uint8_t> buf(512);
    std::copy(q.begin(), q.end(), buf.begin());
    Writer w(buf.data(), buf.size());
    // Re-write through the Writer so the SOA owner is compressed against the question, as kdig does.
    w.Start(id, 0, *NameFromText("x.test."), kIXFR, kClassIN);
    EXPECT_TRUE(w.PutRecord(*NameFromText("x.test."), kSOA, kClassIN, 0, *soa));
    w.AddCount(1);
    buf.resize(w.size());
    return buf;
  }
  return q;
}

struct Collected {
  std::vector<std::vector<uint8_t>> messages;
};

Collected Xfr(const Transfers& t, const ZoneSet& zones, std::vector<uint8_t> q, const char* ip = "127.0.0.1",
              bool tcp = true, uint32_t now = static_cast<uint32_t>(::time(nullptr))) {
  Collected c;
  auto peer = Peer(ip);
  t.Handle(zones, q, reinterpret_cast<const sockaddr*>(&peer), tcp, now, [&](std::span<const uint8_t> m) {
    c.messages.emplace_back(m.begin(), m.end());
    return true;
  });
  return c;
}

TransferConfig Config(bool require_key) {
  TransferConfig c;
  EXPECT_TRUE(c.AddKey(std::string("xfr:hmac-sha256:") + kSecret).ok());
  EXPECT_TRUE(c.AddKey(std::string("big:hmac-sha512:") + kSecret).ok());
  EXPECT_TRUE(c.AddAcl(require_key ? "* 127.0.0.0/8 ::1 key=xfr key=big" : "* 127.0.0.0/8").ok());
  return c;
}

// Every record of the answer stream (TSIG records left out) in presentation form.
std::vector<std::string> Records(const Collected& c) {
  std::vector<std::string> out;
  for (const auto& m : c.messages) {
    auto parsed = testing::ReadMessage(m);
    for (const auto& r : parsed.sections[0]) out.push_back(testing::RecordText(r));
  }
  return out;
}

// RFC 5155 appendix A: "example" and "a.example" with salt aabbccdd and 12 iterations.
TEST(Nsec3, HashVectorsAndChain) {
  std::string salt("\xaa\xbb\xcc\xdd", 4);
  EXPECT_EQ(Base32HexLower(Nsec3Hash(*NameFromText("example."), salt, 12)),
            "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom");
  EXPECT_EQ(Base32HexLower(Nsec3Hash(*NameFromText("a.example."), salt, 12)),
            "35mthgpgcu1qg68fab165klnsnk3dpvl");
  auto key = SigningKey::Generate(Algorithm::kEcdsaP256Sha256, 257);
  ASSERT_TRUE(key.ok());
  auto k = std::make_shared<const SigningKey>(std::move(*key));
  auto count = [&](bool opt_out, uint16_t type) {
    auto recs = ParseZoneFile(
        "$TTL 300\n@ SOA ns1 hm 1 3600 900 604800 60\n@ NS ns1\nns1 A 127.0.0.1\na.b.c TXT \"deep\"\n"
        "insecure NS ns.insecure\nns.insecure A 192.0.2.1\nx.y.insecure2 NS ns.elsewhere.\n"
        "secure NS ns.elsewhere.\nsecure DS 1 13 2 00000000000000000000000000000000000000000000000000000000"
        "00000000\n",
        "n3.test.");
    EXPECT_TRUE(recs.ok()) << recs.status().message();
    ZoneKeys keys{k, k};
    keys.nsec3 = Nsec3Params{.enabled = true, .opt_out = opt_out};
    auto z = Zone::Build("n3.test.", std::move(*recs), keys);
    EXPECT_TRUE(z.ok());
    int n = 0;
    for (const auto& r : (*z)->SignedRecords(1800000000))
      if (r.type == type) ++n;
    return n;
  };
  // apex, ns1, a.b.c, b.c, c, secure, and without opt-out insecure, x.y.insecure2, y.insecure2, insecure2.
  EXPECT_EQ(count(false, kNSEC3), 10);
  EXPECT_EQ(count(true, kNSEC3), 6);
  EXPECT_EQ(count(true, kNSEC3PARAM), 1);
  EXPECT_EQ(count(true, kNSEC), 0);
}

TEST(Serial, Rfc1982) {
  EXPECT_TRUE(SerialLess(1, 2));
  EXPECT_FALSE(SerialLess(2, 1));
  EXPECT_FALSE(SerialLess(5, 5));
  EXPECT_TRUE(SerialLess(0xffffffffu, 0));  // wraps
  EXPECT_TRUE(SerialLess(0xfffffff0u, 5));
  EXPECT_FALSE(SerialLess(5, 0xfffffff0u));
  EXPECT_FALSE(SerialLess(0, 0x80000000u));  // undefined pair: neither is less
  EXPECT_FALSE(SerialLess(0x80000000u, 0));
}

TEST(Config, KeysAclsNotifyTargets) {
  EXPECT_TRUE(TsigKey::FromText(std::string("xfr:") + kSecret).ok());
  EXPECT_TRUE(TsigKey::FromText(std::string("hmac-sha512:xfr:") + kSecret).ok());
  EXPECT_FALSE(TsigKey::FromText(std::string("xfr:hmac-md5:") + kSecret).ok());
  EXPECT_FALSE(TsigKey::FromText("xfr:hmac-sha256:not base64!").ok());
  EXPECT_FALSE(TsigKey::FromText("justaname").ok());
  TransferConfig c;
  EXPECT_TRUE(c.AddKey(std::string("xfr:") + kSecret).ok());
  EXPECT_FALSE(c.AddKey(std::string("XFR.:") + kSecret).ok());  // the same name twice
  EXPECT_TRUE(c.AddAcl("x.test 10.0.0.0/8 key=xfr").ok());
  EXPECT_FALSE(c.AddAcl("x.test 10.0.0.0/33").ok());
  EXPECT_FALSE(c.AddAcl("x.test 10.0.0.0/8 key=unknown").ok());
  EXPECT_FALSE(c.AddAcl("x.test").ok());
  EXPECT_TRUE(c.AddNotify("* 127.0.0.1:5301 key=xfr").ok());
  EXPECT_TRUE(c.AddNotify("x.test. [::1]:5302").ok());
  EXPECT_FALSE(c.AddNotify("* 127.0.0.1").ok());
  EXPECT_FALSE(c.AddNotify("* 127.0.0.1:0").ok());
  EXPECT_FALSE(c.AddNotify("* host.example:53").ok());
  auto x = *NameFromText("x.test.");
  EXPECT_EQ(c.NotifyFor(x).size(), 2u);
  EXPECT_EQ(c.NotifyFor(*NameFromText("y.test.")).size(), 1u);
  EXPECT_EQ(c.PolicyFor(*NameFromText("y.test.")), nullptr);  // no default line: nobody
  ASSERT_NE(c.PolicyFor(x), nullptr);

  auto n = Netblock::Parse("192.0.2.0/25");
  ASSERT_TRUE(n.ok());
  auto in = Peer("192.0.2.127"), out = Peer("192.0.2.128");
  EXPECT_TRUE(n->Contains(reinterpret_cast<sockaddr*>(&in)));
  EXPECT_FALSE(n->Contains(reinterpret_cast<sockaddr*>(&out)));
  sockaddr_in6 mapped{};
  mapped.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "::ffff:192.0.2.5", &mapped.sin6_addr);
  EXPECT_TRUE(n->Contains(reinterpret_cast<sockaddr*>(&mapped)));
  auto v6 = Netblock::Parse("2001:db8::/32");
  ASSERT_TRUE(v6.ok());
  EXPECT_FALSE(v6->Contains(reinterpret_cast<sockaddr*>(&mapped)));
}

std::vector<uint8_t> Hex(std::string_view h) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
  return out;
}

// Requests signed by other implementations, captured off the wire (SOA queries for example.test with
// key xfr.example and the secret in kSecret): BIND's dig (with EDNS and a cookie before the TSIG) and
// Knot's kdig, HMAC-SHA256 and -SHA512. Each verifies at its own time signed, and fails with one bit
// changed.
TEST(Tsig, OtherImplementationsVerify) {
  struct Vector {
    const char* who;
    const char* alg;
    const char* hex;
  } vectors[] = {
      {"dig 9.18", "hmac-sha256",
       "b7c601200001000000000002076578616d706c650474657374000006000100002904d000000000000c000a0008c473d0d4edd"
       "daa"
       "7003786672076578616d706c650000fa00ff00000000003d0b686d61632d7368613235360000006b0d60d6012c002099fba89"
       "85"
       "87e3c28e5e0962df3d7526a74980dc40360a40580c3a5ebf60d2333b7c600000000"},
      {"kdig 3.2", "hmac-sha256",
       "981b01200001000000000001076578616d706c650474657374000006000103786672076578616d706c650000fa00ff0000000"
       "000"
       "3d0b686d61632d7368613235360000006b0d60d8012c00204307252e73c36faa6c0c10f55fa8e69eb795f9aaaba0debf48d22"
       "77"
       "630e83b3e981b00000000"},
      {"kdig 3.2", "hmac-sha512",
       "9f1e01200001000000000001076578616d706c650474657374000006000103786672076578616d706c650000fa00ff0000000"
       "000"
       "5d0b686d61632d7368613531320000006b0d60c2012c0040a14f6f457ec94a8465300339ee5415329b5c3af8eeea7530f8402"
       "bf"
       "52e08f4b1038719dbcfd86b66226d8ea0a1129dc0e390d8ac13cf915cf2de74ba6c4a00a29f1e00000000"},
  };
  for (const auto& v : vectors) {
    SCOPED_TRACE(std::string(v.who) + " " + v.alg);
    TsigKeyring ring({Key("xfr.example", v.alg)});
    auto msg = Hex(v.hex);
    EXPECT_TRUE(NeedsSlowPath(msg));
    auto t = FindTsig(msg);
    ASSERT_TRUE(t.ok() && t->has_value());
    EXPECT_EQ(VerifyRequest(msg, **t, ring, (*t)->time_signed).error, kTsigNoError);
    msg[14] ^= 1;
    EXPECT_EQ(VerifyRequest(msg, **t, ring, (*t)->time_signed).error, kBadSig);
  }
}

TEST(Tsig, RequestSignedAndChecked) {
  TsigKey key = Key();
  TsigKeyring ring({key});
  uint64_t now = static_cast<uint64_t>(::time(nullptr));
  auto q = testing::MakeQuery("x.test.", kSOA, true);
  TsigSigner(key, "").Sign(q, now);
  auto t = FindTsig(q);
  ASSERT_TRUE(t.ok() && t->has_value());
  EXPECT_EQ((*t)->mac.size(), 32u);
  EXPECT_EQ(VerifyRequest(q, **t, ring, now).error, kTsigNoError);
  EXPECT_EQ(VerifyRequest(q, **t, ring, now + 299).error, kTsigNoError);
  EXPECT_EQ(VerifyRequest(q, **t, ring, now + 301).error, kBadTime);
  EXPECT_EQ(VerifyRequest(q, **t, TsigKeyring({Key("other")}), now).error, kBadKey);
  EXPECT_EQ(VerifyRequest(q, **t, TsigKeyring({Key("xfr", "hmac-sha512")}), now).error, kBadKey);
  auto bad = q;
  bad[13] ^= 0x20;  // the qname's first letter changes case: the MAC covers it
  auto tb = FindTsig(bad);
  EXPECT_EQ(VerifyRequest(bad, **tb, ring, now).error, kBadSig);
  // A TSIG that is not the last record, or in the answer section, is FORMERR.
  auto twice = q;
  twice.insert(twice.end(), q.begin() + static_cast<long>((*t)->offset), q.end());
  Put16(&twice[10], static_cast<uint16_t>(Get16(&twice[10]) + 1));
  EXPECT_FALSE(FindTsig(twice).ok());
}

TEST(Tsig, ErrorAnswers) {
  auto zones =
      std::make_shared<const ZoneSet>(std::vector<std::shared_ptr<const Zone>>{MakeZone(1, "192.0.2.1", 3)});
  Transfers t(Config(true));
  uint32_t now = static_cast<uint32_t>(::time(nullptr));
  // Wrong secret: NOTAUTH, TSIG error BADSIG, no MAC (an unsigned error answer, RFC 8945 5.3.2).
  auto q = XfrQuery(kAXFR);
  auto wrong = TsigKey::FromText("xfr:hmac-sha256:AAAA");
  TsigSigner(*wrong, "").Sign(q, now);
  auto c = Xfr(t, *zones, q);
  ASSERT_EQ(c.messages.size(), 1u);
  EXPECT_EQ(c.messages[0][3] & 0xf, kNotAuth);
  auto tr = FindTsig(c.messages[0]);
  ASSERT_TRUE(tr.ok() && tr->has_value());
  EXPECT_EQ((*tr)->error, kBadSig);
  EXPECT_TRUE((*tr)->mac.empty());
  // Unknown key: BADKEY.
  q = XfrQuery(kAXFR);
  TsigSigner(Key("nobody"), "").Sign(q, now);
  c = Xfr(t, *zones, q);
  tr = FindTsig(c.messages.at(0));
  EXPECT_EQ((*tr)->error, kBadKey);
  EXPECT_EQ(c.messages[0][3] & 0xf, kNotAuth);
  // Clock skew: BADTIME, signed, the request's time signed, our time in other data.
  q = XfrQuery(kAXFR);
  TsigSigner client(Key(), "");
  client.Sign(q, now - 1000);
  c = Xfr(t, *zones, q, "127.0.0.1", true, now);
  tr = FindTsig(c.messages.at(0));
  EXPECT_EQ((*tr)->error, kBadTime);
  EXPECT_EQ((*tr)->time_signed, now - 1000);
  ASSERT_EQ((*tr)->other.size(), 6u);
  EXPECT_EQ(Get32(reinterpret_cast<const uint8_t*>((*tr)->other.data()) + 2), now);
  EXPECT_EQ((*tr)->mac.size(), 32u);
  EXPECT_EQ(c.messages[0][3] & 0xf, kNotAuth);
}

TEST(Transfer, AxfrSignedMultiMessageWithRunningMac) {
  auto zones = std::make_shared<const ZoneSet>(
      std::vector<std::shared_ptr<const Zone>>{MakeZone(1, "192.0.2.1", 2000)});
  Transfers t(Config(true));
  uint32_t now = static_cast<uint32_t>(::time(nullptr));
  auto q = XfrQuery(kAXFR);
  TsigSigner client(Key("big", "hmac-sha512"), "");
  client.Sign(q, now);
  auto c = Xfr(t, *zones, q);
  ASSERT_GT(c.messages.size(), 2u);
  for (const auto& m : c.messages) {
    EXPECT_EQ(Get16(m.data()), 0x4242);
    EXPECT_EQ(m[2] & 0x84, 0x84);  // QR, AA
    EXPECT_TRUE(client.Verify(m, now).ok());
  }
  auto recs = Records(c);
  ASSERT_EQ(recs.size(), 2000u + 5 + 1);  // SOA, NS, ns1, www, old, hosts, SOA again
  EXPECT_NE(recs.front().find("SOA"), std::string::npos);
  EXPECT_EQ(recs.front(), recs.back());
  // A changed byte in a middle message breaks the chain from there on.
  TsigSigner again(Key("big", "hmac-sha512"), "");
  auto q2 = XfrQuery(kAXFR);
  again.Sign(q2, now);
  auto c2 = Xfr(t, *zones, q2);
  ASSERT_TRUE(again.Verify(c2.messages[0], now).ok());
  c2.messages[1][40] ^= 1;
  EXPECT_FALSE(again.Verify(c2.messages[1], now).ok());
}

TEST(Transfer, AclAndRefusals) {
  auto zones =
      std::make_shared<const ZoneSet>(std::vector<std::shared_ptr<const Zone>>{MakeZone(1, "192.0.2.1", 3)});
  Transfers keyed(Config(true)), open(Config(false));
  auto rcode = [](const Collected& c) { return c.messages.empty() ? -1 : c.messages[0][3] & 0xf; };
  EXPECT_EQ(rcode(Xfr(keyed, *zones, XfrQuery(kAXFR))), kRefused);             // unsigned, a key is required
  EXPECT_EQ(rcode(Xfr(open, *zones, XfrQuery(kAXFR), "10.1.2.3")), kRefused);  // outside the ACL
  EXPECT_EQ(rcode(Xfr(open, *zones, XfrQuery(kAXFR))), kNoError);
  EXPECT_EQ(rcode(Xfr(open, *zones, XfrQuery(kAXFR), "127.0.0.1", /*tcp=*/false)),
            kFormErr);  // AXFR over UDP
  auto other = testing::MakeQuery("www.x.test.", kAXFR);
  EXPECT_EQ(rcode(Xfr(open, *zones, other)), kNotAuth);  // not a zone apex
  TransferConfig none;
  Transfers nobody(none);
  EXPECT_EQ(rcode(Xfr(nobody, *zones, XfrQuery(kAXFR))), kRefused);  // no ACL line: nobody
  EXPECT_EQ(open.refused(), 1u);
  EXPECT_EQ(keyed.refused(), 1u);
}

// A version kept outside the process: encoded and decoded back whole; its restore into a fresh
// journal (a restart) makes IXFR from it a difference; damaged bytes are refused with a message.
TEST(Transfer, JournalVersionsRestoredAfterARestart) {
  auto v1 =
      std::make_shared<const ZoneSet>(std::vector<std::shared_ptr<const Zone>>{MakeZone(1, "192.0.2.1", 50)});
  auto v3 =
      std::make_shared<const ZoneSet>(std::vector<std::shared_ptr<const Zone>>{MakeZone(3, "192.0.2.3", 50)});
  std::vector<std::string> saved;
  {
    Transfers before(Config(false));
    before.journal().SetSink([&](std::string_view apex, const std::shared_ptr<const TransferVersion>& v) {
      EXPECT_EQ(apex, *NameFromText("x.test."));
      saved.push_back(EncodeVersion(*v));
    });
    EXPECT_EQ(Records(Xfr(before, *v1, XfrQuery(kAXFR))).size(), 56u);
  }
  ASSERT_EQ(saved.size(), 1u);
  auto back = DecodeVersion(saved[0]);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ((*back)->serial, 1u);
  EXPECT_EQ(EncodeVersion(**back), saved[0]);
  Transfers after(Config(false));
  EXPECT_GT(Records(Xfr(after, *v3, XfrQuery(kIXFR, 1))).size(), 50u);  // not restored: a whole zone
  Transfers restored(Config(false));
  restored.journal().Restore(*NameFromText("x.test."), {*back});
  EXPECT_EQ(Records(Xfr(restored, *v3, XfrQuery(kIXFR, 1))).size(), 7u);  // restored: the difference
  for (size_t cut : {size_t{0}, size_t{5}, size_t{12}, saved[0].size() - 1}) {
    auto bad = DecodeVersion(std::string_view(saved[0]).substr(0, cut));
    EXPECT_EQ(bad.status().code(), Code::kInvalidArgument) << cut;
  }
  std::string flipped = saved[0];
  flipped[13] = 70;  // the first owner's first label length past the name's end
  EXPECT_FALSE(DecodeVersion(flipped).ok());
}

TEST(Transfer, IxfrFromJournalAndFallbacks) {
  Transfers t(Config(false));
  auto v1 =
      std::make_shared<const ZoneSet>(std::vector<std::shared_ptr<const Zone>>{MakeZone(1, "192.0.2.1", 50)});
  auto v2 =
      std::make_shared<const ZoneSet>(std::vector<std::shared_ptr<const Zone>>{MakeZone(2, "192.0.2.2", 50)});
  auto v3 =
      std::make_shared<const ZoneSet>(std::vector<std::shared_ptr<const Zone>>{MakeZone(3, "192.0.2.3", 50)});
  EXPECT_EQ(Records(Xfr(t, *v1, XfrQuery(kAXFR))).size(), 56u);  // version 1 is now in the journal
  // IXFR from 1 to 3 (2 never served): one condensed difference.
  auto recs = Records(Xfr(t, *v3, XfrQuery(kIXFR, 1)));
  ASSERT_EQ(recs.size(), 7u);
  EXPECT_NE(recs[0].find(" 3 3600"), std::string::npos);
  EXPECT_NE(recs[1].find(" 1 3600"), std::string::npos);
  EXPECT_NE(recs[2].find("old.x.test."), std::string::npos);  // deletions
  EXPECT_NE(recs[3].find("192.0.2.1"), std::string::npos);
  EXPECT_NE(recs[4].find(" 3 3600"), std::string::npos);
  EXPECT_NE(recs[5].find("192.0.2.3"), std::string::npos);  // additions
  EXPECT_EQ(recs[6], recs[0]);
  EXPECT_EQ(t.incremental(), 1u);
  // Up to date or ahead: the SOA alone. Over UDP, behind: the SOA alone too (retry over TCP).
  EXPECT_EQ(Records(Xfr(t, *v3, XfrQuery(kIXFR, 3))).size(), 1u);
  EXPECT_EQ(Records(Xfr(t, *v3, XfrQuery(kIXFR, 9))).size(), 1u);
  EXPECT_EQ(Records(Xfr(t, *v3, XfrQuery(kIXFR, 1), "127.0.0.1", false)).size(), 1u);
  // A serial the journal never held (2): the whole zone in AXFR form.
  EXPECT_EQ(Records(Xfr(t, *v3, XfrQuery(kIXFR, 2))).size(), 55u);
  (void)v2;
  // IXFR without an SOA in authority: FORMERR.
  auto c = Xfr(t, *v3, testing::MakeQuery("x.test.", kIXFR));
  EXPECT_EQ(c.messages.at(0)[3] & 0xf, kFormErr);
}

TEST(Transfer, SignedZoneIxfrCarriesOnlyWhatChanged) {
  auto key = SigningKey::Generate(Algorithm::kEcdsaP256Sha256, 257);
  ASSERT_TRUE(key.ok());
  auto k = std::make_shared<const SigningKey>(std::move(*key));
  ZoneKeys keys{k, k};
  Transfers t(Config(false));
  auto v1 = std::make_shared<const ZoneSet>(
      std::vector<std::shared_ptr<const Zone>>{MakeZone(1, "192.0.2.1", 200, keys)});
  auto v2 = std::make_shared<const ZoneSet>(
      std::vector<std::shared_ptr<const Zone>>{MakeZone(2, "192.0.2.2", 200, keys)});
  size_t full = Records(Xfr(t, *v1, XfrQuery(kAXFR))).size();
  EXPECT_GT(full, 600u);  // records, RRSIGs, NSECs
  auto recs = Records(Xfr(t, *v2, XfrQuery(kIXFR, 1)));
  // SOA x4; deleted: www A + its RRSIG, SOA RRSIG, "old" TXT + RRSIG + NSEC + RRSIG, the NSEC before "old"
  // + RRSIG; added: www A + RRSIG, SOA RRSIG, the NSEC before "old" now pointing past it + RRSIG.
  EXPECT_LT(recs.size(), 24u);
  EXPECT_GT(recs.size(), 10u);
}

TEST(SlowPath, WhatTakesIt) {
  EXPECT_FALSE(NeedsSlowPath(testing::MakeQuery("x.test.", kA)));
  EXPECT_FALSE(NeedsSlowPath(testing::MakeQuery("x.test.", kA, true)));
  EXPECT_TRUE(NeedsSlowPath(testing::MakeQuery("x.test.", kAXFR)));
  EXPECT_TRUE(NeedsSlowPath(XfrQuery(kIXFR, 1)));
  auto q = testing::MakeQuery("x.test.", kSOA);
  TsigSigner(Key(), "").Sign(q, 1);
  EXPECT_TRUE(NeedsSlowPath(q));
  auto q2 = testing::MakeQuery("x.test.", kSOA, true);
  TsigSigner(Key(), "").Sign(q2, 1);
  EXPECT_TRUE(NeedsSlowPath(q2));
}

TEST(SlowPath, SignedSoaQueryIsAnsweredSigned) {
  auto zones =
      std::make_shared<const ZoneSet>(std::vector<std::shared_ptr<const Zone>>{MakeZone(7, "192.0.2.1", 3)});
  Transfers t(Config(true));
  uint32_t now = static_cast<uint32_t>(::time(nullptr));
  auto q = testing::MakeQuery("x.test.", kSOA, true);
  TsigSigner client(Key(), "");
  client.Sign(q, now);
  auto c = Xfr(t, *zones, q, "192.0.2.99", false, now);  // any address may ask for the SOA
  ASSERT_EQ(c.messages.size(), 1u);
  EXPECT_TRUE(client.Verify(c.messages[0], now).ok());
  auto recs = Records(c);
  ASSERT_GE(recs.size(), 1u);
  EXPECT_NE(recs[0].find(" 7 3600"), std::string::npos);
}

// An answer that fits 512 octets alone but not with its TSIG goes out truncated (TC), still signed.
TEST(SlowPath, SignedUdpAnswerTooBigWithTsigIsTruncated) {
  Transfers t(Config(true));
  uint32_t now = static_cast<uint32_t>(::time(nullptr));
  for (size_t len = 300; len < 480; len += 10) {
    std::string txt = "\"" + std::string(len / 2, 'a') + "\" \"" + std::string(len / 2, 'b') + "\"";
    auto recs = ParseZoneFile("$TTL 300\n@ SOA ns1 hm 1 3600 900 604800 60\n@ NS ns1\nbig TXT " + txt + "\n",
                              "x.test.");
    ASSERT_TRUE(recs.ok());
    auto z = Zone::Build("x.test.", std::move(*recs));
    ASSERT_TRUE(z.ok());
    ZoneSet zones({*z});
    auto q = testing::MakeQuery("big.x.test.", kTXT);
    std::vector<uint8_t> plain(4096);
    size_t n = Answer(zones, q, AnswerOptions{false, now}, plain.data(), plain.size());
    TsigSigner client(Key(), "");
    client.Sign(q, now);
    auto c = Xfr(t, zones, q, "127.0.0.1", false, now);
    ASSERT_EQ(c.messages.size(), 1u);
    const auto& m = c.messages[0];
    EXPECT_LE(m.size(), 512u);
    EXPECT_TRUE(client.Verify(m, now).ok());
    bool tc = m[2] & 0x02;
    // The TSIG record for key "xfr." with an hmac-sha256 MAC: 15 octets of RR header, 61 of RDATA.
    EXPECT_EQ(tc, n + 76 > 512) << "answer of " << n << " octets";
    if (tc) {
      EXPECT_EQ(Get16(&m[6]), 0);  // no records but the TSIG
    }
  }
}

TEST(Rrl, LimitsPerNetblockAndAnswerWithSlip) {
  RrlOptions o;
  o.responses_per_second = 5;
  o.slip = 2;
  RateLimiter rrl(o);
  auto zones =
      std::make_shared<const ZoneSet>(std::vector<std::shared_ptr<const Zone>>{MakeZone(1, "192.0.2.1", 3)});
  std::vector<uint8_t> out(4096);
  auto q = testing::MakeQuery("www.x.test.", kA);
  size_t n = Answer(*zones, q, AnswerOptions{false, 1000}, out.data(), out.size());
  std::span<const uint8_t> resp(out.data(), n);
  auto a = Peer("198.51.100.7"), b = Peer("198.51.100.200"), other = Peer("203.0.113.1");
  int sent = 0, slipped = 0, dropped = 0;
  for (int i = 0; i < 25; ++i) {
    auto act = rrl.Check(reinterpret_cast<sockaddr*>(i % 2 ? &a : &b), resp, *zones, 1000);  // one /24
    (act == RateLimiter::Action::kSend ? sent : act == RateLimiter::Action::kSlip ? slipped : dropped)++;
  }
  EXPECT_EQ(sent, 5);
  EXPECT_EQ(slipped, 10);
  EXPECT_EQ(dropped, 10);
  EXPECT_EQ(rrl.Check(reinterpret_cast<sockaddr*>(&other), resp, *zones, 1000), RateLimiter::Action::kSend);
  EXPECT_EQ(rrl.Check(reinterpret_cast<sockaddr*>(&a), resp, *zones, 1001),
            RateLimiter::Action::kSend);  // next second
  // Random names under one zone share one bucket (NXDOMAIN keyed by the zone).
  RateLimiter nx(o);
  int nx_sent = 0;
  for (int i = 0; i < 20; ++i) {
    auto nq = testing::MakeQuery("r" + std::to_string(i) + ".x.test.", kA);
    size_t nn = Answer(*zones, nq, AnswerOptions{false, 1000}, out.data(), out.size());
    if (nx.Check(reinterpret_cast<sockaddr*>(&a), std::span<const uint8_t>(out.data(), nn), *zones, 1000) ==
        RateLimiter::Action::kSend)
      ++nx_sent;
  }
  EXPECT_EQ(nx_sent, 5);
  // The slipped form: header and question, TC, no records.
  n = Answer(*zones, q, AnswerOptions{false, 1000}, out.data(), out.size());
  size_t tn = RateLimiter::Truncate(out.data(), n);
  auto m = testing::ReadMessage(std::vector<uint8_t>(out.begin(), out.begin() + static_cast<long>(tn)));
  EXPECT_TRUE(m.flags & 0x0200);
  EXPECT_TRUE(m.sections[0].empty());
  EXPECT_EQ(tn, 12u + q.size() - 12u);
}

// A UDP socket playing the secondary: answers the second NOTIFY it gets (the first is "lost"), signed.
TEST(Notify, RetriedUntilAnsweredAndTsigChecked) {
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  auto addr = Peer("127.0.0.1");
  addr.sin_port = 0;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t al = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &al);
  uint16_t port = ntohs(addr.sin_port);
  TsigKey key = Key();
  TsigKeyring ring({key});
  auto n = Notifier::Start(ring, NotifyOptions{.attempts = 4, .first_timeout_ms = 100});
  ASSERT_TRUE(n.ok());
  auto zone = MakeZone(5, "192.0.2.1", 1);
  std::vector<NotifyTarget> targets{{"127.0.0.1", port, key.name}};
  (*n)->Send(zone->apex(), 3600, zone->soa().rdatas[0], targets);
  std::vector<uint8_t> buf(4096);
  int got = 0;
  while (got < 2) {
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 5000), 1);
    sockaddr_storage from{};
    socklen_t fl = sizeof from;
    ssize_t r = ::recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &fl);
    ASSERT_GT(r, 12);
    std::vector<uint8_t> msg(buf.begin(), buf.begin() + r);
    auto parsed = ParseMessage(msg);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed->opcode, 4);
    EXPECT_TRUE(parsed->flags & 0x0400);  // AA
    EXPECT_EQ(parsed->qtype, kSOA);
    ASSERT_EQ(parsed->answer.size(), 1u);
    EXPECT_EQ(Get32(&msg[parsed->answer[0].rdata_start + parsed->answer[0].rdlength - 20]), 5u);
    auto t = FindTsig(msg);
    ASSERT_TRUE(t.ok() && t->has_value());
    EXPECT_EQ(VerifyRequest(msg, **t, ring, static_cast<uint64_t>(::time(nullptr))).error, kTsigNoError);
    if (++got < 2) continue;
    // The answer: same id, QR, opcode NOTIFY, question echoed, signed with the request's MAC.
    std::vector<uint8_t> reply(msg.begin(), msg.begin() + static_cast<long>(parsed->question_end));
    Put16(&reply[2], static_cast<uint16_t>(0x8000 | 4 << 11 | 0x0400));
    Put16(&reply[6], 0);
    Put16(&reply[8], 0);
    Put16(&reply[10], 0);
    TsigSigner(key, (*t)->mac).Sign(reply, static_cast<uint64_t>(::time(nullptr)));
    ::sendto(fd, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from), fl);
  }
  EXPECT_TRUE((*n)->WaitIdle(5000));
  EXPECT_EQ((*n)->answered(), 1u);
  EXPECT_GE((*n)->sent(), 2u);
  EXPECT_EQ((*n)->failed(), 0u);
  // Nobody answers: given up after the attempts.
  (*n)->Send(zone->apex(), 3600, zone->soa().rdatas[0], targets);
  EXPECT_TRUE((*n)->WaitIdle(10000));
  EXPECT_EQ((*n)->failed(), 1u);
  ::close(fd);
}

}  // namespace
}  // namespace govern::dns
