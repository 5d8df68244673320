// Cedar policy text -> CompiledPolicySet. Internal to src/policy (the public entry is
// PolicySet::Parse in cedar.h). Errors carry "line:column: message" of the first problem found.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "policy/ast.h"

namespace govern::policy {

// Parses a whole policy set; policies get the ids "policy0", "policy1", ... in text order, as the
// reference names the policies of a set given as one string.
Result<std::shared_ptr<CompiledPolicySet>> ParsePolicySet(std::string_view text);

// Parses policies and templates (a policy with a slot in its scope) from `text` into `set`'s storage
// (nodes, arena), appending them to `out` in text order without ids; `set`'s lists are not touched.
Status ParsePolicyText(std::string_view text, CompiledPolicySet* set, std::vector<CompiledPolicy>* out);

// The policy has a slot in its scope.
bool IsTemplate(const CompiledPolicy& p);

// Folds a set or record literal of literals, or an extension constructor of a valid literal string,
// into a literal (keeping its parts for printing); returns `n` either way. Values go to `arena`.
const Node* FoldLiteral(Node* n, Arena* arena);

// Parses a Cedar string literal body (between the quotes) with Cedar's escapes. Returns false on a
// bad escape, naming it in `error`.
bool UnescapeCedar(std::string_view body, bool pattern, std::string* out, std::vector<PatternElem>* pat,
                   std::string* error);

}  // namespace govern::policy
