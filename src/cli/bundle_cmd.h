// `govern policy keygen|sign|inspect|verify`: bundle signing keys and signed policy bundles.
//
//   govern policy keygen --out-private F --out-public F [--key-id ID]
//   govern policy sign (--dir D | --file NAME=PATH...) --version N --org O --key F [--key F2]
//                      [--name N] [--created UNIX_SECONDS] [--no-gzip] --out bundle.tar.gz
//   govern policy inspect FILE
//   govern policy verify FILE --trust F [--trust F2] [--min-version N] [--org O] [--name N]
//
// These need no configuration, database or service: each runs from its subcommand's callback while the
// command line is parsed and ends parsing with its exit code (CLI::Success for 0, CLI::RuntimeError for
// 1 = refused or failed and 2 = bad usage), so CLI11_PARSE in main returns it. docs/bundles.md is the
// format and the key files.
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace govern::cli {

// Adds keygen, sign, inspect and verify to an existing `govern policy` subcommand.
void AddPolicyBundleCommands(CLI::App& policy);

}  // namespace govern::cli
