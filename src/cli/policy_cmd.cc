// `govern policy ...`: validate, evaluate and test Cedar policies from files (see policy_cmd.h).
#include "cli/policy_cmd.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/policy_schema_cmd.h"
#include "policy/cases.h"
#include "policy/cedar.h"
#include "policy/limits.h"

namespace govern::cli {
namespace {

// --limits for evaluate and test (kept here: policy_cmd.h belongs to the CLI's owner).
std::string& LimitsFile() {
  static std::string path;
  return path;
}

// --links for validate, evaluate and test.
std::string& LinksFile() {
  static std::string path;
  return path;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Bad(const std::string& what, const Status& s) {
  std::fprintf(stderr, "govern: %s: %s\n", what.c_str(), s.message().c_str());
  return 2;
}

// A policy file: Cedar text (templates allowed, linked by --links) or, named *.json, a Cedar JSON
// policy set. Errors read FILE:line:column: message, as `validate` prints them.
Result<policy::PolicySet> LoadPolicyFile(const std::string& path) {
  GOVERN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::string links;
  if (!LinksFile().empty()) {
    GOVERN_ASSIGN_OR_RETURN(links, ReadFile(LinksFile()));
  }
  auto set = policy::PolicySet::FromFile(path, text, links);
  if (!set.ok()) {
    std::string where = LinksFile().empty() ? path : path + " (links " + LinksFile() + ")";
    return Status(set.status().code(), where + ":" + set.status().message());
  }
  return set;
}

nlohmann::json ResponseJson(const policy::Response& r) {
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
  return out;
}

}  // namespace

PolicyCommand::PolicyCommand(CLI::App& app) {
  policy_ = app.add_subcommand(
      "policy", "Cedar policies and signed bundles: validate, evaluate, test; keygen, sign, inspect, verify");
  policy_->require_subcommand(1);
  validate_ = policy_->add_subcommand(
      "validate", "Parse a policy file; print the first error as FILE:line:column: message (exit 2)");
  const char* kPolicies = "Cedar policy file (text; or *.json: a Cedar JSON policy set)";
  const char* kLinks = "links.json: template links for the templates in the policy file";
  validate_->add_option("--policies", policies_, kPolicies)->required();
  validate_->add_option("--links", LinksFile(), kLinks);
  evaluate_ =
      policy_->add_subcommand("evaluate", "Decide one request; print {decision, reason, errors} as JSON");
  evaluate_->add_option("--policies", policies_, kPolicies)->required();
  evaluate_->add_option("--links", LinksFile(), kLinks);
  evaluate_->add_option("--entities", entities_, "Cedar JSON entities file (an array)");
  evaluate_->add_option("--limits", LimitsFile(),
                        "limits.json: rate limits and budgets (docs/policy-extensions.md)");
  evaluate_
      ->add_option("--request", request_,
                   "JSON file: {\"principal\": {\"type\",\"id\"}, \"action\", \"resource\", \"context\"}")
      ->required();
  test_ = policy_->add_subcommand(
      "test",
      "Run test cases: a JSON array of {\"name\", \"request\", \"decision\"} (allow, deny or "
      "approval_required; optionally \"reason\" and \"errors\" id lists, a limit as \"limit:ID\"), run in "
      "order so limits carry from case to case; exit 1 if any fails");
  test_->add_option("--policies", policies_, kPolicies)->required();
  test_->add_option("--links", LinksFile(), kLinks);
  test_->add_option("--entities", entities_, "Cedar JSON entities file (an array)");
  test_->add_option("--limits", LimitsFile(),
                    "limits.json: rate limits and budgets (docs/policy-extensions.md)");
  test_->add_option("--cases", cases_, "Test case file")->required();
  eval_cases_ = policy_->add_subcommand(
      "eval-cases",
      "Read NDJSON decision cases on stdin, write one NDJSON result per line (differential testing)");
  AddPolicySchemaOptions(validate_, evaluate_);  // --schema (policy_schema_cmd.h)
}

bool PolicyCommand::parsed() const {
  return validate_->parsed() || evaluate_->parsed() || test_->parsed() || eval_cases_->parsed();
}

int PolicyCommand::Run() {
  if (validate_->parsed()) return Validate();
  if (evaluate_->parsed()) return Evaluate();
  if (test_->parsed()) return Test();
  if (eval_cases_->parsed()) return EvalCases();
  return 2;
}

int PolicyCommand::Validate() {
  auto set = LoadPolicyFile(policies_);
  if (!set.ok()) {
    std::fprintf(stderr, "%s\n", set.status().message().c_str());
    return 2;
  }
  std::printf("%zu policies ok\n", set->size());
  return 0;
}

namespace {

// Policies, entities and limits decided together, as a bundle's files would be. Errors name the file.
Result<policy::Decider> Load(const std::string& policies_file, const std::string& entities_file) {
  GOVERN_ASSIGN_OR_RETURN(policy::PolicySet set, LoadPolicyFile(policies_file));
  policy::Entities entities;
  if (!entities_file.empty()) {
    GOVERN_ASSIGN_OR_RETURN(std::string json, ReadFile(entities_file));
    auto e = policy::Entities::FromJson(json);
    if (!e.ok()) return e.status().WithContext(entities_file);
    entities = std::move(*e);
  }
  policy::Limits limits;
  if (!LimitsFile().empty()) {
    GOVERN_ASSIGN_OR_RETURN(std::string json, ReadFile(LimitsFile()));
    auto l = policy::Limits::Parse(json);
    if (!l.ok()) return l.status().WithContext(LimitsFile());
    limits = std::move(*l);
  }
  return policy::Decider(std::move(set), std::move(entities), std::move(limits));
}

}  // namespace

int PolicyCommand::Evaluate() {
  auto loaded = Load(policies_, entities_);
  if (!loaded.ok()) return Bad("load", loaded.status());
  auto text = ReadFile(request_);
  if (!text.ok()) return Bad("request", text.status());
  auto request = policy::Request::FromJson(*text);
  if (!request.ok()) return Bad(request_, request.status());
  policy::Response r = loaded->Decide(*request);
  std::printf("%s\n", ResponseJson(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

int PolicyCommand::Test() {
  auto loaded = Load(policies_, entities_);
  if (!loaded.ok()) return Bad("load", loaded.status());
  auto text = ReadFile(cases_);
  if (!text.ok()) return Bad("cases", text.status());
  nlohmann::json cases;
  try {
    cases = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for huge numbers
    return Bad(cases_, InvalidArgument(e.what()));
  }
  if (!cases.is_array()) return Bad(cases_, InvalidArgument("expected a JSON array of test cases"));
  int failures = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const nlohmann::json& c = cases[k];
    std::string name = c.is_object() && c.contains("name") && c["name"].is_string()
                           ? c["name"].get<std::string>()
                           : "case #" + std::to_string(k);
    if (!c.is_object() || !c.contains("request") || !c.contains("decision") || !c["decision"].is_string()) {
      return Bad(cases_, InvalidArgument(name + ": needs \"request\" and \"decision\""));
    }
    auto request = policy::Request::FromJson(c["request"].dump());
    if (!request.ok()) return Bad(cases_, request.status().WithContext(name));
    policy::Response r = loaded->Decide(*request);
    nlohmann::json got = ResponseJson(r);
    std::string why;
    if (got["decision"] != c["decision"]) why += " decision " + got["decision"].get<std::string>();
    for (const char* list : {"reason", "errors"}) {
      if (!c.contains(list)) continue;
      nlohmann::json want = c[list];
      if (want.is_array()) std::sort(want.begin(), want.end());
      if (want != got[list])
        why += std::string(" ") + list + " " +
               got[list].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    if (!why.empty()) {
      ++failures;
      std::printf("FAIL %s: expected %s, got%s\n", name.c_str(), c["decision"].get<std::string>().c_str(),
                  why.c_str());
      for (const policy::PolicyError& e : r.errors) {
        std::printf("  %s errored: %s\n", e.policy_id.c_str(), e.message.c_str());
      }
    }
  }
  std::printf("%zu cases, %d failed\n", cases.size(), failures);
  return failures ? 1 : 0;
}

int PolicyCommand::EvalCases() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::string out = policy::EvalCaseLine(line);
    out.push_back('\n');
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);  // one answer per question: the tester waits for each line
  }
  return 0;
}

std::unique_ptr<PolicyCommand> AddPolicyCommands(CLI::App& app) {
  return std::make_unique<PolicyCommand>(app);
}

}  // namespace govern::cli
