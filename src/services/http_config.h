// Helpers every service uses to turn configuration into an HTTP server: the shared http.* keys and
// a service's own "<name>.listen" address. No Boost here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "config/config.h"
#include "net/http_server.h"
#include "services/service.h"

namespace govern::services {

struct ListenAddress {
  std::string host;  // "127.0.0.1", "::1", "0.0.0.0"
  uint16_t port = 0;
};

// Parses "127.0.0.1:7700", "[::1]:7700", "localhost:0", ":7700" (all interfaces). The error names
// what is wrong.
Result<ListenAddress> ParseListen(std::string_view text);

// "127.0.0.1:7700" / "[::1]:7700".
std::string FormatListen(std::string_view host, uint16_t port);

// A ServerConfig from the http.* keys, listening on the service's "<service>.listen" key, with the
// process's admission controller.
Result<net::ServerConfig> MakeServerConfig(const Context& ctx, std::string_view service);

}  // namespace govern::services
