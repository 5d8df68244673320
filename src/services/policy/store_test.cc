// The bundle server's store and keys against the shared test PostgreSQL: validation, versioning,
// concurrent publishes, stable bundle bytes (ETags), and key scopes.
#include "services/policy/store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "bundle/bundle.h"
#include "crypto/encoding.h"
#include "db/connection.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"
#include "services/policy/api_keys.h"
#include "services/policy/schema.h"

namespace govern::policy_service {
namespace {

constexpr const char* kPermit = "permit(principal, action == Action::\"read\", resource);\n";
constexpr const char* kForbid = "forbid(principal, action, resource) when { context.risky };\n";

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_ = std::make_unique<db::testing::TestDatabase>(std::move(*db));
    auto pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = 8});
    ASSERT_TRUE(pool.ok()) << pool.status().message();
    pool_ = std::move(*pool);
    auto applied = db::Migrator("policy", Migrations()).Apply(*pool_);
    ASSERT_TRUE(applied.ok()) << applied.status().message();
    auto key = bundle::SigningKey::Generate("test-key");
    ASSERT_TRUE(key.ok());
    key_ = std::make_unique<bundle::SigningKey>(std::move(*key));
    ASSERT_TRUE(trust_.Add(*key_->Public()).ok());
  }
  db::Connection& Conn() {
    if (!lease_) lease_.emplace(std::move(*pool_->Checkout()));
    return **lease_;
  }
  void TearDown() override { lease_.reset(); }

  Result<PublishResult> Put(std::string_view org, std::string policies, int64_t created = 1'800'000'000) {
    PolicySource s;
    s.policies = std::move(policies);
    return Publish(Conn(), org, s, {key_.get()}, created);
  }

  std::unique_ptr<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Pool> pool_;
  std::optional<db::Pool::Lease> lease_;
  std::unique_ptr<bundle::SigningKey> key_;
  bundle::TrustStore trust_;
};

TEST(Validate, ReportsPolicyErrorsWithLineAndColumn) {
  PolicySource s;
  s.policies = std::string(kPermit) + "permit(principal, action, resource) when { 1 + };\n";
  auto errors = Validate(s);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].file, "policies");
  EXPECT_EQ(errors[0].line, 2);
  EXPECT_GT(errors[0].column, 0);
  EXPECT_FALSE(errors[0].message.empty());
}

TEST(Validate, ReportsEntitiesAndLimits) {
  PolicySource s;
  s.policies = kPermit;
  s.entities = "[{\"uid\": {\"type\": \"Agent\"}}]";
  s.limits = "[1]";
  auto errors = Validate(s);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].file, "entities");
  EXPECT_EQ(errors[1].file, "limits");
  s.entities = "[{\"uid\": {\"type\": \"Agent\", \"id\": \"a\"}, \"attrs\": {}, \"parents\": []}]";
  s.limits = R"([{"id": "rate", "principal": "Agent::\"a\"", "rate": {"requests": 10, "per": "1m"}}])";
  EXPECT_TRUE(Validate(s).empty());
  s.limits = "{}";  // limits.json is an array of limits
  ASSERT_EQ(Validate(s).size(), 1u);
  EXPECT_EQ(Validate(s)[0].file, "limits");
  s.limits.reset();
  s.policies = "@require_approval forbid(principal, action, resource);";  // the annotation is for permits
  ASSERT_EQ(Validate(s).size(), 1u);
  EXPECT_EQ(Validate(s)[0].file, "bundle");
}

constexpr const char* kSchema = R"(entity Team;
entity Agent in [Team] { owner: String, ip?: ipaddr };
entity Tool;
action call_tool appliesTo { principal: Agent, resource: Tool, context: { risky: Bool } };
)";

TEST(Validate, ChecksPoliciesAgainstTheSchemaReportingEveryError) {
  PolicySource s;
  s.schema = kSchema;
  s.policies = R"(permit(principal in Team::"eng", action == Action::"call_tool", resource == Tool::"docs");
permit(principal, action == Action::"call_tool", resource) when { principal.owner == 3 };
forbid(principal, action == Action::"call_tool", resource)
  when { context.risky && principal.ip.isLoopback() };
permit(principal == Robot::"r2", action, resource);
)";
  auto errors = Validate(s);
  ASSERT_EQ(errors.size(), 3u);
  for (const SourceError& e : errors) {
    EXPECT_EQ(e.file, "policies");
    EXPECT_TRUE(e.schema_violation);
    EXPECT_GT(e.column, 0);
  }
  EXPECT_EQ(errors[0].line, 2);  // owner is a String, not a Long
  EXPECT_EQ(errors[1].line, 4);  // ip is optional and not guarded by `has`
  EXPECT_EQ(errors[2].line, 5);  // no entity type Robot
  EXPECT_NE(errors[2].message.find("Robot"), std::string::npos) << errors[2].message;

  // The same as a JSON schema value; fixed, the set is valid.
  s.schema =
      R"({"": {"entityTypes": {"Team": {}, "Agent": {"memberOfTypes": ["Team"], "shape": {"type": "Record",
      "attributes": {"owner": {"type": "String"}}}}, "Tool": {}}, "actions": {"call_tool": {"appliesTo":
      {"principalTypes": ["Agent"], "resourceTypes": ["Tool"]}}}}})";
  s.policies =
      R"(permit(principal in Team::"eng", action == Action::"call_tool", resource) when { principal.owner == "x" };)";
  EXPECT_TRUE(Validate(s).empty());
}

TEST(Validate, ChecksEntitiesAgainstTheSchemaAndConformsThem) {
  PolicySource s;
  s.schema = kSchema;
  s.policies =
      R"(permit(principal, action == Action::"call_tool", resource) when { principal has ip && principal.ip.isLoopback() };)";
  s.entities =
      R"([{"uid": {"type": "Agent", "id": "a1"}, "attrs": {"owner": "ann", "ip": "127.0.0.1"}, "parents": [{"type": "Team", "id": "eng"}]}])";
  std::string conformed;
  ASSERT_TRUE(Validate(s, &conformed).empty());
  // The sidecar decides without the schema: the address is written as the extension value.
  EXPECT_NE(conformed.find("__extn"), std::string::npos) << conformed;

  s.entities = R"([{"uid": {"type": "Agent", "id": "a1"}, "attrs": {"owner": 7}, "parents": []}])";
  auto errors = Validate(s, &conformed);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].file, "entities");
  EXPECT_TRUE(errors[0].schema_violation);
  EXPECT_EQ(conformed, s.entities);

  s.entities = R"([{"uid": {"type": "Robot", "id": "r"}, "attrs": {}, "parents": []}])";
  errors = Validate(s);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].file, "entities");
}

TEST(Validate, ASchemaThatDoesNotParseIsAnErrorWithItsPosition) {
  PolicySource s;
  s.policies = kPermit;
  s.schema = "entity Team;\nentity Agent in [Team {\n";
  auto errors = Validate(s);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].file, "schema");
  EXPECT_FALSE(errors[0].schema_violation);
  EXPECT_EQ(errors[0].line, 2);
  // Without a schema nothing is checked beyond parsing.
  s.schema.reset();
  s.policies = R"(permit(principal == Robot::"r2", action, resource);)";
  EXPECT_TRUE(Validate(s).empty());
}

TEST(ParseSourceJson, TakesTextOrJsonValuesAndRefusesTheRest) {
  auto s = ParseSourceJson(R"({"policies": "permit(principal, action, resource);",
                               "entities": [{"uid": {"type": "A", "id": "a"}, "attrs": {}, "parents": []}],
                               "limits": {"x": 1}, "schema": "entity A;"})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->entities, R"([{"attrs":{},"parents":[],"uid":{"id":"a","type":"A"}}])");
  EXPECT_EQ(s->limits, std::optional<std::string>(R"({"x":1})"));
  EXPECT_EQ(s->schema, std::optional<std::string>("entity A;"));
  s = ParseSourceJson(R"({"policies": "", "schema": {"": {"entityTypes": {}, "actions": {}}}})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->schema, std::optional<std::string>(R"({"":{"actions":{},"entityTypes":{}}})"));
  s = ParseSourceJson(R"({"policies": "", "entities": "[]"})");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->entities, "[]");
  EXPECT_FALSE(s->limits.has_value());
  for (const char* bad :
       {"", "[]", "nope", R"({"entities": []})", R"({"policies": 1})", R"({"policies": "", "schema": 1})",
        R"({"policies": "", "schema": []})", R"({"policies": "", "other": 1})"}) {
    EXPECT_EQ(ParseSourceJson(bad).status().code(), Code::kInvalidArgument) << bad;
  }
  std::string deep =
      R"({"policies": "", "entities": )" + std::string(1000, '[') + std::string(1000, ']') + "}";
  EXPECT_EQ(ParseSourceJson(deep).status().code(), Code::kInvalidArgument);
}

constexpr const char* kTemplate =
    "@id(\"reader\")\npermit(principal == ?principal, action == Action::\"read\", resource in ?resource);\n";
constexpr const char* kLinks =
    R"([{"templateId": "policy0", "newId": "alice-docs", "values": {"?principal": {"type": "User", "id": )"
    R"("alice"}, "?resource": {"type": "Folder", "id": "docs"}}}])";

TEST(Validate, TakesTemplatesWithLinksAndNamesABadLink) {
  PolicySource s;
  s.policies = kTemplate;
  EXPECT_TRUE(Validate(s).empty());  // a template without links is valid (it decides nothing)
  s.links = kLinks;
  EXPECT_TRUE(Validate(s).empty());
  // A link to a template that is not there: reported against "links", naming the link.
  s.links = R"([{"templateId": "policy7", "newId": "bob-docs", "values": {}}])";
  auto errors = Validate(s);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].file, "links");
  EXPECT_NE(errors[0].message.find("bob-docs"), std::string::npos) << errors[0].message;
  EXPECT_NE(errors[0].message.find("policy7"), std::string::npos) << errors[0].message;
  // A slot left unfilled, and links that are not links.
  s.links =
      R"([{"templateId": "policy0", "newId": "half", "values": {"?principal": {"type": "User", "id": "a"}}}])";
  errors = Validate(s);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].file, "links");
  EXPECT_NE(errors[0].message.find("half"), std::string::npos) << errors[0].message;
  s.links = "{}";
  errors = Validate(s);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].file, "links");
  // The text's own error keeps its position and is not blamed on the links.
  s.links = kLinks;
  s.policies = "permit(principal == ?principal, action, resource)\n;;";
  errors = Validate(s);
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].file, "policies");
  EXPECT_GT(errors[0].line, 0);
}

TEST(Validate, ChecksTemplatesAndLinksAgainstTheSchema) {
  PolicySource s;
  s.schema = R"(entity User; entity Folder; entity Doc in [Folder];
action read appliesTo { principal: User, resource: [Doc, Folder] };)";
  s.policies = kTemplate;
  s.links = kLinks;
  auto errors = Validate(s);
  EXPECT_TRUE(errors.empty()) << errors[0].message;
  // A template comparing an attribute the schema does not declare.
  s.policies =
      std::string("permit(principal == ?principal, action == Action::\"read\", resource in ?resource) ") +
      "when { principal.level > 3 };\n";
  errors = Validate(s);
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].file, "policies");
  EXPECT_TRUE(errors[0].schema_violation);
}

TEST(Validate, TakesAJsonPolicySet) {
  PolicySource s;
  s.policies_json = true;
  s.policies = std::string(R"({"templates": {"reader": )") +
               R"("permit(principal == ?principal, action, resource);"}, "templateLinks": [{"templateId": )" +
               R"("reader", "newId": "alice", "values": {"?principal": {"type": "User", "id": "alice"}}}]})";
  auto errors = Validate(s);
  EXPECT_TRUE(errors.empty()) << errors[0].message;
  s.policies = R"({"templates": {"reader": "permit(principal == ?principal, action, resource);"},
      "templateLinks": [{"templateId": "nope", "newId": "alice", "values": {}}]})";
  errors = Validate(s);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].file, "policies");
  EXPECT_NE(errors[0].message.find("alice"), std::string::npos) << errors[0].message;
}

TEST(ParseSourceJson, TakesLinksAndJsonPolicySets) {
  auto s = ParseSourceJson(
      R"({"policies": "x", "links": [{"templateId": "policy0", "newId": "a", "values": {}}]})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_FALSE(s->policies_json);
  EXPECT_EQ(s->links, std::optional<std::string>(R"([{"newId":"a","templateId":"policy0","values":{}}])"));
  s = ParseSourceJson(R"({"policies": "x", "links": "[]"})");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->links, std::optional<std::string>("[]"));
  s = ParseSourceJson(R"({"policies": {"staticPolicies": "permit(principal, action, resource);"}})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->policies_json);
  EXPECT_EQ(s->policies, R"({"staticPolicies":"permit(principal, action, resource);"})");
  EXPECT_FALSE(s->links.has_value());
  for (const char* bad : {R"({"policies": {}, "links": []})", R"({"policies": "", "links": 1})",
                          R"({"policies": "", "links": {}})", R"({"policies": []})"}) {
    EXPECT_EQ(ParseSourceJson(bad).status().code(), Code::kInvalidArgument) << bad;
  }
}

TEST_F(StoreTest, TemplatesLinksAndJsonSetsAreBundledAndReadBack) {
  PolicySource s;
  s.policies = kTemplate;
  s.links = kLinks;
  auto v1 = Publish(Conn(), "acme", s, {key_.get()}, 1'800'000'000);
  ASSERT_TRUE(v1.ok()) << v1.status().message();
  auto first = Read(Conn(), "acme", 1, true);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->source.policies, kTemplate);
  EXPECT_EQ(first->source.links, std::optional<std::string>(kLinks));
  EXPECT_FALSE(first->source.policies_json);
  bundle::Verdict verdict = bundle::Verify(first->bundle, trust_);
  ASSERT_TRUE(verdict.ok()) << verdict.ToString();
  ASSERT_NE(verdict.bundle->File(kPoliciesFile), nullptr);
  ASSERT_NE(verdict.bundle->File(kLinksFile), nullptr);
  EXPECT_EQ(*verdict.bundle->File(kLinksFile), kLinks);
  EXPECT_EQ(verdict.bundle->File(kPoliciesJsonFile), nullptr);
  // The same text with other links is a new version; the same again is not.
  s.links = "[]";
  auto v2 = Publish(Conn(), "acme", s, {key_.get()}, 1'800'000'001);
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->version, 2u);
  auto v2again = Publish(Conn(), "acme", s, {key_.get()}, 1'800'000'002);
  ASSERT_TRUE(v2again.ok());
  EXPECT_TRUE(v2again->unchanged);
  // A JSON policy set is bundled as policies.json and read back as published.
  PolicySource j;
  j.policies_json = true;
  j.policies = R"({"staticPolicies":"permit(principal, action, resource);"})";
  auto v3 = Publish(Conn(), "acme", j, {key_.get()}, 1'800'000'003);
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ(v3->version, 3u);
  auto third = Read(Conn(), "acme", 3, true);
  ASSERT_TRUE(third.ok()) << third.status().message();
  EXPECT_TRUE(third->source.policies_json);
  EXPECT_EQ(third->source.policies, j.policies);
  EXPECT_FALSE(third->source.links.has_value());
  verdict = bundle::Verify(third->bundle, trust_);
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict.bundle->File(kPoliciesFile), nullptr);
  ASSERT_NE(verdict.bundle->File(kPoliciesJsonFile), nullptr);
  EXPECT_EQ(*verdict.bundle->File(kPoliciesJsonFile), j.policies);
  // Plain text (as stored before templates) still reads back unchanged.
  ASSERT_TRUE(Put("acme", kPermit).ok());
  auto fourth = Read(Conn(), "acme", 4, false);
  ASSERT_TRUE(fourth.ok());
  EXPECT_EQ(fourth->source.policies, kPermit);
  EXPECT_FALSE(fourth->source.policies_json);
  EXPECT_FALSE(fourth->source.links.has_value());
}

// How the server stored a source with links or a JSON policy set before migration 2 gave them columns:
// an envelope in `policies` (the old store.cc's EncodePolicies, kept here verbatim).
std::string OldEnvelope(const PolicySource& s) {
  nlohmann::json env = {{"govern_source", 1},
                        {"json", s.policies_json},
                        {"policies", s.policies},
                        {"links", s.links ? nlohmann::json(*s.links) : nlohmann::json(nullptr)}};
  return env.dump();
}

TEST(Migrations, UnpackTheEnvelopesOfRowsStoredBeforeTheColumns) {
  auto db = db::testing::TestDatabase::Create();
  ASSERT_TRUE(db.ok()) << db.status().message();
  auto pool = db::Pool::Create({.conninfo = db->conninfo(), .max_size = 2});
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  auto lease = (*pool)->Checkout();
  ASSERT_TRUE(lease.ok()) << lease.status().message();
  db::Connection& conn = **lease;
  // The schema as the old server left it: every migration but the one adding the columns.
  std::vector<db::Migration> all = Migrations();
  ASSERT_EQ(all.back().version, 2);
  std::vector<db::Migration> before(all.begin(), all.end() - 1);
  auto applied = db::Migrator("policy", before).Apply(conn);
  ASSERT_TRUE(applied.ok()) << applied.status().message();

  // Rows as the old server wrote them: plain Cedar text, a template with links (text with quotes, a tab
  // and non-ASCII, so unescaping is checked), a JSON policy set, and (latest) the template again.
  PolicySource plain;
  plain.policies = kPermit;
  PolicySource linked;
  linked.policies = std::string("// caf\u00e9 \"r\u00e9sum\u00e9\"\t\\\n") + kTemplate;
  linked.links = kLinks;
  linked.entities = R"([{"uid": {"type": "User", "id": "alice"}, "attrs": {}, "parents": []}])";
  PolicySource json;
  json.policies_json = true;
  json.policies = R"({"staticPolicies":"permit(principal, action, resource);"})";
  json.limits = "[]";
  const std::vector<std::pair<std::string, const PolicySource*>> rows = {{kPermit, &plain},
                                                                         {OldEnvelope(linked), &linked},
                                                                         {OldEnvelope(json), &json},
                                                                         {OldEnvelope(linked), &linked}};
  for (size_t i = 0; i < rows.size(); ++i) {
    const PolicySource& src = *rows[i].second;
    auto ins = conn.Exec(
        "INSERT INTO policy_versions (org, version, policies, entities, schema, limits, bundle, digest, "
        "signed_by) VALUES ('acme', $1, $2, $3, $4, $5, '\\x00', $6, 'old-key')",
        db::Params(static_cast<int64_t>(i + 1), rows[i].first, src.entities, src.schema, src.limits,
                   "digest" + std::to_string(i + 1)));
    ASSERT_TRUE(ins.ok()) << ins.status().message();
  }
  ASSERT_TRUE(conn.Exec("INSERT INTO policy_heads (org, version) VALUES ('acme', 4)").ok());
  // A row beginning with '{' that is JSON but no envelope is left as it was.
  ASSERT_TRUE(conn.Exec("INSERT INTO policy_versions (org, version, policies, entities, bundle, digest, "
                        "signed_by) VALUES ('other', 1, '{\"a\": 1}', '[]', '\\x00', 'd', 'k')")
                  .ok());

  applied = db::Migrator("policy", all).Apply(conn);
  ASSERT_TRUE(applied.ok()) << applied.status().message();
  EXPECT_EQ(*applied, 1);

  for (size_t i = 0; i < rows.size(); ++i) {
    const PolicySource& want = *rows[i].second;
    auto got = Read(conn, "acme", i + 1, false);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->source.policies, want.policies) << "version " << i + 1;
    EXPECT_EQ(got->source.policies_json, want.policies_json) << "version " << i + 1;
    EXPECT_EQ(got->source.links, want.links) << "version " << i + 1;
    EXPECT_EQ(got->source.entities, want.entities) << "version " << i + 1;
    EXPECT_EQ(got->source.schema, want.schema) << "version " << i + 1;
    EXPECT_EQ(got->source.limits, want.limits) << "version " << i + 1;
    EXPECT_EQ(got->digest, "digest" + std::to_string(i + 1));
  }
  auto columns =
      conn.Exec("SELECT policies, links IS NULL, policies_format FROM policy_versions ORDER BY org, version");
  ASSERT_TRUE(columns.ok()) << columns.status().message();
  ASSERT_EQ(columns->size(), 5);
  EXPECT_EQ(columns->Text(0, 2), "cedar");
  EXPECT_EQ(columns->Text(1, 2), "cedar");
  EXPECT_EQ(columns->Text(2, 2), "json");
  EXPECT_EQ(columns->Text(2, 1), "t");
  EXPECT_EQ(columns->Text(4, 0), R"({"a": 1})");
  EXPECT_EQ(columns->Text(4, 2), "cedar");

  // The latest migrated version is the same source as the template with links: publishing it again
  // makes no new version.
  auto key = bundle::SigningKey::Generate("test-key");
  ASSERT_TRUE(key.ok());
  auto again = Publish(conn, "acme", linked, {&*key}, 1'800'000'000);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again->unchanged);
  EXPECT_EQ(again->version, 4u);
  auto next = Publish(conn, "acme", json, {&*key}, 1'800'000'000);
  ASSERT_TRUE(next.ok()) << next.status().message();
  EXPECT_EQ(next->version, 5u);

  // The columns refuse what the store never writes.
  EXPECT_FALSE(conn.Exec("UPDATE policy_versions SET policies_format = 'yaml' WHERE org = 'acme' AND "
                         "version = 1")
                   .ok());
  EXPECT_FALSE(conn.Exec("UPDATE policy_versions SET links = '[]' WHERE org = 'acme' AND version = 3").ok());
}

TEST_F(StoreTest, VersionsIncreasePerOrganisationAndKeepHistory) {
  auto v1 = Put("acme", kPermit);
  ASSERT_TRUE(v1.ok()) << v1.status().message();
  EXPECT_EQ(v1->version, 1u);
  EXPECT_FALSE(v1->unchanged);
  auto v2 = Put("acme", std::string(kPermit) + kForbid);
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->version, 2u);
  EXPECT_NE(v1->digest, v2->digest);
  auto other = Put("globex", kPermit);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->version, 1u);

  // The same set again is no new version.
  auto again = Put("acme", std::string(kPermit) + kForbid);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->unchanged);
  EXPECT_EQ(again->version, 2u);
  EXPECT_EQ(again->digest, v2->digest);

  auto head = Latest(Conn(), "acme");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->version, 2u);
  EXPECT_EQ(head->digest, v2->digest);
  auto old = Read(Conn(), "acme", 1, false);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->source.policies, kPermit);
  EXPECT_EQ(old->source.entities, "[]");
  EXPECT_FALSE(old->source.schema.has_value());
  EXPECT_EQ(Latest(Conn(), "nobody").status().code(), Code::kNotFound);
  EXPECT_EQ(Read(Conn(), "acme", 3, false).status().code(), Code::kNotFound);
}

TEST_F(StoreTest, BundleVerifiesAndItsBytesNeverChange) {
  PolicySource s;
  s.policies = kPermit;
  s.schema = "entity Agent;";
  s.limits = "[]";
  auto v1 = Publish(Conn(), "acme", s, {key_.get()}, 1'800'000'000);
  ASSERT_TRUE(v1.ok()) << v1.status().message();
  auto first = Read(Conn(), "acme", 1, true);
  ASSERT_TRUE(first.ok());
  bundle::VerifyOptions opt;
  opt.expected_kind = "policy";
  opt.expected_org = "acme";
  opt.expected_name = "default";
  bundle::Verdict verdict = bundle::Verify(first->bundle, trust_, opt);
  ASSERT_TRUE(verdict.ok()) << verdict.ToString();
  EXPECT_EQ(verdict.bundle->version(), 1u);
  EXPECT_EQ(crypto::HexEncode(verdict.bundle->digest()), v1->digest);
  ASSERT_NE(verdict.bundle->File(kPoliciesFile), nullptr);
  EXPECT_EQ(*verdict.bundle->File(kPoliciesFile), kPermit);
  ASSERT_NE(verdict.bundle->File(kSchemaFile), nullptr);
  ASSERT_NE(verdict.bundle->File(kLimitsFile), nullptr);
  // Another organisation's verifier refuses it.
  opt.expected_org = "globex";
  EXPECT_EQ(bundle::Verify(first->bundle, trust_, opt).reason, bundle::Reason::kWrongBundle);

  // Later publishes (at a later time) leave version 1's bytes as they were.
  ASSERT_TRUE(Put("acme", std::string(kPermit) + kForbid, 1'900'000'000).ok());
  auto later = Read(Conn(), "acme", 1, true);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->bundle, first->bundle);
  EXPECT_EQ(later->digest, first->digest);
}

TEST_F(StoreTest, ConcurrentPublishesGetDistinctVersions) {
  constexpr int kThreads = 6;
  constexpr int kEach = 5;
  std::vector<std::thread> threads;
  std::vector<std::vector<uint64_t>> got(kThreads);
  std::vector<std::string> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto lease = pool_->Checkout();
      if (!lease.ok()) {
        errors[t] = lease.status().message();
        return;
      }
      for (int i = 0; i < kEach; ++i) {
        PolicySource s;
        s.policies = "@id(\"t" + std::to_string(t) + "_" + std::to_string(i) + "\")\n" + kPermit;
        auto r = Publish(**lease, "acme", s, {key_.get()}, 1'800'000'000);
        if (!r.ok()) {
          errors[t] = r.status().message();
          return;
        }
        got[t].push_back(r->version);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<uint64_t> all;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(errors[t].empty()) << errors[t];
    ASSERT_EQ(got[t].size(), size_t{kEach});
    EXPECT_TRUE(std::is_sorted(got[t].begin(), got[t].end()));
    all.insert(got[t].begin(), got[t].end());
  }
  ASSERT_EQ(all.size(), size_t{kThreads * kEach});
  EXPECT_EQ(*all.begin(), 1u);
  EXPECT_EQ(*all.rbegin(), uint64_t{kThreads * kEach});
  auto head = Latest(Conn(), "acme");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->version, uint64_t{kThreads * kEach});
}

// What the server does with a presented key, asking the table directly.
Result<std::string> CheckKey(db::Connection& c, std::string_view key, std::string_view scope) {
  return OrgWithScope(service_keys::CheckKey(c, PolicyKeys(), key), {scope});
}

TEST_F(StoreTest, KeysHaveOneOrganisationAndOneScope) {
  auto publish = service_keys::CreateKey(Conn(), PolicyKeys(), "acme", kPublishScope, "ci");
  auto fetch = service_keys::CreateKey(Conn(), PolicyKeys(), "acme", kFetchScope, "sidecar");
  ASSERT_TRUE(publish.ok()) << publish.status().message();
  ASSERT_TRUE(fetch.ok());
  EXPECT_EQ(publish->substr(0, 4), "gvp_");

  auto org = CheckKey(Conn(), *publish, kPublishScope);
  ASSERT_TRUE(org.ok()) << org.status().message();
  EXPECT_EQ(*org, "acme");
  EXPECT_EQ(CheckKey(Conn(), *publish, kFetchScope).status().code(), Code::kPermissionDenied);
  EXPECT_EQ(CheckKey(Conn(), *publish, kFetchScope).status().message(),
            "this key has scope 'publish'; this needs 'fetch'");
  EXPECT_TRUE(
      OrgWithScope(service_keys::CheckKey(Conn(), PolicyKeys(), *fetch), {kPublishScope, kFetchScope}).ok());
  EXPECT_EQ(CheckKey(Conn(), *fetch, kPublishScope).status().code(), Code::kPermissionDenied);
  EXPECT_TRUE(CheckKey(Conn(), *fetch, kFetchScope).ok());

  // A changed secret, a malformed key, an unknown id: one answer.
  std::string wrong = *fetch;
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  EXPECT_EQ(CheckKey(Conn(), wrong, kFetchScope).status().code(), Code::kUnauthenticated);
  EXPECT_EQ(CheckKey(Conn(), "gvp_nope", kFetchScope).status().code(), Code::kUnauthenticated);
  EXPECT_EQ(CheckKey(Conn(), "", kFetchScope).status().code(), Code::kUnauthenticated);

  auto list = service_keys::ListKeys(Conn(), PolicyKeys(), "acme");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  std::string fetch_id = fetch->substr(4, 12);
  ASSERT_TRUE(service_keys::RevokeKey(Conn(), PolicyKeys(), fetch_id).ok());
  EXPECT_EQ(CheckKey(Conn(), *fetch, kFetchScope).status().code(), Code::kUnauthenticated);
  EXPECT_EQ(service_keys::RevokeKey(Conn(), PolicyKeys(), "aaaaaaaaaaaa").code(), Code::kNotFound);
  EXPECT_FALSE(service_keys::CreateKey(Conn(), PolicyKeys(), "Bad Org", kFetchScope, "").ok());
  list = service_keys::ListKeys(Conn(), PolicyKeys(), "acme");
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE((*list)[1].revoked_at.has_value() || (*list)[0].revoked_at.has_value());
}

}  // namespace
}  // namespace govern::policy_service
