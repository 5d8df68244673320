// Schema parsing in both formats: what each declaration yields, how names resolve, and that every
// malformed schema is refused with a message that says where.
#include "policy/schema.h"

#include <gtest/gtest.h>

#include <string>

namespace govern::policy {
namespace {

Schema MustParse(std::string_view text) {
  auto s = Schema::Parse(text);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : Schema();
}

std::string ErrorOf(std::string_view text) {
  auto s = Schema::Parse(text);
  EXPECT_FALSE(s.ok()) << text;
  return s.ok() ? "" : s.status().message();
}

TEST(SchemaTest, CedarSyntaxDeclarations) {
  Schema s = MustParse(R"(
    // comments are allowed
    @doc("an org") entity Org;
    entity Team in [Org] { name: String };
    entity User in [Team, Org] = { age: Long, nick?: String, "quoted key": Bool,
      roles: Set<String>, home: { city: String, zip?: Long }, ip: ipaddr, boss?: User } tags Set<String>;
    entity Color enum ["red", "blue", "red"];
    type Args = { max: Long };
    action read appliesTo { principal: [User], resource: Team, context: { args: Args } };
    action "write data", delete in [read] appliesTo { principal: User, resource: [Team, Org], };
    action group;)");
  const EntityTypeDef* user = s.FindEntityType("User");
  ASSERT_NE(user, nullptr);
  EXPECT_EQ(user->parents, (std::vector<std::string>{"Team", "Org"}));
  ASSERT_EQ(user->attrs.size(), 7u);
  EXPECT_TRUE(user->attrs.at("age").required);
  EXPECT_FALSE(user->attrs.at("nick").required);
  EXPECT_EQ(user->attrs.at("roles").type->ToString(), "Set<String>");
  EXPECT_EQ(user->attrs.at("home").type->ToString(), "{city: String, zip?: Long}");
  EXPECT_EQ(user->attrs.at("ip").type->ToString(), "ipaddr");
  EXPECT_EQ(user->attrs.at("boss").type->ToString(), "User");
  ASSERT_NE(user->tags, nullptr);
  EXPECT_EQ(user->tags->ToString(), "Set<String>");
  const EntityTypeDef* color = s.FindEntityType("Color");
  ASSERT_NE(color, nullptr);
  EXPECT_TRUE(color->is_enum);
  EXPECT_EQ(color->enum_ids, (std::vector<std::string>{"red", "blue"}));

  EXPECT_TRUE(s.MayBeIn("User", "Org"));
  EXPECT_TRUE(s.MayBeIn("Team", "Org"));
  EXPECT_FALSE(s.MayBeIn("Org", "Team"));
  EXPECT_FALSE(s.MayBeIn("User", "User"));

  const ActionDef* read = s.FindAction("Action", "read");
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->principals, std::vector<std::string>{"User"});
  EXPECT_EQ(read->resources, std::vector<std::string>{"Team"});
  EXPECT_EQ(read->context->ToString(), "{args: {max: Long}}");
  const ActionDef* write = s.FindAction("Action", "write data");
  ASSERT_NE(write, nullptr);
  EXPECT_EQ(write->ancestors, (std::vector<ActionRef>{{"Action", "read"}}));
  EXPECT_EQ(write->resources, (std::vector<std::string>{"Team", "Org"}));
  ASSERT_NE(s.FindAction("Action", "delete"), nullptr);
  const ActionDef* group = s.FindAction("Action", "group");
  ASSERT_NE(group, nullptr);
  EXPECT_FALSE(group->applies);
  EXPECT_TRUE(s.IsActionType("Action"));
}

TEST(SchemaTest, NamespacesQualifyAndResolve) {
  Schema s = MustParse(R"(
    entity Shared;
    namespace Acme::Corp {
      type Level = Long;
      entity Agent in [Team, Shared] { level: Level, tool: Tool };
      entity Team;
      entity Tool;
      action call appliesTo { principal: Agent, resource: Tool };
      action call2 in [call, Acme::Corp::Action::"call"];
    }
    action ping appliesTo { principal: Acme::Corp::Agent, resource: Shared };)");
  const EntityTypeDef* agent = s.FindEntityType("Acme::Corp::Agent");
  ASSERT_NE(agent, nullptr);
  EXPECT_EQ(agent->parents, (std::vector<std::string>{"Acme::Corp::Team", "Shared"}));
  EXPECT_EQ(agent->attrs.at("level").type->ToString(), "Long");
  EXPECT_EQ(agent->attrs.at("tool").type->ToString(), "Acme::Corp::Tool");
  EXPECT_NE(s.FindAction("Acme::Corp::Action", "call"), nullptr);
  EXPECT_EQ(s.FindAction("Action", "call"), nullptr);
  EXPECT_EQ(s.FindAction("Acme::Corp::Action", "call2")->parents.size(), 1u);
  EXPECT_EQ(s.FindAction("Action", "ping")->principals, std::vector<std::string>{"Acme::Corp::Agent"});
  // A name in another namespace must be qualified.
  EXPECT_NE(
      ErrorOf("namespace A { entity U in [T]; } namespace B { entity T; }").find("unknown entity type `T`"),
      std::string::npos);
}

TEST(SchemaTest, JsonFormat) {
  Schema s = MustParse(R"({"NS": {
    "commonTypes": {"Meta": {"type": "Record", "attributes": {"level": {"type": "Long"}}}},
    "entityTypes": {
      "User": {"memberOfTypes": ["Team"], "shape": {"type": "Record", "attributes": {
        "age": {"type": "Long"}, "name": {"type": "String", "required": false},
        "tags": {"type": "Set", "element": {"type": "String"}}, "meta": {"type": "Meta"},
        "boss": {"type": "Entity", "name": "User"}, "ip": {"type": "Extension", "name": "ipaddr"},
        "team": {"type": "EntityOrCommon", "name": "Team"}, "ok": {"type": "Boolean"}}},
        "tags": {"type": "String"}},
      "Team": {},
      "Color": {"enum": ["red"]}},
    "actions": {
      "all": {},
      "view": {"memberOf": [{"id": "all"}], "appliesTo": {"principalTypes": ["User"], "resourceTypes": ["NS::Team"],
               "context": {"type": "Record", "attributes": {"n": {"type": "Long"}}}}}}}})");
  const EntityTypeDef* user = s.FindEntityType("NS::User");
  ASSERT_NE(user, nullptr);
  EXPECT_EQ(user->attrs.at("meta").type->ToString(), "{level: Long}");
  EXPECT_EQ(user->attrs.at("boss").type->ToString(), "NS::User");
  EXPECT_EQ(user->attrs.at("team").type->ToString(), "NS::Team");
  EXPECT_EQ(user->attrs.at("ok").type->ToString(), "Bool");
  EXPECT_FALSE(user->attrs.at("name").required);
  EXPECT_EQ(user->tags->ToString(), "String");
  EXPECT_TRUE(s.FindEntityType("NS::Color")->is_enum);
  const ActionDef* view = s.FindAction("NS::Action", "view");
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(view->resources, std::vector<std::string>{"NS::Team"});
  EXPECT_EQ(view->ancestors, (std::vector<ActionRef>{{"NS::Action", "all"}}));
  EXPECT_EQ(view->context->ToString(), "{n: Long}");
}

TEST(SchemaTest, CedarSyntaxErrorsHaveLineAndColumn) {
  EXPECT_EQ(ErrorOf("entity User { a: Long "), "1:23: expected `,` or `}`, found end of input");
  EXPECT_EQ(ErrorOf("entity User\n  { a Long };"), "2:7: expected `:`, found `Long`");
  EXPECT_EQ(ErrorOf("entity U;\nentiti V;"),
            "2:1: expected `entity`, `action`, `type` or `namespace`, found `entiti`");
  EXPECT_EQ(ErrorOf("entity U { a: Long } $"), "1:22: unexpected character `$`");
  EXPECT_EQ(ErrorOf("entity U { \"a"), "1:12: unterminated string literal");
  EXPECT_EQ(ErrorOf("entity U;\n\nentity V { a: Lng };"),
            "3:15: failed to resolve type: `Lng` has not been declared as a common or entity type");
  EXPECT_EQ(ErrorOf("entity U in [Nope];"), "1:14: unknown entity type `Nope`");
  EXPECT_EQ(ErrorOf("entity U; entity U;"), "1:18: duplicate entity type `U`");
  EXPECT_EQ(ErrorOf("action a; action a;"), "1:18: duplicate action Action::\"a\"");
  EXPECT_EQ(ErrorOf("action a in [b];"), "1:14: action Action::\"a\" is in undeclared action Action::\"b\"");
  EXPECT_EQ(ErrorOf("action a in [b]; action b in [a];"),
            "1:8: the action hierarchy has a cycle through Action::\"a\"");
  EXPECT_EQ(ErrorOf("type A = B; type B = A; entity U { a: A };"), "1:10: common type `B` refers to itself");
  EXPECT_EQ(ErrorOf("type Long = String;"), "1:6: `Long` is a reserved type name");
  EXPECT_EQ(ErrorOf("entity U; action a appliesTo { resource: U };"),
            "1:11: `appliesTo` of action `a` lacks `principal`");
  EXPECT_EQ(ErrorOf("entity U; action a appliesTo { principal: [], resource: U };"),
            "1:32: `principal` must name at least one entity type");
  EXPECT_EQ(ErrorOf("entity U; action a appliesTo { principal: U, principal: U, resource: U };"),
            "1:46: duplicate `principal` declaration");
  EXPECT_EQ(ErrorOf("entity U; action a appliesTo { principal: U, resource: U, context: Long };"),
            "1:68: the context of action Action::\"a\" must be a record, not Long");
  EXPECT_EQ(ErrorOf("entity E enum [];"), "1:8: enumerated entity type `E` has no ids");
  EXPECT_EQ(ErrorOf("entity U { a: Boolean };"),
            "1:15: failed to resolve type: `Boolean` has not been declared as a common or entity type");
  EXPECT_EQ(ErrorOf("entity U { \"\\q\": Long };").substr(0, 5), "1:12:");
  EXPECT_EQ(ErrorOf("entity in;"), "1:8: `in` is a reserved identifier");
  EXPECT_EQ(ErrorOf("entity U { has: Long };"), "1:12: `has` is a reserved identifier");
  EXPECT_EQ(ErrorOf("entity U in [T, ]; entity T;"), "1:15: expected `,` or `]`, found `,`");
  EXPECT_EQ(ErrorOf("action a in [];"), "1:14: expected an action name, found `]`");
  EXPECT_EQ(ErrorOf("entity E enum [\"a\",];"), "1:19: expected `,` or `]`, found `,`");
  EXPECT_EQ(ErrorOf("entity Action;"),
            "1:8: entity type `Action` may not be declared: it is the action type");
  EXPECT_EQ(ErrorOf("namespace __cedar { entity A; }"), "1:28: use of the reserved `__cedar` namespace");
  // Trailing commas are fine in records and appliesTo, as in the reference.
  EXPECT_TRUE(
      Schema::Parse("entity U { a: Long, }; action a appliesTo { principal: U, resource: U, };").ok());
}

TEST(SchemaTest, JsonErrorsNameThePlace) {
  EXPECT_NE(ErrorOf("{\"\": {\"entityTypes\": {}, ").find("schema is not valid JSON"), std::string::npos);
  EXPECT_EQ(ErrorOf(R"({"": {"entityTypes": {}, "actions": {}, "foo": 1}})"), "\"\": unknown field `foo`");
  EXPECT_EQ(ErrorOf(R"({"": {"entityTypes": {}}})"), "\"\": missing field `actions`");
  EXPECT_EQ(
      ErrorOf(
          R"({"N": {"entityTypes": {"U": {"shape": {"type": "Record", "attributes": {"a": {"type": "Lng"}}}}}, "actions": {}}})"),
      "N.entityTypes.U.shape.attributes.a: failed to resolve type: `Lng` has not been declared as a common "
      "or entity type");
  EXPECT_EQ(ErrorOf(R"({"": {"entityTypes": {"U": {"shape": {"type": "Long"}}}, "actions": {}}})"),
            "\"\".entityTypes.U.shape: the shape of entity type `U` must be a record, not Long");
  EXPECT_EQ(
      ErrorOf(
          R"({"": {"entityTypes": {"U": {"shape": {"type": "Record", "attributes": {"s": {"type": "Set"}}}}}, "actions": {}}})"),
      "\"\".entityTypes.U.shape.attributes.s: missing field `element`");
  EXPECT_EQ(
      ErrorOf(
          R"({"": {"entityTypes": {"U": {"shape": {"type": "Record", "additionalAttributes": true}}}, "actions": {}}})"),
      "\"\".entityTypes.U.shape: records and entities with `additionalAttributes` are not supported");
  // {"type": "Name"} is a common or built-in type; an entity type needs "Entity" or "EntityOrCommon".
  EXPECT_EQ(
      ErrorOf(
          R"({"": {"entityTypes": {"D": {}, "U": {"shape": {"type": "Record", "attributes": {"d": {"type": "D"}}}}}, "actions": {}}})"),
      "\"\".entityTypes.U.shape.attributes.d: failed to resolve type: `D` has not been declared as a common "
      "or "
      "entity type");
  EXPECT_TRUE(
      Schema::Parse(
          R"({"": {"entityTypes": {"U": {"shape": {"type": "Record", "attributes": {"d": {"type": "ipaddr"}}}}}, "actions": {}}})")
          .ok());
  EXPECT_EQ(ErrorOf(R"({"": {"entityTypes": {}, "actions": {"a": {"appliesTo": {"resourceTypes": []}}}}})"),
            "\"\".actions.a.appliesTo: missing field `principalTypes`");
  // Only an object is read as JSON; anything else is the Cedar syntax.
  EXPECT_EQ(ErrorOf("[]"), "1:1: expected `entity`, `action`, `type` or `namespace`, found `[`");
}

TEST(SchemaTest, DeepNestingIsRefusedNotACrash) {
  std::string deep = "entity U { a: ";
  for (int i = 0; i < 5000; ++i) deep += "Set<";
  deep += "Long";
  for (int i = 0; i < 5000; ++i) deep += ">";
  deep += " };";
  EXPECT_NE(ErrorOf(deep).find("nested too deeply"), std::string::npos);
  std::string json = R"({"": {"entityTypes": {"U": {"shape": )";
  for (int i = 0; i < 5000; ++i) json += R"({"type": "Set", "element": )";
  json += R"({"type": "Long"})";
  for (int i = 0; i < 5000; ++i) json += "}";
  json += R"(}}, "actions": {}}})";
  EXPECT_NE(ErrorOf(json).find("nested too deeply"), std::string::npos);
}

}  // namespace
}  // namespace govern::policy
