// Usage records shipped to telemetry (see usage_ship.h).
#include "services/gateway/usage_ship.h"

#include <fstream>
#include <sstream>

#include "crypto/sha256.h"
#include "gateway/json_util.h"
#include "policy/decisions/decision_config.h"

namespace govern::gateway {
namespace {

using detail::Json;

constexpr char kHex[] = "0123456789abcdef";

bool IdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == ':' ||
         c == '-';
}

Result<std::string> ReadKeyFile(const std::string& path, std::string_view what) {
  std::ifstream in(path);
  if (!in) return InvalidArgument(std::string(what) + ": cannot read the ingest key file " + path);
  std::stringstream text;
  text << in.rdbuf();
  std::string key = text.str();
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) key.pop_back();
  if (key.rfind("gvk_", 0) != 0 || key.find_first_of(" \t\r\n") != std::string::npos) {
    return InvalidArgument(std::string(what) + ": " + path +
                           " does not hold a telemetry ingest key (gvk_...)");
  }
  return key;
}

}  // namespace

std::string UsageEventId(std::string_view request_id) {
  bool plain = !request_id.empty() && request_id.size() <= 100;
  for (char c : request_id) plain = plain && (IdChar(c) || c == '_');
  if (plain) {
    std::string id(request_id);
    for (char& c : id) {
      if (c == '_') c = '-';
    }
    return id;
  }
  std::string id = "gwr-h";
  auto d = crypto::Sha256(request_id);
  if (d.ok()) {
    for (uint8_t b : *d) {
      id.push_back(kHex[b >> 4]);
      id.push_back(kHex[b & 0xf]);
    }
  }
  return id;
}

Status AppendUsageEvent(std::string_view record, size_t max_line_bytes, std::string* line) {
  GOVERN_ASSIGN_OR_RETURN(Json r, detail::ParseJson(record, "usage record"));
  if (!r.is_object()) return InvalidArgument("usage record: not an object");
  GOVERN_ASSIGN_OR_RETURN(std::string request_id, detail::ReqString(r, "request_id", "usage record"));
  GOVERN_ASSIGN_OR_RETURN(auto time_ns, detail::OptInt(r, "time_ns", "usage record"));
  if (!time_ns || *time_ns < 0) return InvalidArgument("usage record: no time_ns");
  Json attrs = Json::object();
  attrs["request_id"] = request_id;
  for (const auto& [name, value] : r.items()) {
    if (name == "request_id" || name == "time_ns") continue;
    attrs[name == "org" ? "organisation" : name] = value;
  }
  Json ev = {{"id", UsageEventId(request_id)},
             {"time", *time_ns},
             {"type", "gateway.usage"},
             {"attributes", std::move(attrs)}};
  std::string text = detail::Dump(ev);
  if (text.size() > max_line_bytes) return InvalidArgument("usage record: too large for one event");
  line->append(text);
  return OkStatus();
}

void DeclareUsageShipConfig(config::Schema& schema) {
  using config::Type;
  policy::DeclareShipperConfig(schema, "gateway.ship",
                               {.what = "usage records",
                                .event_type = "gateway.usage",
                                .id_note = " (id from the request id)",
                                .when_off = "records stay in the usage WAL."});
  schema.Add({.key = "gateway.ship.key_file",
              .type = Type::kString,
              .default_value = "",
              .help = "File holding the telemetry ingest key (`gvk_...`) the usage shipper sends with; "
                      "required with gateway.ship.endpoint."});
  schema.Add({.key = "gateway.ship.interval",
              .type = Type::kDuration,
              .default_value = "200ms",
              .help =
                  "After a batch smaller than batch_events, wait this long before sending the next, so "
                  "that light traffic goes in fewer requests. 0: send each record as soon as it is durable.",
              .min = 0,
              .max = 60'000});
}

Result<std::optional<policy::ShipperOptions>> UsageShipOptionsFromConfig(const config::Config& c) {
  const std::string& endpoint = c.GetString("gateway.ship.endpoint");
  if (endpoint.empty()) return std::optional<policy::ShipperOptions>();
  policy::ShipperOptions o;
  policy::ShipperOptionsFromKeys(c, "gateway.ship", o);
  const std::string& key_file = c.GetString("gateway.ship.key_file");
  if (key_file.empty()) {
    return InvalidArgument(
        "gateway.ship.key_file: an ingest key file is needed when gateway.ship.endpoint is set");
  }
  GOVERN_ASSIGN_OR_RETURN(o.key, ReadKeyFile(key_file, "gateway.ship.key_file"));
  o.linger = c.GetDuration("gateway.ship.interval");
  return std::optional<policy::ShipperOptions>(std::move(o));
}

Result<std::optional<policy::ShipperOptions>> UsageShipOptionsFromJson(std::string_view config_json) {
  GOVERN_ASSIGN_OR_RETURN(Json j, detail::ParseJson(config_json, "gateway config"));
  if (!j.is_object()) return InvalidArgument("gateway config: not an object");
  auto it = j.find("ship");
  if (it == j.end() || it->is_null()) return std::optional<policy::ShipperOptions>();
  const Json& s = *it;
  if (!s.is_object()) return InvalidArgument("gateway config: ship must be an object");
  policy::ShipperOptions o;
  GOVERN_ASSIGN_OR_RETURN(o.endpoint, detail::ReqString(s, "endpoint", "ship"));
  GOVERN_ASSIGN_OR_RETURN(std::string key_file, detail::ReqString(s, "key_file", "ship"));
  GOVERN_ASSIGN_OR_RETURN(o.key, ReadKeyFile(key_file, "ship.key_file"));
  GOVERN_ASSIGN_OR_RETURN(auto batch, detail::OptInt(s, "batch_events", "ship"));
  if (batch) {
    if (*batch < 1 || *batch > 10000) return InvalidArgument("ship.batch_events must be 1..10000");
    o.batch_events = static_cast<size_t>(*batch);
  }
  GOVERN_ASSIGN_OR_RETURN(auto bytes, detail::OptInt(s, "batch_bytes", "ship"));
  if (bytes) {
    if (*bytes < 1024 || *bytes > (int64_t{4} << 20))
      return InvalidArgument("ship.batch_bytes must be 1 KiB..4 MiB");
    o.batch_bytes = static_cast<size_t>(*bytes);
  }
  GOVERN_ASSIGN_OR_RETURN(auto interval, detail::OptInt(s, "interval_ms", "ship"));
  if (interval) {
    if (*interval < 0 || *interval > 60000) return InvalidArgument("ship.interval_ms must be 0..60000");
    o.linger = std::chrono::milliseconds(*interval);
  } else {
    o.linger = std::chrono::milliseconds(200);
  }
  GOVERN_ASSIGN_OR_RETURN(auto backoff, detail::OptInt(s, "max_backoff_ms", "ship"));
  if (backoff) {
    if (*backoff < 1 || *backoff > 3600000) return InvalidArgument("ship.max_backoff_ms must be 1..3600000");
    o.max_backoff = std::chrono::milliseconds(*backoff);
  }
  return std::optional<policy::ShipperOptions>(std::move(o));
}

Result<std::unique_ptr<policy::WalEventShipper>> NewUsageShipper(wal::Log* wal, const std::string& usage_dir,
                                                                 policy::ShipperOptions options) {
  options.cursor = "telemetry";
  options.event_type = "gateway.usage";
  options.log_component = "gateway.usage_shipper";
  if (options.quarantine_path.empty()) options.quarantine_path = usage_dir + "/quarantine.ndjson";
  return policy::WalEventShipper::Create(wal, AppendUsageEvent, std::move(options));
}

Status ForgetUsageShipper(wal::Log* wal) { return policy::WalEventShipper::Forget(wal, "telemetry"); }

}  // namespace govern::gateway
