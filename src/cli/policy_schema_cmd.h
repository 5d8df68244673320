// `--schema FILE` for `govern policy validate` and `govern policy evaluate` (the Cedar schema syntax or
// the JSON schema format):
//
//   govern policy validate --policies F --schema S   parses, then validates every policy against the
//       schema; prints each error and warning as `policyN: error|warning: message` with the policy's
//       line:column; exit 0 when no policy has an error, 1 when one has, 2 on unreadable or bad input.
//   govern policy evaluate --policies F --schema S --request R [--entities E]   validates the request and
//       entities against the schema (exit 2 naming the first problem), reads their values the way the
//       schema types them, then decides and prints the JSON that `evaluate` prints.
//
// Without --schema both commands run as before. The work happens in CLI11 callbacks during parsing
// (ending with CLI::RuntimeError(code)), so PolicyCommand needs only the one call that attaches them.
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace govern::cli {

// Adds the --schema option and its handling to the `validate` and `evaluate` subcommands.
void AddPolicySchemaOptions(CLI::App* validate, CLI::App* evaluate);

}  // namespace govern::cli
