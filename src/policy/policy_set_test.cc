// Templates, template-linked policies and the Cedar JSON policy format (policy_set.cc). The reference's
// answers for the same cases are in tests/e2e/policy_cedar/corpus/{templates,json_policies}.ndjson.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "policy/cedar.h"
#include "policy/limits.h"

namespace govern::policy {
namespace {

Entities TestEntities() {
  auto e = Entities::FromJson(R"([
    {"uid": {"type": "User", "id": "alice"}, "attrs": {"level": 5}, "parents": [{"type": "Group", "id": "staff"}]},
    {"uid": {"type": "User", "id": "bob"}, "attrs": {}, "parents": []},
    {"uid": {"type": "Group", "id": "staff"}, "attrs": {}, "parents": []},
    {"uid": {"type": "Tool", "id": "search"}, "attrs": {}, "parents": [{"type": "ToolSet", "id": "web"}]}])");
  EXPECT_TRUE(e.ok()) << e.status().message();
  return *e;
}

Request Req(const std::string& principal, const std::string& resource = "search") {
  auto r = Request::Make({"User", principal}, {"Action", "read"}, {"Tool", resource}, "");
  EXPECT_TRUE(r.ok());
  return *r;
}

TemplateLink Link(std::string tmpl, std::string id, std::vector<std::pair<std::string, EntityRef>> values) {
  return TemplateLink{std::move(tmpl), std::move(id), std::move(values)};
}

TEST(TemplateTest, LinkedPoliciesDecideUnderTheirLinkIds) {
  // policy0 is a template, policy1 static: numbered together in text order.
  const char* text = R"(
    permit(principal in ?principal, action, resource is Tool in ?resource);
    forbid(principal, action, resource) when { principal has level && principal.level > 9 };
  )";
  auto set = PolicySet::ParseWithTemplates(
      text,
      {Link("policy0", "staff-web", {{"?principal", {"Group", "staff"}}, {"?resource", {"ToolSet", "web"}}}),
       Link("policy0", "bob-web", {{"?principal", {"User", "bob"}}, {"?resource", {"ToolSet", "web"}}})});
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set->template_count(), 1u);
  EXPECT_EQ(set->template_id(0), "policy0");
  ASSERT_EQ(set->size(), 3u);  // policy1, then the two links
  EXPECT_EQ(set->id(0), "policy1");
  EXPECT_EQ(set->id(1), "staff-web");
  EXPECT_EQ(set->template_of(1), "policy0");
  EXPECT_EQ(set->template_of(0), "");
  Entities entities = TestEntities();
  Response alice = Authorize(*set, entities, Req("alice"));
  EXPECT_EQ(alice.decision, Decision::kAllow);
  EXPECT_EQ(alice.reason, std::vector<std::string>{"staff-web"});
  Response bob = Authorize(*set, entities, Req("bob"));
  EXPECT_EQ(bob.reason, std::vector<std::string>{"bob-web"});
  EXPECT_EQ(Authorize(*set, entities, Req("carol")).decision, Decision::kDeny);
}

TEST(TemplateTest, ErrorsOfALinkedPolicyNameTheLink) {
  auto set = PolicySet::ParseWithTemplates(
      R"(permit(principal, action, resource); forbid(principal == ?principal, action, resource) when { 1 + "a" };)",
      {Link("policy1", "L1", {{"?principal", {"User", "alice"}}})});
  ASSERT_TRUE(set.ok()) << set.status().message();
  Response r = Authorize(*set, TestEntities(), Req("alice"));
  EXPECT_EQ(r.decision, Decision::kAllow);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].policy_id, "L1");
}

TEST(TemplateTest, CedarsLinkErrors) {
  const char* text =
      "permit(principal in ?principal, action, resource); permit(principal, action, resource);";
  struct Case {
    TemplateLink link;
    const char* error;
  } cases[] = {
      {Link("policy0", "L", {}), "not provided as arguments: ?principal"},
      {Link("policy0", "L", {{"?principal", {"G", "g"}}, {"?resource", {"T", "t"}}}),
       "did not exist in the template: ?resource"},
      {Link("nope", "L", {{"?principal", {"G", "g"}}}), "failed to find a template with id `nope`"},
      {Link("policy1", "L", {{"?principal", {"G", "g"}}}), "is a static policy"},
      {Link("policy0", "policy1", {{"?principal", {"G", "g"}}}), "conflicts with an existing"},
      {Link("policy0", "policy0", {{"?principal", {"G", "g"}}}), "conflicts with an existing"},
      {Link("policy0", "L", {{"?foo", {"G", "g"}}}), "unknown slot `?foo`"},
      {Link("policy0", "L", {{"?principal", {"Bad Type", "g"}}}), "not a valid entity type name"},
  };
  for (const Case& c : cases) {
    auto set = PolicySet::ParseWithTemplates(text, {c.link});
    ASSERT_FALSE(set.ok()) << c.error;
    EXPECT_NE(set.status().message().find(c.error), std::string::npos) << set.status().message();
  }
  auto dup = PolicySet::ParseWithTemplates(text, {Link("policy0", "L", {{"?principal", {"G", "g"}}}),
                                                  Link("policy0", "L", {{"?principal", {"G", "h"}}})});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("conflicts with an existing"), std::string::npos);
}

TEST(TemplateTest, SlotsOnlyWhereCedarAllowsThem) {
  const char* bad[] = {
      "permit(principal, action, resource) when { principal == ?principal };",
      "permit(principal, action, resource) unless { resource in ?resource };",
      "permit(principal == ?resource, action, resource);",
      "permit(principal, action == ?principal, resource);",
      "permit(principal, action in ?principal, resource);",
      "permit(principal, action, resource == ?principal);",
      "permit(principal, action, resource == ?foo);",
  };
  for (const char* t : bad) EXPECT_FALSE(PolicySet::ParseWithTemplates(t, {}).ok()) << t;
  const char* good[] = {
      "permit(principal == ?principal, action, resource);",
      "permit(principal in ?principal, action, resource in ?resource);",
      "permit(principal is User in ?principal, action, resource is Tool in ?resource);",
  };
  for (const char* t : good) {
    EXPECT_TRUE(PolicySet::ParseWithTemplates(t, {}).ok()) << t;
    auto s = PolicySet::Parse(t);  // a static set refuses templates, at the slot
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("static policy set includes a template"), std::string::npos);
  }
}

TEST(TemplateTest, LinksJson) {
  auto links = PolicySet::ParseLinks(R"([
    {"templateId": "policy0", "newId": "a", "values": {"?principal": {"type": "User", "id": "alice"}}},
    {"templateId": "policy0", "newId": "b", "values": {"?principal": {"__entity": {"type": "User", "id": "bob"}}}}])");
  ASSERT_TRUE(links.ok()) << links.status().message();
  ASSERT_EQ(links->size(), 2u);
  EXPECT_EQ((*links)[1].values[0].second.id, "bob");
  for (const char* bad : {"{}", "[1]", R"([{"templateId": "t", "newId": "a"}])",
                          R"([{"templateId": "t", "newId": "a", "values": {"?principal": "User::\"a\""}}])",
                          R"([{"templateId": "t", "newId": "a", "values": {}, "extra": 1}])", "[", ""}) {
    EXPECT_FALSE(PolicySet::ParseLinks(bad).ok()) << bad;
  }
}

TEST(TemplateTest, DeciderReadsLinksJsonBesideThePolicies) {
  std::map<std::string, std::string> files = {
      {"policies.cedar", "@require_approval permit(principal == ?principal, action, resource);"},
      {"links.json", R"([{"templateId": "policy0", "newId": "alice-needs-approval",
                          "values": {"?principal": {"type": "User", "id": "alice"}}}])"},
  };
  auto d = Decider::FromFiles(files);
  ASSERT_TRUE(d.ok()) << d.status().message();
  Response r = d->Decide(Req("alice"));
  EXPECT_EQ(r.decision, Decision::kApprovalRequired);
  EXPECT_EQ(r.reason, std::vector<std::string>{"alice-needs-approval"});
  files["links.json"] = R"([{"templateId": "policy9", "newId": "x", "values": {}}])";
  auto bad = Decider::FromFiles(files);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("links.json"), std::string::npos) << bad.status().message();
  // The same set as policies.json.
  auto json = d->policies().ToJson();
  auto fromjson = Decider::FromFiles({{"policies.json", json}});
  ASSERT_TRUE(fromjson.ok()) << fromjson.status().message();
  EXPECT_EQ(fromjson->Decide(Req("alice")).reason, std::vector<std::string>{"alice-needs-approval"});
  EXPECT_FALSE(Decider::FromFiles({{"policies.json", json}, {"links.json", "[]"}}).ok());
}

// What the reference's policyToJson prints for these policies (cedar-wasm 4.13).
TEST(PolicyJsonTest, PrintsAsTheReference) {
  auto set = PolicySet::Parse(
      R"(@a("x") @b permit(principal is User in Group::"g", action in [Action::"a", Action::"b"], resource == Tool::"t") when { context.a has b.c && -5 == -(3) && !!true } unless { [1, "a", User::"x"] == {a: 1, "b c": [ip("1.2.3.4"), decimal("bad")]} };)");
  ASSERT_TRUE(set.ok()) << set.status().message();
  nlohmann::json got = nlohmann::json::parse(set->ToJson())["staticPolicies"]["policy0"];
  nlohmann::json want = nlohmann::json::parse(
      R"({"effect":"permit","principal":{"op":"is","entity_type":"User","in":{"entity":{"type":"Group","id":"g"}}},"action":{"op":"in","entities":[{"type":"Action","id":"a"},{"type":"Action","id":"b"}]},"resource":{"op":"==","entity":{"type":"Tool","id":"t"}},"conditions":[{"kind":"when","body":{"&&":{"left":{"&&":{"left":{"has":{"left":{".":{"left":{"Var":"context"},"attr":"a"}},"attr":["b","c"]}},"right":{"==":{"left":{"Value":-5},"right":{"neg":{"arg":{"Value":3}}}}}}},"right":{"!":{"arg":{"!":{"arg":{"Value":true}}}}}}}},{"kind":"unless","body":{"==":{"left":{"Set":[{"Value":1},{"Value":"a"},{"Value":{"__entity":{"type":"User","id":"x"}}}]},"right":{"Record":{"a":{"Value":1},"b c":{"Set":[{"ip":[{"Value":"1.2.3.4"}]},{"decimal":[{"Value":"bad"}]}]}}}}}}],"annotations":{"a":"x","b":null}})");
  EXPECT_EQ(got, want) << got.dump();
  auto like = PolicySet::Parse(R"(permit(principal, action, resource) when { "x" like "ab*\*" };)");
  ASSERT_TRUE(like.ok());
  EXPECT_EQ(nlohmann::json::parse(
                like->ToJson())["staticPolicies"]["policy0"]["conditions"][0]["body"]["like"]["pattern"],
            nlohmann::json::parse(R"([{"Literal":"a"},{"Literal":"b"},"Wildcard",{"Literal":"*"}])"));
}

TEST(PolicyJsonTest, JsonDecidesAsTheText) {
  const char* text = R"(
    permit(principal in Group::"staff", action, resource) when { principal.level >= 5 && resource in ToolSet::"web" };
    forbid(principal == User::"bob", action, resource);
    @require_approval permit(principal, action, resource is Tool) when { context has urgent };
  )";
  auto set =
      PolicySet::ParseWithTemplates(std::string(text) + "permit(principal == ?principal, action, resource);",
                                    {Link("policy3", "bob-any", {{"?principal", {"User", "bob"}}})});
  ASSERT_TRUE(set.ok()) << set.status().message();
  std::string json = set->ToJson();
  auto back = PolicySet::FromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->ToJson(), json);
  EXPECT_EQ(back->size(), set->size());
  Entities entities = TestEntities();
  for (const char* who : {"alice", "bob", "carol"}) {
    Response a = Authorize(*set, entities, Req(who));
    Response b = Authorize(*back, entities, Req(who));
    EXPECT_EQ(a.decision, b.decision) << who;
    EXPECT_EQ(a.reason, b.reason) << who;
  }
}

TEST(PolicyJsonTest, AcceptsTheReferencesPolicySetShapes) {
  // A single policy's JSON form is policy0.
  auto one = PolicySet::FromJson(
      R"({"effect":"forbid","principal":{"op":"All"},"action":{"op":"All"},"resource":{"op":"All"},"conditions":[]})");
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->id(0), "policy0");
  EXPECT_TRUE(one->is_forbid(0));
  // Text and JSON policies by id, templates and links.
  auto mixed = PolicySet::FromJson(R"({
    "staticPolicies": {"text": "permit(principal, action, resource);",
                       "json": {"effect":"permit","principal":{"op":"All"},"action":{"op":"All"},"resource":{"op":"All"},
                                "conditions":[{"kind":"when","body":{"Value":[1,{"__extn":{"fn":"decimal","arg":"1.5"}}]}}]}},
    "templates": {"t": "permit(principal == ?principal, action, resource);"},
    "templateLinks": [{"templateId": "t", "newId": "l", "values": {"?principal": {"type": "User", "id": "alice"}}}]})");
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  Response r = Authorize(*mixed, TestEntities(), Req("alice"));
  EXPECT_EQ(r.reason, (std::vector<std::string>{"l", "text"}));
  ASSERT_EQ(r.errors.size(), 1u);  // a set is not a boolean
  EXPECT_EQ(r.errors[0].policy_id, "json");
  // A text staticPolicies is the static set of Parse.
  auto text = PolicySet::FromJson(
      R"({"staticPolicies": "permit(principal, action, resource); forbid(principal, action, resource);"})");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->id(1), "policy1");
}

TEST(PolicyJsonTest, RefusesWhatTheReferenceRefuses) {
  const std::string p = R"("principal":{"op":"All"},"action":{"op":"All"},"resource":{"op":"All"})";
  auto with = [&](const std::string& cond) {
    return R"({"staticPolicies":{"a":{"effect":"permit",)" + p + R"(,"conditions":[{"kind":"when","body":)" +
           cond + "}]}}}";
  };
  const std::string bad[] = {
      with(R"({"Value":null})"),
      with(R"({"foo":[{"Value":"x"}]})"),
      with(R"({"Value":true,"Var":"context"})"),
      with(R"({"Slot":"?principal"})"),
      with(R"({"has":{"left":{"Var":"context"},"attr":[]}})"),
      with(R"({"Value":1.5})"),
      with(R"({"Var":"nobody"})"),
      with(R"({"like":{"left":{"Value":"a"},"pattern":["Star"]}})"),
      with(R"({"is":{"left":{"Var":"principal"},"entity_type":"Not A Type"}})"),
      with(R"({"Value":18446744073709551615})"),
      R"({"staticPolicies":{"a":{"effect":"permit",)" + p + R"(,"conditions":[],"extra":1}}})",
      R"({"staticPolicies":{"a":{"effect":"allow",)" + p + R"(,"conditions":[]}}})",
      R"({"staticPolicies":{"a":{"effect":"permit","principal":{"op":"==","slot":"?principal"},"action":{"op":"All"},"resource":{"op":"All"},"conditions":[]}}})",
      R"({"staticPolicies":{"a":{"effect":"permit","principal":{"op":"All"},"action":{"op":"==","entity":{"type":"User","id":"x"}},"resource":{"op":"All"},"conditions":[]}}})",
      R"({"templates":{"t":"permit(principal, action, resource);"}})",
      R"({"staticPolicies":["permit(principal, action, resource);","permit(principal, action, resource);"]})",
      R"({"policies":{}})",
      R"([])",
      R"(not json)",
  };
  for (const std::string& b : bad) EXPECT_FALSE(PolicySet::FromJson(b).ok()) << b;
}

TEST(PolicyJsonTest, FromFileChoosesByName) {
  auto text = PolicySet::FromFile(
      "p.cedar", "permit(principal == ?principal, action, resource);",
      R"([{"templateId":"policy0","newId":"x","values":{"?principal":{"type":"User","id":"a"}}}])");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(text->id(0), "x");
  auto json = PolicySet::FromFile("p.json", text->ToJson());
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ(json->id(0), "x");
  EXPECT_FALSE(PolicySet::FromFile("p.json", text->ToJson(), "[]").ok());
  EXPECT_FALSE(PolicySet::FromFile("p.cedar", text->ToJson()).ok());
}

}  // namespace
}  // namespace govern::policy
