// limits.* keys and the Limiter they configure.
#include "cli/limits_config.h"

namespace govern::cli {

void DeclareLimitsKeys(config::Schema& s) {
  using config::Type;
  s.Add({.key = "limits.enabled", .type = Type::kBool, .default_value = "true",
         .help = "Shed load with an adaptive concurrency limit: over it, requests get 503 with "
                 "Retry-After at once. Health probes are never shed."});
  s.Add({.key = "limits.algorithm", .type = Type::kEnum, .default_value = "gradient2",
         .help = "How the limit follows latency: `gradient2` (Netflix Gradient2 with an unloaded-latency "
                 "probe), `vegas`, or `fixed` (always `limits.max`).",
         .choices = {"gradient2", "vegas", "fixed"}});
  s.Add({.key = "limits.initial", .type = Type::kInt, .default_value = "20",
         .help = "Concurrent requests allowed at start.", .min = 1, .max = 1'000'000});
  s.Add({.key = "limits.min", .type = Type::kInt, .default_value = "20",
         .help = "The limit never falls below this many concurrent requests.", .min = 1, .max = 1'000'000});
  s.Add({.key = "limits.max", .type = Type::kInt, .default_value = "1000",
         .help = "The limit never rises above this many concurrent requests.", .min = 1, .max = 1'000'000});
  s.Add({.key = "limits.normal_percent", .type = Type::kInt, .default_value = "90",
         .help = "Share of the limit ordinary requests may fill; interactive ones (sign-in) may use all "
                 "of it.", .min = 1, .max = 100});
  s.Add({.key = "limits.bulk_percent", .type = Type::kInt, .default_value = "60",
         .help = "Share of the limit bulk requests (batch ingest, exports) may fill: they give way first.",
         .min = 1, .max = 100});
  s.Add({.key = "limits.org_share_percent", .type = Type::kInt, .default_value = "50",
         .help = "Share of the limit one organisation may hold while others are being refused.", .min = 1,
         .max = 100});
}

Result<std::unique_ptr<limits::Limiter>> NewLimiter(const config::Config& cfg, const Clock& clock) {
  if (!cfg.GetBool("limits.enabled")) return std::unique_ptr<limits::Limiter>();
  int initial = static_cast<int>(cfg.GetInt("limits.initial"));
  int min = static_cast<int>(cfg.GetInt("limits.min"));
  int max = static_cast<int>(cfg.GetInt("limits.max"));
  if (min > max) {
    return InvalidArgument("limits.min (" + std::to_string(min) + ") is above limits.max (" +
                           std::to_string(max) + ")");
  }
  if (initial < min || initial > max) {
    return InvalidArgument("limits.initial (" + std::to_string(initial) + ") must lie within limits.min (" +
                           std::to_string(min) + ") and limits.max (" + std::to_string(max) + ")");
  }
  limits::LimiterOptions o;
  const std::string& algorithm = cfg.GetString("limits.algorithm");
  if (algorithm == "fixed") {
    o.algorithm = std::make_unique<limits::FixedLimit>(max);
  } else if (algorithm == "vegas") {
    limits::VegasOptions v;
    v.initial_limit = initial;
    v.min_limit = min;
    v.max_limit = max;
    o.algorithm = std::make_unique<limits::VegasLimit>(v);
  } else {
    limits::Gradient2Options g;
    g.initial_limit = initial;
    g.min_limit = min;
    g.max_limit = max;
    o.algorithm = std::make_unique<limits::Gradient2Limit>(g);
  }
  o.class_fraction[static_cast<int>(net::RequestClass::kNormal)] = cfg.GetInt("limits.normal_percent") / 100.0;
  o.class_fraction[static_cast<int>(net::RequestClass::kBulk)] = cfg.GetInt("limits.bulk_percent") / 100.0;
  o.org_share = cfg.GetInt("limits.org_share_percent") / 100.0;
  return std::make_unique<limits::Limiter>(clock, std::move(o));
}

}  // namespace govern::cli
