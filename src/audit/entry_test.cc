// Canonical encoding (RFC 8785 vectors), details validation, time form, field checks and hashes.
#include "audit/entry.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <string>

#include "crypto/encoding.h"
#include "crypto/sha256.h"

namespace govern::audit {
namespace {

double FromBits(uint64_t bits) { return std::bit_cast<double>(bits); }

TEST(JcsNumberTest, Rfc8785AppendixB) {
  const std::pair<uint64_t, const char*> cases[] = {
      {0x0000000000000000, "0"},
      {0x8000000000000000, "0"},
      {0x0000000000000001, "5e-324"},
      {0x8000000000000001, "-5e-324"},
      {0x7fefffffffffffff, "1.7976931348623157e+308"},
      {0xffefffffffffffff, "-1.7976931348623157e+308"},
      {0x4340000000000000, "9007199254740992"},
      {0xc340000000000000, "-9007199254740992"},
      {0x4430000000000000, "295147905179352830000"},
      {0x44b52d02c7e14af5, "9.999999999999997e+22"},
      {0x44b52d02c7e14af6, "1e+23"},
      {0x44b52d02c7e14af7, "1.0000000000000001e+23"},
      {0x444b1ae4d6e2ef4e, "999999999999999700000"},
      {0x444b1ae4d6e2ef4f, "999999999999999900000"},
      {0x444b1ae4d6e2ef50, "1e+21"},
      {0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
      {0x3eb0c6f7a0b5ed8d, "0.000001"},
      {0x41b3de4355555553, "333333333.3333332"},
      {0x41b3de4355555554, "333333333.33333325"},
      {0x41b3de4355555555, "333333333.3333333"},
      {0x41b3de4355555556, "333333333.3333334"},
      {0x41b3de4355555557, "333333333.33333343"},
      {0xbecbf647612f3696, "-0.0000033333333333333333"},
      {0x43143ff3c1cb0959, "1424953923781206.2"},
  };
  for (auto [bits, want] : cases) EXPECT_EQ(FormatJcsNumber(FromBits(bits)), want) << std::hex << bits;
  EXPECT_EQ(FormatJcsNumber(1e-7), "1e-7");
  EXPECT_EQ(FormatJcsNumber(1e21), "1e+21");
  EXPECT_EQ(FormatJcsNumber(1e20), "100000000000000000000");
  EXPECT_EQ(FormatJcsNumber(0.5), "0.5");
  EXPECT_EQ(FormatJcsNumber(-12.25), "-12.25");
  EXPECT_EQ(FormatJcsNumber(123), "123");
}

TEST(CanonicalizeDetailsTest, Rfc8785Examples) {
  // RFC 8785 section 3.2.2.
  const std::string in = R"({
    "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
    "literals": [null, true, false]
  })";
  auto out = CanonicalizeDetails(in, 4096);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out,
            "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
            "\"string\":\"\xe2\x82\xac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
  // RFC 8785 section 3.2.3: sorting by UTF-16 code units.
  const std::string sort_in = R"({
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\ud83d\ude00": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis"
  })";
  auto sorted = CanonicalizeDetails(sort_in, 4096);
  ASSERT_TRUE(sorted.ok()) << sorted.status().ToString();
  EXPECT_EQ(*sorted,
            "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":\"Control\",\"\xc3\xb6\":"
            "\"Latin Small Letter O With Diaeresis\",\"\xe2\x82\xac\":\"Euro Sign\",\"\xf0\x9f\x98\x80\":"
            "\"Emoji: Grinning Face\",\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}");
  // Canonical text is a fixed point.
  EXPECT_EQ(CanonicalizeDetails(*sorted, 4096).value(), *sorted);
  EXPECT_EQ(CanonicalizeDetails(*out, 4096).value(), *out);
}

TEST(CanonicalizeDetailsTest, Forms) {
  auto c = [](std::string_view in) { return CanonicalizeDetails(in, 1 << 20).value(); };
  EXPECT_EQ(c(" {} "), "{}");
  EXPECT_EQ(c(R"({"b":[1,{"z":1,"a":-0.0}],"a":"x\u0001\u007f/"})"),
            "{\"a\":\"x\\u0001\x7f/\",\"b\":[1,{\"a\":0,\"z\":1}]}");
  EXPECT_EQ(c(R"({"n":12345678901234567891})"), "{\"n\":12345678901234567000}");
  EXPECT_EQ(c(R"({"n":1E-7,"m":100e-8,"o":1e21})"), "{\"m\":0.000001,\"n\":1e-7,\"o\":1e+21}");
  EXPECT_EQ(c("{\"k\":\"\xe2\x80\xa8\"}"), "{\"k\":\"\xe2\x80\xa8\"}");  // U+2028 stays literal
}

struct Bad {
  const char* json;
  const char* says;
};

TEST(CanonicalizeDetailsTest, RefusesWithWhatAndWhere) {
  const Bad cases[] = {
      {"", "expected a JSON object"},
      {"[]", "expected a JSON object"},
      {"\"x\"", "expected a JSON object"},
      {"{", "expected a member name"},
      {"{\"a\":1,}", "expected a member name"},
      {"{\"a\":1 \"b\":2}", "expected ',' or '}'"},
      {"{\"a\":1,\"a\":2}", "at byte 7: duplicate member name \"a\""},
      {"{\"x\":{\"a\":1,\"a\":2}}", "(in /x): duplicate member name \"a\""},
      {"{\"a\":\"\xff\"}", "at byte 6 (in /a): invalid UTF-8"},
      {"{\"a\":\"\xc0\xaf\"}", "invalid UTF-8"},      // overlong
      {"{\"a\":\"\xed\xa0\x80\"}", "invalid UTF-8"},  // surrogate encoded in UTF-8
      {"{\"a\":\"\\ud800\"}", "lone high surrogate"},
      {"{\"a\":\"\\ud800\\u0041\"}", "lone high surrogate"},
      {"{\"a\":\"\\udc00\"}", "lone low surrogate"},
      {"{\"a\":1e400}", "is not a finite double"},
      {"{\"a\":-1e400}", "is not a finite double"},
      {"{\"a\":01}", "leading zero"},
      {"{\"a\":1.}", "no digit after"},
      {"{\"a\":.5}", "expected a value"},
      {"{\"a\":NaN}", "expected a value"},
      {"{\"a\":Infinity}", "expected a value"},
      {"{\"a\":tru}", "invalid literal"},
      {"{\"a\":\"x\ny\"}", "unescaped control character"},
      {"{\"a\":\"\\x\"}", "invalid escape"},
      {"{\"a\":\"\\u12\"}", "bad hex digit"},
      {"{} {}", "unexpected text after"},
      {"{\"a\":[1,2,]}", "(in /a/2): unexpected character"},
  };
  for (const Bad& b : cases) {
    auto r = CanonicalizeDetails(b.json, 1024);
    ASSERT_FALSE(r.ok()) << b.json;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(b.says), std::string::npos)
        << b.json << " -> " << r.status().message();
    EXPECT_EQ(r.status().message().rfind("details: ", 0), 0u);
  }
  auto big = CanonicalizeDetails("{\"a\":\"" + std::string(100, 'x') + "\"}", 50);
  EXPECT_NE(big.status().message().find("over the limit of 50"), std::string::npos);
}

TEST(CanonicalizeDetailsTest, DepthLimit) {
  auto nested = [](int depth) {
    std::string s;
    for (int i = 0; i < depth - 1; ++i) s += "{\"a\":";
    s += "{}";
    for (int i = 0; i < depth - 1; ++i) s += "}";
    return s;
  };
  EXPECT_TRUE(CanonicalizeDetails(nested(64), 1 << 20).ok());
  auto r = CanonicalizeDetails(nested(65), 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nesting deeper than 64"), std::string::npos);
  std::string arrays = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_FALSE(CanonicalizeDetails(arrays, 1 << 20).ok());  // no stack overflow
}

TEST(TimeTest, FormatAndParse) {
  EXPECT_EQ(FormatTime(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatTime(1), "1970-01-01T00:00:00.000001Z");
  EXPECT_EQ(FormatTime(-1), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(FormatTime(1798096547123456), "2026-12-24T07:15:47.123456Z");
  EXPECT_EQ(FormatTime(951782400000000), "2000-02-29T00:00:00.000000Z");
  EXPECT_EQ(FormatTime(kMinTimeUs), "0001-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatTime(kMaxTimeUs), "9999-12-31T23:59:59.999999Z");
  for (int64_t t : {int64_t{0}, int64_t{-1}, int64_t{1798096547123456}, kMinTimeUs, kMaxTimeUs,
                    int64_t{951782400000000}, int64_t{-86400000001}}) {
    EXPECT_EQ(ParseTime(FormatTime(t)).value(), t) << t;
  }
  for (const char* bad :
       {"2026-02-29T00:00:00.000000Z", "2026-13-01T00:00:00.000000Z", "2026-01-01T24:00:00.000000Z",
        "2026-01-01T00:00:60.000000Z", "2026-01-01T00:00:00.00000Z", "2026-01-01T00:00:00.000000+00:00",
        "2026-01-01 00:00:00.000000Z", "0000-01-01T00:00:00.000000Z", ""}) {
    EXPECT_FALSE(ParseTime(bad).ok()) << bad;
  }
}

Entry Sample() {
  Entry e;
  e.org = "acme";
  e.seq = 1;
  e.time_us = 1798096547123456;
  e.actor = "user:alice";
  e.action = "policy.publish";
  e.target = "bundle/main";
  e.outcome = "ok";
  e.details = CanonicalizeDetails(R"({"version": 3, "note": "ünï\"cödé"})", 1024).value();
  e.idempotency_key = "0193a1b2-0000-7000-8000-000000000001";
  return e;
}

TEST(EntryTest, CanonicalEncodingIsByteExact) {
  Entry e = Sample();
  ASSERT_TRUE(ValidateEntryFields(e).ok());
  EXPECT_EQ(CanonicalEntry(e),
            "{\"action\":\"policy.publish\",\"actor\":\"user:alice\",\"details\":{\"note\":"
            "\"\xc3\xbcn\xc3\xaf\\\"c\xc3\xb6\x64\xc3\xa9\",\"version\":3},\"idempotency_key\":"
            "\"0193a1b2-0000-7000-8000-000000000001\",\"org\":\"acme\",\"outcome\":\"ok\",\"seq\":1,"
            "\"target\":\"bundle/main\",\"time\":\"2026-12-24T07:15:47.123456Z\"}");
  // The canonical entry is itself canonical JSON.
  EXPECT_EQ(CanonicalizeDetails(CanonicalEntry(e), 1 << 20).value(), CanonicalEntry(e));
}

// The parts the service splices the seq into: the canonical encoding around the seq's digits, for any
// seq, even when details or text fields hold what looks like a seq member.
TEST(EntryTest, CanonicalSplitAroundTheSeq) {
  Entry e = Sample();
  e.details = CanonicalizeDetails(R"({"a":1,"seq":2,"target":"x"})", 1024).value();
  e.target = ",\"seq\":9,\"target\":";
  ASSERT_TRUE(ValidateEntryFields(e).ok());
  const CanonicalParts parts = CanonicalEntrySplit(e);
  EXPECT_TRUE(parts.before_seq.ends_with(",\"seq\":"));
  EXPECT_TRUE(parts.after_seq.starts_with(",\"target\":"));
  for (uint64_t seq : {uint64_t{1}, uint64_t{10}, uint64_t{123456789}, (uint64_t{1} << 53) - 1}) {
    e.seq = seq;
    EXPECT_EQ(parts.before_seq + std::to_string(seq) + parts.after_seq, CanonicalEntry(e));
    EXPECT_EQ(CanonicalEntrySplit(e).before_seq, parts.before_seq);
  }
}

TEST(EntryTest, HashesAreTheDocumentedOnes) {
  Entry e = Sample();
  const std::string canonical = CanonicalEntry(e);
  std::string leaf_input(1, '\0');
  leaf_input += canonical;
  const Hash leaf = crypto::Sha256(leaf_input).value();
  EXPECT_EQ(LeafHash(canonical), leaf);
  EXPECT_EQ(Seal(e, kGenesisHash), leaf);
  EXPECT_EQ(e.prev_hash, kGenesisHash);
  uint8_t chain_input[64] = {};
  std::memcpy(chain_input + 32, leaf.data(), 32);
  EXPECT_EQ(e.entry_hash, crypto::Sha256(std::span<const uint8_t>(chain_input, 64)).value());
  EXPECT_EQ(ComputeEntryHash(e), e.entry_hash);
  std::string node_input(1, '\x01');
  node_input.append(reinterpret_cast<const char*>(leaf.data()), 32);
  node_input.append(reinterpret_cast<const char*>(e.entry_hash.data()), 32);
  EXPECT_EQ(NodeHash(leaf, e.entry_hash), crypto::Sha256(node_input).value());

  Entry next = Sample();
  next.seq = 2;
  Seal(next, e.entry_hash);
  EXPECT_EQ(next.prev_hash, e.entry_hash);
  // Any field change changes the hash.
  Entry changed = next;
  changed.outcome = "denied";
  EXPECT_NE(ComputeEntryHash(changed), next.entry_hash);
}

TEST(EntryTest, HexRoundTrip) {
  Hash h{};
  h[0] = 0xAB;
  h[31] = 0x01;
  EXPECT_EQ(HashToHex(h), "ab" + std::string(60, '0') + "01");
  EXPECT_EQ(HashFromHex(HashToHex(h)).value(), h);
  EXPECT_EQ(HashFromHex("AB" + std::string(60, '0') + "01").value(), h);
  EXPECT_FALSE(HashFromHex("ab").ok());
  EXPECT_FALSE(HashFromHex(std::string(63, '0') + "g").ok());
}

TEST(EntryTest, ValidateNamesTheField) {
  struct Case {
    void (*mutate)(Entry&);
    const char* says;
  };
  const Case cases[] = {
      {[](Entry& e) { e.org = ""; }, "org:"},
      {[](Entry& e) { e.org = "Acme"; }, "org:"},
      {[](Entry& e) { e.org = "-acme"; }, "org:"},
      {[](Entry& e) { e.org = std::string(64, 'a'); }, "org:"},
      {[](Entry& e) { e.seq = 0; }, "seq:"},
      {[](Entry& e) { e.seq = uint64_t{1} << 53; }, "seq:"},
      {[](Entry& e) { e.time_us = kMaxTimeUs + 1; }, "time:"},
      {[](Entry& e) { e.actor = ""; }, "actor:"},
      {[](Entry& e) { e.actor = std::string(257, 'a'); }, "actor:"},
      {[](Entry& e) { e.action = "\xff"; }, "action: not valid UTF-8"},
      {[](Entry& e) { e.target = std::string("a\0b", 3); }, "target: contains U+0000"},
      {[](Entry& e) { e.outcome = std::string(65, 'x'); }, "outcome:"},
      {[](Entry& e) { e.idempotency_key = std::string(129, 'k'); }, "idempotency_key:"},
      {[](Entry& e) { e.details = "{\"b\":1,\"a\":2}"; }, "details: not in canonical"},
      {[](Entry& e) { e.details = ""; }, "details:"},
      {[](Entry& e) { e.details = "[]"; }, "details:"},
  };
  for (const Case& c : cases) {
    Entry e = Sample();
    c.mutate(e);
    Status s = ValidateEntryFields(e);
    ASSERT_FALSE(s.ok()) << c.says;
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_EQ(s.message().rfind(c.says, 0), 0u) << s.message();
  }
  Entry ok = Sample();
  ok.org = "a";
  ok.target = "";
  ok.outcome = "";
  ok.idempotency_key = "";
  ok.details = "{}";
  EXPECT_TRUE(ValidateEntryFields(ok).ok());
  ok.org = "a0_-" + std::string(59, 'z');
  EXPECT_TRUE(ValidateEntryFields(ok).ok());
}

}  // namespace
}  // namespace govern::audit
