// Online NSEC3 denial (OnlineDenial::kNsec3): answers judged by a small RFC 5155 section 8 checker
// written here from the RFC (hash each name the proof needs, find the NSEC3 that matches or covers it,
// read its flags and type bitmap), for NXDOMAIN, NODATA, empty non-terminals, wildcard answers and
// wildcard NODATA, insecure delegations and DS with and without opt-out, and the apex. The checker is
// shown to refuse a proof made for another name. Also: NSEC3 signatures are made once and reused (not
// per answer), re-made once due, and the transfer form carries the same chain. `delv` judges the same
// answers cryptographically in tests/e2e/dns_tools.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dns/answer.h"
#include "dns/testing.h"
#include "dns/zone.h"

namespace govern::dns {
namespace {

using testing::MakeQuery;
using testing::ReadMessage;

constexpr uint32_t kNsec3Now = 1790000000;

const char* kNsec3Zone =
    "$TTL 300\n@ SOA ns1 hm 1 3600 900 604800 60\n@ NS ns1\nns1 A 127.0.0.1\nwww A 192.0.2.1\n"
    "a.b.c TXT \"deep\"\n*.wild A 192.0.2.9\nalias CNAME nothere\nwalias CNAME x.wild\n"
    "insecure NS ns.elsewhere.\nx.y.insecure2 NS ns.elsewhere.\n"
    "secure NS ns.elsewhere.\nsecure DS 1 13 2 00000000000000000000000000000000000000000000000000000000"
    "00000000\n";

std::shared_ptr<const Zone> Nsec3Zone(bool opt_out, std::shared_ptr<const SigningKey> key = nullptr,
                                      const char* text = kNsec3Zone) {
  auto recs = ParseZoneFile(text, "n3.test.");
  EXPECT_TRUE(recs.ok());
  if (!key) {
    auto k = SigningKey::Generate(Algorithm::kEcdsaP256Sha256, 257);
    EXPECT_TRUE(k.ok());
    key = std::make_shared<const SigningKey>(std::move(*k));
  }
  ZoneKeys keys{key, key};
  keys.online_denial = OnlineDenial::kNsec3;
  keys.nsec3.opt_out = opt_out;
  auto z = Zone::Build("n3.test.", std::move(*recs), keys);
  EXPECT_TRUE(z.ok()) << z.status().ToString();
  return *z;
}

testing::Message AskNsec3(const ZoneSet& set, const std::string& name, uint16_t type, bool dnssec = true,
                          uint32_t now = kNsec3Now) {
  auto q = MakeQuery(name, type, true, dnssec);
  std::vector<uint8_t> out(65535);
  out.resize(Answer(set, q, AnswerOptions{false, now}, out.data(), out.size()));
  return ReadMessage(out);
}

std::string Wire(const std::string& text) {
  auto n = NameFromText(text);
  EXPECT_TRUE(n.ok()) << text;
  std::string w = *n;
  LowerName(w);
  return w;
}

// One NSEC3 of a response, as a validator reads it.
struct Seen {
  std::string owner_hash;  // base32hex, the owner's first label
  std::string next_hash;   // base32hex
  bool opt_out = false;
  std::set<uint16_t> types;
  int rrsigs = 0;
};

std::set<uint16_t> Bitmap(std::string_view b) {
  std::set<uint16_t> out;
  size_t i = 0;
  while (i + 2 <= b.size()) {
    int window = static_cast<uint8_t>(b[i]), len = static_cast<uint8_t>(b[i + 1]);
    for (int k = 0; k < len && i + 2 + k < b.size(); ++k)
      for (int bit = 0; bit < 8; ++bit)
        if (static_cast<uint8_t>(b[i + 2 + k]) & (0x80 >> bit))
          out.insert(static_cast<uint16_t>(window * 256 + k * 8 + bit));
    i += 2 + len;
  }
  return out;
}

std::vector<Seen> Nsec3s(const testing::Message& m) {
  std::vector<Seen> out;
  for (const auto& r : m.sections[1]) {
    if (r.type != kNSEC3) continue;
    Seen s;
    s.owner_hash = r.owner.substr(1, static_cast<uint8_t>(r.owner[0]));
    for (auto& c : s.owner_hash) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string& rd = r.rdata;
    s.opt_out = rd[1] & 1;
    size_t salt = static_cast<uint8_t>(rd[4]);
    size_t hlen = static_cast<uint8_t>(rd[5 + salt]);
    s.next_hash = Base32HexLower(rd.substr(6 + salt, hlen));
    s.types = Bitmap(std::string_view(rd).substr(6 + salt + hlen));
    for (const auto& sig : m.sections[1])
      if (sig.type == kRRSIG && sig.owner == r.owner &&
          Get16(reinterpret_cast<const uint8_t*>(sig.rdata.data())) == kNSEC3)
        ++s.rrsigs;
    out.push_back(s);
  }
  return out;
}

std::string H(std::string_view wire) { return Base32HexLower(Nsec3Hash(wire, "", 0)); }

const Seen* Match(const std::vector<Seen>& ns, std::string_view wire) {
  std::string h = H(wire);
  for (const auto& s : ns)
    if (s.owner_hash == h) return &s;
  return nullptr;
}
const Seen* Cover(const std::vector<Seen>& ns, std::string_view wire) {
  std::string h = H(wire);
  for (const auto& s : ns) {
    bool wraps = s.next_hash <= s.owner_hash;
    if (wraps ? (h > s.owner_hash || h < s.next_hash) : (h > s.owner_hash && h < s.next_hash)) return &s;
  }
  return nullptr;
}

// RFC 5155 section 8.3: the closest encloser (an ancestor with a matching NSEC3) and the cover of the
// next closer name. Returns the encloser ("" when there is no proof) and whether the cover opts out.
std::string CloserProof(const std::vector<Seen>& ns, std::string_view qname, std::string* why,
                        bool* opt_out) {
  std::string_view next = qname;
  std::string_view ce = ParentName(qname);
  while (true) {
    if (Match(ns, ce)) {
      const Seen* c = Cover(ns, next);
      if (!c) {
        *why = "next closer not covered";
        return "";
      }
      *opt_out = c->opt_out;
      return std::string(ce);
    }
    if (ce.empty() || ce[0] == 0) break;
    next = ce;
    ce = ParentName(ce);
  }
  *why = "no closest encloser";
  return "";
}

// What a validator would conclude from the response (empty: a proof it accepts). `qname` is wire.
std::string CheckNxdomain(const testing::Message& m, std::string_view qname) {
  if ((m.flags & 0xf) != kNXDomain) return "rcode not NXDOMAIN";
  auto ns = Nsec3s(m);
  for (const auto& s : ns)
    if (s.rrsigs != 1) return "an NSEC3 without its RRSIG";
  std::string why;
  bool opt_out = false;
  std::string ce = CloserProof(ns, qname, &why, &opt_out);
  if (ce.empty()) return why;
  if (!Cover(ns, "\1*" + ce)) return "wildcard not covered";
  return "";
}

std::string CheckNodata(const testing::Message& m, std::string_view qname, uint16_t qtype,
                        bool allow_opt_out) {
  if ((m.flags & 0xf) != kNoError || !m.sections[0].empty()) return "not NOERROR with an empty answer";
  auto ns = Nsec3s(m);
  for (const auto& s : ns)
    if (s.rrsigs != 1) return "an NSEC3 without its RRSIG";
  if (const Seen* s = Match(ns, qname)) {
    if (s->types.count(qtype) || s->types.count(kCNAME)) return "the matching NSEC3 has the type";
    if (qtype == kDS && s->types.count(kSOA)) return "DS denied from the child side";
    return "";
  }
  // Section 8.6: no match is proof only under opt-out (an insecure delegation or what only it makes).
  std::string why;
  bool opt_out = false;
  if (CloserProof(ns, qname, &why, &opt_out).empty()) return why;
  if (!opt_out || !allow_opt_out) return "no matching NSEC3 and no opt-out";
  return "";
}

std::string CheckWildcardNodata(const testing::Message& m, std::string_view qname, uint16_t qtype) {
  auto ns = Nsec3s(m);
  std::string why;
  bool opt_out = false;
  std::string ce = CloserProof(ns, qname, &why, &opt_out);
  if (ce.empty()) return why;
  const Seen* w = Match(ns, "\1*" + ce);
  if (!w) return "no NSEC3 matching the wildcard";
  if (w->types.count(qtype)) return "the wildcard has the type";
  return "";
}

// Section 8.8: the RRSIG's labels give the closest encloser; the next closer name must be covered.
std::string CheckWildcardAnswer(const testing::Message& m, std::string_view qname) {
  int labels = -1;
  for (const auto& r : m.sections[0])
    if (r.type == kRRSIG && Get16(reinterpret_cast<const uint8_t*>(r.rdata.data())) != kCNAME)
      labels = static_cast<uint8_t>(r.rdata[3]);
  if (labels < 0 || labels >= LabelCount(qname)) return "not a wildcard answer";
  std::string_view next = qname;
  while (LabelCount(next) > labels + 1) next = ParentName(next);
  if (!Cover(Nsec3s(m), next)) return "next closer not covered";
  return "";
}

// Section 8.8 for every RRset of the answer section: each one whose RRSIG has fewer labels than its
// owner (expanded from a wildcard) needs the NSEC3 covering that owner's next closer name. Returns the
// number of wildcard-expanded RRsets through `expanded`.
std::string CheckEveryWildcardAnswer(const testing::Message& m, int* expanded) {
  *expanded = 0;
  auto ns = Nsec3s(m);
  for (const auto& r : m.sections[0]) {
    if (r.type != kRRSIG) continue;
    std::string owner = r.owner;
    LowerName(owner);
    int labels = static_cast<uint8_t>(r.rdata[3]);
    if (labels >= LabelCount(owner)) continue;
    ++*expanded;
    std::string_view next = owner;
    while (LabelCount(next) > labels + 1) next = ParentName(next);
    if (!Cover(ns, next)) return "next closer of " + NameToText(owner) + " not covered";
  }
  return "";
}

TEST(Nsec3Answer, NameErrors) {
  for (bool opt_out : {false, true}) {
    SCOPED_TRACE(opt_out ? "opt-out" : "no opt-out");
    auto z = Nsec3Zone(opt_out);
    ZoneSet set({z});
    // Random names under the apex, a name below a name with data, below an empty non-terminal, and
    // the wildcard's own parent's other children that do not match it.
    std::vector<std::string> names = {"q.w.e.www.n3.test.", "z.c.n3.test.", "zz.b.c.n3.test.",
                                      "y.a.b.c.n3.test."};
    for (int i = 0; i < 100; ++i) names.push_back("r" + std::to_string(i * 7919) + ".n3.test.");
    for (const auto& n : names) {
      auto m = AskNsec3(set, n, kA);
      EXPECT_EQ(CheckNxdomain(m, Wire(n)), "") << n;
      ASSERT_FALSE(m.sections[1].empty()) << n;
      EXPECT_EQ(m.sections[1].front().type, kSOA) << n;
      EXPECT_LE(Nsec3s(m).size(), 3u) << n;
      EXPECT_TRUE(m.flags & 0x0400) << n;  // AA
    }
    // Without DO: a plain NXDOMAIN, nothing DNSSEC.
    auto plain = AskNsec3(set, "nope.n3.test.", kA, false);
    EXPECT_EQ(plain.flags & 0xf, kNXDomain);
    EXPECT_TRUE(Nsec3s(plain).empty());
    // A CNAME to a name that does not exist: NXDOMAIN with the proof for the target.
    auto cname = AskNsec3(set, "alias.n3.test.", kA);
    EXPECT_EQ(CheckNxdomain(cname, Wire("nothere.n3.test.")), "");
  }
}

// The checker can fail: the proof for one name is refused for a name in another NSEC3 interval.
TEST(Nsec3Answer, CheckerRefusesAProofForAnotherName) {
  auto z = Nsec3Zone(false);
  ZoneSet set({z});
  auto m = AskNsec3(set, "r0.n3.test.", kA);
  ASSERT_EQ(CheckNxdomain(m, Wire("r0.n3.test.")), "");
  int refused = 0;
  auto ns = Nsec3s(m);
  for (int i = 1; i < 50; ++i) {
    std::string other = Wire("r" + std::to_string(i) + ".n3.test.");
    if (Cover(ns, other)) continue;  // same interval: the proof holds for it too
    EXPECT_NE(CheckNxdomain(m, other), "") << i;
    ++refused;
  }
  EXPECT_GT(refused, 0);
  // A NODATA proof for www is no proof for ns1, nor for a type www has.
  auto nodata = AskNsec3(set, "www.n3.test.", kMX);
  EXPECT_EQ(CheckNodata(nodata, Wire("www.n3.test."), kMX, false), "");
  EXPECT_NE(CheckNodata(nodata, Wire("ns1.n3.test."), kMX, false), "");
  EXPECT_NE(CheckNodata(nodata, Wire("www.n3.test."), kA, false), "");
}

TEST(Nsec3Answer, NoData) {
  for (bool opt_out : {false, true}) {
    SCOPED_TRACE(opt_out ? "opt-out" : "no opt-out");
    auto z = Nsec3Zone(opt_out);
    ZoneSet set({z});
    struct C {
      const char* name;
      uint16_t type;
    } cases[] = {{"www.n3.test.", kMX}, {"n3.test.", kMX},      {"b.c.n3.test.", kA},
                 {"c.n3.test.", kTXT},  {"a.b.c.n3.test.", kA}, {"wild.n3.test.", kA}};
    for (const auto& c : cases) {
      // Twice: rendered, then from the answer cache (NODATA at a name that exists is cached).
      for (int pass = 0; pass < 2; ++pass) {
        auto m = AskNsec3(set, c.name, c.type);
        EXPECT_EQ(CheckNodata(m, Wire(c.name), c.type, false), "") << c.name << " " << c.type;
        EXPECT_EQ(Nsec3s(m).size(), 1u) << c.name;
        ASSERT_FALSE(m.sections[1].empty());
        EXPECT_EQ(m.sections[1].front().type, kSOA);
      }
    }
    // The apex: NSEC3PARAM is served, and its NSEC3 says so (and SOA, NS, DNSKEY, RRSIG).
    auto param = AskNsec3(set, "n3.test.", kNSEC3PARAM);
    ASSERT_FALSE(param.sections[0].empty());
    EXPECT_EQ(param.sections[0][0].rdata, std::string("\x01\x00\x00\x00\x00", 5));
    auto apex = Nsec3s(AskNsec3(set, "n3.test.", kMX));
    ASSERT_EQ(apex.size(), 1u);
    EXPECT_EQ(apex[0].types, (std::set<uint16_t>{kNS, kSOA, kRRSIG, kDNSKEY, kNSEC3PARAM}));
    EXPECT_EQ(apex[0].opt_out, opt_out);
  }
}

// Insecure delegations: DS NODATA and referrals (RFC 5155 sections 7.2.4, 7.2.7). Without opt-out the
// delegation's own NSEC3 (NS, no DS); with opt-out it is off the chain and the closest provable
// encloser proof's next closer cover carries the opt-out flag.
TEST(Nsec3Answer, InsecureDelegationsWithAndWithoutOptOut) {
  for (bool opt_out : {false, true}) {
    SCOPED_TRACE(opt_out ? "opt-out" : "no opt-out");
    auto z = Nsec3Zone(opt_out);
    ZoneSet set({z});
    for (const char* cut : {"insecure.n3.test.", "x.y.insecure2.n3.test."}) {
      auto ds = AskNsec3(set, cut, kDS);
      EXPECT_EQ(CheckNodata(ds, Wire(cut), kDS, opt_out), "") << cut;
      auto ns = Nsec3s(ds);
      EXPECT_EQ(Match(ns, Wire(cut)) != nullptr, !opt_out) << cut;
      auto ref = AskNsec3(set, std::string("host.") + cut, kA);
      EXPECT_FALSE(ref.flags & 0x0400);  // a referral: no AA
      ASSERT_FALSE(ref.sections[1].empty());
      EXPECT_EQ(ref.sections[1][0].type, kNS);
      EXPECT_EQ(CheckNodata(ref, Wire(cut), kDS, opt_out), "") << cut;
    }
    // The empty non-terminals only an insecure delegation makes: on the chain without opt-out; with it
    // off the chain, answered with the opt-out closest encloser proof (RFC 5155 errata 3441 reading).
    auto ent = AskNsec3(set, "y.insecure2.n3.test.", kA);
    EXPECT_EQ(CheckNodata(ent, Wire("y.insecure2.n3.test."), kA, opt_out), "");
    // A secure delegation's referral carries its DS, signed, and no NSEC3.
    auto sec = AskNsec3(set, "host.secure.n3.test.", kA);
    bool ds = false;
    for (const auto& r : sec.sections[1]) ds = ds || r.type == kDS;
    EXPECT_TRUE(ds);
    EXPECT_TRUE(Nsec3s(sec).empty());
  }
}

TEST(Nsec3Answer, Wildcards) {
  auto z = Nsec3Zone(false);
  ZoneSet set({z});
  for (const char* n : {"x.wild.n3.test.", "deep.er.wild.n3.test."}) {
    auto m = AskNsec3(set, n, kA);
    EXPECT_EQ(m.flags & 0xf, kNoError);
    ASSERT_FALSE(m.sections[0].empty());
    EXPECT_EQ(m.sections[0][0].rdata, std::string("\xc0\x00\x02\x09", 4));
    EXPECT_EQ(CheckWildcardAnswer(m, Wire(n)), "") << n;
    EXPECT_EQ(Nsec3s(m).size(), 1u) << n;
    auto nodata = AskNsec3(set, n, kMX);
    EXPECT_EQ(CheckWildcardNodata(nodata, Wire(n), kMX), "") << n;
  }
  // A CNAME to a wildcard-answered name: the target's wildcard proof is there.
  auto m = AskNsec3(set, "walias.n3.test.", kA);
  ASSERT_GE(m.sections[0].size(), 3u);
  bool covered = Cover(Nsec3s(m), Wire("x.wild.n3.test.")) != nullptr;
  EXPECT_TRUE(covered);
}

// A CNAME chain through several wildcards (a.w0 -> y.w1 -> x.w2, each from a wildcard): every
// expanded RRset gets its own next closer proof, not only the first (section 7.2.6), for an answer,
// a wildcard NODATA at the end, and a name error at the end; each NSEC3 appears once.
TEST(Nsec3Answer, CnameChainThroughWildcards) {
  const char* text =
      "$TTL 300\n@ SOA ns1 hm 1 3600 900 604800 60\n@ NS ns1\nns1 A 127.0.0.1\n"
      "*.w0 CNAME y.w1\n*.w1 CNAME x.w2\n*.w2 A 192.0.2.2\n*.w3 CNAME z.nothere\n";
  for (bool opt_out : {false, true}) {
    SCOPED_TRACE(opt_out ? "opt-out" : "no opt-out");
    auto z = Nsec3Zone(opt_out, nullptr, text);
    ZoneSet set({z});
    struct C {
      const char* name;
      int wildcards;
    } cases[] = {{"a.w1.n3.test.", 2}, {"a.w0.n3.test.", 3}, {"q.r.w0.n3.test.", 3}};
    for (const auto& c : cases) {
      auto m = AskNsec3(set, c.name, kA);
      EXPECT_EQ(m.flags & 0xf, kNoError) << c.name;
      ASSERT_FALSE(m.sections[0].empty()) << c.name;
      EXPECT_EQ(m.sections[0].back().type, kRRSIG) << c.name;
      int expanded = 0;
      EXPECT_EQ(CheckEveryWildcardAnswer(m, &expanded), "") << c.name;
      EXPECT_EQ(expanded, c.wildcards) << c.name;
      auto ns = Nsec3s(m);
      std::set<std::string> owners;
      for (const auto& s : ns) {
        EXPECT_EQ(s.rrsigs, 1) << c.name;
        owners.insert(s.owner_hash);
      }
      EXPECT_EQ(owners.size(), ns.size()) << c.name << ": an NSEC3 twice";
      // The chain ends in a wildcard NODATA: its proof and every earlier step's.
      auto nodata = AskNsec3(set, c.name, kMX);
      EXPECT_EQ(CheckWildcardNodata(nodata, Wire("x.w2.n3.test."), kMX), "") << c.name;
      EXPECT_EQ(CheckEveryWildcardAnswer(nodata, &expanded), "") << c.name;
      EXPECT_EQ(expanded, c.wildcards - 1) << c.name;
    }
    // A chain through a wildcard to a name that does not exist: NXDOMAIN for the target and the
    // proof for the wildcard step.
    auto nx = AskNsec3(set, "a.w3.n3.test.", kA);
    EXPECT_EQ(CheckNxdomain(nx, Wire("z.nothere.n3.test.")), "");
    int expanded = 0;
    EXPECT_EQ(CheckEveryWildcardAnswer(nx, &expanded), "");
    EXPECT_EQ(expanded, 1);
  }
}

// Nothing is signed per answer: a second NXDOMAIN for another name carries the very same RRSIG bytes
// (ECDSA signatures are randomised, so a fresh one would differ); on the day a signature is due it is
// made anew, valid past the new time.
TEST(Nsec3Answer, SignaturesAreMadeOnceAndRenewed) {
  auto z = Nsec3Zone(false);
  ZoneSet set({z});
  auto sigs = [&](const std::string& name, uint32_t now) {
    std::map<std::string, std::string> out;  // NSEC3 owner -> its RRSIG
    for (const auto& r : AskNsec3(set, name, kA, true, now).sections[1])
      if (r.type == kRRSIG && Get16(reinterpret_cast<const uint8_t*>(r.rdata.data())) == kNSEC3)
        out[r.owner] = r.rdata;
    return out;
  };
  auto first = sigs("r1.n3.test.", kNsec3Now);
  ASSERT_FALSE(first.empty());
  int same = 0;
  for (int i = 2; i < 40; ++i)
    for (const auto& [owner, rrsig] : sigs("r" + std::to_string(i) + ".n3.test.", kNsec3Now)) {
      if (!first.count(owner)) continue;
      EXPECT_EQ(first[owner], rrsig) << owner;
      ++same;
    }
  EXPECT_GT(same, 0);
  uint32_t later = kNsec3Now + 8 * 86400;  // past the refresh time (7 days), before expiry (14)
  auto renewed = sigs("r1.n3.test.", later);
  ASSERT_EQ(renewed.size(), first.size());
  for (const auto& [owner, rrsig] : renewed) {
    EXPECT_NE(first[owner], rrsig) << owner;
    uint32_t expiration = Get32(reinterpret_cast<const uint8_t*>(rrsig.data()) + 8);
    uint32_t inception = Get32(reinterpret_cast<const uint8_t*>(rrsig.data()) + 12);
    EXPECT_LE(inception, later);
    EXPECT_GT(expiration, later + 6 * 86400);
  }
}

// The transfer form (AXFR) carries the same chain as the online answers, with one NSEC3PARAM.
TEST(Nsec3Answer, TransferFormHasTheSameChain) {
  for (bool opt_out : {false, true}) {
    auto z = Nsec3Zone(opt_out);
    std::set<std::string> online;
    for (const auto& r : z->nsec3_chain()) online.insert(r.owner + r.set.rdatas[0]);
    std::set<std::string> transferred;
    int params = 0, nsec = 0;
    for (const auto& r : z->SignedRecords(kNsec3Now)) {
      if (r.type == kNSEC3) transferred.insert(r.owner + r.rdata);
      params += r.type == kNSEC3PARAM;
      nsec += r.type == kNSEC;
    }
    EXPECT_EQ(online, transferred);
    EXPECT_EQ(params, 1);
    EXPECT_EQ(nsec, 0);
    // apex, ns1, www, a.b.c, b.c, c, *.wild, wild, alias, walias, secure, and without opt-out insecure,
    // x.y.insecure2, y.insecure2, insecure2.
    EXPECT_EQ(online.size(), opt_out ? 11u : 15u);
  }
}

// Compact denial stays what a zone gets unless it asks for NSEC3.
TEST(Nsec3Answer, CompactUnlessAsked) {
  auto recs = ParseZoneFile(kNsec3Zone, "n3.test.");
  ASSERT_TRUE(recs.ok());
  auto k = SigningKey::Generate(Algorithm::kEcdsaP256Sha256, 257);
  ASSERT_TRUE(k.ok());
  auto key = std::make_shared<const SigningKey>(std::move(*k));
  auto z = Zone::Build("n3.test.", std::move(*recs), ZoneKeys{key, key});
  ASSERT_TRUE(z.ok());
  EXPECT_FALSE((*z)->online_nsec3());
  ZoneSet set({*z});
  auto m = AskNsec3(set, "nope.n3.test.", kA);
  EXPECT_EQ(m.flags & 0xf, kNoError);
  EXPECT_TRUE(Nsec3s(m).empty());
}

}  // namespace
}  // namespace govern::dns
