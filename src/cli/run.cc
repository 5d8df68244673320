// `govern up` and `govern serve`: start services in order, wait for a signal, stop them in reverse.
#include "cli/run.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <memory>

#include "base/log.h"
#include "services/service.h"

namespace govern::cli {

void DeclareServiceKeys(config::Schema& schema) {
  for (const auto& reg : services::Registry()) reg.make()->DeclareConfig(schema);
}

void PrintServices() {
  for (const auto& reg : services::Registry()) {
    std::printf("%-12s %.*s\n", std::string(reg.name).c_str(), static_cast<int>(reg.summary.size()),
                reg.summary.data());
  }
}

int RunServices(const config::Config& cfg, const std::vector<std::string>& names, bool all) {
  (void)cfg;
  (void)names;
  (void)all;
  log::Error("cli", "no services are built into this binary yet");
  return 1;
}

}  // namespace govern::cli
