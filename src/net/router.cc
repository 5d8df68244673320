// Router: pattern parsing and matching.
#include "net/router.h"

#include <algorithm>

namespace govern::net {
namespace {

// Splits "/a/b/c" into {"a","b","c"}; "/" gives one empty segment.
void SplitPath(std::string_view path, std::vector<std::string_view>& out) {
  out.clear();
  if (!path.empty() && path[0] == '/') path.remove_prefix(1);
  while (true) {
    size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
}

bool ValidName(std::string_view n) {
  if (n.empty()) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

}  // namespace

void Router::Add(Method method, std::string_view pattern, Handler handler, RouteOptions options) {
  auto fail = [&](std::string why) {
    if (status_.ok()) status_ = InvalidArgument("route " + std::string(pattern) + ": " + why);
  };
  if (pattern.empty() || pattern[0] != '/') return fail("a pattern starts with '/'");
  if (!handler) return fail("no handler");
  if (Has(method, pattern)) return fail("registered twice for " + std::string(MethodName(method)));
  auto route = std::make_unique<Route>();
  route->method = method;
  route->pattern = pattern;
  route->handler = std::move(handler);
  route->options = std::move(options);
  if (route->options.name.empty()) route->options.name = route->pattern;
  std::vector<std::string_view> parts;
  SplitPath(pattern, parts);
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string_view s = parts[i];
    if (s.size() >= 2 && s.front() == '{' && s.back() == '}') {
      std::string_view name = s.substr(1, s.size() - 2);
      if (name.size() > 3 && name.substr(name.size() - 3) == "...") {
        if (i + 1 != parts.size()) return fail("a {name...} segment must be last");
        name.remove_suffix(3);
        if (!ValidName(name)) return fail("bad parameter name");
        route->segments.push_back({Route::Segment::kRest, std::string(name)});
      } else {
        if (!ValidName(name)) return fail("bad parameter name");
        route->segments.push_back({Route::Segment::kParam, std::string(name)});
      }
    } else {
      if (s.find_first_of("{}") != std::string_view::npos) return fail("braces inside a literal segment");
      route->segments.push_back({Route::Segment::kLiteral, std::string(s)});
    }
  }
  route->index = routes_.size();
  routes_.push_back(std::move(route));
}

void Router::AddSync(Method method, std::string_view pattern, SyncHandler handler, RouteOptions options) {
  if (!handler) {
    Add(method, pattern, Handler(), std::move(options));
    return;
  }
  Add(
      method, pattern,
      [h = std::move(handler)](Request&& req, Responder responder) { responder.Send(h(req)); },
      std::move(options));
}

bool Router::Has(Method method, std::string_view pattern) const {
  return std::any_of(routes_.begin(), routes_.end(),
                     [&](const auto& r) { return r->method == method && r->pattern == pattern; });
}

namespace {

// Matches `route` against the split path. Returns a specificity score (higher wins; literal > param >
// rest at each position, earlier positions weigh more) or -1. Params are not extracted here.
int64_t Score(const Route& route, const std::vector<std::string_view>& parts) {
  const auto& segs = route.segments;
  int64_t score = 0;
  size_t i = 0;
  for (; i < segs.size(); ++i) {
    const Route::Segment& seg = segs[i];
    if (seg.kind == Route::Segment::kRest) {
      // The rest may be empty ("/files/" matches "/files/{p...}") but the slash must be there.
      if (i > parts.size()) return -1;
      return score * 3;
    }
    if (i >= parts.size()) return -1;
    score *= 3;
    if (seg.kind == Route::Segment::kLiteral) {
      if (parts[i] != seg.text) return -1;
      score += 2;
    } else {
      if (parts[i].empty()) return -1;
      score += 1;
    }
  }
  return i == parts.size() ? score : -1;
}

void ExtractParams(const Route& route, std::string_view path, const std::vector<std::string_view>& parts,
                   std::vector<std::pair<std::string, std::string>>* params) {
  params->clear();
  for (size_t i = 0; i < route.segments.size(); ++i) {
    const Route::Segment& seg = route.segments[i];
    if (seg.kind == Route::Segment::kParam) {
      params->emplace_back(seg.text, PercentDecode(parts[i], false));
    } else if (seg.kind == Route::Segment::kRest) {
      std::string_view rest;
      if (i < parts.size()) rest = path.substr(static_cast<size_t>(parts[i].data() - path.data()));
      params->emplace_back(seg.text, PercentDecode(rest, false));
    }
  }
}

}  // namespace

Router::Match Router::Find(Method method, std::string_view path,
                           std::vector<std::pair<std::string, std::string>>* params) const {
  Match m;
  if (path.empty() || path[0] != '/') return m;
  // Reused per thread: Find runs on every request of every event loop.
  thread_local std::vector<std::string_view> parts;
  SplitPath(path, parts);
  const Route* best = nullptr;
  int64_t best_score = -1;
  const Route* get_fallback = nullptr;
  int64_t get_score = -1;
  bool allowed[8] = {};
  for (const auto& r : routes_) {
    int64_t s = Score(*r, parts);
    if (s < 0) continue;
    m.path_known = true;
    allowed[static_cast<size_t>(r->method)] = true;
    if (r->method == method && s > best_score) {
      best = r.get();
      best_score = s;
    } else if (method == Method::kHead && r->method == Method::kGet && s > get_score) {
      get_fallback = r.get();
      get_score = s;
    }
  }
  if (!best) best = get_fallback;
  if (best) {
    m.route = best;
    ExtractParams(*best, path, parts, params);
    return m;
  }
  if (m.path_known) {
    if (allowed[static_cast<size_t>(Method::kGet)]) allowed[static_cast<size_t>(Method::kHead)] = true;
    for (Method x : {Method::kGet, Method::kHead, Method::kPost, Method::kPut, Method::kPatch,
                     Method::kDelete, Method::kOptions}) {
      if (!allowed[static_cast<size_t>(x)]) continue;
      if (!m.allow.empty()) m.allow += ", ";
      m.allow += MethodName(x);
    }
  }
  return m;
}

}  // namespace govern::net
