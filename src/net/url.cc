#include "net/url.h"

namespace govern::net {

Result<Url> ParseUrl(std::string_view url) {
  Url u;
  if (url.substr(0, 7) == "http://") {
    url.remove_prefix(7);
  } else if (url.substr(0, 8) == "https://") {
    u.tls = true;
    url.remove_prefix(8);
  } else {
    return InvalidArgument("url must start with http:// or https://");
  }
  size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  u.target = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  if (authority.empty()) return InvalidArgument("url has no host");
  if (authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgument("url has a bad IPv6 host (an unclosed [)");
    u.host = authority.substr(1, close - 1);
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return InvalidArgument("url has a bad port");
      u.port = rest.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string_view::npos) u.port = authority.substr(colon + 1);
  }
  if (u.host.empty()) return InvalidArgument("url has no host");
  if (u.port.empty()) u.port = u.tls ? "443" : "80";
  for (char c : u.port) {
    if (c < '0' || c > '9') return InvalidArgument("url has a bad port");
  }
  u.origin = (u.tls ? "https://" : "http://") + u.host + ":" + u.port;
  return u;
}

}  // namespace govern::net
