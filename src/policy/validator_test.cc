// The validator rule by rule: each test names a rule of the reference's strict validator and checks
// a policy that breaks it and one that keeps it. The corpus (schema_corpus_test) compares whole
// answers with the reference; these pin the messages and positions too.
#include "policy/validator.h"

#include <gtest/gtest.h>

#include <string>

namespace govern::policy {
namespace {

constexpr const char* kSchema = R"(
  entity Org;
  entity Team in [Org] { name: String };
  entity User in [Team] { age: Long, nick?: String, roles: Set<String>, boss?: User,
                          home: { city: String, zip?: Long } } tags String;
  entity Doc { owner: User, created: datetime, score?: decimal };
  entity Color enum ["red"];
  action read appliesTo { principal: User, resource: Doc, context: { ip: ipaddr, mfa?: Bool } };
  action admin appliesTo { principal: [User, Team], resource: [Doc, Org] };
  action all;
  action write in [all] appliesTo { principal: User, resource: Doc };)";

const Schema& TheSchema() {
  static const Schema* s = [] {
    auto r = Schema::Parse(kSchema);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return new Schema(std::move(*r));
  }();
  return *s;
}

ValidationResult Check(const std::string& policies) {
  auto set = PolicySet::Parse(policies);
  EXPECT_TRUE(set.ok()) << set.status().message();
  if (!set.ok()) return {{{"parse", set.status().message()}}, {}};
  return ValidatePolicies(TheSchema(), *set);
}

std::string Errors(const std::string& policies) {
  std::string out;
  for (const auto& e : Check(policies).errors) out += (out.empty() ? "" : "\n") + e.message;
  return out;
}

std::string Warnings(const std::string& policies) {
  std::string out;
  for (const auto& e : Check(policies).warnings) out += (out.empty() ? "" : "\n") + e.message;
  return out;
}

const std::string kRead = "permit(principal, action == Action::\"read\", resource) when { ";

TEST(ValidatorTest, ValidPolicyHasNoIssues) {
  ValidationResult r =
      Check(kRead + "principal.age > 18 && resource.owner == principal && context.ip.isLoopback() };");
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.errors.empty());
  EXPECT_TRUE(r.warnings.empty());
}

TEST(ValidatorTest, UnknownEntityTypesAndActions) {
  EXPECT_EQ(Errors("permit(principal == Ghost::\"g\", action, resource);"),
            "for policy `policy0`, unrecognized entity type `Ghost`");
  EXPECT_EQ(Errors("permit(principal, action == Action::\"nope\", resource);"),
            "for policy `policy0`, unrecognized action `Action::\"nope\"`");
  EXPECT_EQ(Errors("permit(principal, action, resource) when { resource is Ghost };"),
            "for policy `policy0`, unrecognized entity type `Ghost`");
  EXPECT_EQ(
      Errors("permit(principal, action, resource) when { resource == Color::\"blue\" };"),
      "for policy `policy0`, entity `Color::\"blue\"` is of an enumerated entity type, but `\"blue\"` is not "
      "declared as a valid eid");
}

TEST(ValidatorTest, ScopeThatNoActionAppliesTo) {
  EXPECT_EQ(
      Warnings("permit(principal is Team, action == Action::\"read\", resource);"),
      "for policy `policy0`, unable to find an applicable action given the policy scope constraints\n"
      "for policy `policy0`, policy is impossible: the policy expression evaluates to false for all valid "
      "requests");
  EXPECT_EQ(Warnings("permit(principal in Team::\"t\", action in Action::\"all\", resource);"), "");
  EXPECT_EQ(Warnings("permit(principal, action == Action::\"admin\", resource in Org::\"o\");"), "");
  EXPECT_NE(Warnings("permit(principal in Doc::\"d\", action, resource);"), "");
}

TEST(ValidatorTest, AttributesMustExist) {
  EXPECT_EQ(Errors(kRead + "principal.height > 1 };"),
            "for policy `policy0`, attribute `height` on entity type `User` not found");
  EXPECT_EQ(Errors(kRead + "context.zone == 1 };"),
            "for policy `policy0`, attribute `zone` in context for Action::\"read\" not found");
  EXPECT_EQ(Errors(kRead + "principal.home.street == \"x\" };"),
            "for policy `policy0`, attribute `street` in record type {city: String, zip?: Long} not found");
  // Under `admin` the principal may be a Team, which has no `age`.
  EXPECT_EQ(Errors("permit(principal, action == Action::\"admin\", resource) when { principal.age > 1 };"),
            "for policy `policy0`, attribute `age` on entity type `Team` not found");
  EXPECT_EQ(Errors("permit(principal, action == Action::\"admin\", resource) when { principal is User && "
                   "principal.age > 1 };"),
            "");
}

TEST(ValidatorTest, OptionalAttributesNeedHas) {
  EXPECT_EQ(
      Errors(kRead + "principal.nick == \"a\" };"),
      "for policy `policy0`, unable to guarantee safety of access to optional attribute `nick` on entity "
      "type `User`");
  EXPECT_EQ(Errors(kRead + "principal has nick && principal.nick == \"a\" };"), "");
  EXPECT_EQ(Errors(kRead + "if principal has nick then principal.nick == \"a\" else false };"), "");
  EXPECT_NE(Errors(kRead + "principal has nick || principal.nick == \"a\" };"), "");
  EXPECT_EQ(
      Errors(kRead + "!(principal has nick) || principal.nick == \"a\" };"),
      "for policy `policy0`, unable to guarantee safety of access to optional attribute `nick` on entity "
      "type `User`");
  EXPECT_EQ(Errors(kRead + "principal.home has zip && principal.home.zip > 1 };"), "");
  EXPECT_EQ(Errors(kRead + "context has mfa && context.mfa };"), "");
  EXPECT_NE(Errors(kRead + "context.mfa };"), "");
  // A guard in one `when` covers the next.
  EXPECT_EQ(
      Errors("permit(principal, action == Action::\"read\", resource) when { principal has boss } when { "
             "principal.boss.age > 1 };"),
      "");
  // The guard is on an expression: another expression is not covered.
  EXPECT_NE(Errors(kRead + "resource.owner has nick && principal.nick == \"a\" };"), "");
}

TEST(ValidatorTest, TagsNeedHasTag) {
  EXPECT_EQ(
      Errors(kRead + "principal.getTag(\"k\") == \"v\" };"),
      "for policy `policy0`, unable to guarantee safety of access to tag `\"k\"` on entity type `User`");
  EXPECT_EQ(Errors(kRead + "principal.hasTag(\"k\") && principal.getTag(\"k\") == \"v\" };"), "");
  EXPECT_NE(Errors(kRead + "resource.getTag(\"k\") == \"v\" };"), "");
}

TEST(ValidatorTest, OperandTypes) {
  EXPECT_EQ(Errors(kRead + "principal.age + \"a\" > 1 };"),
            "for policy `policy0`, unexpected type: expected Long but saw String");
  EXPECT_EQ(Errors(kRead + "!principal.age };"),
            "for policy `policy0`, unexpected type: expected Bool but saw Long");
  EXPECT_EQ(Errors(kRead + "principal.age like \"1*\" };"),
            "for policy `policy0`, unexpected type: expected String but saw Long");
  EXPECT_EQ(Errors(kRead + "principal.age.contains(1) };"),
            "for policy `policy0`, unexpected type: expected Set but saw Long");
  EXPECT_EQ(Errors(kRead + "principal.age };"),
            "for policy `policy0`, unexpected type: expected Bool but saw Long");
  EXPECT_EQ(Errors(kRead + "resource.created < datetime(\"2024-01-01\") };"), "");
  EXPECT_NE(Errors(kRead + "resource.created < 3 };"), "");
  EXPECT_EQ(Errors(kRead + "resource has score && resource.score.lessThan(decimal(\"1.5\")) };"), "");
  EXPECT_NE(Errors(kRead + "context.ip.lessThan(decimal(\"1.5\")) };"), "");
}

TEST(ValidatorTest, IncompatibleTypes) {
  EXPECT_EQ(Errors(kRead + "principal.age == principal.nick };")
                    .find("the types Long and String are not compatible") != std::string::npos,
            true);
  EXPECT_NE(Errors(kRead + "[1, \"a\"].contains(1) };"), "");
  EXPECT_NE(Errors(kRead + "principal.roles.contains(1) };"), "");
  EXPECT_NE(Errors(kRead + "principal.home == {city: \"x\"} };"), "");
  EXPECT_EQ(Errors(kRead + "principal.home == {city: \"x\", zip: 1} };").empty(), false);
  EXPECT_NE(Errors(kRead + "(if context has mfa then 1 else \"a\") == 1 };"), "");
  EXPECT_NE(Errors(kRead + "principal in [Team::\"a\", Doc::\"b\"] };"), "");
  // Literals of different types and entities of different types are merely unequal.
  EXPECT_EQ(Errors(kRead + "1 != \"a\" };"), "");
  EXPECT_EQ(Errors(kRead + "principal != resource };"), "");
}

TEST(ValidatorTest, EmptySetsAndExtensionConstructors) {
  EXPECT_EQ(Errors(kRead + "[].isEmpty() };"),
            "for policy `policy0`, empty set literals are forbidden in policies");
  EXPECT_EQ(Errors(kRead + "ip(principal.nick).isIpv4() };").find("non-literal") != std::string::npos, true);
  EXPECT_NE(Errors(kRead + "context.ip.isInRange(ip(\"10.0.0.0/99\")) };"), "");
  EXPECT_EQ(Errors(kRead + "context.ip.isInRange(ip(\"10.0.0.0/8\")) };"), "");
}

TEST(ValidatorTest, ImpossiblePolicies) {
  const char* kImpossible =
      "for policy `policy0`, policy is impossible: the policy expression evaluates to false for all valid "
      "requests";
  EXPECT_EQ(Warnings(kRead + "false };"), kImpossible);
  EXPECT_EQ(Warnings(kRead + "principal == resource };"), kImpossible);
  EXPECT_EQ(Warnings(kRead + "principal in resource };"), kImpossible);
  EXPECT_EQ(Warnings(kRead + "principal has height };"), kImpossible);
  EXPECT_EQ(Warnings(kRead + "resource is User };"), kImpossible);
  EXPECT_EQ(Warnings(kRead + "action == Action::\"write\" };"), kImpossible);
  EXPECT_EQ(Warnings(kRead + "action in Action::\"all\" };"), kImpossible);
  EXPECT_EQ(Warnings("permit(principal, action, resource) unless { true };"), kImpossible);
  // False short-circuits: the ill-typed right side is never looked at.
  EXPECT_EQ(Errors(kRead + "false && principal.nope };"), "");
  EXPECT_EQ(Errors(kRead + "true || principal.nope };"), "");
  // Errors and impossibility together, as the reference reports them.
  ValidationResult r = Check(kRead + "(principal.nope || true) && false };");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(Warnings(kRead + "principal in Team::\"t\" };"), "");
}

TEST(ValidatorTest, DeepExpressionsAreCheckedWithoutExhaustingTheStack) {
  // The engine's parser bounds nesting (and trees deeper than 1000); what it accepts must validate.
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "!(";
  deep += "principal.age > 1";
  for (int i = 0; i < 100; ++i) deep += ")";
  EXPECT_EQ(Errors(kRead + deep + " };"), "");
  std::string sum = "principal.age";
  for (int i = 0; i < 900; ++i) sum += " + 1";
  EXPECT_EQ(Errors(kRead + sum + " > 1 };"), "");
}

TEST(ValidatorTest, IssuesCarryPolicyIdsAndPositions) {
  ValidationResult r = Check("permit(principal, action, resource);\n" + kRead + "\n  principal.nope };");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].policy_id, "policy1");
  EXPECT_EQ(r.errors[0].line, 3u);
  EXPECT_EQ(r.errors[0].col, 13u);  // the engine places an attribute access at the attribute's name
}

TEST(ValidatorTest, Requests) {
  const Schema& s = TheSchema();
  std::string ctx = R"({"ip": "10.0.0.1"})";
  EXPECT_TRUE(ValidateRequest(s, {"User", "a"}, {"Action", "read"}, {"Doc", "d"}, ctx).ok());
  EXPECT_TRUE(ValidateRequest(s, {"User", "a"}, {"Action", "read"}, {"Doc", "d"},
                              R"({"ip": {"__extn": {"fn": "ip", "arg": "::1"}}, "mfa": true})")
                  .ok());
  EXPECT_EQ(ValidateRequest(s, {"Team", "t"}, {"Action", "read"}, {"Doc", "d"}, ctx).message(),
            "principal type `Team` is not valid for `Action::\"read\"`");
  EXPECT_EQ(ValidateRequest(s, {"User", "a"}, {"Action", "read"}, {"Org", "o"}, ctx).message(),
            "resource type `Org` is not valid for `Action::\"read\"`");
  EXPECT_EQ(ValidateRequest(s, {"User", "a"}, {"Action", "nope"}, {"Doc", "d"}, ctx).message(),
            "action `Action::\"nope\"` does not exist in the supplied schema");
  EXPECT_EQ(ValidateRequest(s, {"User", "a"}, {"Action", "all"}, {"Doc", "d"}, "").message(),
            "principal type `User` is not valid for `Action::\"all\"`");
  EXPECT_EQ(ValidateRequest(s, {"User", "a"}, {"Action", "read"}, {"Doc", "d"}, "{}").message(),
            "context for `Action::\"read\"`: expected the record to have an attribute `ip`, but it does not");
  EXPECT_EQ(
      ValidateRequest(s, {"User", "a"}, {"Action", "read"}, {"Doc", "d"}, R"({"ip": "10.0.0.1", "x": 1})")
          .message(),
      "context for `Action::\"read\"`: record attribute `x` should not exist according to the schema");
  EXPECT_FALSE(
      ValidateRequest(s, {"User", "a"}, {"Action", "read"}, {"Doc", "d"}, R"({"ip": "10.0.0.300"})").ok());
  EXPECT_FALSE(ValidateRequest(s, {"User", "a"}, {"Action", "read"}, {"Doc", "d"}, R"({"ip": 1})").ok());
  EXPECT_FALSE(ValidateRequestJson(s, "{").ok());
  EXPECT_TRUE(
      ValidateRequestJson(s, R"({"principal": {"type": "User", "id": "a"}, "action": {"type": "Action", "id":
      "write"}, "resource": {"type": "Doc", "id": "d"}})")
          .ok());
}

TEST(ValidatorTest, Entities) {
  const Schema& s = TheSchema();
  auto ok = [&](const std::string& json) { return ValidateEntitiesJson(s, json); };
  std::string user =
      R"({"uid": {"type": "User", "id": "a"}, "attrs": {"age": 1, "roles": [], "home": {"city": "c"}},
                         "parents": [{"type": "Team", "id": "t"}, {"__entity": {"type": "Org", "id": "o"}}]})";
  EXPECT_TRUE(ok("[" + user + "]").ok()) << ok("[" + user + "]").message();
  EXPECT_EQ(ok(R"([{"uid": {"type": "User", "id": "a"}, "attrs": {"age": 1, "roles": []}, "parents": []}])")
                .message(),
            "attributes of `User::\"a\"`: expected the record to have an attribute `home`, but it does not");
  EXPECT_EQ(ok(R"([{"uid": {"type": "Doc", "id": "d"}, "attrs": {"owner": {"type": "User", "id": "a"},
                "created": "2024-01-01"}, "parents": [{"type": "Org", "id": "o"}]}])")
                .message(),
            "`Doc::\"d\"` is not allowed to have an ancestor of type `Org` according to the schema");
  EXPECT_EQ(ok(R"([{"uid": {"type": "Ghost", "id": "g"}, "attrs": {}, "parents": []}])").message(),
            "entity `Ghost::\"g\"` has type `Ghost` which is not declared in the schema");
  EXPECT_FALSE(ok(R"([{"uid": {"type": "Color", "id": "green"}, "attrs": {}, "parents": []}])").ok());
  EXPECT_TRUE(ok(R"([{"uid": {"type": "Color", "id": "red"}, "attrs": {}, "parents": []}])").ok());
  EXPECT_FALSE(
      ok(R"([{"uid": {"type": "Team", "id": "t"}, "attrs": {"name": "n"}, "tags": {"k": "v"}}])").ok());
  EXPECT_FALSE(
      ok(R"([{"uid": {"type": "User", "id": "a"}, "attrs": {"age": 1, "roles": [], "home": {"city": "c"}},
                       "tags": {"k": 1}}])")
          .ok());
  EXPECT_TRUE(ok(R"([{"uid": {"type": "Action", "id": "read"}, "attrs": {}, "parents": []}])").ok());
  EXPECT_FALSE(ok(R"([{"uid": {"type": "Action", "id": "nope"}, "attrs": {}, "parents": []}])").ok());
}

TEST(ValidatorTest, ConformRewritesSchemaTypedValues) {
  const Schema& s = TheSchema();
  auto r =
      ConformEntitiesJson(s, R"([{"uid": {"type": "Doc", "id": "d"}, "attrs": {"owner": {"type": "User", "id":
      "a"}, "created": "2024-01-01", "score": "1.5"}, "parents": []}])");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NE(r->find(R"("owner":{"__entity":{"id":"a","type":"User"}})"), std::string::npos) << *r;
  EXPECT_NE(r->find(R"("created":{"__extn":{"arg":"2024-01-01","fn":"datetime"}})"), std::string::npos) << *r;
  EXPECT_NE(r->find(R"("score":{"__extn":{"arg":"1.5","fn":"decimal"}})"), std::string::npos) << *r;
  // The rewritten form is what the engine reads: the decision uses the typed values.
  auto entities = Entities::FromJson(*r);
  ASSERT_TRUE(entities.ok()) << entities.status().message();
  auto req =
      ConformRequestJson(s, R"({"principal": {"type": "User", "id": "a"}, "action": {"type": "Action", "id":
      "read"}, "resource": {"type": "Doc", "id": "d"}, "context": {"ip": "127.0.0.1"}})");
  ASSERT_TRUE(req.ok()) << req.status().message();
  auto request = Request::FromJson(*req);
  ASSERT_TRUE(request.ok());
  auto policies = PolicySet::Parse(
      "permit(principal, action, resource) when { context.ip.isLoopback() && resource.owner == principal && "
      "resource.score.lessThan(decimal(\"2.0\")) };");
  ASSERT_TRUE(policies.ok());
  EXPECT_EQ(Authorize(*policies, *entities, *request).decision, Decision::kAllow);
}

// As the reference (cedar-wasm 4.13 `validate` with templates and templateLinks): templates are
// type-checked with their slots standing for any entity, errors under the template's id; of a link only
// the slot values are checked, under the link's id.
TEST(ValidatorTest, TemplatesAndLinks) {
  auto set = PolicySet::ParseWithTemplates(
      R"(permit(principal == ?principal, action == Action::"read", resource) when { principal.age == "x" };
         permit(principal in ?principal, action == Action::"read", resource in ?resource) when { principal.age > 1 };
         permit(principal is User in ?principal, action == Action::"read", resource);)",
      {{"policy1", "good", {{"?principal", {"Team", "t"}}, {"?resource", {"Doc", "d"}}}},
       {"policy1", "odd-but-fine", {{"?principal", {"Doc", "d"}}, {"?resource", {"Doc", "d"}}}},
       {"policy1", "unknown", {{"?principal", {"Nope", "x"}}, {"?resource", {"Doc", "d"}}}}});
  ASSERT_TRUE(set.ok()) << set.status().message();
  ValidationResult r = ValidatePolicies(TheSchema(), *set);
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].policy_id, "policy0");
  EXPECT_NE(r.errors[0].message.find("not compatible"), std::string::npos) << r.errors[0].message;
  EXPECT_EQ(r.errors[1].policy_id, "unknown");
  EXPECT_NE(r.errors[1].message.find("unrecognized entity type `Nope`"), std::string::npos)
      << r.errors[1].message;
  EXPECT_TRUE(r.warnings.empty());
}

}  // namespace
}  // namespace govern::policy
