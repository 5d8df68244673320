// Data-driven answer tests: testdata/*.test hold zones, queries and the expected response sections,
// one case per RFC rule (see the comments in each file). Query options: do, co (EDNS flags), noedns,
// udp=N (EDNS size), tcp. Set DNS_TESTDATA_PRINT=1 to print the
// actual responses in the file format (for writing a new case; every expectation is reviewed by hand).
#include "dns/answer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dns/testing.h"
#include "dns/zone.h"

namespace govern::dns {
namespace {

using testing::MakeQuery;
using testing::ReadMessage;
using testing::RecordText;

constexpr uint32_t kNow = 1790000000;

std::string RcodeText(int r) {
  switch (r) {
    case 0:
      return "NOERROR";
    case 1:
      return "FORMERR";
    case 2:
      return "SERVFAIL";
    case 3:
      return "NXDOMAIN";
    case 4:
      return "NOTIMP";
    case 5:
      return "REFUSED";
    case 16:
      return "BADVERS";
    default:
      return std::to_string(r);
  }
}

std::string FlagsText(uint16_t f) {
  std::string s = "qr";
  if (f & 0x0400) s += " aa";
  if (f & 0x0200) s += " tc";
  if (f & 0x0100) s += " rd";
  return s;
}

struct Case {
  int line = 0;
  std::string query;
  std::string expected;
};

std::string Run(const ZoneSet& set, const std::string& query_line) {
  std::istringstream in(query_line);
  std::string name, type_text, opt;
  in >> name >> type_text;
  auto type = TypeFromText(type_text);
  bool edns = true, do_bit = false, tcp = false, co = false;
  uint16_t payload = 1232;
  while (in >> opt) {
    if (opt == "do")
      do_bit = true;
    else if (opt == "noedns")
      edns = false;
    else if (opt == "tcp")
      tcp = true;
    else if (opt == "co")
      co = true;
    else if (opt.rfind("udp=", 0) == 0)
      payload = static_cast<uint16_t>(std::stoi(opt.substr(4)));
  }
  auto q = MakeQuery(name, type.ok() ? *type : 0, edns, do_bit, 0x4242, payload);
  if (co && edns) q[q.size() - 4] |= 0x40;  // the CO flag, beside DO in the OPT TTL
  std::vector<uint8_t> out(65535);
  size_t n = Answer(set, q, AnswerOptions{tcp, kNow}, out.data(), out.size());
  out.resize(n);
  auto m = ReadMessage(out);
  std::string s;
  if (!m.ok) return "unreadable response\n";
  int rcode = (m.flags & 0xf) | (m.has_opt ? (m.opt_ttl >> 24) << 4 : 0);
  s += "rcode " + RcodeText(rcode) + "\nflags " + FlagsText(m.flags) + "\n";
  const char* names[3] = {"answer", "authority", "additional"};
  for (int i = 0; i < 3; ++i) {
    if (m.sections[i].empty()) continue;
    s += std::string(names[i]) + "\n";
    for (auto& r : m.sections[i]) s += RecordText(r) + "\n";
  }
  if (m.id != 0x4242) s += "bad id\n";
  return s;
}

void RunFile(const std::filesystem::path& path) {
  std::ifstream f(path);
  std::string line;
  int lineno = 0;
  std::vector<std::shared_ptr<const Zone>> zones;
  std::shared_ptr<const ZoneSet> set = std::make_shared<ZoneSet>(zones);
  bool print = std::getenv("DNS_TESTDATA_PRINT") != nullptr;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("zone ", 0) == 0) {
      std::istringstream in(line.substr(5));
      std::string apex, flag;
      in >> apex >> flag;
      std::string text;
      while (std::getline(f, line) && line != "endzone") {
        ++lineno;
        text += line + "\n";
      }
      ++lineno;
      auto records = ParseZoneFile(text, apex);
      ASSERT_TRUE(records.ok()) << path << ":" << lineno << ": " << records.status().ToString();
      ZoneKeys keys;
      if (flag == "signed") {
        auto k = SigningKey::Generate(Algorithm::kEcdsaP256Sha256, 257);
        ASSERT_TRUE(k.ok());
        keys.ksk = keys.zsk = std::make_shared<const SigningKey>(std::move(*k));
      }
      auto z = Zone::Build(apex, std::move(*records), keys);
      ASSERT_TRUE(z.ok()) << path << ":" << lineno << ": " << z.status().ToString();
      // A later block for the same apex replaces the earlier one.
      std::erase_if(zones, [&](auto& old) { return old->apex() == (*z)->apex(); });
      zones.push_back(*z);
      set = std::make_shared<ZoneSet>(zones);
      continue;
    }
    if (line.rfind("query ", 0) == 0) {
      Case c{lineno, line.substr(6), ""};
      while (std::getline(f, line) && line != "end") {
        ++lineno;
        c.expected += line + "\n";
      }
      ++lineno;
      // Twice: the second answer comes from the cache where the first was stored.
      for (int pass = 0; pass < 2; ++pass) {
        std::string got = Run(*set, c.query);
        if (print && pass == 0) std::printf("query %s\n%send\n\n", c.query.c_str(), got.c_str());
        EXPECT_EQ(got, c.expected) << path.filename() << ":" << c.line << " query " << c.query << " pass "
                                   << pass;
      }
      continue;
    }
    ADD_FAILURE() << path << ":" << lineno << ": unexpected line " << line;
  }
}

TEST(AnswerTest, DataFiles) {
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(GOVERN_DNS_TESTDATA)) {
    if (e.path().extension() != ".test") continue;
    SCOPED_TRACE(e.path().filename().string());
    RunFile(e.path());
    ++files;
  }
  EXPECT_GT(files, 0);
}

}  // namespace
}  // namespace govern::dns

namespace govern::dns {
namespace {

// Signatures cached with an answer are remade once half their validity has passed, so a cached answer
// never carries a signature with less than a week left; answers within one day reuse one signature.
TEST(AnswerTest, SignaturesAreRemadeBeforeTheyExpire) {
  auto recs = ParseZoneFile(
      "$TTL 300\n@ SOA ns1 hm 1 3600 900 604800 60\n@ NS ns1\nns1 A 127.0.0.1\nwww A 192.0.2.1\n",
      "sig.test.");
  ASSERT_TRUE(recs.ok());
  auto k = SigningKey::Generate(Algorithm::kEcdsaP256Sha256, 257);
  ASSERT_TRUE(k.ok());
  auto key = std::make_shared<const SigningKey>(std::move(*k));
  auto z = Zone::Build("sig.test.", std::move(*recs), ZoneKeys{key, key});
  ASSERT_TRUE(z.ok());
  ZoneSet set({*z});
  auto rrsig_at = [&](uint32_t now) {
    auto q = testing::MakeQuery("www.sig.test.", kA, true, true);
    std::vector<uint8_t> out(65535);
    out.resize(Answer(set, q, AnswerOptions{false, now}, out.data(), out.size()));
    auto m = testing::ReadMessage(out);
    for (auto& r : m.sections[0])
      if (r.type == kRRSIG) return r.rdata;
    return std::string();
  };
  auto expiration = [](const std::string& sig) {
    return Get32(reinterpret_cast<const uint8_t*>(sig.data()) + 8);
  };
  const uint32_t t0 = 1790000000;
  std::string first = rrsig_at(t0);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(rrsig_at(t0 + 3600), first);  // same day: the cached answer, same signature
  for (uint32_t days = 1; days <= 30; ++days) {
    uint32_t now = t0 + days * 86400;
    std::string sig = rrsig_at(now);
    ASSERT_FALSE(sig.empty());
    EXPECT_GE(expiration(sig), now + 6 * 86400) << "day " << days;
    EXPECT_LE(Get32(reinterpret_cast<const uint8_t*>(sig.data()) + 12), now);  // inception in the past
  }
  EXPECT_NE(rrsig_at(t0 + 8 * 86400), first);
}

// A zone in the middle of an algorithm rollover: the new key is in the DNSKEY RRset and signs it and
// every other RRset beside the old key; CDS/CDNSKEY name both. Answers carry every signature.
TEST(AnswerTest, RolloverKeysSignTogether) {
  const char* text =
      "$TTL 300\n@ SOA ns1 hm 1 3600 900 604800 60\n@ NS ns1\nns1 A 127.0.0.1\nwww A 192.0.2.1\n";
  auto recs = ParseZoneFile(text, "roll.test.");
  ASSERT_TRUE(recs.ok());
  auto o = SigningKey::Generate(Algorithm::kEcdsaP256Sha256, 257);
  auto n = SigningKey::Generate(Algorithm::kEd25519, 257);
  ASSERT_TRUE(o.ok() && n.ok());
  auto old_key = std::make_shared<const SigningKey>(std::move(*o));
  auto new_key = std::make_shared<const SigningKey>(std::move(*n));
  ZoneKeys keys{old_key, old_key};
  keys.dnskey_also = {new_key};
  keys.zone_also = {new_key};
  keys.cds = {old_key, new_key};
  auto z = Zone::Build("roll.test.", *recs, keys);
  ASSERT_TRUE(z.ok()) << z.status().message();
  ZoneSet set({*z});
  std::vector<int> both = {old_key->key_tag(), new_key->key_tag()};
  std::sort(both.begin(), both.end());
  // Key tags of the RRSIGs covering `type` in `section`, and the count of `type` records there.
  auto ask = [&](const std::string& name, uint16_t qtype, int section, uint16_t type) {
    auto q = testing::MakeQuery(name, qtype, true, true);
    std::vector<uint8_t> out(65535);
    out.resize(Answer(set, q, AnswerOptions{false, 1790000000}, out.data(), out.size()));
    auto m = testing::ReadMessage(out);
    std::vector<int> tags;
    int count = 0;
    for (auto& r : m.sections[section]) {
      if (r.type == type) ++count;
      if (r.type == kRRSIG && Get16(reinterpret_cast<const uint8_t*>(r.rdata.data())) == type)
        tags.push_back(Get16(reinterpret_cast<const uint8_t*>(r.rdata.data()) + 16));
    }
    std::sort(tags.begin(), tags.end());
    return std::pair{count, tags};
  };
  for (int round = 0; round < 2; ++round) {  // rendered, then from the cache
    EXPECT_EQ(ask("roll.test.", kDNSKEY, 0, kDNSKEY), std::pair(2, both));
    EXPECT_EQ(ask("www.roll.test.", kA, 0, kA), std::pair(1, both));
    EXPECT_EQ(ask("roll.test.", kCDS, 0, kCDS), std::pair(2, both));
    EXPECT_EQ(ask("roll.test.", kCDNSKEY, 0, kCDNSKEY), std::pair(2, both));
    // Compact denial: the NSEC and the SOA each signed by both keys.
    EXPECT_EQ(ask("nx.roll.test.", kA, 1, kNSEC), std::pair(1, both));
    EXPECT_EQ(ask("nx.roll.test.", kA, 1, kSOA), std::pair(1, both));
  }
  // The transfer form carries CDS/CDNSKEY and two RRSIGs per RRset.
  int cds = 0, cdnskey = 0, soa_sigs = 0;
  for (const auto& r : (*z)->SignedRecords(1790000000)) {
    cds += r.type == kCDS;
    cdnskey += r.type == kCDNSKEY;
    soa_sigs += r.type == kRRSIG && Get16(reinterpret_cast<const uint8_t*>(r.rdata.data())) == kSOA;
  }
  EXPECT_EQ(cds, 2);
  EXPECT_EQ(cdnskey, 2);
  EXPECT_EQ(soa_sigs, 2);
  // Rollover keys need a signed zone.
  ZoneKeys unsigned_keys;
  unsigned_keys.cds = {old_key};
  EXPECT_FALSE(Zone::Build("roll.test.", *recs, unsigned_keys).ok());
}

}  // namespace
}  // namespace govern::dns

namespace govern::dns {
namespace {

std::shared_ptr<const Zone> BuildZone(const std::string& apex, const std::string& text, bool sign) {
  auto recs = ParseZoneFile(text, apex);
  EXPECT_TRUE(recs.ok());
  ZoneKeys keys;
  if (sign) {
    auto k = SigningKey::Generate(Algorithm::kEcdsaP256Sha256, 257);
    EXPECT_TRUE(k.ok());
    keys.ksk = keys.zsk = std::make_shared<const SigningKey>(std::move(*k));
  }
  auto z = Zone::Build(apex, std::move(*recs), keys);
  EXPECT_TRUE(z.ok());
  return *z;
}

testing::Message Ask(const ZoneSet& set, const std::string& name, uint16_t type, bool dnssec) {
  auto q = MakeQuery(name, type, true, dnssec);
  std::vector<uint8_t> out(65535);
  out.resize(Answer(set, q, AnswerOptions{false, kNow}, out.data(), out.size()));
  return ReadMessage(out);
}

// The cache policy: an answer is kept only for a name the zone holds, so a flood of names that do not
// exist (a fresh random label each time) adds nothing to the cache, signed or not, and takes nothing
// from the answers that are kept; a name that exists is cached once per (qname, qtype, DO).
TEST(AnswerTest, NamesThatDoNotExistAreNeverCached) {
  const std::string text =
      "$TTL 300\n@ SOA ns1 hm 1 3600 900 604800 60\n@ NS ns1\nns1 A 127.0.0.1\nwww A 192.0.2.1\n"
      "*.wild A 192.0.2.9\n";
  for (bool sign : {false, true}) {
    SCOPED_TRACE(sign ? "signed" : "unsigned");
    auto z = BuildZone("cache.test.", text, sign);
    ZoneSet set({z});
    Ask(set, "www.cache.test.", kA, sign);
    size_t kept = z->cached_answers();
    EXPECT_EQ(kept, 1u);
    for (int i = 0; i < 200; ++i) {
      std::string label = "r" + std::to_string(i * 7919);
      auto nx = Ask(set, label + ".cache.test.", kA, sign);
      ASSERT_EQ(nx.sections[1].empty(), false);  // the SOA (and, signed, the NSEC) in authority
      if (sign) {
        bool nsec = false;
        for (auto& r : nx.sections[1]) nsec = nsec || r.type == kNSEC;
        EXPECT_TRUE(nsec);
      } else {
        EXPECT_EQ(nx.flags & 0xf, kNXDomain);
      }
      // Wildcard-synthesised answers are made fresh too (the proof names the query).
      Ask(set, label + ".wild.cache.test.", kA, sign);
    }
    EXPECT_EQ(z->cached_answers(), kept);
    Ask(set, "www.cache.test.", kA, sign);
    Ask(set, "WWW.cache.test.", kA, sign);  // case differs, same key
    EXPECT_EQ(z->cached_answers(), kept);
    Ask(set, "www.cache.test.", kAAAA, sign);  // NODATA at a name that exists: cached
    EXPECT_EQ(z->cached_answers(), kept + 1);
  }
}

// RFC 4592: a wildcard owned by the apex (*.example.) answers for any name that does not exist below
// it; the apex's NS RRset is not a zone cut.
TEST(AnswerTest, WildcardAtTheApex) {
  auto z = BuildZone("w.test.",
                     "$TTL 300\n@ SOA ns1 hm 1 3600 900 604800 60\n@ NS ns1\nns1 A 127.0.0.1\n"
                     "* A 192.0.2.7\nsub NS ns.elsewhere.example.\n",
                     true);
  ZoneSet set({z});
  for (bool dnssec : {false, true}) {
    auto m = Ask(set, "foo.w.test.", kA, dnssec);
    EXPECT_EQ(m.flags & 0xf, kNoError);
    ASSERT_FALSE(m.sections[0].empty());
    EXPECT_EQ(m.sections[0][0].type, kA);
    EXPECT_EQ(m.sections[0][0].rdata, std::string("\xc0\x00\x02\x07", 4));
    if (dnssec) {
      // The RRSIG says one label (the wildcard's), and an NSEC proves foo itself does not exist.
      bool sig = false, nsec = false;
      for (auto& r : m.sections[0])
        if (r.type == kRRSIG) sig = static_cast<uint8_t>(r.rdata[3]) == 2;
      for (auto& r : m.sections[1]) nsec = nsec || r.type == kNSEC;
      EXPECT_TRUE(sig);
      EXPECT_TRUE(nsec);
    }
  }
  // Below a delegation the wildcard does not apply: a referral.
  auto ref = Ask(set, "x.sub.w.test.", kA, false);
  EXPECT_TRUE(ref.sections[0].empty());
  ASSERT_FALSE(ref.sections[1].empty());
  EXPECT_EQ(ref.sections[1][0].type, kNS);
}

// Compact denial (RFC 4035 section 5.3.4): every RRset of a CNAME chain expanded from a wildcard
// (a.w0 -> y.w1 -> x.w2 here) needs an NSEC covering its next closer name, not only the first.
// Returns how many expanded RRsets the answer has through `expanded`.
std::string CheckCompactWildcards(const testing::Message& m, int* expanded) {
  *expanded = 0;
  for (const auto& r : m.sections[0]) {
    if (r.type != kRRSIG) continue;
    std::string owner = r.owner;
    LowerName(owner);
    int labels = static_cast<uint8_t>(r.rdata[3]);
    if (labels >= LabelCount(owner)) continue;
    ++*expanded;
    std::string_view nc = owner;
    while (LabelCount(nc) > labels + 1) nc = ParentName(nc);
    bool covered = false;
    for (const auto& n : m.sections[1]) {
      if (n.type != kNSEC) continue;
      size_t end = 0;
      while (end < n.rdata.size() && n.rdata[end] != 0) end += static_cast<uint8_t>(n.rdata[end]) + 1;
      std::string next = n.rdata.substr(0, end + 1), from = n.owner;
      LowerName(next);
      LowerName(from);
      covered = covered || (CanonicalCompare(from, nc) < 0 && CanonicalCompare(nc, next) < 0);
    }
    if (!covered) return "next closer of " + NameToText(owner) + " not covered";
  }
  return "";
}

TEST(AnswerTest, CompactProofForEveryWildcardOfACnameChain) {
  auto z = BuildZone("wc.test.",
                     "$TTL 300\n@ SOA ns1 hm 1 3600 900 604800 60\n@ NS ns1\nns1 A 127.0.0.1\n"
                     "*.w0 CNAME y.w1\n*.w1 CNAME x.w2\n*.w2 A 192.0.2.2\n*.w3 CNAME z.nothere\n",
                     true);
  ZoneSet set({z});
  struct C {
    const char* name;
    int wildcards;
  } cases[] = {{"a.w1.wc.test.", 2}, {"a.w0.wc.test.", 3}};
  for (const auto& c : cases) {
    auto m = Ask(set, c.name, kA, true);
    EXPECT_EQ(m.flags & 0xf, kNoError) << c.name;
    int expanded = 0;
    EXPECT_EQ(CheckCompactWildcards(m, &expanded), "") << c.name;
    EXPECT_EQ(expanded, c.wildcards) << c.name;
    // Ending in NODATA at x.w2: the NSEC at x.w2 denies MX, and every earlier step has its proof.
    auto nodata = Ask(set, c.name, kMX, true);
    EXPECT_EQ(CheckCompactWildcards(nodata, &expanded), "") << c.name;
    EXPECT_EQ(expanded, c.wildcards - 1) << c.name;
  }
  // Ending in a name that does not exist: the NXNAME NSEC for it and the wildcard step's proof.
  auto nx = Ask(set, "a.w3.wc.test.", kA, true);
  int expanded = 0;
  EXPECT_EQ(CheckCompactWildcards(nx, &expanded), "");
  EXPECT_EQ(expanded, 1);
}

}  // namespace
}  // namespace govern::dns
