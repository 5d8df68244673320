// Entity and request JSON: the accepted forms, the transitive `in`, and clear errors for bad input.
#include <gtest/gtest.h>

#include <string>

#include "policy/cedar.h"
#include "policy/entity_store.h"

namespace govern::policy {
namespace {

TEST(EntitiesTest, AncestorsAreTransitive) {
  auto e = Entities::FromJson(R"([
    {"uid": {"type": "Agent", "id": "a"}, "attrs": {}, "parents": [{"type": "Team", "id": "t"}]},
    {"uid": {"__entity": {"type": "Team", "id": "t"}}, "attrs": {},
     "parents": [{"__entity": {"type": "Org", "id": "o"}}, {"type": "Team", "id": "u"}]},
    {"uid": {"type": "Team", "id": "u"}, "attrs": {}, "parents": [{"type": "Org", "id": "p"}]}])");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->size(), 3u);
  const EntityStore& s = e->store();
  Uid a("Agent", "a"), t("Team", "t"), o("Org", "o"), p("Org", "p"), x("Org", "x");
  const EntityData* ad = s.Find(a);
  ASSERT_NE(ad, nullptr);
  EXPECT_TRUE(s.In(a, a, ad));
  EXPECT_TRUE(s.In(a, t, ad));
  EXPECT_TRUE(s.In(a, o, ad));
  EXPECT_TRUE(s.In(a, p, ad));
  EXPECT_FALSE(s.In(a, x, ad));
  EXPECT_EQ(s.Find(Uid("Agent", "missing")), nullptr);
}

TEST(EntitiesTest, LongChainsAndSharedAncestors) {
  // A chain of 400 teams, each in the next, and agents in the first: every agent is in every team.
  std::string json = "[";
  for (int k = 0; k < 400; ++k) {
    json += R"({"uid": {"type": "Team", "id": ")" + std::to_string(k) + R"("}, "attrs": {}, "parents": [)";
    if (k + 1 < 400) json += R"({"type": "Team", "id": ")" + std::to_string(k + 1) + R"("}, )";
    json += R"({"type": "Org", "id": "o"}]},)";
  }
  for (int a = 0; a < 50; ++a) {
    json += R"({"uid": {"type": "Agent", "id": ")" + std::to_string(a) +
            R"("}, "attrs": {}, "parents": [{"type": "Team", "id": "0"}]})" + (a + 1 < 50 ? "," : "");
  }
  json += "]";
  auto e = Entities::FromJson(json);
  ASSERT_TRUE(e.ok()) << e.status().message();
  const EntityStore& s = e->store();
  Uid agent("Agent", "7");
  const EntityData* d = s.Find(agent);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->ancestors.size(), 401u);  // 400 teams and the organisation, once each
  EXPECT_TRUE(s.In(agent, Uid("Team", "399"), d));
  EXPECT_TRUE(s.In(agent, Uid("Org", "o"), d));
  EXPECT_FALSE(s.In(agent, Uid("Team", "400"), d));
}

TEST(EntitiesTest, ValueForms) {
  auto e = Entities::FromJson(R"([{"uid": {"type": "A", "id": "1"}, "parents": [], "extra": "ignored",
    "attrs": {"b": true, "n": -5, "s": "x", "set": [1, 1, 2], "rec": {"k": {"type": "T", "id": "i"}},
              "e": {"__entity": {"type": "T", "id": "i"}}, "ip": {"__extn": {"fn": "ip", "arg": "::1"}},
              "d": {"__extn": {"fn": "decimal", "arg": "1.25"}}, "f": 5.0},
    "tags": {"t": {"__extn": {"fn": "duration", "arg": "1h"}}}}])");
  ASSERT_TRUE(e.ok()) << e.status().message();
  const EntityData* d = e->store().Find(Uid("A", "1"));
  ASSERT_NE(d, nullptr);
  const Value* set = d->attrs->Find("set", HashBytes("set"));
  ASSERT_NE(set, nullptr);
  EXPECT_EQ(set->set->elems.size(), 2u);  // duplicates removed
  const Value* rec = d->attrs->Find("rec", HashBytes("rec"));
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->rec->Find("k", HashBytes("k"))->kind, Kind::kRecord);  // implicit uid form is a record
  EXPECT_EQ(d->attrs->Find("e", HashBytes("e"))->kind, Kind::kEntity);
  EXPECT_EQ(d->attrs->Find("ip", HashBytes("ip"))->kind, Kind::kIp);
  EXPECT_EQ(d->attrs->Find("d", HashBytes("d"))->i, 12500);
  EXPECT_EQ(d->attrs->Find("f", HashBytes("f"))->i, 5);
  EXPECT_EQ(d->tags->Find("t", HashBytes("t"))->i, 3600000);
}

TEST(EntitiesTest, ErrorsAreClear) {
  struct Case {
    const char* json;
    const char* error;
  };
  const Case kCases[] = {
      {"[", "invalid JSON at byte"},
      {"{}", "expected a JSON array"},
      {R"([{"uid": {"type": "A", "id": "1"}, "parents": []}])", "missing field `attrs`"},
      {R"([{"uid": {"type": "A", "id": "1"}, "attrs": {}}])", "missing field `parents`"},
      {R"([{"attrs": {}, "parents": []}])", "missing field `uid`"},
      {R"([{"uid": {"type": "A b", "id": "1"}, "attrs": {}, "parents": []}])",
       "not a valid entity type name"},
      {R"([{"uid": {"type": "if", "id": "1"}, "attrs": {}, "parents": []}])", "not a valid entity type name"},
      {R"([{"uid": {"type": "A", "id": 1}, "attrs": {}, "parents": []}])", "with string fields"},
      {R"([{"uid": {"type": "A", "id": "1"}, "attrs": {"x": null}, "parents": []}])",
       "`null`s are not allowed"},
      {R"([{"uid": {"type": "A", "id": "1"}, "attrs": {"x": 5.5}, "parents": []}])", "no floating-point"},
      {R"([{"uid": {"type": "A", "id": "1"}, "attrs": {"x": 18446744073709551615}, "parents": []}])",
       "out of range"},
      {R"([{"uid": {"type": "A", "id": "1"}, "attrs": [], "parents": []}])", "`attrs` must be an object"},
      {R"([{"uid": {"type": "A", "id": "1"}, "attrs": {}, "parents": [], "tags": []}])",
       "`tags` must be an object"},
      {R"([{"uid": {"type": "A", "id": "1"}, "attrs": {"x": {"__extn": {"fn": "ip", "arg": "bad"}}}, "parents": []}])",
       "invalid IP address"},
      {R"([{"uid": {"type": "A", "id": "1"}, "attrs": {"x": {"__extn": {"fn": "nope", "arg": "1"}}}, "parents": []}])",
       "extension function `nope` does not exist"},
      {R"([{"uid": {"type": "A", "id": "1"}, "attrs": {"a": 1}, "parents": []},
           {"uid": {"type": "A", "id": "1"}, "attrs": {"a": 2}, "parents": []}])",
       "duplicate entity entry `A::\"1\"`"},
      {R"([{"uid": {"type": "A", "id": "1"}, "attrs": {}, "parents": [{"type": "A", "id": "2"}]},
           {"uid": {"type": "A", "id": "2"}, "attrs": {}, "parents": [{"type": "A", "id": "1"}]}])",
       "cycle"},
  };
  for (const Case& c : kCases) {
    auto e = Entities::FromJson(c.json);
    ASSERT_FALSE(e.ok()) << c.json;
    EXPECT_NE(e.status().message().find(c.error), std::string::npos)
        << c.json << "\n got: " << e.status().message() << "\n want: " << c.error;
  }
}

TEST(EntitiesTest, IdenticalDuplicatesAreAccepted) {
  auto e = Entities::FromJson(R"([{"uid": {"type": "A", "id": "1"}, "attrs": {}, "parents": []},
                                  {"uid": {"type": "A", "id": "1"}, "attrs": {}, "parents": []}])");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->size(), 1u);
}

TEST(EntitiesTest, DeeplyNestedValuesAreRefused) {
  std::string deep = R"([{"uid": {"type": "A", "id": "1"}, "parents": [], "attrs": {"x": )" +
                     std::string(5000, '[') + std::string(5000, ']') + "}}]";
  auto e = Entities::FromJson(deep);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("nested"), std::string::npos) << e.status().message();
}

TEST(RequestTest, FormsAndErrors) {
  EXPECT_TRUE(
      Request::FromJson(R"({"principal": {"type": "A", "id": "1"}, "action": {"__entity": {"type": "Action",
      "id": "x"}}, "resource": {"type": "R", "id": "r"}})")
          .ok());
  auto bad_ctx = Request::FromJson(
      R"({"principal": {"type": "A", "id": "1"}, "action": {"type": "Action", "id": "x"},
          "resource": {"type": "R", "id": "r"}, "context": [1]})");
  ASSERT_FALSE(bad_ctx.ok());
  EXPECT_NE(bad_ctx.status().message().find("context"), std::string::npos);
  auto missing = Request::FromJson(R"({"principal": {"type": "A", "id": "1"}})");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing field `action`"), std::string::npos);
  auto null_ctx = Request::Make({"A", "1"}, {"Action", "x"}, {"R", "r"}, R"({"a": null})");
  ASSERT_FALSE(null_ctx.ok());
  auto bad_json = Request::Make({"A", "1"}, {"Action", "x"}, {"R", "r"}, "{");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_NE(bad_json.status().message().find("invalid JSON"), std::string::npos);
}

}  // namespace
}  // namespace govern::policy
