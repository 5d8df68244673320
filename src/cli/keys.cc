// Core configuration keys. docs/configuration.md is generated from these (`govern config docs`).
#include "cli/keys.h"

#include <algorithm>
#include <string>

#include "services/service.h"

namespace govern::cli {

void DeclareCoreKeys(config::Schema& s) {
  using config::Type;
  s.Add({.key = "data_dir",
         .type = Type::kString,
         .default_value = "./var",
         .help = "Directory for all local state: the private PostgreSQL, write-ahead logs, archives."});
  s.Add({.key = "log.level",
         .type = Type::kEnum,
         .default_value = "info",
         .help = "Lowest level written.",
         .choices = {"debug", "info", "warn", "error"}});
  s.Add({.key = "log.format",
         .type = Type::kEnum,
         .default_value = "text",
         .help = "`text` (logfmt, one line per event) or `json` (one object per line).",
         .choices = {"text", "json"}});
  s.Add({.key = "database.url",
         .type = Type::kString,
         .default_value = "",
         .help = "libpq connection string or URI of the PostgreSQL to use. Empty: a private PostgreSQL "
                 "cluster under `<data_dir>/postgres`, created and started by govern.",
         .secret = true});
  s.Add({.key = "database.pool_size",
         .type = Type::kInt,
         .default_value = "16",
         .help = "Connections each process keeps open to PostgreSQL.",
         .min = 1,
         .max = 1024});
  s.Add({.key = "database.pg_bin_dir",
         .type = Type::kString,
         .default_value = "",
         .help = "Where initdb, pg_ctl and postgres are, for the private cluster. Empty: the newest "
                 "/usr/lib/postgresql/*/bin (15 preferred), then PATH."});
  s.Add({.key = "http.workers",
         .type = Type::kInt,
         .default_value = "0",
         .help = "Event loops (threads) per HTTP server. 0: one per core.",
         .min = 0,
         .max = 1024});
  s.Add({.key = "http.max_header_bytes",
         .type = Type::kBytes,
         .default_value = "16KiB",
         .help = "Largest request head (request line and headers); larger gets 431.",
         .min = 1024,
         .max = int64_t{1} << 20});
  s.Add({.key = "http.max_body_bytes",
         .type = Type::kBytes,
         .default_value = "8MiB",
         .help = "Default largest request body; larger gets 413. Routes may set their own.",
         .min = 0,
         .max = int64_t{1} << 32});
  s.Add({.key = "http.header_timeout",
         .type = Type::kDuration,
         .default_value = "10s",
         .help = "Time a client has to send a request head; slower clients are closed.",
         .min = 1});
  s.Add({.key = "http.body_timeout",
         .type = Type::kDuration,
         .default_value = "60s",
         .help = "Time a client has to send a request body.",
         .min = 1});
  s.Add({.key = "http.idle_timeout",
         .type = Type::kDuration,
         .default_value = "60s",
         .help = "An idle keep-alive connection is closed after this long.",
         .min = 1});
  s.Add({.key = "http.drain_timeout",
         .type = Type::kDuration,
         .default_value = "10s",
         .help = "On SIGTERM, how long in-flight requests get to finish before connections close.",
         .min = 0});
  s.Add({.key = "http.max_connections",
         .type = Type::kInt,
         .default_value = "10000",
         .help = "Open connections per HTTP server; more are refused.",
         .min = 1,
         .max = 1'000'000});
  s.Add({.key = "http.tls_cert",
         .type = Type::kString,
         .default_value = "",
         .help = "PEM certificate chain. With `http.tls_key`, every HTTP server speaks HTTPS."});
  s.Add({.key = "http.tls_key",
         .type = Type::kString,
         .default_value = "",
         .help = "PEM private key for `http.tls_cert`.",
         .secret = true});
  s.Add({.key = "up.services",
         .type = Type::kStringList,
         .default_value = "",
         .help = "Services `govern up` runs. Empty: every service but model-stub (a test tool) and gateway "
                 "(needs gateway.routes_file).",
         .validate = [](std::string_view text) -> Status {
           std::string known;
           for (const auto& reg : services::Registry())
             known += (known.empty() ? "" : ", ") + std::string(reg.name);
           size_t start = 0;
           while (start <= text.size()) {
             size_t comma = std::min(text.find(',', start), text.size());
             std::string name(text.substr(start, comma - start));
             name.erase(0, name.find_first_not_of(" \t"));
             name.erase(name.find_last_not_of(" \t") + 1);
             bool found = name.empty();
             for (const auto& reg : services::Registry()) found = found || reg.name == name;
             if (!found)
               return InvalidArgument("unknown service '" + name + "' (this binary holds: " + known + ")");
             start = comma + 1;
           }
           return OkStatus();
         }});
}

}  // namespace govern::cli
