// Replays testdata/schema/cases.ndjson: schemas, policy sets and requests with what the Cedar
// reference (@cedar-policy/cedar-wasm 4.13) answered for them (see that folder's README). Ours must
// accept and refuse the same schemas, flag the same policies with errors and with warnings, and accept
// the same requests and entities (with the same decision when accepted).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "policy/cedar.h"
#include "policy/schema.h"
#include "policy/validator.h"

namespace govern::policy {
namespace {

std::vector<std::string> Ids(const std::vector<ValidationIssue>& issues) {
  std::set<std::string> ids;
  for (const auto& i : issues) ids.insert(i.policy_id);
  return {ids.begin(), ids.end()};
}

std::string Describe(const std::vector<ValidationIssue>& issues) {
  std::string out;
  for (const auto& i : issues) out += "\n  " + i.message;
  return out;
}

TEST(SchemaCorpusTest, EveryCaseMatchesTheReference) {
  std::ifstream schemas_in(std::string(GOVERN_POLICY_SCHEMA_TESTDATA) + "/schemas.json");
  ASSERT_TRUE(schemas_in.good());
  nlohmann::json schemas = nlohmann::json::parse(schemas_in);
  std::ifstream in(std::string(GOVERN_POLICY_SCHEMA_TESTDATA) + "/cases.ndjson");
  ASSERT_TRUE(in.good());
  std::string line;
  int cases = 0, agree = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ++cases;
    nlohmann::json c = nlohmann::json::parse(line);
    const nlohmann::json& want = c["expected"];
    std::string name = c["name"].get<std::string>();
    nlohmann::json schema_json = c["schema"];
    if (schema_json.is_string() && schema_json.get<std::string>().rfind("@", 0) == 0)
      schema_json = schemas[schema_json.get<std::string>().substr(1)];
    std::string text = schema_json.is_string() ? schema_json.get<std::string>() : schema_json.dump();
    auto schema = Schema::Parse(text);
    bool ok = true;
    if (schema.ok() != want["schema_ok"].get<bool>()) {
      ADD_FAILURE() << name << ": schema_ok " << schema.ok() << " expected " << want["schema_ok"]
                    << (schema.ok() ? "" : "\n  " + schema.status().message());
      continue;
    }
    if (!schema.ok()) {
      ++agree;
      continue;
    }
    if (want.contains("errors")) {
      auto policies = PolicySet::Parse(c["policies"].get<std::string>());
      ASSERT_TRUE(policies.ok()) << name << ": " << policies.status().message();
      ValidationResult r = ValidatePolicies(*schema, *policies);
      std::vector<std::string> want_errors = want["errors"], want_warnings = want["warnings"];
      if (Ids(r.errors) != want_errors) {
        ok = false;
        ADD_FAILURE() << name << ": errors " << nlohmann::json(Ids(r.errors)) << " expected "
                      << want["errors"] << Describe(r.errors);
      }
      if (Ids(r.warnings) != want_warnings) {
        ok = false;
        ADD_FAILURE() << name << ": warnings " << nlohmann::json(Ids(r.warnings)) << " expected "
                      << want["warnings"] << Describe(r.warnings);
      }
    }
    if (want.contains("request_ok")) {
      nlohmann::json request = c["request"];
      if (!request.contains("context")) request["context"] = nlohmann::json::object();
      std::string entities = c.contains("entities") ? c["entities"].dump() : "[]";
      auto conformed_request = ConformRequestJson(*schema, request.dump());
      auto conformed_entities = ConformEntitiesJson(*schema, entities);
      Status s = conformed_request.ok() ? conformed_entities.status() : conformed_request.status();
      if (s.ok() != want["request_ok"].get<bool>()) {
        ok = false;
        ADD_FAILURE() << name << ": request_ok " << s.ok() << " expected " << want["request_ok"] << " "
                      << s.message();
      } else if (s.ok()) {
        std::string text_policies = c.contains("request_policies") ? c["request_policies"].get<std::string>()
                                                                   : "permit(principal, action, resource);";
        auto policies = PolicySet::Parse(text_policies);
        auto ents = Entities::FromJson(*conformed_entities);
        auto req = Request::FromJson(*conformed_request);
        EXPECT_TRUE(policies.ok() && ents.ok() && req.ok()) << name;
        if (policies.ok() && ents.ok() && req.ok()) {
          Response resp = Authorize(*policies, *ents, *req);
          if (DecisionName(resp.decision) != want["decision"].get<std::string>()) {
            ok = false;
            ADD_FAILURE() << name << ": decision " << DecisionName(resp.decision) << " expected "
                          << want["decision"];
          }
        }
      }
    }
    agree += ok;
  }
  std::printf("schema corpus: %d of %d cases agree with the reference\n", agree, cases);
  EXPECT_GE(cases, 1000);
  EXPECT_EQ(agree, cases);
}

}  // namespace
}  // namespace govern::policy
