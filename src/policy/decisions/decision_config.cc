// policy.decisions.* configuration (see decision_config.h).
#include "policy/decisions/decision_config.h"

namespace govern::policy {

void DeclareDecisionLogConfig(config::Schema& s) {
  using config::Type;
  s.Add({.key = "policy.decisions.dir",
         .type = Type::kString,
         .default_value = "",
         .help = "Directory of the decision log (a write-ahead log). Empty: `<data_dir>/policy/decisions`."});
  s.Add({.key = "policy.decisions.mode",
         .type = Type::kEnum,
         .default_value = "buffered",
         .help = "`buffered`: a decision is recorded without waiting for the disk; the log syncs every "
                 "`sync_interval`, so a power cut loses at most the decisions of the last interval. "
                 "`durable`: a decision returns only once it is on disk (one fdatasync, shared by "
                 "concurrent decisions). See docs/policy-decisions.md.",
         .choices = {"buffered", "durable"}});
  s.Add({.key = "policy.decisions.sync_interval",
         .type = Type::kDuration,
         .default_value = "5ms",
         .help = "Buffered mode: the longest a recorded decision waits before it is fdatasync'd (it is "
                 "written to the file at once, so a process crash does not lose it).",
         .min = 1,
         .max = 10'000});
  s.Add({.key = "policy.decisions.context",
         .type = Type::kEnum,
         .default_value = "hash",
         .help = "What a record keeps of the request context: `full` (the JSON), `hash` (its SHA-256) or "
                 "`none`.",
         .choices = {"full", "hash", "none"}});
  s.Add({.key = "policy.decisions.max_pending",
         .type = Type::kBytes,
         .default_value = "64MiB",
         .help = "Decisions recorded but not yet on disk beyond which recording waits (back-pressure).",
         .min = int64_t{2} << 20,
         .max = int64_t{1} << 30});
  s.Add({.key = "policy.decisions.max_block",
         .type = Type::kDuration,
         .default_value = "100ms",
         .help = "How long recording waits for room before it fails (the caller then denies or retries; "
                 "nothing is dropped silently).",
         .min = 0,
         .max = 60'000});
  s.Add({.key = "policy.decisions.max_record_bytes",
         .type = Type::kBytes,
         .default_value = "1MiB",
         .help = "Largest recorded decision (mostly its context, when kept in full); larger fails.",
         .min = 1024,
         .max = int64_t{16} << 20});
  s.Add({.key = "policy.decisions.segment_size",
         .type = Type::kBytes,
         .default_value = "64MiB",
         .help = "Size of one decision-log segment file (allocated whole); retention deletes whole segments.",
         .min = int64_t{1} << 20,
         .max = int64_t{1} << 30});
  s.Add({.key = "policy.decisions.max_retained",
         .type = Type::kBytes,
         .default_value = "0",
         .help = "When > 0, the oldest segments are deleted once the log's files take more than this. A "
                 "shipper's cursor still holds back every decision not yet shipped. 0: keep every decision "
                 "until shipped (with no endpoint: forever).",
         .min = 0});
  DeclareShipperConfig(
      s, "policy.decisions.ship",
      {.what = "decisions", .event_type = "policy.decision", .when_off = "decisions stay local."});
  s.Add({.key = "policy.decisions.ship.key",
         .type = Type::kString,
         .default_value = "",
         .help = "Telemetry ingest key (`gvk_...`) the shipper sends with.",
         .secret = true,
         .validate = [](std::string_view v) -> Status {
           if (v.empty() || v.rfind("gvk_", 0) == 0) return OkStatus();
           return InvalidArgument("must be a telemetry ingest key (gvk_...)");
         }});
}

void DeclareShipperConfig(config::Schema& s, const std::string& prefix, const ShippedItems& items) {
  using config::Type;
  s.Add({.key = prefix + ".endpoint",
         .type = Type::kString,
         .default_value = "",
         .help = "Telemetry intake base URL (`http://host:4318`) to ship " + items.what +
                 " to, exactly once, as `" + items.event_type + "` events" + items.id_note +
                 ". Empty: " + items.when_off,
         .validate = [](std::string_view v) -> Status {
           if (v.empty() || v.rfind("http://", 0) == 0 || v.rfind("https://", 0) == 0) return OkStatus();
           return InvalidArgument("must be an http:// or https:// URL");
         }});
  s.Add({.key = prefix + ".batch_events",
         .type = Type::kInt,
         .default_value = "500",
         .help =
             "Most " + items.what + " per intake request (intake takes up to `telemetry.max_batch_events`).",
         .min = 1,
         .max = 10'000});
  s.Add({.key = prefix + ".batch_bytes",
         .type = Type::kBytes,
         .default_value = "1MiB",
         .help = "Largest intake request body (intake takes up to `telemetry.max_batch_bytes`).",
         .min = 1024,
         .max = int64_t{4} << 20});
  s.Add({.key = prefix + ".max_backoff",
         .type = Type::kDuration,
         .default_value = "30s",
         .help = "Longest wait between retries while telemetry is unreachable or refuses the key.",
         .min = 1,
         .max = 3'600'000});
}

void ShipperOptionsFromKeys(const config::Config& c, const std::string& prefix, ShipperOptions& o) {
  o.endpoint = c.GetString(prefix + ".endpoint");
  o.batch_events = static_cast<size_t>(c.GetInt(prefix + ".batch_events"));
  o.batch_bytes = static_cast<size_t>(c.GetBytes(prefix + ".batch_bytes"));
  o.max_backoff = c.GetDuration(prefix + ".max_backoff");
}

DecisionLogOptions DecisionLogOptionsFromConfig(const config::Config& c, const std::string& data_dir) {
  DecisionLogOptions o;
  o.dir = c.GetString("policy.decisions.dir");
  if (o.dir.empty()) o.dir = data_dir + "/policy/decisions";
  o.mode = c.GetString("policy.decisions.mode") == "durable" ? RecordMode::kDurable : RecordMode::kBuffered;
  o.sync_interval = c.GetDuration("policy.decisions.sync_interval");
  const std::string& ctx = c.GetString("policy.decisions.context");
  o.context = ctx == "full" ? ContextKind::kFull : ctx == "none" ? ContextKind::kNone : ContextKind::kHash;
  o.max_pending_bytes = static_cast<size_t>(c.GetBytes("policy.decisions.max_pending"));
  o.max_block = c.GetDuration("policy.decisions.max_block");
  o.max_record_bytes = static_cast<uint32_t>(c.GetBytes("policy.decisions.max_record_bytes"));
  o.segment_size = static_cast<uint64_t>(c.GetBytes("policy.decisions.segment_size"));
  o.max_retained_bytes = static_cast<uint64_t>(c.GetBytes("policy.decisions.max_retained"));
  return o;
}

Result<std::optional<ShipperOptions>> ShipperOptionsFromConfig(const config::Config& c) {
  const std::string& endpoint = c.GetString("policy.decisions.ship.endpoint");
  if (endpoint.empty()) return std::optional<ShipperOptions>();
  ShipperOptions o;
  ShipperOptionsFromKeys(c, "policy.decisions.ship", o);
  o.key = c.GetString("policy.decisions.ship.key");
  if (o.key.empty()) {
    return InvalidArgument("policy.decisions.ship.key: an ingest key is needed when ship.endpoint is set");
  }
  return std::optional<ShipperOptions>(std::move(o));
}

}  // namespace govern::policy
