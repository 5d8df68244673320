// Load shedding from configuration: the limits.* keys and the process-wide Limiter built from them.
#pragma once

#include <memory>

#include "base/clock.h"
#include "config/config.h"
#include "limits/limiter.h"

namespace govern::cli {

void DeclareLimitsKeys(config::Schema& schema);

// The limiter every HTTP server of this process asks before each handler; null when limits.enabled
// is false. Refuses contradictory settings (min above max, initial outside [min, max]).
Result<std::unique_ptr<limits::Limiter>> NewLimiter(const config::Config& cfg, const Clock& clock);

}  // namespace govern::cli
