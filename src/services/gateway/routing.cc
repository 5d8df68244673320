#include "services/gateway/routing.h"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "gateway/json_util.h"
#include "services/gateway/bedrock_provider.h"
#include "services/gateway/upstream.h"

namespace govern::gateway {

using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

std::string_view ProviderName(Provider p) {
  switch (p) {
    case Provider::kOpenAI:
      return "openai";
    case Provider::kAnthropic:
      return "anthropic";
    case Provider::kAzure:
      return "azure";
    case Provider::kOpenAICompatible:
      return "openai_compatible";
    case Provider::kGemini:
      return "gemini";
    case Provider::kBedrock:
      return "bedrock";
  }
  return "openai";
}

WireFormat ProviderFormat(Provider p) {
  return p == Provider::kAnthropic ? WireFormat::kAnthropic : WireFormat::kOpenAI;
}

namespace {

Status CheckKeys(const Json& obj, std::string_view path, std::initializer_list<const char*> known) {
  for (const auto& [k, v] : obj.items()) {
    bool ok = false;
    for (const char* n : known) ok = ok || k == n;
    if (!ok) return InvalidArgument(std::string(path) + ": unknown field `" + k + "`");
  }
  return OkStatus();
}

Result<std::optional<std::chrono::milliseconds>> OptMillis(const Json& obj, const char* key,
                                                           const std::string& path, int64_t min = 1) {
  GOVERN_ASSIGN_OR_RETURN(auto v, detail::OptInt(obj, key, path));
  if (!v) return std::optional<std::chrono::milliseconds>();
  if (*v < min || *v > 86400000)
    return InvalidArgument(path + "." + key + " must be " + std::to_string(min) + "..86400000");
  return std::optional<std::chrono::milliseconds>(std::chrono::milliseconds(*v));
}

Status CheckBaseUrl(const std::string& url, const std::string& path) {
  if (!url.starts_with("http://") && !url.starts_with("https://"))
    return InvalidArgument(path + ".base_url must start with http:// or https://");
  if (url.find_first_of(" \t\r\n?#") != std::string::npos)
    return InvalidArgument(path + ".base_url must not hold spaces, a query or a fragment");
  return OkStatus();
}

// Azure serves the Responses API at the resource, not under a deployment (the body's `model` names the
// deployment): the dated preview API (2025-03-01-preview and later) when the deployment's api_version is
// one, else the v1 API, which takes no api-version.
std::string AzureResponsesUrl(const DeploymentConfig& dc) {
  const std::string_view v = dc.api_version;
  if (v.ends_with("-preview") && v >= "2025-03-01")
    return dc.base_url + "/openai/responses?api-version=" + dc.api_version;
  return dc.base_url + "/openai/v1/responses";
}

Result<DeploymentConfig> ParseDeployment(const Json& d, const std::string& path, const std::string& model,
                                         size_t index) {
  if (!d.is_object()) return InvalidArgument(path + " must be an object");
  GOVERN_RETURN_IF_ERROR(CheckKeys(
      d, path,
      {"name", "provider", "base_url", "api_key", "model", "weight", "azure_deployment", "api_version",
       "connect_timeout_ms", "header_timeout_ms", "read_timeout_ms", "stub_fault_headers",
       // bedrock (bedrock_provider.h, kBedrockFields)
       "region", "aws_access_key_id", "aws_secret_access_key", "aws_session_token", "aws_access_key_id_env",
       "aws_secret_access_key_env", "aws_session_token_env", "aws_credentials_source", "aws_credentials_file",
       "aws_profile", "aws_imds_endpoint", "aws_credentials_refresh_before_ms",
       "aws_credentials_file_check_ms", "cohere_input_type"}));
  DeploymentConfig c;
  GOVERN_ASSIGN_OR_RETURN(auto name, detail::OptString(d, "name", path));
  c.name = name.value_or(model + "#" + std::to_string(index));
  if (c.name.empty()) return InvalidArgument(path + ".name must not be empty");
  GOVERN_ASSIGN_OR_RETURN(auto provider, detail::OptString(d, "provider", path));
  std::string p = provider.value_or("openai");
  if (p == "openai") {
    c.provider = Provider::kOpenAI;
  } else if (p == "anthropic") {
    c.provider = Provider::kAnthropic;
  } else if (p == "azure") {
    c.provider = Provider::kAzure;
  } else if (p == "openai_compatible") {
    c.provider = Provider::kOpenAICompatible;
  } else if (p == "gemini") {
    c.provider = Provider::kGemini;
  } else if (p == "bedrock") {
    c.provider = Provider::kBedrock;
  } else {
    return InvalidArgument(
        path + ".provider must be openai, anthropic, azure, openai_compatible, gemini or bedrock (not `" + p +
        "`)");
  }
  GOVERN_ASSIGN_OR_RETURN(c.base_url, c.provider == Provider::kBedrock
                                          ? BedrockBaseUrl(d, path)
                                          : detail::ReqString(d, "base_url", path));
  while (!c.base_url.empty() && c.base_url.back() == '/') c.base_url.pop_back();
  GOVERN_RETURN_IF_ERROR(CheckBaseUrl(c.base_url, path));
  GOVERN_ASSIGN_OR_RETURN(auto key, detail::OptString(d, "api_key", path));
  c.api_key = key.value_or("");
  if (c.api_key.find_first_of("\r\n") != std::string::npos)
    return InvalidArgument(path + ".api_key must not hold line breaks");
  if ((c.provider == Provider::kAzure || c.provider == Provider::kGemini) && c.api_key.empty())
    return InvalidArgument(path + ".api_key is required for provider " + p);
  GOVERN_ASSIGN_OR_RETURN(auto up_model, detail::OptString(d, "model", path));
  c.model = up_model.value_or("");
  GOVERN_ASSIGN_OR_RETURN(auto weight, detail::OptInt(d, "weight", path));
  if (weight) {
    if (*weight < 1 || *weight > 1000000) return InvalidArgument(path + ".weight must be 1..1000000");
    c.weight = static_cast<int>(*weight);
  }
  GOVERN_ASSIGN_OR_RETURN(auto azure_dep, detail::OptString(d, "azure_deployment", path));
  GOVERN_ASSIGN_OR_RETURN(auto version, detail::OptString(d, "api_version", path));
  if (c.provider != Provider::kAzure && azure_dep)
    return InvalidArgument(path + ": azure_deployment is for provider azure only");
  if (c.provider != Provider::kAzure && c.provider != Provider::kGemini && version)
    return InvalidArgument(path + ": api_version is for providers azure and gemini only");
  c.api_version = c.provider == Provider::kGemini ? "v1beta" : "2024-10-21";
  c.azure_deployment = azure_dep.value_or(c.model.empty() ? model : c.model);
  if (c.provider == Provider::kGemini &&
      (c.model.empty() ? model : c.model)
              .find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
          std::string::npos)
    return InvalidArgument(path + ".model must be a Gemini model name (letters, digits, - _ .)");
  if (c.provider == Provider::kAzure &&
      (c.azure_deployment.empty() ||
       c.azure_deployment.find_first_not_of(
           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != std::string::npos))
    return InvalidArgument(path + ".azure_deployment must be letters, digits, - _ or .");
  if (version) {
    if (version->empty() ||
        version->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") != std::string::npos)
      return InvalidArgument(path + ".api_version must be like 2024-10-21");
    c.api_version = *version;
  }
  // AWS Bedrock (bedrock_provider.h): region, credentials, signed URLs; refused on other providers.
  GOVERN_RETURN_IF_ERROR(ParseBedrockFields(d, path, model, c));
  GOVERN_ASSIGN_OR_RETURN(c.connect_timeout, OptMillis(d, "connect_timeout_ms", path));
  GOVERN_ASSIGN_OR_RETURN(c.header_timeout, OptMillis(d, "header_timeout_ms", path));
  GOVERN_ASSIGN_OR_RETURN(c.read_timeout, OptMillis(d, "read_timeout_ms", path));
  GOVERN_ASSIGN_OR_RETURN(auto fault, detail::OptBool(d, "stub_fault_headers", path));
  c.stub_fault_headers = fault.value_or(false);
  return c;
}

}  // namespace

Result<ModelRouteConfig> ParseModelRoute(const Json& r, std::string_view where) {
  std::string path(where);
  if (!r.is_object()) return InvalidArgument(path + " must be an object");
  GOVERN_RETURN_IF_ERROR(CheckKeys(r, path, {"model", "deployments", "fallbacks", "retry", "breaker"}));
  ModelRouteConfig c;
  GOVERN_ASSIGN_OR_RETURN(c.model, detail::ReqString(r, "model", path));
  if (c.model.empty()) return InvalidArgument(path + ".model must not be empty");
  auto deps = r.find("deployments");
  if (deps == r.end() || !deps->is_array() || deps->empty())
    return InvalidArgument(path + ".deployments must be a non-empty array");
  std::set<std::string> names;
  for (size_t i = 0; i < deps->size(); ++i) {
    std::string dpath = path + ".deployments[" + std::to_string(i) + "]";
    GOVERN_ASSIGN_OR_RETURN(DeploymentConfig d, ParseDeployment((*deps)[i], dpath, c.model, i));
    if (!names.insert(d.name).second) return InvalidArgument(dpath + ".name `" + d.name + "` is used twice");
    c.deployments.push_back(std::move(d));
  }
  if (auto f = r.find("fallbacks"); f != r.end()) {
    if (!f->is_array()) return InvalidArgument(path + ".fallbacks must be an array of model names");
    for (const Json& m : *f) {
      if (!m.is_string() || m.get<std::string>().empty())
        return InvalidArgument(path + ".fallbacks must be an array of model names");
      c.fallbacks.push_back(m.get<std::string>());
    }
  }
  if (auto it = r.find("retry"); it != r.end()) {
    std::string rpath = path + ".retry";
    if (!it->is_object()) return InvalidArgument(rpath + " must be an object");
    GOVERN_RETURN_IF_ERROR(CheckKeys(*it, rpath, {"retries", "backoff_ms", "max_backoff_ms", "on_status"}));
    GOVERN_ASSIGN_OR_RETURN(auto retries, detail::OptInt(*it, "retries", rpath));
    if (retries) {
      if (*retries < 0 || *retries > 10) return InvalidArgument(rpath + ".retries must be 0..10");
      c.retry.retries = static_cast<int>(*retries);
    }
    GOVERN_ASSIGN_OR_RETURN(auto backoff, OptMillis(*it, "backoff_ms", rpath, 0));
    if (backoff) c.retry.backoff = *backoff;
    GOVERN_ASSIGN_OR_RETURN(auto max_backoff, OptMillis(*it, "max_backoff_ms", rpath, 0));
    if (max_backoff) c.retry.max_backoff = *max_backoff;
    if (c.retry.max_backoff < c.retry.backoff)
      return InvalidArgument(rpath + ".max_backoff_ms must not be below backoff_ms");
    if (auto s = it->find("on_status"); s != it->end()) {
      if (!s->is_array()) return InvalidArgument(rpath + ".on_status must be an array of statuses");
      c.retry.on_status.clear();
      for (const Json& v : *s) {
        if (!v.is_number_integer()) return InvalidArgument(rpath + ".on_status must be an array of statuses");
        int code = v.get<int>();
        // Only answers that say the request was not done: a 2xx was billed, a 4xx other than 408/409/429
        // would fail the same way elsewhere.
        if (!(code == 408 || code == 409 || code == 429 || (code >= 500 && code <= 599)))
          return InvalidArgument(rpath + ".on_status: " + std::to_string(code) +
                                 " is not retryable (408, 409, 429 or 5xx)");
        c.retry.on_status.push_back(code);
      }
    }
  }
  if (auto it = r.find("breaker"); it != r.end()) {
    std::string bpath = path + ".breaker";
    if (!it->is_object()) return InvalidArgument(bpath + " must be an object");
    GOVERN_RETURN_IF_ERROR(CheckKeys(
        *it, bpath, {"consecutive_failures", "failure_ratio", "window", "min_calls", "cooldown_ms"}));
    c.breaker.enabled = true;
    GOVERN_ASSIGN_OR_RETURN(auto consecutive, detail::OptInt(*it, "consecutive_failures", bpath));
    if (consecutive) {
      if (*consecutive < 0 || *consecutive > 1000)
        return InvalidArgument(bpath + ".consecutive_failures must be 0..1000");
      c.breaker.consecutive_failures = static_cast<int>(*consecutive);
    }
    GOVERN_ASSIGN_OR_RETURN(auto ratio, detail::OptNumber(*it, "failure_ratio", bpath));
    if (ratio) {
      if (!(*ratio >= 0 && *ratio <= 1)) return InvalidArgument(bpath + ".failure_ratio must be 0..1");
      c.breaker.failure_ratio = *ratio;
    }
    GOVERN_ASSIGN_OR_RETURN(auto window, detail::OptInt(*it, "window", bpath));
    if (window) {
      if (*window < 1 || *window > 10000) return InvalidArgument(bpath + ".window must be 1..10000");
      c.breaker.window = static_cast<int>(*window);
    }
    GOVERN_ASSIGN_OR_RETURN(auto min_calls, detail::OptInt(*it, "min_calls", bpath));
    if (min_calls) {
      if (*min_calls < 1) return InvalidArgument(bpath + ".min_calls must be at least 1");
      c.breaker.min_calls = static_cast<int>(*min_calls);
    }
    if (c.breaker.min_calls > c.breaker.window)
      return InvalidArgument(bpath + ".min_calls must not exceed window");
    GOVERN_ASSIGN_OR_RETURN(auto cooldown, OptMillis(*it, "cooldown_ms", bpath));
    if (cooldown) c.breaker.cooldown = *cooldown;
    if (c.breaker.consecutive_failures == 0 && c.breaker.failure_ratio == 0)
      return InvalidArgument(bpath + ": set consecutive_failures or failure_ratio (both are 0)");
  }
  return c;
}

Status ValidateRoutes(const std::vector<ModelRouteConfig>& routes) {
  std::set<std::string> models;
  for (const auto& r : routes) {
    if (!models.insert(r.model).second) return InvalidArgument("gateway: model routed twice: " + r.model);
  }
  for (const auto& r : routes) {
    // Every deployment's URL must be one the provider client can call (a host, a numeric port), so no
    // request fails, or waits, on a URL that never worked.
    for (const auto& d : r.deployments) {
      if (Status ok = CheckUpstreamUrl(d.base_url); !ok.ok())
        return InvalidArgument("route " + r.model + ", deployment `" + d.name + "`: base_url " + d.base_url +
                               ": " + ok.message());
    }
    std::set<std::string> seen;
    for (const auto& f : r.fallbacks) {
      if (f == r.model) return InvalidArgument("route " + r.model + ": falls back to itself");
      if (!models.contains(f))
        return InvalidArgument("route " + r.model + ": fallback `" + f + "` is not a routed model");
      if (!seen.insert(f).second) return InvalidArgument("route " + r.model + ": fallback `" + f + "` twice");
    }
  }
  return OkStatus();
}

std::chrono::milliseconds LongestWholeAnswer(const std::vector<ModelRouteConfig>& routes,
                                             std::chrono::milliseconds connect_timeout, int connect_attempts,
                                             std::chrono::milliseconds header_timeout) {
  std::map<std::string, const ModelRouteConfig*, std::less<>> by_model;
  for (const auto& r : routes) by_model.emplace(r.model, &r);
  auto one_model = [&](const ModelRouteConfig& r) {
    std::chrono::milliseconds worst{0};
    for (const auto& d : r.deployments) {
      worst = std::max(worst, d.connect_timeout.value_or(connect_timeout) * std::max(1, connect_attempts) +
                                  std::chrono::milliseconds(50) * connect_attempts +
                                  d.header_timeout.value_or(header_timeout));
    }
    return worst * (1 + r.retry.retries) + r.retry.max_backoff * (1 + r.retry.retries);
  };
  std::chrono::milliseconds longest{0};
  for (const auto& r : routes) {
    std::chrono::milliseconds total = one_model(r);
    for (const auto& f : r.fallbacks) {
      if (auto it = by_model.find(f); it != by_model.end()) total += one_model(*it->second);
    }
    longest = std::max(longest, total);
  }
  return longest;
}

// ---------------------------------------------------------------------------------------------------

enum class BreakerState { kClosed, kOpen, kHalfOpen };

// What a deployment has learnt: calls in flight, balancing, breaker. A table made by a reload (Create
// with `previous`) shares it with the table it replaces for every deployment still there, so the plans
// of both count into one state.
struct DeploymentHealth {
  // Guarded by RouteTable::Impl::mu.
  int in_flight = 0;
  int64_t current_weight = 0;  // smooth weighted round robin
  BreakerState state = BreakerState::kClosed;
  int consecutive = 0;
  std::deque<bool> window;  // recent outcomes (true: failure), closed state only
  int window_failures = 0;
  SteadyClock::time_point open_until{};
  bool probe_in_flight = false;
};

struct Deployment {
  const ModelRouteConfig* route = nullptr;
  const DeploymentConfig* config = nullptr;
  AttemptTarget target;
  std::shared_ptr<DeploymentHealth> health = std::make_shared<DeploymentHealth>();
};

struct RouteTable::Impl {
  std::vector<ModelRouteConfig> routes;
  std::vector<std::vector<std::unique_ptr<Deployment>>> deployments;  // by route index
  std::map<std::string, int, std::less<>> by_model;
  // Shared by every table of a reload chain, since they share deployment health.
  std::shared_ptr<std::mutex> mu = std::make_shared<std::mutex>();
};

RouteTable::RouteTable() : impl_(std::make_unique<Impl>()) {}
RouteTable::~RouteTable() = default;

const std::vector<ModelRouteConfig>& RouteTable::routes() const { return impl_->routes; }

Result<std::shared_ptr<RouteTable>> RouteTable::Create(std::vector<ModelRouteConfig> routes,
                                                       const RouteTable* previous) {
  GOVERN_RETURN_IF_ERROR(ValidateRoutes(routes));
  std::shared_ptr<RouteTable> table(new RouteTable());
  Impl& s = *table->impl_;
  s.routes = std::move(routes);
  for (size_t i = 0; i < s.routes.size(); ++i) {
    const ModelRouteConfig& r = s.routes[i];
    s.by_model.emplace(r.model, static_cast<int>(i));
    auto& list = s.deployments.emplace_back();
    for (const DeploymentConfig& dc : r.deployments) {
      auto d = std::make_unique<Deployment>();
      d->route = &r;
      d->config = &dc;
      AttemptTarget& t = d->target;
      t.model = r.model;
      t.deployment = dc.name;
      t.provider = dc.provider;
      t.format = ProviderFormat(dc.provider);
      t.base_url = dc.base_url;
      t.upstream_model = dc.model;
      t.connect_timeout = dc.connect_timeout;
      t.header_timeout = dc.header_timeout;
      t.read_timeout = dc.read_timeout;
      t.stub_fault_headers = dc.stub_fault_headers;
      switch (dc.provider) {
        case Provider::kOpenAI:
          t.url = dc.base_url + "/v1/chat/completions";
          if (!dc.api_key.empty()) t.auth.Set("Authorization", "Bearer " + dc.api_key);
          break;
        case Provider::kOpenAICompatible:
          t.url = dc.base_url + "/chat/completions";
          if (!dc.api_key.empty()) t.auth.Set("Authorization", "Bearer " + dc.api_key);
          break;
        case Provider::kAzure:
          t.url = dc.base_url + "/openai/deployments/" + dc.azure_deployment +
                  "/chat/completions?api-version=" + dc.api_version;
          t.auth.Set("api-key", dc.api_key);
          t.responses_url = AzureResponsesUrl(dc);
          t.azure_deployment = dc.azure_deployment;
          break;
        case Provider::kAnthropic:
          t.url = dc.base_url + "/v1/messages";
          t.auth.Set("x-api-key", dc.api_key);
          break;
        case Provider::kGemini: {
          std::string base =
              dc.base_url + "/" + dc.api_version + "/models/" + (dc.model.empty() ? r.model : dc.model);
          t.url = base + ":generateContent";
          t.stream_url = base + ":streamGenerateContent?alt=sse";
          t.auth.Set("x-goog-api-key", dc.api_key);
          break;
        }
        case Provider::kBedrock:  // signed per request (bedrock_provider.h)
          t.url = dc.bedrock->converse_url;
          t.stream_url = dc.bedrock->stream_url;
          t.bedrock = dc.bedrock;
          break;
      }
      list.push_back(std::move(d));
    }
  }
  if (previous != nullptr) CarryHealth(*previous, *table);
  return table;
}

// A reload: deployments still there (same model, name, provider and base URL) keep their health; the
// new table takes the old one's mutex, which guards it.
void RouteTable::CarryHealth(const RouteTable& from, RouteTable& to) {
  const Impl& old = *from.impl_;
  Impl& s = *to.impl_;
  s.mu = old.mu;
  std::lock_guard lock(*s.mu);
  for (size_t i = 0; i < s.routes.size(); ++i) {
    auto it = old.by_model.find(s.routes[i].model);
    if (it == old.by_model.end()) continue;
    for (auto& d : s.deployments[i]) {
      for (const auto& o : old.deployments[static_cast<size_t>(it->second)]) {
        if (o->config->name == d->config->name && o->config->provider == d->config->provider &&
            o->config->base_url == d->config->base_url)
          d->health = o->health;
      }
    }
  }
}

std::optional<RoutePlan> RouteTable::Plan(std::string_view model) {
  auto it = impl_->by_model.find(model);
  if (it == impl_->by_model.end()) return std::nullopt;
  return RoutePlan(shared_from_this(), it->second);
}

std::optional<RouteTable::DeploymentState> RouteTable::State(std::string_view model,
                                                             std::string_view deployment) const {
  auto it = impl_->by_model.find(model);
  if (it == impl_->by_model.end()) return std::nullopt;
  std::lock_guard lock(*impl_->mu);
  for (const auto& d : impl_->deployments[static_cast<size_t>(it->second)]) {
    if (d->config->name != deployment) continue;
    bool cooled = d->health->state == BreakerState::kOpen && SteadyClock::now() >= d->health->open_until;
    return DeploymentState{d->health->state == BreakerState::kOpen && !cooled,
                           d->health->state == BreakerState::kHalfOpen || cooled, d->health->in_flight};
  }
  return std::nullopt;
}

RoutePlan::RoutePlan(std::shared_ptr<RouteTable> table, int route_index) : table_(std::move(table)) {
  models_.push_back(route_index);
  const auto& impl = *table_->impl_;
  for (const auto& f : impl.routes[static_cast<size_t>(route_index)].fallbacks)
    models_.push_back(impl.by_model.find(f)->second);
  for (int m : models_) max_attempts_ += 1 + impl.routes[static_cast<size_t>(m)].retry.retries;
}

bool RoutePlan::HasNext() const {
  RouteTable::Impl& s = *table_->impl_;
  std::lock_guard lock(*s.mu);
  auto now = SteadyClock::now();
  for (size_t pos = model_pos_; pos < models_.size(); ++pos) {
    size_t ri = static_cast<size_t>(models_[pos]);
    const ModelRouteConfig& route = s.routes[ri];
    if (pos == model_pos_ && used_in_model_ >= 1 + route.retry.retries) continue;
    for (const auto& d : s.deployments[ri]) {
      if (!route.breaker.enabled || d->health->state == BreakerState::kClosed ||
          (now >= d->health->open_until && !d->health->probe_in_flight))
        return true;
    }
  }
  return false;
}

RoutePlan::~RoutePlan() {
  if (table_) Finish(Outcome::kNeutral);
}

const RetryConfig& RoutePlan::retry() const {
  size_t pos = std::min(model_pos_, models_.size() - 1);
  return table_->impl_->routes[static_cast<size_t>(models_[pos])].retry;
}

std::optional<AttemptTarget> RoutePlan::Next(std::string* why_none) {
  Finish(Outcome::kNeutral);  // a caller that did not finish the last attempt
  RouteTable::Impl& s = *table_->impl_;
  std::lock_guard lock(*s.mu);
  auto now = SteadyClock::now();
  bool saw_open = false;
  while (model_pos_ < models_.size()) {
    size_t ri = static_cast<size_t>(models_[model_pos_]);
    const ModelRouteConfig& route = s.routes[ri];
    if (used_in_model_ >= 1 + route.retry.retries) {
      ++model_pos_;
      used_in_model_ = 0;
      tried_.clear();
      continue;
    }
    // Eligible: the breaker lets it through (closed, or cooled down with no probe in flight).
    std::vector<Deployment*> open_ok;
    for (const auto& d : s.deployments[ri]) {
      bool ok = d->health->state == BreakerState::kClosed ||
                (d->health->state != BreakerState::kClosed && now >= d->health->open_until &&
                 !d->health->probe_in_flight);
      if (!route.breaker.enabled) ok = true;
      if (!ok) saw_open = true;
      if (ok) open_ok.push_back(d.get());
    }
    std::vector<Deployment*> candidates;
    for (Deployment* d : open_ok) {
      if (std::find(tried_.begin(), tried_.end(), d) == tried_.end()) candidates.push_back(d);
    }
    if (candidates.empty()) candidates = open_ok;  // every healthy one was tried: retry among them
    if (candidates.empty()) {
      ++model_pos_;
      used_in_model_ = 0;
      tried_.clear();
      continue;
    }
    // Fewest in flight per unit of weight (a/wa < b/wb  <=>  a*wb < b*wa).
    Deployment* least = candidates[0];
    for (Deployment* d : candidates) {
      if (int64_t{d->health->in_flight} * least->config->weight <
          int64_t{least->health->in_flight} * d->config->weight)
        least = d;
    }
    std::vector<Deployment*> best;
    for (Deployment* d : candidates) {
      if (int64_t{d->health->in_flight} * least->config->weight ==
          int64_t{least->health->in_flight} * d->config->weight)
        best.push_back(d);
    }
    // Smooth weighted round robin among them.
    int64_t total = 0;
    Deployment* pick = nullptr;
    for (Deployment* d : best) {
      d->health->current_weight += d->config->weight;
      total += d->config->weight;
      if (pick == nullptr || d->health->current_weight > pick->health->current_weight) pick = d;
    }
    pick->health->current_weight -= total;
    ++pick->health->in_flight;
    current_probe_ = false;
    if (route.breaker.enabled && pick->health->state != BreakerState::kClosed) {
      pick->health->state = BreakerState::kHalfOpen;
      pick->health->probe_in_flight = true;
      current_probe_ = true;
    }
    current_ = pick;
    tried_.push_back(pick);
    ++used_in_model_;
    ++attempts_;
    return pick->target;
  }
  if (why_none) {
    *why_none = saw_open ? "no deployment available: circuit open" : "no deployment left to try";
  }
  return std::nullopt;
}

void RoutePlan::Finish(Outcome outcome) {
  Deployment* d = current_;
  if (d == nullptr) return;
  current_ = nullptr;
  const BreakerConfig& b = d->route->breaker;
  std::lock_guard lock(*table_->impl_->mu);
  --d->health->in_flight;
  if (!b.enabled) return;
  auto open = [&] {
    d->health->state = BreakerState::kOpen;
    d->health->open_until = SteadyClock::now() + b.cooldown;
    d->health->consecutive = 0;
    d->health->window.clear();
    d->health->window_failures = 0;
  };
  if (current_probe_) {
    current_probe_ = false;
    d->health->probe_in_flight = false;
    if (outcome == Outcome::kSuccess) {
      d->health->state = BreakerState::kClosed;
      d->health->consecutive = 0;
    } else if (outcome == Outcome::kFailure) {
      open();
    }  // neutral: still half-open; the next request probes
    return;
  }
  if (d->health->state != BreakerState::kClosed || outcome == Outcome::kNeutral) return;
  bool failed = outcome == Outcome::kFailure;
  d->health->consecutive = failed ? d->health->consecutive + 1 : 0;
  d->health->window.push_back(failed);
  d->health->window_failures += failed ? 1 : 0;
  if (static_cast<int>(d->health->window.size()) > b.window) {
    d->health->window_failures -= d->health->window.front() ? 1 : 0;
    d->health->window.pop_front();
  }
  if (b.consecutive_failures > 0 && d->health->consecutive >= b.consecutive_failures) return open();
  if (b.failure_ratio > 0 && static_cast<int>(d->health->window.size()) >= b.min_calls &&
      d->health->window_failures >= b.failure_ratio * static_cast<double>(d->health->window.size()))
    return open();
}

std::chrono::milliseconds RoutePlan::NextBackoff() {
  if (attempts_ == 0) return std::chrono::milliseconds(0);
  const RetryConfig& r = retry();
  int64_t base = r.backoff.count();
  int64_t cap = r.max_backoff.count();
  int64_t delay = base;
  for (int i = 1; i < attempts_ && delay < cap; ++i) delay *= 2;
  delay = std::min(delay, cap);
  if (delay <= 1) return std::chrono::milliseconds(delay);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  int64_t half = delay / 2;
  return std::chrono::milliseconds(delay - half +
                                   static_cast<int64_t>(rng() % static_cast<uint64_t>(half + 1)));
}

}  // namespace govern::gateway
