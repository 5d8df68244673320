// The configuration keys the govern binary itself declares (logging, data directory, database,
// HTTP, load shedding). Services declare their own keys under "<service>.".
#pragma once

#include "config/config.h"

namespace govern::cli {

void DeclareCoreKeys(config::Schema& schema);

}  // namespace govern::cli
