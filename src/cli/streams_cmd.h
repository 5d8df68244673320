// `govern streams ...`: look into the Kafka-compatible broker.
//
//   govern streams topics [--broker HOST:PORT]            topics with partitions and offsets
//   govern streams groups [--broker HOST:PORT]            consumer groups
//   govern streams groups describe GROUP [--broker ...]   members, committed offsets and lag per partition
//   govern streams dump-segment FILE                      batches of a segment file (no broker needed)
//
// topics and groups talk to a running broker over the Kafka protocol (default: streams.advertised_host
// or the host of streams.listen, and its port); dump-segment reads the file directly, so it also works
// on a copy or while the broker is down.
#pragma once

#include <string>

#include "config/config.h"

namespace CLI {
class App;
}  // namespace CLI

namespace govern::cli {

class StreamsCommand {
 public:
  // Adds the subcommands to `app`.
  explicit StreamsCommand(CLI::App& app);
  // The command line asked for `govern streams ...`.
  bool parsed() const;
  // Runs it; returns the exit code (0 ok, 1 a runtime failure, 2 bad usage).
  int Run(const config::Config& cfg);

 private:
  std::string BrokerAddress(const config::Config& cfg) const;
  int Topics(const config::Config& cfg);
  int Groups(const config::Config& cfg);
  int Describe(const config::Config& cfg);
  int DumpSegment();

  CLI::App* streams_ = nullptr;
  CLI::App* topics_ = nullptr;
  CLI::App* groups_ = nullptr;
  CLI::App* describe_ = nullptr;
  CLI::App* dump_ = nullptr;
  std::string broker_;
  std::string group_;
  std::string file_;
};

}  // namespace govern::cli
