// One self-contained decision case as JSON, the unit the `govern policy eval-cases` command and the
// differential tester exchange with the Cedar reference. Thread-safe (pure function).
//
//   input:  {"id": "...", "policies": "<cedar text>", "entities": [<Cedar JSON entities>],
//            "request": {"principal": {"type","id"}, "action": {...}, "resource": {...}, "context": {...}},
//            "templates": {id: template}, "templateLinks": [link...], "to_json": true}
//           `policies`, `templates` and `templateLinks` are cedar-wasm's staticPolicies, templates and
//           templateLinks (policies as text, or as JSON: PolicySet::FromJson); the last three are optional.
//           With "to_json": true the answer also carries "json": the policy set as PolicySet::ToJson prints
//           it.
//   output: {"id": "...", "decision": "allow"|"deny", "reason": ["policy0", ...], "errors": ["policy3", ...]}
//           (ids sorted), or {"id": "...", "failure": "<message>"} when the policies, entities or request
//           cannot be parsed (where the reference answers {"type": "failure"}).
#pragma once

#include <string>
#include <string_view>

namespace govern::policy {

// Evaluates one case line and returns the output line (without a trailing newline).
std::string EvalCaseLine(std::string_view line);

}  // namespace govern::policy
