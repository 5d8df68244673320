// Turning configuration into HTTP server settings.
#include "services/http_config.h"

#include <charconv>

namespace govern::services {

Result<ListenAddress> ParseListen(std::string_view text) {
  ListenAddress out;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return InvalidArgument("'" + std::string(text) + "' is not an address (use [::1]:7700)");
    }
    out.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      return InvalidArgument("'" + std::string(text) + "' is not host:port (IPv6 goes in brackets: [::1]:7700)");
    }
    out.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
    if (out.host.empty()) out.host = "0.0.0.0";
  }
  if (out.host == "localhost") out.host = "127.0.0.1";
  unsigned port = 0;
  auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || p != port_text.data() + port_text.size() || port > 65535 || port_text.empty()) {
    return InvalidArgument("'" + std::string(text) + "' has a bad port (0-65535; 0 picks a free one)");
  }
  out.port = static_cast<uint16_t>(port);
  return out;
}

std::string FormatListen(std::string_view host, uint16_t port) {
  std::string h(host);
  if (h.find(':') != std::string::npos) h = "[" + h + "]";
  return h + ":" + std::to_string(port);
}

Result<net::ServerConfig> MakeServerConfig(const Context& ctx, std::string_view service) {
  const config::Config& cfg = *ctx.config;
  std::string key = std::string(service) + ".listen";
  auto listen = ParseListen(cfg.GetString(key));
  if (!listen.ok()) return listen.status().WithContext(key);
  net::ServerConfig sc;
  sc.address = listen->host;
  sc.port = listen->port;
  sc.workers = static_cast<int>(cfg.GetInt("http.workers"));
  sc.max_header_bytes = static_cast<size_t>(cfg.GetBytes("http.max_header_bytes"));
  sc.max_body_bytes = static_cast<size_t>(cfg.GetBytes("http.max_body_bytes"));
  sc.max_connections = static_cast<size_t>(cfg.GetInt("http.max_connections"));
  sc.header_timeout = cfg.GetDuration("http.header_timeout");
  sc.body_timeout = cfg.GetDuration("http.body_timeout");
  sc.idle_timeout = cfg.GetDuration("http.idle_timeout");
  sc.drain_timeout = cfg.GetDuration("http.drain_timeout");
  sc.tls_cert_file = cfg.GetString("http.tls_cert");
  sc.tls_key_file = cfg.GetString("http.tls_key");
  if (sc.tls_cert_file.empty() != sc.tls_key_file.empty()) {
    return InvalidArgument("http.tls_cert and http.tls_key must be set together");
  }
  sc.admission = ctx.admission;
  return sc;
}

}  // namespace govern::services
