// Query parts that need no database: request parameters, cursors, policy documents, the redaction of
// an event and its JSON form.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crypto/encoding.h"
#include "services/telemetry/dlp_policies.h"
#include "services/telemetry/query.h"
#include "services/telemetry/query_api.h"
#include "services/telemetry/schema.h"

namespace govern::telemetry {
namespace {

using Params = std::vector<std::pair<std::string, std::string>>;
constexpr int64_t kNow = 1'795'000'000'000'000'000;

std::string ErrorOf(const Params& params) {
  Result<ParsedQuery> r = ParseQueryParams(params, kNow);
  return r.ok() ? "ok" : r.status().message();
}

TEST(ParseQueryParams, DefaultsToTheLastHourNewestFirst) {
  Result<ParsedQuery> r = ParseQueryParams({}, kNow);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->query.from_ns, kNow - kNanosPerHour);
  EXPECT_EQ(r->query.to_ns, INT64_MAX);
  EXPECT_TRUE(r->query.newest_first);
  EXPECT_EQ(r->query.limit, 100u);
  EXPECT_FALSE(r->time_range_given);
  EXPECT_FALSE(r->cursor);
}

TEST(ParseQueryParams, ReadsEveryParameter) {
  Result<ParsedQuery> r = ParseQueryParams({{"from", "2026-11-30T00:00:00Z"},
                                            {"to", "1796000000000000000"},
                                            {"type", "agent.action"},
                                            {"attr", "http.status:200"},
                                            {"attr", "method:\"GET\""},
                                            {"attr", "note:\"a:b\""},
                                            {"order", "oldest"},
                                            {"limit", "1000"},
                                            {"cursor", "abc"}},
                                           kNow);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->query.from_ns, 1'795'996'800'000'000'000);
  EXPECT_EQ(r->query.to_ns, 1'796'000'000'000'000'000);
  EXPECT_EQ(r->query.type, "agent.action");
  ASSERT_EQ(r->query.attributes.size(), 3u);
  EXPECT_EQ(r->query.attributes[0], (Attribute{"http.status", "200"}));
  EXPECT_EQ(r->query.attributes[1], (Attribute{"method", "\"GET\""}));
  EXPECT_EQ(r->query.attributes[2], (Attribute{"note", "\"a:b\""}));  // split at the first colon
  EXPECT_FALSE(r->query.newest_first);
  EXPECT_EQ(r->query.limit, 1000u);
  EXPECT_EQ(*r->cursor, "abc");
  EXPECT_TRUE(r->time_range_given);
}

TEST(ParseQueryParams, ToAloneMeansTheHourBeforeIt) {
  Result<ParsedQuery> r = ParseQueryParams({{"to", "5000000000000"}}, kNow);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->query.from_ns, 5'000'000'000'000 - kNanosPerHour);
  EXPECT_EQ(r->query.to_ns, 5'000'000'000'000);
}

TEST(ParseQueryParams, ErrorsNameTheParameter) {
  EXPECT_EQ(ErrorOf({{"limit", "0"}}), "limit: must be an integer from 1 to 1000");
  EXPECT_EQ(ErrorOf({{"limit", "1001"}}), "limit: must be an integer from 1 to 1000");
  EXPECT_EQ(ErrorOf({{"limit", "12x"}}), "limit: must be an integer from 1 to 1000");
  EXPECT_EQ(ErrorOf({{"limit", "5"}, {"limit", "6"}}), "limit: given more than once");
  EXPECT_EQ(ErrorOf({{"order", "sideways"}}), "order: must be newest or oldest");
  EXPECT_EQ(ErrorOf({{"type", ""}}), "type: must be 1 to 256 bytes");
  EXPECT_EQ(ErrorOf({{"attr", "novalue"}}).substr(0, 6), "attr: ");
  EXPECT_EQ(ErrorOf({{"attr", ":1"}}).substr(0, 6), "attr: ");
  EXPECT_EQ(ErrorOf({{"attr", "method:GET"}}).substr(0, 35), "attr: the value of \"method\" is not ");
  EXPECT_EQ(ErrorOf({{"from", "yesterday"}}).substr(0, 6), "from: ");
  EXPECT_EQ(ErrorOf({{"to", "99999999999999999999"}}), "to: out of range");
  EXPECT_EQ(ErrorOf({{"from", "200"}, {"to", "100"}}), "from: must be before to");
  EXPECT_EQ(ErrorOf({{"form", "1"}}).substr(0, 24), "form: unknown parameter ");
  EXPECT_EQ(ErrorOf({{"cursor", ""}}), "cursor: empty");
  Params many;
  for (int i = 0; i < 17; ++i) many.emplace_back("attr", "k:1");
  EXPECT_EQ(ErrorOf(many), "attr: more than 16 filters");
}

EventQuery BaseQuery() {
  EventQuery q;
  q.org = "acme";
  q.from_ns = 1000;
  q.to_ns = 9000;
  q.type = "log";
  q.attributes = {{"a", "1"}, {"b", "\"x\""}};
  q.newest_first = true;
  return q;
}

TEST(Cursor, RoundTripsTheKeyAndChecksTheQuery) {
  EventQuery q = BaseQuery();
  EventKey last{4242, "id-\x01\xff-with bytes"};
  std::string token = EncodeCursor(q, last);
  for (char c : token) EXPECT_TRUE(isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') << token;

  EventQuery same = BaseQuery();
  std::swap(same.attributes[0], same.attributes[1]);  // filter order does not matter
  same.limit = 7;                                     // nor does the page size
  ASSERT_TRUE(ApplyCursor(token, true, &same).ok());
  ASSERT_TRUE(same.after);
  EXPECT_EQ(*same.after, last);

  auto mismatch = [&](auto change) {
    EventQuery other = BaseQuery();
    change(other);
    Status st = ApplyCursor(token, true, &other);
    EXPECT_EQ(st.code(), Code::kInvalidArgument);
    EXPECT_EQ(st.message().substr(0, 8), "cursor: ");
    EXPECT_FALSE(other.after);
  };
  mismatch([](EventQuery& o) { o.type = "span"; });
  mismatch([](EventQuery& o) { o.type.clear(); });
  mismatch([](EventQuery& o) { o.attributes.pop_back(); });
  mismatch([](EventQuery& o) { o.attributes[0].value_json = "2"; });
  mismatch([](EventQuery& o) { o.newest_first = false; });
  mismatch([](EventQuery& o) { o.from_ns = 1001; });
  mismatch([](EventQuery& o) { o.to_ns = 8999; });
  mismatch([](EventQuery& o) { o.org = "other"; });
}

TEST(Cursor, CarriesTheTimeRangeWhenTheRequestGivesNone) {
  EventQuery q = BaseQuery();
  std::string token = EncodeCursor(q, {5000, "x"});
  EventQuery next = BaseQuery();
  next.from_ns = 7777;  // what a default window would be a minute later
  next.to_ns = INT64_MAX;
  ASSERT_TRUE(ApplyCursor(token, false, &next).ok());
  EXPECT_EQ(next.from_ns, 1000);
  EXPECT_EQ(next.to_ns, 9000);
  EXPECT_EQ(next.after->time_ns, 5000);
}

TEST(Cursor, RefusesGarbage) {
  EventQuery q = BaseQuery();
  for (std::string bad : std::vector<std::string>{"", "!!!!", "AAAA", "a", std::string(5000, 'A'),
                                                  crypto::Base64UrlEncode(std::string(40, '\x02'))}) {
    EXPECT_EQ(ApplyCursor(bad, true, &q).code(), Code::kInvalidArgument) << bad;
  }
  std::string token = EncodeCursor(q, {5, "x"});
  token[token.size() / 2] = token[token.size() / 2] == 'A' ? 'B' : 'A';  // flips bits of the hash or key
  EventQuery q2 = BaseQuery();
  Status st = ApplyCursor(token, true, &q2);
  if (st.ok()) {
    EXPECT_NE(*q2.after, (EventKey{5, "x"}));
  }
}

TEST(FormatRfc3339Nanos, KeepsNanosecondsAndFloorsBefore1970) {
  EXPECT_EQ(FormatRfc3339Nanos(0), "1970-01-01T00:00:00.000000000Z");
  EXPECT_EQ(FormatRfc3339Nanos(1'795'000'000'000'000'042), "2026-11-18T11:06:40.000000042Z");
  EXPECT_EQ(FormatRfc3339Nanos(-1), "1969-12-31T23:59:59.999999999Z");
}

TEST(DlpPolicyJson, ParsesEveryMemberAndNamesBadEntries) {
  Result<dlp::Policy> p = ParseDlpPolicy(R"({"disabled":["ipv4","network"],
      "custom_rules":[{"id":"employee_id","category":"hr","pattern":"EMP-[0-9]{6}","caseless":true,
                       "utf8":false,"priority":70}],
      "actions":{"email":"hash","secret":"drop"},"default_action":"partial","hash_key":"k1",
      "hash_key_set":true,"updated_at":"2026-01-01T00:00:00Z"})");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->disabled, (std::vector<std::string>{"ipv4", "network"}));
  ASSERT_EQ(p->custom_rules.size(), 1u);
  EXPECT_EQ(p->custom_rules[0].id, "employee_id");
  EXPECT_TRUE(p->custom_rules[0].caseless);
  EXPECT_EQ(p->custom_rules[0].priority, 70);
  EXPECT_EQ(p->default_action, dlp::Action::kPartialMask);
  EXPECT_EQ(p->hash_key, "k1");
  ASSERT_EQ(p->actions.size(), 2u);

  // Written back out and parsed again, the policy is the same.
  std::string out = DlpPolicyJson(*p, true);
  Result<dlp::Policy> again = ParseDlpPolicy(out);
  ASSERT_TRUE(again.ok()) << out;
  EXPECT_EQ(DlpPolicyJson(*again, true), out);
  EXPECT_EQ(nlohmann::json::parse(DlpPolicyJson(*p, false)).value("hash_key_set", false), true);
  EXPECT_FALSE(nlohmann::json::parse(DlpPolicyJson(*p, false)).contains("hash_key"));

  auto error = [](std::string_view json) {
    Result<std::shared_ptr<const dlp::RuleSet>> r = CompileDlpPolicy(json);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_EQ(error("[]"), "policy: must be a JSON object");
  EXPECT_EQ(error("{"), "policy: not valid JSON");
  EXPECT_EQ(error(R"({"disabled":"ipv4"})").substr(0, 10), "disabled: ");
  EXPECT_EQ(error(R"({"disabled":["ipv4",3]})"), "disabled[1]: must be a string");
  EXPECT_EQ(error(R"({"custom_rules":[{"id":"a","pattern":"x"},{"id":"b"}]})"),
            "custom_rules[1].pattern: missing");
  EXPECT_EQ(error(R"({"custom_rules":[{"id":"a","pattern":"x","priority":"high"}]})"),
            "custom_rules[0].priority: must be an integer from 0 to 1000");
  EXPECT_EQ(error(R"({"custom_rules":[{"id":"a","pattern":"x","colour":1}]})").substr(0, 24),
            "custom_rules[0].colour: ");
  EXPECT_EQ(error(R"({"actions":{"email":"shred"}})").substr(0, 15), "actions.email: ");
  EXPECT_EQ(error(R"({"default_action":1})"), "default_action: must be a string");
  EXPECT_EQ(error(R"({"colour":1})").substr(0, 8), "colour: ");
  // What only compiling finds, still naming the entry.
  EXPECT_NE(error(R"({"custom_rules":[{"id":"a","pattern":"(x"}]})").find("custom rule 0 (\"a\")"),
            std::string::npos);
  EXPECT_NE(error(R"({"disabled":["nonsense"]})").find("nonsense"), std::string::npos);
  EXPECT_NE(error(R"({"actions":{"email":"hash"}})").find("hash"), std::string::npos);
  EXPECT_EQ(error(R"({"actions":{"email":"hash"},"hash_key":"k"})"), "ok");
  EXPECT_EQ(error(std::string(kMaxDlpPolicyBytes + 1, ' ')).substr(0, 22), "policy: larger than 65");
}

StoredEvent Sensitive() {
  StoredEvent s;
  Event& e = s.event;
  e.org = "acme";
  e.id = "ev-1";
  e.time_unix_nanos = 1'795'000'000'123'456'789;
  e.observed_unix_nanos = 1'795'000'000'000'000'000;
  e.type = "login";
  e.severity_text = "WARN";
  e.severity_number = 13;
  e.body_kind = BodyKind::kString;
  e.body = "user alice@example.com signed in";
  e.attributes = {{"user.email", "\"bob@example.com\""},
                  {"count", "3"},
                  {"nested", "{\"ip\":\"10.1.2.3\",\"ok\":true}"},
                  {"card", "\"4111 1111 1111 1111\""}};
  e.resource_attributes = {{"host.ip", "\"192.168.7.9\""}, {"service.name", "\"billing\""}};
  e.service_name = "billing for carol@example.com";
  e.scope_name = "scope dave@example.com";
  e.scope_version = "1.0";
  e.trace_id_hex = "0123456789abcdef0123456789abcdef";
  e.span_id_hex = "0123456789abcdef";
  e.flags = 1;
  e.dropped_attributes_count = 2;
  return s;
}

std::shared_ptr<const dlp::RuleSet> Rules(std::string_view json) {
  Result<std::shared_ptr<const dlp::RuleSet>> r = CompileDlpPolicy(json);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : nullptr;
}

nlohmann::json Render(const RedactedEvent& r) {
  std::string out;
  AppendEventJson(r, &out);
  return nlohmann::json::parse(out);  // throws (fails the test) if not valid JSON
}

TEST(RedactEvent, MasksEveryFieldKindByDefault) {
  RedactedEvent r = RedactEvent(*Rules("{}"), Sensitive());
  nlohmann::json j = Render(r);
  EXPECT_EQ(j["body"], "user [REDACTED:email] signed in");
  EXPECT_EQ(j["attributes"]["user.email"], "[REDACTED:email]");
  EXPECT_EQ(j["attributes"]["count"], 3);
  EXPECT_EQ(j["attributes"]["nested"]["ip"], "[REDACTED:ipv4]");
  EXPECT_EQ(j["attributes"]["nested"]["ok"], true);
  EXPECT_EQ(j["attributes"]["card"], "[REDACTED:card_number]");
  EXPECT_EQ(j["resource_attributes"]["host.ip"], "[REDACTED:ipv4]");
  EXPECT_EQ(j["resource_attributes"]["service.name"], "billing");
  EXPECT_EQ(j["service_name"], "billing for [REDACTED:email]");
  EXPECT_EQ(j["scope_name"], "scope [REDACTED:email]");
  EXPECT_EQ(j["redacted"], false);  // masked, nothing dropped
  // Identifiers and numbers pass unchanged.
  EXPECT_EQ(j["id"], "ev-1");
  EXPECT_EQ(j["trace_id"], "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(j["span_id"], "0123456789abcdef");
  EXPECT_EQ(j["time"], "2026-11-18T11:06:40.123456789Z");
  EXPECT_EQ(j["time_unix_nano"], "1795000000123456789");
  EXPECT_EQ(j["observed_time_unix_nano"], "1795000000000000000");
  EXPECT_EQ(j["type"], "login");
  EXPECT_EQ(j["severity_text"], "WARN");
  EXPECT_EQ(j["severity_number"], 13);
  EXPECT_EQ(j["scope_version"], "1.0");
  EXPECT_EQ(j["flags"], 1);
  EXPECT_EQ(j["dropped_attributes_count"], 2);
}

TEST(RedactEvent, JsonBodyIsRedactedInsideAndNoBodyIsNull) {
  StoredEvent s = Sensitive();
  s.event.body_kind = BodyKind::kJson;
  s.event.body = R"({"to":"erin@example.com","n":[1,"frank@example.com"]})";
  nlohmann::json j = Render(RedactEvent(*Rules("{}"), s));
  EXPECT_EQ(j["body"]["to"], "[REDACTED:email]");
  EXPECT_EQ(j["body"]["n"][0], 1);
  EXPECT_EQ(j["body"]["n"][1], "[REDACTED:email]");
  s.event.body_kind = BodyKind::kNone;
  s.event.body.clear();
  EXPECT_TRUE(Render(RedactEvent(*Rules("{}"), s))["body"].is_null());
}

TEST(RedactEvent, DropNullsTheFieldAndMarksTheEvent) {
  std::shared_ptr<const dlp::RuleSet> rules = Rules(R"({"actions":{"email":"drop"}})");
  RedactedEvent r = RedactEvent(*rules, Sensitive());
  EXPECT_TRUE(r.redacted);
  nlohmann::json j = Render(r);
  EXPECT_TRUE(j["body"].is_null());
  EXPECT_TRUE(j["attributes"]["user.email"].is_null());
  EXPECT_TRUE(j["service_name"].is_null());
  EXPECT_TRUE(j["scope_name"].is_null());
  EXPECT_EQ(j["attributes"]["nested"]["ip"], "[REDACTED:ipv4]");  // other detectors still mask
  EXPECT_EQ(j["redacted"], true);

  // A dropped string inside a JSON body nulls just that value.
  StoredEvent s = Sensitive();
  s.event.body_kind = BodyKind::kJson;
  s.event.body = R"({"to":"erin@example.com","keep":"fine"})";
  s.event.service_name = "billing";
  s.event.scope_name = "scope";
  s.event.attributes.clear();
  RedactedEvent r2 = RedactEvent(*rules, s);
  EXPECT_TRUE(r2.redacted);
  nlohmann::json j2 = Render(r2);
  EXPECT_TRUE(j2["body"]["to"].is_null());
  EXPECT_EQ(j2["body"]["keep"], "fine");
  EXPECT_EQ(j2["service_name"], "billing");
}

TEST(RedactEvent, HashIsKeyedAndStable) {
  std::shared_ptr<const dlp::RuleSet> k1 = Rules(R"({"actions":{"contact":"hash"},"hash_key":"one"})");
  std::shared_ptr<const dlp::RuleSet> k2 = Rules(R"({"actions":{"contact":"hash"},"hash_key":"two"})");
  nlohmann::json a = Render(RedactEvent(*k1, Sensitive()));
  nlohmann::json b = Render(RedactEvent(*k1, Sensitive()));
  nlohmann::json c = Render(RedactEvent(*k2, Sensitive()));
  std::string h = a["attributes"]["user.email"];
  EXPECT_EQ(h.substr(0, 12), "[HASH:email:") << h;
  EXPECT_EQ(h.size(), 12u + 16 + 1);
  EXPECT_EQ(b["attributes"]["user.email"], h);                   // same key, same value: same hash (joinable)
  EXPECT_NE(c["attributes"]["user.email"], h);                   // another organisation's key: unrelated
  EXPECT_EQ(a["attributes"]["card"], "[REDACTED:card_number]");  // category "financial": mask
  EXPECT_EQ(a["redacted"], false);
}

TEST(RedactEvent, InvalidStoredJsonFailsClosed) {
  StoredEvent s = Sensitive();
  s.event.attributes = {{"bad", "{not json alice@example.com"}, {"good", "\"bob@example.com\""}};
  s.event.body_kind = BodyKind::kJson;
  s.event.body = "[unterminated";
  RedactedEvent r = RedactEvent(*Rules("{}"), s);
  EXPECT_TRUE(r.redacted);
  nlohmann::json j = Render(r);
  EXPECT_TRUE(j["attributes"]["bad"].is_null());
  EXPECT_EQ(j["attributes"]["good"], "[REDACTED:email]");  // only the bad value is lost
  EXPECT_TRUE(j["body"].is_null());
}

TEST(RedactEvent, ValuesUnderSecretLikeKeysAreRedactedWhole) {
  StoredEvent s = Sensitive();
  s.event.attributes = {{"db_password", "\"hunter2\""}, {"note", "\"hunter2\""}};
  s.event.resource_attributes = {{"x-api-key", "\"plainvalue\""}};
  nlohmann::json j = Render(RedactEvent(*Rules("{}"), s));
  EXPECT_EQ(j["attributes"]["db_password"], "[REDACTED:generic_secret]");
  EXPECT_EQ(j["attributes"]["note"], "hunter2");
  EXPECT_EQ(j["resource_attributes"]["x-api-key"], "[REDACTED:generic_secret]");
}

TEST(AppendEventJson, EscapesKeysAndStrings) {
  StoredEvent s = Sensitive();
  s.event.attributes = {{"quote\"key\n", "\"line\\nbreak\""}};
  s.event.body = "tab\there \"quoted\" \x01";
  nlohmann::json j = Render(RedactEvent(*Rules("{}"), s));
  EXPECT_EQ(j["attributes"]["quote\"key\n"], "line\nbreak");
  EXPECT_EQ(j["body"], "tab\there \"quoted\" \x01");
}

}  // namespace
}  // namespace govern::telemetry
