// RedactJson: string values redacted, everything else byte for byte, output always valid JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "dlp/rule_set.h"

namespace govern::dlp {
namespace {

std::shared_ptr<const RuleSet> Compile(const Policy& p = {}) { return RuleSet::Compile(p).value(); }

std::string RedactedJson(const RuleSet& rs, std::string_view json, Outcome* outcome = nullptr) {
  std::string out;
  auto r = rs.RedactJson(json, &out);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (outcome != nullptr && r.ok()) *outcome = *r;
  std::string got = r.ok() && r->changed ? out : std::string(json);
  EXPECT_FALSE(nlohmann::json::parse(got, nullptr, false).is_discarded()) << got;
  return got;
}

TEST(JsonTest, ValuesRedactedKeysAndLayoutKept) {
  auto rs = Compile();
  std::string in = R"({"user": "john@example.com", "john@example.com": 1, "n": 12345678901234567890.50,)"
                   "\n  \"nested\": {\"ips\": [\"10.0.0.1\", \"x\"], \"ok\": true, \"none\": null}}";
  Outcome o;
  EXPECT_EQ(RedactedJson(*rs, in, &o),
            R"({"user": "[REDACTED:email]", "john@example.com": 1, "n": 12345678901234567890.50,)"
            "\n  \"nested\": {\"ips\": [\"[REDACTED:ipv4]\", \"x\"], \"ok\": true, \"none\": null}}");
  EXPECT_TRUE(o.changed);
  EXPECT_EQ(o.total(), 2u);
}

TEST(JsonTest, CleanDocumentUnchanged) {
  auto rs = Compile();
  std::string out = "sentinel";
  auto r =
      rs->RedactJson(R"({"service":"api","latency_ms":12,"at":"2024-01-15T10:30:45Z","tags":["a"]})", &out);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->changed);
  EXPECT_EQ(out, "sentinel");
}

TEST(JsonTest, EscapesAreDecodedAndReEncoded) {
  auto rs = Compile();
  // \u0040 is '@': the escaped address is still found; the newline and quote survive re-escaping.
  EXPECT_EQ(RedactedJson(*rs, R"(["mail john\u0040example.com\n\"quoted\" \u00e9 \ud83d\ude4f"])"),
            "[\"mail [REDACTED:email]\\n\\\"quoted\\\" \xc3\xa9 \xf0\x9f\x99\x8f\"]");
  // A value without a finding keeps its original escapes exactly.
  EXPECT_EQ(RedactedJson(*rs, R"({"a":"x\u0041\/y","b":"10.0.0.1"})"),
            R"({"a":"x\u0041\/y","b":"[REDACTED:ipv4]"})");
}

TEST(JsonTest, SecretNamedKeysRedactTheWholeValue) {
  auto rs = Compile();
  EXPECT_EQ(
      RedactedJson(*rs,
                   R"({"db_password":"correct horse","passwordHint":"a pet","apiKey":"k-1","x":"password"})"),
      R"({"db_password":"[REDACTED:generic_secret]","passwordHint":"a pet","apiKey":"[REDACTED:generic_secret]","x":"password"})");
  EXPECT_EQ(RedactedJson(*rs, R"({"password" :  "hunter2", "secret": "", "token": {"secret": 5}})"),
            R"({"password" :  "[REDACTED:generic_secret]", "secret": "", "token": {"secret": 5}})");
  // Pretty-printed documents put any whitespace between a key and its value.
  EXPECT_EQ(RedactedJson(*rs, "{\n  \"password\"\n      :\n  \"hunter2\"\n}"),
            "{\n  \"password\"\n      :\n  \"[REDACTED:generic_secret]\"\n}");
  Policy p;
  p.disabled = {"generic_secret"};
  EXPECT_EQ(RedactedJson(*Compile(p), R"({"password":"hunter2"})"), R"({"password":"hunter2"})");
}

TEST(JsonTest, HashAndPartialInValues) {
  Policy p;
  p.actions = {{"email", Action::kHash}, {"card_number", Action::kPartialMask}};
  p.hash_key = "k";
  auto rs = Compile(p);
  std::string a = RedactedJson(*rs, R"({"to":"bob@example.com","card":"4111-1111-1111-1111"})");
  std::string b = RedactedJson(*rs, R"({"to":"BOB@example.com","card":"4111 1111 1111 1111"})");
  EXPECT_EQ(a.substr(0, a.find("\"card\"")), b.substr(0, b.find("\"card\"")));  // same e-mail, same hash
  EXPECT_NE(a.find("[HASH:email:"), std::string::npos) << a;
  EXPECT_NE(a.find("\"****-****-****-1111\""), std::string::npos) << a;
}

TEST(JsonTest, DropBecomesNull) {
  Policy p;
  p.actions = {{"secret", Action::kDrop}};
  auto rs = Compile(p);
  Outcome o;
  EXPECT_EQ(
      RedactedJson(
          *rs,
          R"({"k":"AKIAIOSFODNN7EXAMPLE in text","m":"a@b.io","l":["ghp_aB3cD4eF5gH6iJ7kL8mN9oP0qRsTuVwXyZaB"]})",
          &o),
      R"({"k":null,"m":"[REDACTED:email]","l":[null]})");
  EXPECT_TRUE(o.dropped);
  EXPECT_EQ(o.total(), 3u);
}

TEST(JsonTest, AnchoredCustomRulesApplyPerValue) {
  Policy p;
  p.custom_rules.push_back({.id = "whole_code", .pattern = "^[A-Z]{3}-[0-9]{3}$"});
  auto rs = Compile(p);
  EXPECT_EQ(RedactedJson(*rs, R"({"a":"ABC-123","b":"x ABC-123"})"),
            R"({"a":"[REDACTED:whole_code]","b":"x ABC-123"})");
}

TEST(JsonTest, InvalidJsonIsAnError) {
  auto rs = Compile();
  std::string out;
  for (std::string_view bad :
       {"", "{", R"({"a":})", R"({"a":"b"} x)", "[\"\xff\"]", R"({"a":"\x"})", "nul"}) {
    auto r = rs->RedactJson(bad, &out);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  }
  EXPECT_TRUE(rs->RedactJson("\"a@b.io\"", &out).ok());
  EXPECT_EQ(out, "\"[REDACTED:email]\"");
}

}  // namespace
}  // namespace govern::dlp
