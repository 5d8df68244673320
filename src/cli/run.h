// Running services: `govern up` and `govern serve`.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace govern::cli {

// Declares every registered service's configuration keys.
void DeclareServiceKeys(config::Schema& schema);

// Prints each service's name and summary.
void PrintServices();

// Runs the named services (or all, for `govern up`) until SIGTERM or SIGINT, then stops them
// gracefully in reverse order. Returns the process exit code.
int RunServices(const config::Config& cfg, const std::vector<std::string>& names, bool all);

}  // namespace govern::cli
