// Router: maps a method and a path to a handler, with path parameters ("/v1/orgs/{org}/events") and a
// trailing catch-all ("/files/{path...}"). Each route carries what the server needs before running the
// handler: its request class for admission, its body limit and its metrics name.
//
// Build it on one thread before the server starts; afterwards it is read-only and Find() is safe from
// every event loop at once. No Boost.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "net/admission.h"
#include "net/http.h"

namespace govern::net {

struct RouteOptions {
  RequestClass cls = RequestClass::kNormal;
  size_t max_body_bytes = 0;  // 0: the server's default (ServerConfig::max_body_bytes)
  std::string name;           // label in /metrics; empty: the pattern
  // The route's own bound on requests being handled at once in this server (counted from dispatch
  // until the answer, or the head of a streamed answer, is handed over); 0: none. Over it the server
  // answers 503 with Retry-After: retry_after_seconds at once, before the handler (and before
  // admission). Applies to every class; it is the bound of a kOwnBound route.
  size_t max_in_flight = 0;
  int retry_after_seconds = 1;
};

struct Route {
  Method method = Method::kGet;
  std::string pattern;
  Handler handler;
  RouteOptions options;
  size_t index = 0;  // position in Router::routes(), stable (the server keys per-route metrics by it)

  // Parsed pattern: literal segments, "{name}" parameters, and an optional final "{name...}".
  struct Segment {
    enum Kind : uint8_t { kLiteral, kParam, kRest } kind;
    std::string text;  // the literal, or the parameter name
  };
  std::vector<Segment> segments;
};

class Router {
 public:
  Router() = default;
  Router(Router&&) = default;
  Router& operator=(Router&&) = default;

  // Registers a route. A malformed pattern or a duplicate (method, pattern) is recorded and reported
  // by status() (and so by Server::Start), so registration code stays a flat list.
  void Add(Method method, std::string_view pattern, Handler handler, RouteOptions options = {});
  void AddSync(Method method, std::string_view pattern, SyncHandler handler, RouteOptions options = {});

  // The first registration error, or ok.
  const Status& status() const { return status_; }

  struct Match {
    const Route* route = nullptr;  // null: no route for this method
    bool path_known = false;       // the path matched some route (so: 405, not 404)
    std::string allow;             // for 405: "GET, POST"
  };
  // Finds the route for `method` and `path` (raw, not decoded). On a match, `params` receives the
  // decoded path parameters. A literal segment wins over a parameter at the same place. HEAD falls
  // back to GET when no HEAD route exists.
  Match Find(Method method, std::string_view path,
             std::vector<std::pair<std::string, std::string>>* params) const;

  // True when some route has exactly this method and pattern.
  bool Has(Method method, std::string_view pattern) const;
  const std::vector<std::unique_ptr<Route>>& routes() const { return routes_; }

 private:
  std::vector<std::unique_ptr<Route>> routes_;
  Status status_;
};

}  // namespace govern::net
