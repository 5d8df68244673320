// Evaluates one JSON decision case (see cases.h).
#include "policy/cases.h"

#include <nlohmann/json.hpp>

#include "policy/cedar.h"

namespace govern::policy {

std::string EvalCaseLine(std::string_view line) {
  nlohmann::json out;
  nlohmann::json in;
  try {
    in = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for huge numbers
    out["id"] = nullptr;
    out["failure"] = std::string("invalid JSON: ") + e.what();
    return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  out["id"] = in.is_object() && in.contains("id") ? in["id"] : nlohmann::json(nullptr);
  auto fail = [&](const std::string& msg) {
    out["failure"] = msg;
    return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  if (!in.is_object()) return fail("a case must be a JSON object");
  // `policies` as text alone is Parse's static set; anything else (JSON policies, templates, links)
  // is the reference's PolicySet object, read by FromJson.
  bool text = in.contains("policies") && in["policies"].is_string() && !in.contains("templates") &&
              !in.contains("templateLinks");
  Result<PolicySet> policies = InvalidArgument("");
  if (text) {
    policies = PolicySet::Parse(in["policies"].get_ref<const std::string&>());
  } else {
    nlohmann::json set = nlohmann::json::object();
    if (in.contains("policies")) set["staticPolicies"] = in["policies"];
    if (in.contains("templates")) set["templates"] = in["templates"];
    if (in.contains("templateLinks")) set["templateLinks"] = in["templateLinks"];
    policies = PolicySet::FromJson(set.dump());
  }
  if (!policies.ok()) return fail("policies: " + policies.status().message());
  if (in.value("to_json", false)) out["json"] = nlohmann::json::parse(policies->ToJson());
  std::string entities_json = in.contains("entities") ? in["entities"].dump() : "[]";
  auto entities = Entities::FromJson(entities_json);
  if (!entities.ok()) return fail(entities.status().message());
  if (!in.contains("request")) return fail("missing `request`");
  auto request = Request::FromJson(in["request"].dump());
  if (!request.ok()) return fail(request.status().message());
  Response r = Authorize(*policies, *entities, *request);
  out["decision"] = DecisionName(r.decision);
  out["reason"] = r.reason;
  nlohmann::json errors = nlohmann::json::array();
  for (const PolicyError& e : r.errors) errors.push_back(e.policy_id);
  out["errors"] = errors;
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace govern::policy
