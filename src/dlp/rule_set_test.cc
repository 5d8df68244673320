// RuleSet behaviour: overlaps, custom rules and their errors, every action, UTF-8, threads.
#include "dlp/rule_set.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace govern::dlp {
namespace {

std::shared_ptr<const RuleSet> MustCompile(const Policy& p) {
  auto r = RuleSet::Compile(p);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : nullptr;
}

std::string Redacted(const RuleSet& rs, std::string_view text) {
  std::string out;
  Outcome o = rs.Redact(text, &out);
  return o.changed ? out : std::string(text);
}

TEST(RuleSetTest, NothingFoundLeavesOutputUntouched) {
  auto rs = MustCompile(Policy{});
  std::string out = "sentinel";
  Outcome o = rs->Redact("GET /api/v1/items?page=2 200 12ms user_agent=curl/8.1", &out);
  EXPECT_FALSE(o.changed);
  EXPECT_FALSE(o.dropped);
  EXPECT_TRUE(o.counts.empty());
  EXPECT_EQ(out, "sentinel");
  EXPECT_TRUE(rs->Scan("").empty());
  EXPECT_FALSE(rs->Redact("", &out).changed);
}

TEST(RuleSetTest, MaskReplacesEachFindingAndCounts) {
  auto rs = MustCompile(Policy{});
  std::string out;
  Outcome o = rs->Redact("a@example.com and b@example.org from 10.1.2.3", &out);
  EXPECT_TRUE(o.changed);
  EXPECT_EQ(out, "[REDACTED:email] and [REDACTED:email] from [REDACTED:ipv4]");
  ASSERT_EQ(o.counts.size(), 2u);
  EXPECT_EQ(o.counts[0].detector, "email");
  EXPECT_EQ(o.counts[0].count, 2u);
  EXPECT_EQ(o.counts[1].detector, "ipv4");
  EXPECT_EQ(o.total(), 3u);
}

TEST(RuleSetTest, ScanReportsOffsetsInOrder) {
  auto rs = MustCompile(Policy{});
  std::string text = "ip 10.0.0.1 mail x@example.com";
  auto fs = rs->Scan(text);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].detector, "ipv4");
  EXPECT_EQ(fs[0].category, "network");
  EXPECT_EQ(fs[0].begin, 3u);
  EXPECT_EQ(fs[0].end, 11u);
  EXPECT_EQ(fs[1].detector, "email");
  EXPECT_EQ(text.substr(fs[1].begin, fs[1].end - fs[1].begin), "x@example.com");
}

TEST(RuleSetTest, OverlapsResolveLeftmostLongestThenPriority) {
  auto rs = MustCompile(Policy{});
  // Same start, same length: the secret (priority 50) beats the e-mail address (20).
  auto fs = rs->Scan("password=bob@example.com");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].detector, "generic_secret");
  // The IPv6 address starts first and is longer than the IPv4 inside it.
  fs = rs->Scan("::ffff:192.0.2.128");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].detector, "ipv6");

  Policy p;
  p.custom_rules.push_back({.id = "order_ref", .category = "internal", .pattern = "order-[0-9]{16}"});
  p.custom_rules.push_back(
      {.id = "digits16", .category = "internal", .pattern = "\\b[0-9]{16}\\b", .priority = 5});
  rs = MustCompile(p);
  // Leftmost wins: the custom rule starts at "order-", before the card number.
  fs = rs->Scan("x order-4111111111111111");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].detector, "order_ref");
  // Equal spans: the card (priority 40) beats digits16 (priority 5).
  fs = rs->Scan("x 4111111111111111");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].detector, "card_number");
  p.custom_rules[1].priority = 90;
  rs = MustCompile(p);
  fs = rs->Scan("x 4111111111111111");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].detector, "digits16");
}

TEST(RuleSetTest, CustomRulesCategoriesAndDisabling) {
  Policy p;
  p.custom_rules.push_back({.id = "employee_id", .category = "hr", .pattern = "EMP-[0-9]{6}"});
  p.custom_rules.push_back(
      {.id = "project", .category = "hr", .pattern = "project (apollo|zeus)", .caseless = true});
  p.disabled = {"network", "phone"};
  auto rs = MustCompile(p);
  EXPECT_EQ(Redacted(*rs, "EMP-123456 on Project Apollo at 10.0.0.1, 415-555-2671, a@b.io"),
            "[REDACTED:employee_id] on [REDACTED:project] at 10.0.0.1, 415-555-2671, [REDACTED:email]");
  for (const auto& d : rs->Detectors()) {
    EXPECT_NE(d.category, "network");
    EXPECT_NE(d.id, "phone");
  }
  p.disabled = {"hr"};
  EXPECT_EQ(Redacted(*MustCompile(p), "EMP-123456"), "EMP-123456");
}

TEST(RuleSetTest, SharedSkPatternHonoursEachVendorsSwitch) {
  const std::string ant = "sk-ant-api03-aB3cD4eF5gH6iJ7kL8mN9oP0qRsTuVwXyZ";
  const std::string oai = "sk-proj-aB3cD4eF5gH6iJ7kL8mN9oP0qRsTuVwXyZ";
  for (bool custom : {false, true}) {
    Policy p;
    if (custom) p.custom_rules.push_back({.id = "x", .pattern = "xyzzy"});  // forces a per-policy database
    p.disabled = {"openai_api_key"};
    auto fs = MustCompile(p)->Scan(ant + " " + oai);
    ASSERT_EQ(fs.size(), 1u) << custom;
    EXPECT_EQ(fs[0].detector, "anthropic_api_key");
    p.disabled = {"anthropic_api_key"};
    fs = MustCompile(p)->Scan(ant + " " + oai);
    ASSERT_EQ(fs.size(), 1u) << custom;
    EXPECT_EQ(fs[0].detector, "openai_api_key");
  }
}

TEST(RuleSetTest, BadPolicyErrorsNameTheProblem) {
  Policy p;
  p.custom_rules.push_back({.id = "fine", .pattern = "abc"});
  p.custom_rules.push_back({.id = "acme_ref", .pattern = "ACME-(\\d+"});
  auto r = RuleSet::Compile(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("custom rule 1 (\"acme_ref\")"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("vectorscan: "), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("parenthesis"), std::string::npos) << r.status().message();

  p.custom_rules[1].pattern = "(?<=x)y";  // lookbehind: not supported by vectorscan
  r = RuleSet::Compile(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("custom rule 1"), std::string::npos);

  p.custom_rules[1].pattern = "x*";
  r = RuleSet::Compile(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("empty"), std::string::npos) << r.status().message();

  auto fails = [](Policy q, std::string_view needle) {
    auto res = RuleSet::Compile(q);
    ASSERT_FALSE(res.ok()) << needle;
    EXPECT_NE(res.status().message().find(needle), std::string::npos) << res.status().message();
  };
  fails(Policy{.custom_rules = {{.id = "Bad-Id", .pattern = "x"}}}, "id must be");
  fails(Policy{.custom_rules = {{.id = "email", .pattern = "x"}}}, "built-in");
  fails(Policy{.custom_rules = {{.id = "a", .pattern = "x"}, {.id = "a", .pattern = "y"}}}, "duplicate");
  fails(Policy{.disabled = {"emial"}}, "emial");
  fails(Policy{.actions = {{"cards", Action::kMask}}}, "cards");
  fails(Policy{.actions = {{"email", Action::kHash}}}, "hash_key");
  fails(Policy{.default_action = Action::kHash}, "hash_key");
}

TEST(RuleSetTest, Actions) {
  const std::string text = "card 4111 1111 1111 1111, mail Bob@Example.com";
  Policy p;
  p.actions = {{"financial", Action::kPartialMask}, {"email", Action::kMask}};
  EXPECT_EQ(Redacted(*MustCompile(p), text), "card **** **** **** 1111, mail [REDACTED:email]");

  // A detector id wins over its category.
  p.actions = {{"financial", Action::kMask}, {"card_number", Action::kPartialMask}};
  EXPECT_EQ(Redacted(*MustCompile(p), "4111-1111-1111-1111"), "****-****-****-1111");

  // Short values keep at most a third of their letters and digits.
  Policy short_values;
  short_values.custom_rules.push_back({.id = "pin", .pattern = "\\b[0-9]{2,6}\\b"});
  short_values.actions = {{"pin", Action::kPartialMask}};
  auto pins = MustCompile(short_values);
  EXPECT_EQ(Redacted(*pins, "pin 12"), "pin **");
  EXPECT_EQ(Redacted(*pins, "pin 123456"), "pin ****56");

  p.actions = {{"card_number", Action::kHash}, {"email", Action::kHash}};
  p.hash_key = "org-key-1";
  auto hashed = MustCompile(p);
  std::string a = Redacted(*hashed, "4111 1111 1111 1111");
  EXPECT_EQ(a.size(), std::string("[HASH:card_number:0123456789abcdef]").size()) << a;
  EXPECT_EQ(a.rfind("[HASH:card_number:", 0), 0u) << a;
  // Same card written differently, same hash; same e-mail in another case, same hash.
  EXPECT_EQ(Redacted(*hashed, "4111-1111-1111-1111"), a);
  EXPECT_EQ(Redacted(*hashed, "bob@example.com"), Redacted(*hashed, "BOB@EXAMPLE.COM"));
  EXPECT_NE(Redacted(*hashed, "4012888888881881"), a);
  p.hash_key = "org-key-2";
  EXPECT_NE(Redacted(*MustCompile(p), "4111 1111 1111 1111"), a);  // another org, another hash

  p = Policy{};
  p.actions = {{"secret", Action::kDrop}};
  auto dropping = MustCompile(p);
  std::string out = "previous";
  Outcome o = dropping->Redact("mail a@b.io key AKIAIOSFODNN7EXAMPLE", &out);
  EXPECT_TRUE(o.changed);
  EXPECT_TRUE(o.dropped);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(o.total(), 2u);
  o = dropping->Redact("mail a@b.io", &out);
  EXPECT_FALSE(o.dropped);
  EXPECT_EQ(out, "mail [REDACTED:email]");
  auto fs = dropping->Scan("AKIAIOSFODNN7EXAMPLE");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].action, Action::kDrop);
}

TEST(RuleSetTest, ActionNames) {
  for (Action a : {Action::kMask, Action::kPartialMask, Action::kHash, Action::kDrop}) {
    EXPECT_EQ(*ParseAction(ActionName(a)), a);
  }
  EXPECT_FALSE(ParseAction("erase").ok());
}

bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

TEST(RuleSetTest, Utf8AroundMatchesAndNeverSplit) {
  auto rs = MustCompile(Policy{});
  EXPECT_EQ(Redacted(*rs, "Écrivez à «john@example.com» — merci 🙏 10.0.0.1"),
            "Écrivez à «[REDACTED:email]» — merci 🙏 [REDACTED:ipv4]");
  // A byte-wise custom pattern that ends inside "é" is widened to the whole character.
  Policy p;
  p.custom_rules.push_back({.id = "cafe", .pattern = "caf."});
  auto fs = MustCompile(p)->Scan("un café noir");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].begin, 3u);
  EXPECT_EQ(fs[0].end, 8u);  // "café" is 5 bytes
  p.actions = {{"cafe", Action::kPartialMask}};
  std::string out = Redacted(*MustCompile(p), "un café noir, un caféine");
  EXPECT_TRUE(ValidUtf8(out)) << out;
  // A UTF-8 rule: '.' is one character.
  p.custom_rules[0].utf8 = true;
  p.actions.clear();
  EXPECT_EQ(Redacted(*MustCompile(p), "un café noir"), "un [REDACTED:cafe] noir");
}

TEST(RuleSetTest, InvalidUtf8NeverCrashes) {
  Policy p;
  p.custom_rules.push_back({.id = "word", .pattern = "[a-z]+é", .utf8 = true});
  auto rs = MustCompile(p);
  std::string bad = "\xff\xfe john@example.com \xc3 caf\xc3\xa9 \xe2\x82 \xed\xa0\x80 \xf4\x90\x80\x80 x\xc3";
  std::string out;
  Outcome o = rs->Redact(bad, &out);
  EXPECT_TRUE(o.changed);
  EXPECT_NE(out.find("[REDACTED:email]"), std::string::npos);
  EXPECT_NE(out.find("[REDACTED:word]"), std::string::npos);
  // Stray continuation bytes right after a finding: the span still ends on a boundary of the original
  // bytes, although the UTF-8 rule made the scan run over a sanitized copy.
  std::string glued = "key AKIAIOSFODNN7EXAMPLE\xa6\xa6 end";
  auto fs = rs->Scan(glued);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].begin, 4u);
  EXPECT_EQ(fs[0].end, 26u);
  auto builtin = MustCompile(Policy{});
  for (size_t cut = 0; cut <= bad.size(); ++cut) builtin->Redact(std::string_view(bad).substr(0, cut), &out);
}

TEST(RuleSetTest, ManyThreadsShareOneRuleSet) {
  Policy p;
  p.actions = {{"card_number", Action::kPartialMask}};
  auto rs = MustCompile(p);
  std::vector<std::string> texts = {
      "user a@example.com logged in from 10.0.0.1",
      "charge 4111 1111 1111 1111 ok",
      "nothing to see here, request 200 in 12ms",
      "token ghp_aB3cD4eF5gH6iJ7kL8mN9oP0qRsTuVwXyZaB and +44 20 7946 0958",
  };
  std::vector<std::string> expected;
  for (const auto& t : texts) expected.push_back(Redacted(*rs, t));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::string out;
      for (int i = 0; i < 2000; ++i) {
        size_t k = static_cast<size_t>(i + t) % texts.size();
        Outcome o = rs->Redact(texts[k], &out);
        std::string got = o.changed ? out : texts[k];
        if (got != expected[k]) ++mismatches[static_cast<size_t>(t)];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
  EXPECT_EQ(expected[1], "charge **** **** **** 1111 ok");
}

}  // namespace
}  // namespace govern::dlp
