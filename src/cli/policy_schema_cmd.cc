// `govern policy validate|evaluate --schema`: see policy_schema_cmd.h.
#include "cli/policy_schema_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "policy/cedar.h"
#include "policy/schema.h"
#include "policy/validator.h"

namespace govern::cli {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

[[noreturn]] void Exit(int code) { throw CLI::RuntimeError(code); }

[[noreturn]] void Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "govern: %s: %s\n", what.c_str(), s.message().c_str());
  Exit(2);
}

std::string OptionValue(CLI::App* app, const char* name) {
  CLI::Option* o = app->get_option_no_throw(name);
  return o && o->count() > 0 ? o->as<std::string>() : std::string();
}

policy::Schema LoadSchema(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) Fail("schema", text.status());
  auto schema = policy::Schema::Parse(*text);
  if (!schema.ok()) Fail(path, schema.status());
  return std::move(*schema);
}

// The subcommand's --policies file: Cedar text (templates allowed, linked by --links) or, named *.json, a
// Cedar JSON policy set; read as `govern policy validate` without --schema reads it (policy_cmd.cc).
policy::PolicySet LoadPolicies(CLI::App* app) {
  std::string path = OptionValue(app, "--policies");
  std::string links_file = OptionValue(app, "--links");
  auto text = ReadFile(path);
  if (!text.ok()) Fail("policies", text.status());
  std::string links;
  if (!links_file.empty()) {
    auto l = ReadFile(links_file);
    if (!l.ok()) Fail("links", l.status());
    links = std::move(*l);
  }
  auto set = policy::PolicySet::FromFile(path, *text, links);
  if (!set.ok()) {
    std::string where = links_file.empty() ? path : path + " (links " + links_file + ")";
    std::fprintf(stderr, "%s:%s\n", where.c_str(), set.status().message().c_str());
    Exit(2);
  }
  return std::move(*set);
}

void Validate(const std::string& schema_file, CLI::App* validate) {
  std::string policies_file = OptionValue(validate, "--policies");
  policy::Schema schema = LoadSchema(schema_file);
  policy::PolicySet policies = LoadPolicies(validate);
  policy::ValidationResult r = policy::ValidatePolicies(schema, policies);
  auto print = [&](const policy::ValidationIssue& i, const char* severity) {
    std::fprintf(stderr, "%s:%u:%u: %s: %s: %s\n", policies_file.c_str(), i.line, i.col, i.policy_id.c_str(),
                 severity, i.message.c_str());
  };
  for (const auto& e : r.errors) print(e, "error");
  for (const auto& w : r.warnings) print(w, "warning");
  std::printf("%zu policies, %zu errors, %zu warnings against %s\n", policies.size(), r.errors.size(),
              r.warnings.size(), schema_file.c_str());
  Exit(r.ok() ? 0 : 1);
}

void Evaluate(const std::string& schema_file, CLI::App* evaluate) {
  policy::Schema schema = LoadSchema(schema_file);
  policy::PolicySet policies = LoadPolicies(evaluate);
  std::string request_file = OptionValue(evaluate, "--request");
  auto request_text = ReadFile(request_file);
  if (!request_text.ok()) Fail("request", request_text.status());
  auto request_json = policy::ConformRequestJson(schema, *request_text);
  if (!request_json.ok()) Fail(request_file, request_json.status());
  auto request = policy::Request::FromJson(*request_json);
  if (!request.ok()) Fail(request_file, request.status());
  policy::Entities entities;
  std::string entities_file = OptionValue(evaluate, "--entities");
  if (!entities_file.empty()) {
    auto text = ReadFile(entities_file);
    if (!text.ok()) Fail("entities", text.status());
    auto conformed = policy::ConformEntitiesJson(schema, *text);
    if (!conformed.ok()) Fail(entities_file, conformed.status());
    auto e = policy::Entities::FromJson(*conformed);
    if (!e.ok()) Fail(entities_file, e.status());
    entities = std::move(*e);
  }
  policy::Response r = policy::Authorize(policies, entities, *request);
  // The same JSON as `govern policy evaluate` prints.
  nlohmann::json out;
  out["decision"] = policy::DecisionName(r.decision);
  out["reason"] = r.reason;
  nlohmann::json errors = nlohmann::json::array();
  nlohmann::json messages = nlohmann::json::object();
  for (const policy::PolicyError& e : r.errors) {
    errors.push_back(e.policy_id);
    messages[e.policy_id] = e.message;
  }
  out["errors"] = errors;
  out["error_messages"] = messages;
  std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  Exit(0);
}

}  // namespace

void AddPolicySchemaOptions(CLI::App* validate, CLI::App* evaluate) {
  auto validate_schema = std::make_shared<std::string>();
  validate->add_option(
      "--schema", *validate_schema,
      "Cedar schema (Cedar syntax or JSON): also validate the policies against it (exit 1 on errors)");
  validate->callback([validate_schema, validate] {
    if (!validate_schema->empty()) Validate(*validate_schema, validate);
  });
  auto evaluate_schema = std::make_shared<std::string>();
  evaluate->add_option(
      "--schema", *evaluate_schema,
      "Cedar schema (Cedar syntax or JSON): validate the request and entities against it first");
  evaluate->callback([evaluate_schema, evaluate] {
    if (!evaluate_schema->empty()) Evaluate(*evaluate_schema, evaluate);
  });
}

}  // namespace govern::cli
