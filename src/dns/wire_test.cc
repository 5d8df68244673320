#include "dns/wire.h"

#include <gtest/gtest.h>

#include "dns/answer.h"
#include "dns/testing.h"

namespace govern::dns {
namespace {

using testing::MakeQuery;
using testing::ReadMessage;

TEST(WireTest, NamesRoundTripWithEscapes) {
  auto n = NameFromText("a\\.b.c\\032d.\\\\.Example.");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(LabelCount(*n), 4);
  EXPECT_EQ(NameToText(*n), "a\\.b.c\\032d.\\\\.Example.");
  auto rel = NameFromText("www", *NameFromText("example.com."));
  EXPECT_EQ(NameToText(*rel), "www.example.com.");
  EXPECT_FALSE(NameFromText("a..b.").ok());
  EXPECT_FALSE(NameFromText(std::string(64, 'a') + ".").ok());
  EXPECT_FALSE(NameFromText("www").ok());  // relative without origin
  EXPECT_FALSE(NameFromText("a\\25").ok());
  EXPECT_FALSE(NameFromText("a\\256.").ok());
  std::string long_name;
  for (int i = 0; i < 5; ++i) long_name += std::string(60, 'x') + ".";
  EXPECT_FALSE(NameFromText(long_name).ok());
}

// RFC 4034 section 6.1's example, in order.
TEST(WireTest, CanonicalOrder) {
  const char* names[] = {"example.",         "a.example.",      "yljkjljk.a.example.",
                         "Z.a.example.",     "zABC.a.EXAMPLE.", "z.example.",
                         "\\001.z.example.", "*.z.example.",    "\\200.z.example."};
  for (size_t i = 0; i + 1 < std::size(names); ++i) {
    auto a = NameFromText(names[i]);
    auto b = NameFromText(names[i + 1]);
    EXPECT_LT(CanonicalCompare(*a, *b), 0) << names[i] << " < " << names[i + 1];
    EXPECT_GT(CanonicalCompare(*b, *a), 0);
  }
  EXPECT_EQ(CanonicalCompare(*NameFromText("A.b."), *NameFromText("a.B.")), 0);
}

TEST(WireTest, ParsesAQueryWithEdns) {
  auto p = MakeQuery("www.Example.com.", kAAAA, true, true, 7, 4096);
  Query q;
  auto r = ParseQuery(p, q);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(q.id, 7);
  EXPECT_EQ(q.qtype, kAAAA);
  EXPECT_TRUE(q.has_edns);
  EXPECT_TRUE(q.dnssec_ok);
  EXPECT_EQ(q.udp_payload, kDefaultUdpPayload);  // capped
  EXPECT_EQ(NameToText(q.qname), "www.Example.com.");
}

std::vector<uint8_t> AnswerTo(const std::vector<uint8_t>& p) {
  ZoneSet none({});
  std::vector<uint8_t> out(65535);
  out.resize(Answer(none, p, AnswerOptions{false, 0}, out.data(), out.size()));
  return out;
}

int Rcode(const std::vector<uint8_t>& m) {
  auto msg = ReadMessage(m);
  return (msg.flags & 0xf) | (msg.has_opt ? static_cast<int>(msg.opt_ttl >> 24) << 4 : 0);
}

TEST(WireTest, MalformedQueriesGetFormerr) {
  auto good = MakeQuery("a.example.", kA);
  {
    auto p = good;
    Put16(&p[4], 2);  // QDCOUNT 2 (RFC 9619)
    EXPECT_EQ(Rcode(AnswerTo(p)), kFormErr);
  }
  {
    auto p = good;
    p.resize(p.size() - 2);  // cut in the question
    EXPECT_EQ(Rcode(AnswerTo(p)), kFormErr);
  }
  {
    auto p = good;
    p.push_back(0);  // trailing octet
    EXPECT_EQ(Rcode(AnswerTo(p)), kFormErr);
  }
  {
    std::vector<uint8_t> p(good.begin(), good.begin() + 12);
    uint8_t ptr[] = {0xc0, 0x0c, 0, 1, 0, 1};  // compression pointer as the qname
    p.insert(p.end(), ptr, ptr + 6);
    EXPECT_EQ(Rcode(AnswerTo(p)), kFormErr);
  }
  {
    auto p = MakeQuery("a.example.", kA, true);
    p[p.size() - 2] = 0;
    p[p.size() - 1] = 3;  // OPT RDLEN 3 with no data
    EXPECT_EQ(Rcode(AnswerTo(p)), kFormErr);
  }
  {
    auto p = MakeQuery("a.example.", kOPT);
    EXPECT_EQ(Rcode(AnswerTo(p)), kFormErr);
  }
  // Too short for a header, or a response: no answer at all.
  EXPECT_TRUE(AnswerTo(std::vector<uint8_t>(good.begin(), good.begin() + 11)).empty());
  auto resp = good;
  resp[2] |= 0x80;
  EXPECT_TRUE(AnswerTo(resp).empty());
}

TEST(WireTest, UnsupportedOpcodeIsNotImp) {
  auto p = MakeQuery("a.example.", kA);
  p[2] = static_cast<uint8_t>(p[2] | (2 << 3));  // STATUS
  auto m = AnswerTo(p);
  EXPECT_EQ(Rcode(m), kNotImp);
  EXPECT_EQ((Get16(&m[2]) >> 11) & 0xf, 2);
}

TEST(WireTest, EdnsVersionAboveZeroIsBadvers) {
  auto p = MakeQuery("a.example.", kA, true);
  p[p.size() - 5] = 1;  // version 1 (second octet of the OPT TTL)
  auto m = AnswerTo(p);
  EXPECT_EQ(Rcode(m), kBadVers);
}

TEST(WireTest, UnknownEdnsOptionsAreIgnored) {
  auto p = MakeQuery("a.example.", kA, true);
  uint8_t opt[] = {0xfd, 0xe9, 0, 2, 0xab, 0xcd};  // option 65001, two octets
  p[p.size() - 1] = sizeof opt;
  p.insert(p.end(), opt, opt + sizeof opt);
  EXPECT_EQ(Rcode(AnswerTo(p)), kRefused);  // parsed fine; no zones here
}

TEST(WireTest, WriterCompressesNamesAndRefusesOverflow) {
  uint8_t buf[512];
  Writer w(buf, sizeof buf);
  auto q = NameFromText("www.example.com.");
  ASSERT_TRUE(w.Start(1, 0x8400, *q, kA, kClassIN));
  size_t after_question = w.size();
  ASSERT_TRUE(w.PutRecord(*q, kA, kClassIN, 60, std::string("\x01\x02\x03\x04", 4)));
  EXPECT_EQ(w.size() - after_question, 2u + 10 + 4);  // owner is one pointer
  auto mail = NameFromText("MAIL.example.com.");
  std::string mx = std::string("\x00\x0a", 2) + *mail;
  size_t before = w.size();
  ASSERT_TRUE(w.PutRecord(*NameFromText("example.com."), kMX, kClassIN, 60, mx));
  EXPECT_EQ(w.size() - before, 2u + 10 + 2 + 5 + 2);  // "MAIL" + pointer to example.com
  Writer small(buf, 40);
  ASSERT_TRUE(small.Start(1, 0, *q, kA, kClassIN));
  size_t s = small.size();
  EXPECT_FALSE(small.PutRecord(*NameFromText("other.example.org."), kA, kClassIN, 60, "abcd"));
  EXPECT_EQ(small.size(), s);
}

}  // namespace
}  // namespace govern::dns
