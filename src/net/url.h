// The URL form HttpClient accepts (http_client.h): `http[s]://host[:port][/target]`, split as the
// client splits it, so a caller that checks where a request will go (an allow-list of hosts) checks
// exactly the host the client connects to.
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::net {

struct Url {
  bool tls = false;
  std::string host;    // as resolved and connected to: an IPv6 address without its brackets
  std::string port;    // digits; 80 or 443 when not given
  std::string target;  // from the first '/', "/" when none
  std::string origin;  // "http://host:port", the connection pool's key
};

// InvalidArgument when the scheme is not http or https, or the host or port is missing or malformed.
// Everything up to the first '/' after the scheme is the authority (no user information, query or
// fragment is recognised there: callers that need a strict authority check it themselves).
Result<Url> ParseUrl(std::string_view url);

}  // namespace govern::net
