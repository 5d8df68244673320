// `govern policy ...`: check and run Cedar policies from files, without any service or database.
//
//   govern policy validate --policies FILE                     parse; first error as FILE:line:col, exit 2
//   govern policy evaluate --policies F --entities F --request F   prints {"decision","reason","errors",...}
//   govern policy test --policies F --entities F --cases F     runs test cases, exit 1 on any failure
//   govern policy eval-cases                                    NDJSON cases on stdin -> results on stdout
//
// The eval-cases line format is in policy/cases.h (the differential tester's contract). None of
// these commands read the configuration, so they run before it is loaded.
#pragma once

#include <memory>
#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace govern::cli {

class PolicyCommand {
 public:
  explicit PolicyCommand(CLI::App& app);
  // The `policy` subcommand, so that more subcommands (sign, inspect, ...) can join it.
  CLI::App* app() const { return policy_; }
  // The command line asked for one of the subcommands added here.
  bool parsed() const;
  // Runs it; returns the exit code (0 ok, 1 a failure or failing test, 2 bad input or usage).
  int Run();

 private:
  int Validate();
  int Evaluate();
  int Test();
  int EvalCases();

  CLI::App* policy_ = nullptr;
  CLI::App* validate_ = nullptr;
  CLI::App* evaluate_ = nullptr;
  CLI::App* test_ = nullptr;
  CLI::App* eval_cases_ = nullptr;
  std::string policies_;
  std::string entities_;
  std::string request_;
  std::string cases_;
};

// Adds `govern policy` and its subcommands to `app`.
std::unique_ptr<PolicyCommand> AddPolicyCommands(CLI::App& app);

}  // namespace govern::cli
